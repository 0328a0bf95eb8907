// The reality check of live cuts (harness/product/faults/live_cuts.h) without a guest: qemu-io
// writes through powercut's NBD server and recorder (the same server a live cut runs on), the
// server applies a seeded power cut, and MatchCutToModel must find the cut image inside the replay
// model for every seed, and outside it (naming the block) when the image or the drive's account of
// the cut is altered. Also: the fault modes' JSON round trip and their rows in a cell.
#include "harness/product/faults/live_cuts.h"

#include <signal.h>

#include <filesystem>
#include <fstream>

#include "base/image_io.h"
#include "base/process.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/product/cell/cell_result.h"
#include "harness/trace/disk_layout.h"
#include "harness/trace/recorder.h"
#include "harness/vm/devices/nbd_server.h"
#include "harness/vm/machine/disk_image.h"
#include "tests/product/test_util.h"

namespace powercut::product {
namespace {

using testing::TempDir;

bool HaveQemuIo() {
  auto r = powercut::RunCommand({"qemu-io", "--version"});
  return r.ok() && r->exit_code == 0;
}

// A 1 MiB disk behind the recorder and the NBD server; base.img is its content before any write.
class CutDisk {
 public:
  explicit CutDisk(const TempDir& dir) : dir_(dir.path()) {
    EXPECT_TRUE(vm::CreateSparseImage(image(), 1 << 20).ok());
    EXPECT_TRUE(CopySparse(image(), dir_ + "/base.img").ok());
    auto rec = harness::Recorder::Create({.log_path = trace(),
                                          .sector_size = 512,
                                          .device_bytes = 1 << 20,
                                          .base_image = dir_ + "/base.img"});
    EXPECT_TRUE(rec.ok()) << rec.status();
    recorder_ = std::move(*rec);
    auto srv = vm::NbdServer::Start({.socket_path = dir_ + "/nbd.sock",
                                     .image_path = image(),
                                     .recorder = recorder_.get(),
                                     .atomic_unit = 4096});
    EXPECT_TRUE(srv.ok()) << srv.status();
    server_ = std::move(*srv);
  }
  // qemu-io with a write-back cache; `crash` ends it with abort, so its writes stay unflushed.
  void Io(const std::vector<std::string>& commands, bool crash) {
    std::string line = "ulimit -c 0; exec qemu-io -f raw -t writeback";
    for (const auto& c : commands) line += " -c '" + c + "'";
    if (crash) line += " -c abort";
    line += " 'nbd+unix:///?socket=" + dir_ + "/nbd.sock'";
    auto r = powercut::RunCommand({"sh", "-c", line});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->exit_code, crash ? 128 + SIGABRT : 0) << r->output;
  }
  absl::StatusOr<vm::PowerCutReport> Cut(uint64_t seed) {
    auto report = server_->ApplyPowerCut({.mode = harness::CacheMode::kOn}, seed);
    if (report.ok()) {
      if (auto s = recorder_->Finish(); !s.ok()) return s;
    }
    return report;
  }
  std::string image() const { return dir_ + "/disk.img"; }
  std::string trace() const { return dir_ + "/trace.log"; }

 private:
  std::string dir_;
  std::unique_ptr<harness::Recorder> recorder_;
  std::unique_ptr<vm::NbdServer> server_;
};

// Flushed data, then unflushed overwrites, a FUA write, a two-unit write and overlapping writes.
void WriteWorkload(CutDisk& d) {
  d.Io({"write -P 0x11 0 8192", "write -P 0x12 65536 4096"}, false);  // flushed at close
  d.Io({"write -P 0x21 0 4096", "write -f -P 0x22 131072 4096", "write -P 0x23 196608 8192",
        "write -P 0x24 4096 4096", "write -P 0x25 0 4096", "write -P 0x26 65536 512"},
       true);
}

harness::StateOptions ReplayStates() {
  harness::StateOptions s;
  s.max_exhaustive = 16;  // every subset: the replay's state set holds every kept/dropped draw
  return s;
}

TEST(LiveCutModelTest, EverySeededCutIsACrashStateOfTheModel) {
  if (!HaveQemuIo()) GTEST_SKIP() << "qemu-io (qemu-utils) is not installed";
  uint64_t torn = 0, dropped = 0, kept = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    TempDir dir;
    CutDisk d(dir);
    WriteWorkload(d);
    auto report = d.Cut(seed);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_LE(report->torn, 1u) << "a live cut tears at most one write";
    torn += report->torn;
    dropped += report->dropped;
    kept += report->kept;
    auto m = MatchCutToModel(d.trace(), d.image(), *report, ReplayStates(), 1);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_TRUE(m->in_model) << "seed " << seed << ": " << m->evidence;
    EXPECT_THAT(m->state_id, ::testing::StartsWith("pc1_")) << seed;
    EXPECT_EQ(m->volatile_writes, 5u) << "the FUA write is durable, the other five volatile";
    if (report->torn == 0) {
      EXPECT_TRUE(m->sampled) << "exhaustive replay holds seed " << seed;
    }
  }
  EXPECT_GT(torn, 0u);
  EXPECT_GT(dropped, 0u);
  EXPECT_GT(kept, 0u);
}

