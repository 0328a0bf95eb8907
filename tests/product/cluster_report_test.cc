// The reports of a cluster run (docs/cluster.md, "Reports") on a synthetic recording of three
// nodes: three raw disks recorded on one clock through the real Recorder, judged by a real shell
// checker, the run's cluster spec set so that its disks are its nodes. No VM and no node starts:
// what is under test is every report's part of it (text, JSON, JUnit, the HTML's lanes and its
// section of the nodes, the nodes' kept logs and the repro commands through KeepRecording, cells
// through shards and merge). tests/cluster/redis_vm.sh runs the same on a real cluster.
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/check/report.h"
#include "harness/product/cell/cell_result.h"
#include "harness/product/html/html_report.h"
#include "harness/product/matrix/matrix.h"
#include "harness/product/matrix/merge.h"
#include "harness/product/run/recordings.h"
#include "harness/product/run/run.h"
#include "harness/trace/disk_layout.h"
#include "harness/trace/recorder.h"
#include "tests/product/test_util.h"

namespace powercut::product {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ReadFile;
using testing::TempDir;

constexpr uint32_t kSs = 512;
constexpr uint64_t kDiskBytes = 16 * kSs;
constexpr int kCommits = 3;

// Commit k is whole when sector k of node 1's disk starts with A, node 2's with B, node 3's with C.
constexpr char kChecker[] =
    "for k in 1 2 3; do a=$(dd if=\"$POWERCUT_DEV\" bs=512 skip=$k count=1 2>/dev/null | head "
    "-c1); b=$(dd if=\"$POWERCUT_DEV_2\" bs=512 skip=$k count=1 2>/dev/null | head -c1); "
    "c=$(dd if=\"$POWERCUT_DEV_3\" bs=512 skip=$k count=1 2>/dev/null | head -c1); "
    "[ \"$a$b$c\" = ABC ] && echo \"have $k\"; done; true";

// Three nodes; node 2 never flushes (its commits sit in its drive's cache when acked), nodes 1 and
// 3 flush before every ack. Under cache `on` a cut loses what node 2's drive dropped.
std::string RecordThreeNodes(const TempDir& dir) {
  fs::create_directories(dir.File("rec"));
  std::string log = dir.File("rec/trace.log");
  const std::string base = dir.File("rec/base.img");
  const harness::DiskLayout layout =
      harness::DiskLayout::Packed({kDiskBytes, kDiskBytes, kDiskBytes});
  { std::ofstream create(base); }
  fs::resize_file(base, layout.total_bytes());
  auto rec = harness::Recorder::Create(
      {.log_path = log, .sector_size = kSs, .base_image = base, .disks = layout});
  EXPECT_TRUE(rec.ok()) << rec.status();
  harness::Recorder& r = **rec;
  for (int k = 1; k <= kCommits; ++k) {
    for (uint32_t disk = 0; disk < 3; ++disk) {
      EXPECT_TRUE(
          r.RecordDiskWrite(disk, k * kSs, std::vector<uint8_t>(kSs, 'A' + disk), false).ok());
      if (disk != 1) {
        EXPECT_TRUE(r.RecordDiskFlush(disk).ok());
      }
    }
    EXPECT_TRUE(r.RecordAck(std::to_string(k)).ok());
  }
  EXPECT_TRUE(r.Finish().ok());
  // Each node's whole log beside the recording, as RunWorkload splits it out of output.txt.
  for (int node = 1; node <= 3; ++node) {
    std::ofstream(dir.File(fmt::format("rec/node-{}.log", node)))
        << fmt::format("node {} started\nnode {} says hello\n", node, node);
  }
  return log;
}

RunOptions ClusterOptions() {
  RunOptions o;
  o.name = "three-nodes";
  o.fs = {harness::FsKind::kRaw};
  o.disks = 3;
  o.checker = kChecker;
  o.models = *harness::ParseCacheModels("off,on", "16");
  o.points = *harness::ParsePointSelection("acks");
  o.states = ParseStates("8")->Options();
  o.workers = 2;
  o.exhaustive = true;
  o.powercut = POWERCUT_BIN;
  o.cluster = {.nodes = 3,
               .node_command = "sh node.sh always",
               .workload = "sh workload.sh 3",
               .checker = "sh check.sh",
               .checker_timeout_s = 40};
  return o;
}

TEST(ClusterReport, TextAndJsonNameEachNodeItsWritesItsDroppedWritesAndItsLog) {
  TempDir dir;
  const std::string trace = RecordThreeNodes(dir);
  RunOutcome out = CheckRecording(trace, ClusterOptions());
  ASSERT_TRUE(out.ran) << out.error;
  ASSERT_TRUE(out.report);
  const harness::CheckReport& r = *out.report;
  EXPECT_EQ(r.set_member, harness::SetMember::kNode);
  ASSERT_EQ(r.disks.size(), 3u);
  EXPECT_EQ(r.disks[1].writes, 3u);
  EXPECT_EQ(r.disks[1].flushes, 0u);
  EXPECT_EQ(r.disks[0].flushes, 3u);
  EXPECT_EQ(r.disks[1].log, dir.File("rec/node-2.log"));
  EXPECT_EQ(r.disks[1].log_bytes, ReadFile(dir.File("rec/node-2.log")).size());

  ASSERT_EQ(r.results.size(), 2u);
  EXPECT_EQ(r.results[0].violations, 0u);  // off: every write is on its drive when it completes
  ASSERT_TRUE(r.results[1].worst_violation);
  const harness::Verdict& worst = *r.results[1].worst_violation;
  // The worst `on` state drops node 2's three writes, and only node 2's.
  ASSERT_EQ(worst.dropped_per_disk.size(), 3u);
  EXPECT_TRUE(worst.dropped_per_disk[0].empty());
  EXPECT_EQ(worst.dropped_per_disk[1].size(), 3u);
  EXPECT_TRUE(worst.dropped_per_disk[2].empty());
  const std::string text = worst.Describe();
  EXPECT_THAT(text,
              HasSubstr(fmt::format("every node cut at once after entry {}", worst.point - 1)));
  EXPECT_THAT(text,
              HasSubstr(fmt::format("dropped per node: node 1: 0, node 2: 3 [{} {} {}], "
                                    "node 3: 0",
                                    worst.dropped_per_disk[1][0], worst.dropped_per_disk[1][1],
                                    worst.dropped_per_disk[1][2])));
  EXPECT_THAT(text, Not(HasSubstr("disk")));
  // The command that judges it again starts every node: the user's own commands, not the
  // launcher's wrapped ones.
  EXPECT_EQ(worst.repro, fmt::format("{} repro {} --trace {} --nodes 3 --node 'sh node.sh always' "
                                     "--checker 'sh check.sh' --checker-timeout 40 --recheck",
                                     POWERCUT_BIN, worst.state_id, trace));

  const std::string table = RunSummary(out);
  EXPECT_THAT(table, HasSubstr("node 2 (raw, 8192 bytes): 3 writes, 0 flushes, 0 FUA; its log: " +
                               dir.File("rec/node-2.log")));
  EXPECT_THAT(table, HasSubstr("  reproduce it: " + r.results[1].first_violation->repro));

  const nlohmann::json j = harness::ReportToJson(r);
  EXPECT_FALSE(j.contains("disks"));
  ASSERT_EQ(j["nodes"].size(), 3u);
  EXPECT_EQ(j["nodes"][2]["node"], 3);
  EXPECT_EQ(j["nodes"][2]["log"], dir.File("rec/node-3.log"));
  const nlohmann::json& w = j["results"][1]["worst_violation"];
  EXPECT_EQ(w["dropped_per_node"], nlohmann::json({0, 3, 0}));
  EXPECT_EQ(w["dropped_entries_per_node"][1], worst.dropped_per_disk[1]);
  EXPECT_EQ(w["repro"], worst.repro);
  const std::string junit = harness::ReportToJunit(r);
  EXPECT_THAT(junit, HasSubstr("dropped per node: node 1: 0"));
  EXPECT_THAT(junit, HasSubstr("reproduce: "));
}

TEST(ClusterReport, AKeptRecordingTakesTheNodesLogsAndItsCommandsNameIt) {
  TempDir dir;
  const std::string trace = RecordThreeNodes(dir);
  RunOutcome out = CheckRecording(trace, ClusterOptions());
  ASSERT_TRUE(out.ran) << out.error;
  RecordingStore store;
  store.dir = dir.File("report/recordings");
  KeepRecording(trace, "three-nodes", POWERCUT_BIN, &store, &out);
  ASSERT_EQ(store.kept.size(), 1u) << store.Summary();
  const std::string kept = out.recording_dir;
  for (int node = 1; node <= 3; ++node) {
    const harness::DiskSummary& d = out.report->disks[node - 1];
    EXPECT_EQ(d.log, fmt::format("{}/node-{}.log", kept, node));
    EXPECT_EQ(ReadFile(d.log), fmt::format("node {} started\nnode {} says hello\n", node, node));
    EXPECT_FALSE(fs::exists(dir.File(fmt::format("rec/node-{}.log", node))));  // moved
  }
  // The logs count toward the recordings' cap.
  EXPECT_GE(out.recording_bytes, 3 * 4096u);
  const harness::Verdict& worst = *out.report->results[1].worst_violation;
  EXPECT_THAT(worst.repro, HasSubstr(fmt::format(" --trace {}/trace.log --nodes 3 ", kept)));
  ASSERT_TRUE(out.timeline);
  ASSERT_EQ(out.timeline->crashes.size(), 1u);
  EXPECT_EQ(out.timeline->crashes[0].repro, worst.repro);
  EXPECT_EQ(out.timeline->member, harness::SetMember::kNode);
}

// The HTML of one cluster cell: a write and a flush lane per node on the one clock, the worst
// state's instant with each node's dropped writes, and the nodes' section with their logs.
void ExpectClusterHtml(const std::string& html, const harness::Verdict& worst, size_t cell) {
  for (int node = 1; node <= 3; ++node) {
    EXPECT_THAT(html, HasSubstr(fmt::format(">node {} write</text>", node)));
    EXPECT_THAT(html, HasSubstr(fmt::format(">node {} flush</text>", node)));
  }
  EXPECT_THAT(html, HasSubstr(">ack (one clock)</text>"));
  EXPECT_THAT(html, HasSubstr(fmt::format("crash (on): 3 lost, after entry {}; dropped node 1 0, "
                                          "node 2 3, node 3 0",
                                          worst.point - 1)));
  EXPECT_THAT(html, HasSubstr(fmt::format("id=\"nodes-{}\"", cell)));
  EXPECT_THAT(html, HasSubstr("<th>node</th><th>fs</th><th>writes</th><th>flushes</th>"));
  EXPECT_THAT(html, HasSubstr("<tr data-node=\"2\"><td>node 2</td><td>raw</td><td "
                              "class=\"num\">3</td><td class=\"num\">0</td><td "
                              "class=\"num\">0</td><td class=\"num\">3</td>"));
  EXPECT_THAT(html, HasSubstr("node-2.log</a>"));
  EXPECT_THAT(html, HasSubstr("<pre>node 2 started\nnode 2 says hello\n</pre>"));
  EXPECT_THAT(html, HasSubstr("reproduce it: <code class=\"repro\">"));
  EXPECT_THAT(html, Not(HasSubstr(">d1 write")));
}

TEST(ClusterReport, TheHtmlDrawsALanePerNodeAndKeepsItThroughShardsAndMerge) {
  TempDir dir;
  const std::string trace = RecordThreeNodes(dir);
  RunOutcome out = CheckRecording(trace, ClusterOptions());
  ASSERT_TRUE(out.ran) << out.error;
  const harness::Verdict worst = *out.report->results[1].worst_violation;

  // `powercut run --html`: its outcome as a one-cell matrix report.
  CellResult cell;
  FillCell(out, &cell);
  EXPECT_EQ(cell.set_member, harness::SetMember::kNode);
  ASSERT_EQ(cell.disks.size(), 3u);
  ASSERT_EQ(cell.models.size(), 2u);
  EXPECT_EQ(cell.models[1].repro, out.report->results[1].first_violation->repro);
  MatrixReport one;
  one.plan_cells = 1;
  one.cells.push_back(cell);
  ExpectClusterHtml(HtmlReport(one, "run"), worst, 0);

  // A matrix of such cells, in two shards, each through its JSON as `powercut merge` reads it.
  MatrixOptions o;
  o.workloads = {"xlog"};
  o.workload_binary = "/bin/powercut-workload";
  o.progress = false;
  o.replay = *ParseReplayChoice("off,on", "16", "acks", "8");
  std::vector<MatrixReport> shards;
  for (const char* shard : {"1/2", "2/2"}) {
    o.shard = *ParseShard(shard);
    auto report = RunMatrix(o, [&](const MatrixCell&, const RunOptions&) { return out; });
    ASSERT_TRUE(report.ok()) << report.status();
    const nlohmann::json j = nlohmann::json::parse(MatrixToJson(*report).dump());
    ASSERT_TRUE(j["cells"][0].contains("nodes")) << j["cells"][0].dump();
    EXPECT_EQ(j["cells"][0]["nodes"][1]["log"], dir.File("rec/node-2.log"));
    EXPECT_EQ(j["cells"][0]["timeline"]["member"], "node");
    auto back = MatrixFromJson(j);
    ASSERT_TRUE(back.ok()) << back.status();
    shards.push_back(*std::move(back));
  }
  auto merged = MergeReports(shards);
  ASSERT_TRUE(merged.ok()) << merged.status();
  ASSERT_FALSE(merged->cells.empty());
  for (const CellResult& c : merged->cells) {
    EXPECT_EQ(c.set_member, harness::SetMember::kNode) << c.name;
    ASSERT_EQ(c.disks.size(), 3u) << c.name;
    EXPECT_EQ(c.disks[2].log, dir.File("rec/node-3.log"));
    ASSERT_TRUE(c.timeline) << c.name;
    EXPECT_EQ(c.timeline->member, harness::SetMember::kNode);
  }
  ExpectClusterHtml(HtmlReport(*merged, "merged"), worst, merged->cells[0].index);
  const std::string junit = MatrixJunit(*merged);
  EXPECT_THAT(junit, HasSubstr("dropped per node: node 1: 0, node 2: 3"));
  EXPECT_THAT(junit, HasSubstr("\nreproduce: " + std::string(POWERCUT_BIN) + " repro "));
}

// `matrix --node-cuts K --node-down D`: every cluster cell gets the cuts, with the preset's
// expectation for a node cut (etcd and Redis `always` survive one; NATS and Redis `everysec` may
// lose); without the flag a cell has neither; a plan without a cluster cell refuses the flag
// before any cell runs.
TEST(ClusterReport, MatrixNodeCutsGoToEveryClusterCellWithThePresetsExpectation) {
  for (const uint64_t cuts : {uint64_t{0}, uint64_t{2}}) {
    MatrixOptions o;
    o.preset = Preset::kCluster;
    o.cluster_examples = "/examples";
    o.cluster_launcher = "/launcher/powercut-cluster";
    o.progress = false;
    o.replay = *ParseReplayChoice("off", "16", "acks", "1");
    o.node_cuts = cuts;
    o.node_down_ms = 500;
    absl::Mutex mu;
    std::map<std::string, std::pair<uint64_t, uint64_t>> given;  // cell: cuts, down
    auto report = RunMatrix(o, [&](const MatrixCell& c, const RunOptions& r) {
      absl::MutexLock lock(&mu);
      given[c.Name()] = {r.node_cuts, r.node_down_ms};
      return RunOutcome{};
    });
    ASSERT_TRUE(report.ok()) << report.status();
    ASSERT_EQ(given.size(), 4u);
    for (const auto& [cell, cut] : given) {
      EXPECT_EQ(cut.first, cuts) << cell;
      EXPECT_EQ(cut.second, 500u) << cell;
    }
    std::map<std::string, std::string> expected;  // cell: its node-cut expectation, or ""
    for (const CellResult& c : report->cells) {
      const auto it = c.expect.models.find(ModelKind::kNodeCut);
      expected[c.name] = it == c.expect.models.end() ? std::string()
                                                     : std::string(ExpectedVerdictName(it->second));
    }
    EXPECT_EQ(expected["etcd-cluster/default/ext4"], cuts ? "survives" : "");
    EXPECT_EQ(expected["nats-cluster/default/ext4"], cuts ? "may-lose" : "");
    EXPECT_EQ(expected["redis-cluster/always/ext4"], cuts ? "survives" : "");
    EXPECT_EQ(expected["redis-cluster/everysec/ext4"], cuts ? "may-lose" : "");
    if (cuts > 0) {
      EXPECT_EQ(report->parameters["node_cuts"]["cuts"], cuts);
    } else {
      EXPECT_FALSE(report->parameters.contains("node_cuts"));
    }
  }
  MatrixOptions o;
  o.workloads = {"xlog"};
  o.workload_binary = "/bin/powercut-workload";
  o.progress = false;
  o.node_cuts = 1;
  bool ran = false;
  auto refused = RunMatrix(o, [&](const MatrixCell&, const RunOptions&) {
    ran = true;
    return RunOutcome{};
  });
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("the plan has no cluster cell"));
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace powercut::product