TEST(LiveCutModelTest, AnImageTheModelCannotMakeIsOutsideWithTheBlockNamed) {
  if (!HaveQemuIo()) GTEST_SKIP() << "qemu-io (qemu-utils) is not installed";
  TempDir dir;
  CutDisk d(dir);
  WriteWorkload(d);
  auto report = d.Cut(3);
  ASSERT_TRUE(report.ok()) << report.status();
  {  // a byte no write put there: block 100
    std::fstream f(d.image(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100 * 4096 + 7);
    f.put('\x7f');
  }
  auto m = MatchCutToModel(d.trace(), d.image(), *report, ReplayStates(), 1);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE(m->in_model);
  EXPECT_THAT(m->evidence, ::testing::HasSubstr("1 block(s) of 4 KiB: 100;"));
}

TEST(LiveCutModelTest, ADrawTheRecorderDoesNotKnowIsOutside) {
  if (!HaveQemuIo()) GTEST_SKIP() << "qemu-io (qemu-utils) is not installed";
  TempDir dir;
  CutDisk d(dir);
  WriteWorkload(d);
  auto report = d.Cut(5);
  ASSERT_TRUE(report.ok()) << report.status();
  // The drive claims an unflushed write the trace does not have.
  vm::PowerCutReport extra = *report;
  extra.decisions.push_back({.offset = 500 * 4096, .bytes = 4096});
  auto m = MatchCutToModel(d.trace(), d.image(), extra, ReplayStates(), 1);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE(m->in_model);
  EXPECT_THAT(m->evidence, ::testing::HasSubstr("held 6 unflushed writes"));
  // The drive's account of one write is wrong: the image is not the state it names. (The last
  // such write: the first one, at byte 0, is overwritten by a later one, so its fate is moot.)
  vm::PowerCutReport flipped = *report;
  for (auto it = flipped.decisions.rbegin(); it != flipped.decisions.rend(); ++it) {
    if (it->fua || it->flushed || it->fate == vm::CutDecision::Fate::kTorn) continue;
    it->fate = it->fate == vm::CutDecision::Fate::kKept ? vm::CutDecision::Fate::kDropped
                                                        : vm::CutDecision::Fate::kKept;
    break;
  }
  m = MatchCutToModel(d.trace(), d.image(), flipped, ReplayStates(), 1);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE(m->in_model);
  EXPECT_THAT(m->evidence, ::testing::HasSubstr("differs from crash state"));
}

// Two 1 MiB disks of a set (a cluster's two nodes) behind one recorder, each behind its own NBD
// server, as a live cut of `--disks 2` / `--nodes 2` records them.
class CutSet {
 public:
  explicit CutSet(const TempDir& dir) : dir_(dir.path()) {
    for (int d = 0; d < 2; ++d) EXPECT_TRUE(vm::CreateSparseImage(disk(d), 1 << 20).ok());
    EXPECT_TRUE(vm::CreateSparseImage(dir_ + "/base.img", 2 << 20).ok());  // both disks, zeros
    auto rec =
        harness::Recorder::Create({.log_path = trace(),
                                   .sector_size = 512,
                                   .device_bytes = 2 << 20,
                                   .base_image = dir_ + "/base.img",
                                   .disks = harness::DiskLayout::Packed({1 << 20, 1 << 20})});
    EXPECT_TRUE(rec.ok()) << rec.status();
    recorder_ = std::move(*rec);
    for (uint32_t d = 0; d < 2; ++d) {
      auto srv = vm::NbdServer::Start({.socket_path = socket(d),
                                       .image_path = disk(d),
                                       .recorder = recorder_.get(),
                                       .disk = d,
                                       .atomic_unit = 4096});
      EXPECT_TRUE(srv.ok()) << srv.status();
      servers_.push_back(std::move(*srv));
    }
  }
  // qemu-io on disk `d` with a write-back cache, ended with abort: its writes stay unflushed.
  void Io(int d, const std::vector<std::string>& commands) {
    std::string line = "ulimit -c 0; exec qemu-io -f raw -t writeback";
    for (const auto& c : commands) line += " -c '" + c + "'";
    line += " -c abort 'nbd+unix:///?socket=" + socket(d) + "'";
    auto r = powercut::RunCommand({"sh", "-c", line});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->exit_code, 128 + SIGABRT) << r->output;
  }
  // Both drives lose power (each its own seed; only disk 1's write may tear, as in a live cut of
  // a set: the replay model tears one write per state); returns their reports.
  absl::StatusOr<std::vector<vm::PowerCutReport>> Cut(uint64_t seed) {
    std::vector<vm::PowerCutReport> reports;
    for (uint64_t d = 0; d < 2; ++d) {
      auto r = servers_[d]->ApplyPowerCut({.mode = harness::CacheMode::kOn}, seed + 100 * d,
                                          /*may_tear=*/d == 0);
      if (!r.ok()) return r.status();
      reports.push_back(*std::move(r));
    }
    if (auto s = recorder_->Finish(); !s.ok()) return s;
    return reports;
  }
  // Disk `d` alone loses its power now (a node cut): the instant marked in the trace, the drive's
  // cache applied while the other disk keeps serving, the disk's image copied.
  struct NodeCutTaken {
    uint64_t point = 0;
    vm::PowerCutReport report;
  };
  absl::StatusOr<NodeCutTaken> NodeCut(uint32_t d, uint64_t seed, const std::string& snapshot) {
    NodeCutTaken cut;
    cut.point = recorder_->entries();
    if (auto s = recorder_->RecordMark(fmt::format("node-cut:{}", d + 1)); !s.ok()) return s;
    auto r = servers_[d]->ApplyNodeCut({.mode = harness::CacheMode::kOn}, seed);
    if (!r.ok()) return r.status();
    cut.report = *std::move(r);
    if (auto s = CopySparse(disk(static_cast<int>(d)), snapshot); !s.ok()) return s;
    return cut;
  }
  absl::Status Finish() {
    for (auto& s : servers_) s->Stop();
    return recorder_->Finish();
  }
  // The set's image after the cut: disk 1, then disk 2 (at 1 MiB, the packed layout).
  std::string Concatenated() {
    std::string out = dir_ + "/set.img";
    auto r = powercut::RunCommand(
        {"sh", "-c", "cat '" + disk(0) + "' '" + disk(1) + "' > '" + out + "'"});
    EXPECT_TRUE(r.ok() && r->exit_code == 0);
    return out;
  }
  std::string trace() const { return dir_ + "/trace.log"; }

 private:
  std::string disk(int d) const { return fmt::format("{}/disk-{}.img", dir_, d + 1); }
  std::string socket(int d) const { return fmt::format("{}/nbd{}.sock", dir_, d + 1); }
  std::string dir_;
  std::unique_ptr<harness::Recorder> recorder_;
  std::vector<std::unique_ptr<vm::NbdServer>> servers_;
};

// The reality check of a cut of several disks holds per disk: every disk inside for real cuts,
// and a disk whose image or drive is wrong is named ("node 2") while the other is still compared.
TEST(LiveCutModelTest, EachDiskOfASetIsCheckedOnItsOwn) {
  if (!HaveQemuIo()) GTEST_SKIP() << "qemu-io (qemu-utils) is not installed";
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    TempDir dir;
    CutSet set(dir);
    set.Io(0, {"write -P 0x31 0 4096", "write -P 0x32 65536 8192", "write -P 0x33 131072 4096"});
    set.Io(1, {"write -P 0x41 0 4096", "write -P 0x42 262144 4096"});
    auto reports = set.Cut(seed);
    ASSERT_TRUE(reports.ok()) << reports.status();
    const std::string image = set.Concatenated();
    auto m = MatchCutToModel(set.trace(), image, (*reports)[0], ReplayStates(), 1, {(*reports)[1]},
                             "node");
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_TRUE(m->in_model) << "seed " << seed << ": " << m->evidence;
    ASSERT_EQ(m->disks.size(), 2u);
    EXPECT_TRUE(m->disks[0].in_model && m->disks[1].in_model) << seed;
    EXPECT_EQ(m->disks[0].volatile_writes, 3u);
    EXPECT_EQ(m->disks[1].volatile_writes, 2u);
    EXPECT_EQ(m->volatile_writes, 5u);
    if (seed != 1) continue;

    {  // a byte no write put on node 2's disk (block 100 of that disk)
      std::fstream f(image, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp((1 << 20) + 100 * 4096 + 7);
      f.put('\x7f');
    }
    m = MatchCutToModel(set.trace(), image, (*reports)[0], ReplayStates(), 1, {(*reports)[1]},
                        "node");
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_FALSE(m->in_model);
    EXPECT_TRUE(m->disks[0].in_model) << m->disks[0].evidence;
    EXPECT_FALSE(m->disks[1].in_model);
    EXPECT_THAT(m->evidence, ::testing::StartsWith("node 2: the cut image differs"));
    EXPECT_THAT(m->disks[1].evidence, ::testing::HasSubstr("1 block(s) of 4 KiB: 356"));

    // Node 2's drive claims a write the trace does not have: node 2 is outside, node 1 is still
    // compared (and inside).
    vm::PowerCutReport wrong = (*reports)[1];
    wrong.decisions.push_back({.offset = 500 * 4096, .bytes = 4096});
    m = MatchCutToModel(set.trace(), image, (*reports)[0], ReplayStates(), 1, {wrong}, "node");
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_FALSE(m->in_model);
    EXPECT_TRUE(m->disks[0].in_model) << m->disks[0].evidence;
    EXPECT_THAT(m->disks[1].evidence, ::testing::HasSubstr("held 3 unflushed writes"));
    EXPECT_THAT(m->evidence, ::testing::StartsWith("node 2: the drive held 3"));
  }
}

// A single node's cut (docs/cluster.md, "Single-node cuts"): node 2's drive loses its power at a
// marked point while node 1 keeps writing, both write on after it (node 2 restarted). The cut
// disk's image is its part of a crash state at the mark, for every seed; a byte no write put there
// is outside, with its block named.
TEST(LiveCutModelTest, ASingleNodeCutIsItsDisksPartOfACrashStateAtTheMark) {
  if (!HaveQemuIo()) GTEST_SKIP() << "qemu-io (qemu-utils) is not installed";
  uint64_t dropped = 0, kept = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    TempDir dir;
    CutSet set(dir);
    set.Io(0, {"write -P 0x31 0 4096", "write -P 0x32 65536 8192"});
    set.Io(1, {"write -P 0x41 0 4096", "write -P 0x42 262144 4096", "write -P 0x43 8192 4096"});
    const std::string snapshot = dir.path() + "/node-cut.img";
    auto cut = set.NodeCut(1, seed, snapshot);
    ASSERT_TRUE(cut.ok()) << cut.status();
    dropped += cut->report.dropped;
    kept += cut->report.kept;
    // Life goes on: node 1 never lost its power, node 2 restarted on what its drive kept.
    set.Io(0, {"write -P 0x35 0 4096"});
    set.Io(1, {"write -P 0x45 0 8192"});
    ASSERT_TRUE(set.Finish().ok());
    auto m = MatchNodeCutToModel(set.trace(), cut->point, 1, snapshot, cut->report);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_TRUE(m->in_model) << "seed " << seed << ": " << m->evidence;
    EXPECT_EQ(m->volatile_writes, 3u) << "node 2's own unflushed writes at the mark";
    EXPECT_EQ(m->point, cut->point);
    if (seed != 1) continue;
    {  // a byte no write put on node 2's disk (block 100 of that disk)
      std::fstream f(snapshot, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(100 * 4096 + 7);
      f.put('\x7f');
    }
    m = MatchNodeCutToModel(set.trace(), cut->point, 1, snapshot, cut->report);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_FALSE(m->in_model);
    EXPECT_THAT(m->evidence, ::testing::HasSubstr("1 block(s) of 4 KiB: 356"));
  }
  EXPECT_GT(dropped, 0u);
  EXPECT_GT(kept, 0u);
}

// A cluster's live cuts: each node's reality check by name, a cut on which the cluster did not
// come back counted apart (unavailable, not a violation), and both kept by the JSON.
TEST(FaultResultsTest, ClusterCutsNameNodesAndCountUnavailable) {
  RunOutcome o;
  o.ran = true;
  LiveCutsResult live;
  live.requested = 2;
  live.nodes = true;
  const std::vector<LiveCutDisk> nodes = {
      {.disk = 1, .in_model = true, .volatile_writes = 2, .kept = 1, .dropped = 1},
      {.disk = 2, .in_model = true},
      {.disk = 3, .in_model = true, .volatile_writes = 1, .kept = 1}};
  live.cuts.push_back(
      {.seed = 2, .acks_before_cut = 3, .in_model = true, .state_id = "pc1_a", .disks = nodes});
  live.cuts.push_back({.seed = 3,
                       .acks_before_cut = 4,
                       .in_model = true,
                       .state_id = "pc1_b",
                       .disks = nodes,
                       .summary = "unavailable: no quorum",
                       .unavailable = "the cluster did not come back",
                       .unavailable_stderr = "node 2: panic\nnode 3: panic"});
  o.live_cuts = live;
  EXPECT_EQ(o.live_cuts->Unavailable(), 1u);
  EXPECT_EQ(o.live_cuts->Violations(), 0u);
  const std::string text = LiveCutsText(*o.live_cuts);
  EXPECT_THAT(text, ::testing::HasSubstr("[node 1: 2 (1 kept, 1 dropped, 0 torn), node 2: 0, "
                                         "node 3: 1 (1 kept, 0 dropped, 0 torn)]"));
  EXPECT_THAT(text, ::testing::HasSubstr("inside the model on every node"));
  EXPECT_THAT(text, ::testing::HasSubstr("UNAVAILABLE (did not come back: the cluster did not"));
  EXPECT_THAT(text, ::testing::HasSubstr("    node 3: panic\n"));
  EXPECT_THAT(text, ::testing::HasSubstr("2 of 2 live cuts inside the model on every node "
                                         "(cache on), 0 violating, 1 unavailable"));

  const nlohmann::json j = LiveCutsToJson(*o.live_cuts);
  EXPECT_EQ(j["unavailable"], 1);
  ASSERT_TRUE(j["cuts"][0].contains("nodes"));
  EXPECT_FALSE(j["cuts"][0].contains("disks"));
  EXPECT_EQ(j["cuts"][0]["nodes"][2]["node"], 3);
  const LiveCutsResult back = LiveCutsFromJson(j);
  EXPECT_TRUE(back.nodes);
  ASSERT_EQ(back.cuts.size(), 2u);
  ASSERT_EQ(back.cuts[1].disks.size(), 3u);
  EXPECT_EQ(back.cuts[1].disks[0].dropped, 1u);
  EXPECT_EQ(back.cuts[1].unavailable, "the cluster did not come back");
  EXPECT_EQ(back.cuts[1].unavailable_stderr, "node 2: panic\nnode 3: panic");

  CellResult cell{.name = "etcd/-/ext4"};
  FillCell(o, &cell);
  ASSERT_EQ(cell.models.size(), 1u);
  EXPECT_EQ(cell.models[0].violations, 0u);
  EXPECT_EQ(cell.models[0].unavailable, 1u);
  EXPECT_EQ(cell.models[0].first_unavailable, "pc1_b");
  EXPECT_THAT(cell.models[0].unavailable_stderr, ::testing::HasSubstr("node 3: panic"));
  EXPECT_EQ(cell.Verdict(), CellVerdict::kOk) << "unavailable is not a loss";
  EXPECT_THAT(cell.notes,
              ::testing::Not(::testing::Contains(::testing::HasSubstr("came back on none"))));
  LiveCutsResult down = *o.live_cuts;
  down.cuts.erase(down.cuts.begin());  // only the cut the cluster did not come back on
  RunOutcome all_down = o;
  all_down.live_cuts = down;
  CellResult none{.name = "etcd/-/ext4"};
  FillCell(all_down, &none);
  EXPECT_THAT(none.notes, ::testing::Contains(::testing::HasSubstr(
                              "came back on none of the 1 cut(s): nothing was shown to survive")));
  // A node outside the model: the tester's error, named.
  o.live_cuts->cuts[0].in_model = false;
  o.live_cuts->cuts[0].disks[1].in_model = false;
  EXPECT_THAT(LiveCutsText(*o.live_cuts), ::testing::HasSubstr("node 2: 0 OUTSIDE"));
}

// Single-node cuts as a cell's `node-cut` row (docs/cluster.md, "Single-node cuts"): a run with a
// missing ack is a violation, a cut that could not be made leaves the row incomplete (not a
// survival), one the workload outran is not counted, and the JSON keeps every cut.
TEST(FaultResultsTest, NodeCutsAreARowOfTheirOwn) {
  RunOutcome o;
  o.ran = true;
  NodeCutsResult cuts;
  cuts.requested = 4;
  cuts.cuts.push_back({.seed = 1, .node = 2, .fired = true, .in_model = true, .acks = 8});
  cuts.cuts.push_back({.seed = 2,
                       .node = 1,
                       .fired = true,
                       .acks_before_cut = 3,
                       .in_model = true,
                       .acks = 8,
                       .lost = {"4", "5"}});
  cuts.cuts.push_back({.seed = 3, .node = 3, .after_ack = 7});  // the workload ended first
  o.node_cuts = cuts;
  CellResult cell{.name = "etcd/3/ext4"};
  FillCell(o, &cell);
  ASSERT_EQ(cell.models.size(), 1u);
  EXPECT_EQ(cell.models[0].cache, "node-cut");
  EXPECT_EQ(cell.models[0].kind, ModelKind::kNodeCut);
  EXPECT_EQ(cell.models[0].states, 2u);
  EXPECT_EQ(cell.models[0].violations, 1u);
  EXPECT_EQ(cell.models[0].lost_acks_max, 2u);
  EXPECT_THAT(cell.models[0].summary, ::testing::HasSubstr("node 1 lost its power after ack 3"));
  EXPECT_EQ(cell.Verdict(), CellVerdict::kUnexpected) << "node cuts are expected to survive";
  EXPECT_FALSE(o.passed());
  EXPECT_THAT(NodeCutsText(*o.node_cuts),
              ::testing::HasSubstr("FAIL: the live cluster lost 2 of 8 acks [4 5]"));
  EXPECT_THAT(NodeCutsText(*o.node_cuts), ::testing::HasSubstr("the workload ended first"));
  EXPECT_THAT(FaultDetailsHtml(cell), ::testing::HasSubstr("<table class=\"node-cuts\">"));

  auto back = CellFromJson(CellToJson(cell));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(back->node_cuts.has_value());
  EXPECT_EQ(back->node_cuts->cuts.size(), 3u);
  EXPECT_EQ(back->node_cuts->cuts[1].lost, (std::vector<std::string>{"4", "5"}));
  EXPECT_EQ(back->node_cuts->Uncut(), 1u);
  EXPECT_EQ(back->node_cuts->Violations(), 1u);

  // A cut that could not be made: the row is incomplete, so "survives" is not met.
  o.node_cuts->cuts[1].lost.clear();
  o.node_cuts->cuts.push_back({.seed = 4, .node = 1, .error = "the guest died"});
  CellResult incomplete{.name = "etcd/3/ext4"};
  FillCell(o, &incomplete);
  EXPECT_EQ(incomplete.models[0].violations, 0u);
  EXPECT_FALSE(incomplete.models[0].complete());
  EXPECT_EQ(incomplete.Verdict(), CellVerdict::kUnexpected);
  // One outside the model: the tester's error, whatever was expected.
  o.node_cuts->cuts.pop_back();
  o.node_cuts->cuts[0].in_model = false;
  CellResult bug{.name = "etcd/3/ext4"};
  FillCell(o, &bug);
  EXPECT_EQ(bug.Verdict(), CellVerdict::kError);
  EXPECT_EQ(o.exit_code(), 2);
}

TEST(FaultResultsTest, CellRowsJsonRoundTripAndVerdicts) {
  RunOutcome o;
  o.ran = true;
  LiveCutsResult live;
  live.requested = 2;
  live.cuts.push_back({.seed = 2, .acks_before_cut = 3, .in_model = true, .state_id = "pc1_a"});
  live.cuts.push_back({.seed = 3,
                       .acks_before_cut = 5,
                       .in_model = true,
                       .state_id = "pc1_b",
                       .violation = true,
                       .lost = {"4", "5"},
                       .summary = "lost 4 5",
                       .check_method = "guest mount",
                       .check_kernel = "6.1.0-57-amd64"});
  o.live_cuts = live;
  CellResult cell{.name = "w/s/ext4"};
  FillCell(o, &cell);
  ASSERT_EQ(cell.models.size(), 1u);
  EXPECT_EQ(cell.models[0].cache, "live");
  EXPECT_EQ(cell.models[0].kind, ModelKind::kLive);
  EXPECT_EQ(cell.models[0].states, 2u);
  EXPECT_EQ(cell.models[0].violations, 1u);
  EXPECT_EQ(cell.models[0].lost_acks_max, 2u);
  EXPECT_EQ(cell.Verdict(), CellVerdict::kUnexpected)
      << "live cuts are expected to survive by default";
  cell.expect.models[ModelKind::kLive] = ExpectedVerdict::kLoses;
  EXPECT_EQ(cell.Verdict(), CellVerdict::kOk);

  auto back = CellFromJson(CellToJson(cell));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(back->live_cuts.has_value());
  EXPECT_EQ(back->live_cuts->cuts.size(), 2u);
  EXPECT_EQ(back->live_cuts->cuts[1].lost, (std::vector<std::string>{"4", "5"}));
  EXPECT_EQ(back->live_cuts->InModel(), 2u);
  // Who judged each cut (--check-in) survives the JSON.
  EXPECT_EQ(back->live_cuts->cuts[1].check_method, "guest mount");
  EXPECT_EQ(back->live_cuts->cuts[1].check_kernel, "6.1.0-57-amd64");

  // One cut outside the model: the cell is the tester's error, whatever was expected.
  o.live_cuts->cuts[0].in_model = false;
  o.live_cuts->cuts[0].evidence = "block 7";
  EXPECT_EQ(o.exit_code(), 2);
  CellResult bug{.name = "w/s/ext4"};
  FillCell(o, &bug);
  EXPECT_EQ(bug.Verdict(), CellVerdict::kError);
  EXPECT_THAT(bug.models[0].summary, ::testing::HasSubstr("TESTER BUG"));

  RunOutcome f;
  f.ran = true;
  f.flakey = FlakeyResult{.mode = vm::FlakeyMode::kErrorWrites,
                          .after_acks = 3,
                          .window_seconds = 1,
                          .acks = 10,
                          .acks_before_failure = 3,
                          .acks_after_failure = {"5", "6"},
                          .workload_exit = 0,
                          .checker_exit = 0};
  EXPECT_EQ(f.exit_code(), 1);
  CellResult fc{.name = "w/s/ext4/error_writes"};
  FillCell(f, &fc);
  ASSERT_EQ(fc.models.size(), 1u);
  EXPECT_EQ(fc.models[0].cache, "error_writes");
  EXPECT_EQ(fc.models[0].kind, ModelKind::kErrorWrites);
  EXPECT_EQ(fc.models[0].violations, 1u);
  EXPECT_THAT(fc.models[0].summary, ::testing::HasSubstr("2 of them not on the final image (5 6)"));
  auto fback = CellFromJson(CellToJson(fc));
  ASSERT_TRUE(fback.ok()) << fback.status();
  ASSERT_TRUE(fback->flakey.has_value());
  EXPECT_EQ(fback->flakey->acks_after_failure, (std::vector<std::string>{"5", "6"}));
  EXPECT_EQ(fback->flakey->mode, vm::FlakeyMode::kErrorWrites);
  // The report spells the mode as dm-flakey does; another spelling is an error, not a default.
  nlohmann::json fjson = CellToJson(fc);
  EXPECT_EQ(fjson["flakey"]["mode"], "error_writes");
  fjson["flakey"]["mode"] = "drop_writes";
  auto dropped = CellFromJson(fjson);
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  EXPECT_EQ(dropped->flakey->mode, vm::FlakeyMode::kDropWrites);
  fjson["flakey"]["mode"] = "drop-writes";
  auto misspelt = CellFromJson(fjson);
  ASSERT_FALSE(misspelt.ok());
  EXPECT_THAT(std::string(misspelt.status().message()),
              ::testing::HasSubstr("\"drop-writes\": not a failing disk's mode; expected "
                                   "error_writes or drop_writes"));
  f.flakey->acks_after_failure.clear();
  EXPECT_EQ(f.exit_code(), 0);
}

}  // namespace
}  // namespace powercut::product
