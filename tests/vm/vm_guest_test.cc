// End-to-end tests of the VM crash domain: real kernel, real qemu, real file systems, the NBD
// recorder, dm-log-writes, dm-flakey and live power cuts (label "vm"). Each test boots one or two
// guests; the workloads are shell loops over coreutils, so what they promise is plain:
//   fdatasync: append a line, fdatasync it (dd conv=fdatasync), ack;
//   nobarrier: append a line, ack (the page cache holds it);
//   odirect:   overwrite a block of a zero-filled, synced file with O_DIRECT, ack (no flush).
// Skips (with the reason) only when qemu or the guest kernel cannot be had.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>

#include "base/hash.h"
#include "base/process.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/check/engine.h"
#include "harness/trace/manifest.h"
#include "harness/trace/trace_reader.h"
#include "harness/trace/trace_replay.h"
#include "harness/vm/warm/vm_run.h"
#include "tests/vm/vm_temp_dir.h"
#include "tests/vm/vm_test_env.h"

namespace powercut::vm {
namespace {

namespace fs = std::filesystem;
using ::testing::IsSupersetOf;

constexpr int kCommits = 8;

std::string FdatasyncWorkload(int n) {
  return fmt::format(
      "f=$POWERCUT_DIR/log; : > $f; sync $f $POWERCUT_DIR; "
      "for i in $(seq 1 {}); do echo \"rec $i\" | "
      "dd of=$f oflag=append conv=notrunc,fdatasync status=none || exit 1; "
      "echo \"ack $i\" >&$POWERCUT_ACK_FD; done",
      n);
}

std::string NoBarrierWorkload(int n) {
  return fmt::format(
      "f=$POWERCUT_DIR/log; : > $f; sync $f $POWERCUT_DIR; "
      "for i in $(seq 1 {}); do echo \"rec $i\" >> $f; echo \"ack $i\" >&$POWERCUT_ACK_FD; done",
      n);
}

// Prints `have i` for every whole line "rec i" (lines torn by the crash do not match).
constexpr char kLogChecker[] =
    "f=$POWERCUT_DIR/log; [ -f $f ] && sed -n 's/^rec \\([0-9]*\\)$/have \\1/p' $f; exit 0";

// kLogChecker on a cut image, in place (the image is the test's own copy).
CheckSpec LogCheckOf(harness::FsKind fs, const std::string& image) {
  return {.fs = fs,
          .sector = harness::kDefaultSectorFormat,
          .image = image,
          .copy_image = false,
          .checker = kLogChecker,
          .mount_options = "",
          .timeout = std::chrono::seconds(300),
          .keep_paths = {}};
}

std::string ODirectWorkload(int n) {
  return fmt::format(
      "f=$POWERCUT_DIR/data; dd if=/dev/zero of=$f bs=4096 count={} conv=fsync status=none; "
      "sync $POWERCUT_DIR; "
      "for i in $(seq 1 {}); do printf 'blk %d\\n' $i | "
      "dd of=$f bs=4096 seek=$i count=1 oflag=direct conv=notrunc,sync status=none || exit 1; "
      "echo \"ack $i\" >&$POWERCUT_ACK_FD; done",
      n + 1, n);
}

std::string ODirectChecker(int n) {
  return fmt::format(
      "f=$POWERCUT_DIR/data; [ -f $f ] || exit 0; for i in $(seq 1 {}); do "
      "b=$(dd if=$f bs=4096 skip=$i count=1 status=none | tr -d '\\000'); "
      "[ \"$b\" = \"blk $i\" ] && echo have $i; done; exit 0",
      n);
}

std::string HashOf(const std::string& path) {
  auto h = powercut::HashFile(path);
  return h.ok() ? h->Hex() : std::string(h.status().message());
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class VmTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto env = testing::PrepareTestVm();
    if (!env.ok()) {
      skip_reason_ = new std::string(env.status().message());
      return;
    }
    env_ = new VmEnvironment(*env);
    fmt::print("guest kernel {} ({}), accel {}, initramfs {} ({} bytes)\n", env_->kernel.release,
               env_->kernel.package_version, AccelName(env_->accel), env_->initramfs.path,
               env_->initramfs.bytes);
  }

  void SetUp() override {
    if (skip_reason_ != nullptr) GTEST_SKIP() << *skip_reason_;
  }

  absl::StatusOr<RunResult> Run(RunSpec spec) {
    spec.output_dir = dir_.path();
    spec.timeout = std::chrono::seconds(240);
    auto r = RunInVm(*env_, spec);
    if (r.ok()) {
      fmt::print("run: boot to agent {:.1f} s, wall {:.1f} s, {} acks, {} trace entries\n",
                 r->boot_seconds, r->wall_seconds, r->host_acks.size(), r->trace_entries);
    }
    return r;
  }

  // The engine's verdicts for one model on a trace recorded on ext4.
  harness::ModelResult Check(const std::string& trace, const std::string& checker,
                             harness::CacheMode mode) {
    harness::CheckOptions o;
    o.trace_path = trace;
    o.checker = checker;
    o.fs = harness::FsKind::kExt4;
    o.models = {harness::CacheModel{.mode = mode}};
    o.states.max_exhaustive = 4;
    o.states.samples = 8;
    o.states.torn = false;
    o.points.flushes = false;  // ack points are where durability is promised
    o.workers = 2;
    o.work_dir = dir_ / "engine";
    auto report = harness::RunCheck(o);
    EXPECT_TRUE(report.ok()) << report.status();
    if (!report.ok() || report->results.empty()) return {};
    const auto& m = report->results[0];
    fmt::print("engine: cache {}: {} points, {} states, {} violations\n", m.model.Name(), m.points,
               m.states, m.violations);
    return m;
  }

  static VmEnvironment* env_;
  static std::string* skip_reason_;
  VmTempDir dir_;
};

VmEnvironment* VmTest::env_ = nullptr;
std::string* VmTest::skip_reason_ = nullptr;

TEST_F(VmTest, BootsRunsATrivialWorkloadAndPowersOff) {
  RunSpec spec;
  spec.command = "test -d \"$POWERCUT_DIR\" && test \"$POWERCUT_ACK_FD\" = 3 && echo ack 1 >&3";
  spec.recording = Recording::kNone;
  auto r = Run(spec);
  ASSERT_TRUE(r.ok()) << r.status();
  fmt::print("boot time: {:.2f} s to a ready guest agent (guest uptime {:.2f} s), accel {}\n",
             r->boot_seconds, r->guest.ready_seconds, AccelName(r->accel));
  EXPECT_EQ(r->guest.exit_code, 0);
  EXPECT_EQ(r->guest.device_cache, "write back");
  // The default disk is 512e, as the guest's block layer sees it.
  EXPECT_EQ(r->guest.logical_block_size, 512u);
  EXPECT_EQ(r->guest.physical_block_size, 4096u);
  EXPECT_THAT(r->host_acks, ::testing::ElementsAre("1"));
  EXPECT_GT(r->boot_seconds, 0);
}

TEST_F(VmTest, AFailingStepNamesItselfAndQuotesTheConsole) {
  RunSpec spec;
  spec.command = "true";
  spec.recording = Recording::kNone;
  spec.mount_options = "no_such_option";
  auto r = Run(spec);
  ASSERT_FALSE(r.ok());
  std::string msg(r.status().message());
  EXPECT_THAT(msg, ::testing::HasSubstr("guest step mount failed"));
  EXPECT_THAT(msg, ::testing::HasSubstr("powercut-init:"));  // console lines
}

// One run, two recorders of the same writes: dm-log-writes in the guest on top of the NBD disk.
// Both traces replay to the final image, and the fdatasync workload passes under off and on.
TEST_F(VmTest, FdatasyncWorkloadRecordedByNbdAndDmLogWritesAgreesAndPasses) {
  RunSpec spec;
  spec.command = FdatasyncWorkload(kCommits);
  spec.recording = Recording::kNbd;
  spec.also_log_writes = true;
  auto r = Run(spec);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->guest.exit_code, 0);
  ASSERT_EQ(r->host_acks.size(), static_cast<size_t>(kCommits));
  EXPECT_GT(r->nbd_flushes, static_cast<uint64_t>(kCommits));  // each fdatasync is a FLUSH

  EXPECT_EQ(r->guest.logical_block_size, 512u);
  EXPECT_EQ(r->guest.physical_block_size, 4096u);
  // Both manifests name the base image relative to their folder, and say how the disk and its
  // file system were made: 512e, ext4 with 4 KiB blocks on the 512 MiB default disk.
  for (const std::string& manifest : {r->manifest, r->log_writes_manifest}) {
    auto m = harness::ReadManifest(manifest);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(m->base_image, "base.img") << manifest;
    EXPECT_EQ(m->block_size, 512u) << manifest;
    EXPECT_EQ(m->logical_sector, 512u) << manifest;
    EXPECT_EQ(m->physical_sector, 4096u) << manifest;
    EXPECT_EQ(m->fs, "ext4") << manifest;
    EXPECT_EQ(m->mkfs_command, "mkfs.ext4 -F -q {image}") << manifest;
    EXPECT_EQ(m->fs_block_size, 4096u) << manifest;
    EXPECT_EQ(m->base_image_bytes, 512ull << 20) << manifest;
  }
  const std::string final_hash = HashOf(r->final_image);
  for (const std::string& trace : {r->trace, r->log_writes_trace}) {
    auto file = harness::TraceFile::Open(trace);
    ASSERT_TRUE(file.ok()) << file.status();
    // (The kernel's log also ends with its own mark "dm-log-writes-end".)
    size_t ack_marks = 0;
    for (const auto& e : (*file)->trace().entries) {
      ack_marks += e.is_mark() && e.mark.rfind("ack:", 0) == 0 ? 1 : 0;
    }
    EXPECT_EQ(ack_marks, static_cast<size_t>(kCommits)) << trace;
    std::string replayed = dir_ / "replayed.img";
    auto applied = harness::ReplayTrace(**file, r->base_image, replayed, {});
    ASSERT_TRUE(applied.ok()) << applied.status();
    EXPECT_EQ(HashOf(replayed), final_hash) << trace << " does not replay to the final image";
    fs::remove(replayed);
  }
  EXPECT_EQ(Check(r->trace, kLogChecker, harness::CacheMode::kOff).violations, 0u);
  EXPECT_EQ(Check(r->trace, kLogChecker, harness::CacheMode::kOn).violations, 0u);
}

TEST_F(VmTest, WriteWithoutBarrierLosesAcksUnderOffAndOn) {
  RunSpec spec;
  spec.command = NoBarrierWorkload(kCommits);
  auto r = Run(spec);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->host_acks.size(), static_cast<size_t>(kCommits));
  EXPECT_GT(Check(r->trace, kLogChecker, harness::CacheMode::kOff).violations, 0u);
  EXPECT_GT(Check(r->trace, kLogChecker, harness::CacheMode::kOn).violations, 0u);
}

// O_DIRECT alone: the write is complete on the device, but no FLUSH follows. Durable only when
// the drive has no volatile cache: needs the completion order of the NBD recorder.
TEST_F(VmTest, ODirectIntoAZeroFilledFilePassesOffAndFailsOn) {
  RunSpec spec;
  spec.command = ODirectWorkload(kCommits);
  auto r = Run(spec);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->host_acks.size(), static_cast<size_t>(kCommits));
  EXPECT_EQ(Check(r->trace, ODirectChecker(kCommits), harness::CacheMode::kOff).violations, 0u);
  EXPECT_GT(Check(r->trace, ODirectChecker(kCommits), harness::CacheMode::kOn).violations, 0u);
}

TEST_F(VmTest, FlakeyDropWritesAtARandomAckKeepsEveryEarlierAck) {
  std::mt19937 rng(static_cast<unsigned>(std::random_device{}()));
  const int cut_at = 1 + static_cast<int>(rng() % (kCommits - 1));
  fmt::print("dm-flakey drop_writes after ack {}\n", cut_at);
  RunSpec spec;
  spec.command = FdatasyncWorkload(kCommits);
  spec.recording = Recording::kNone;
  spec.flakey = vm::FlakeyMode::kDropWrites;
  spec.flakey_after_acks = cut_at;
  spec.checker = kLogChecker;
  auto r = Run(spec);
  ASSERT_TRUE(r.ok()) << r.status();
  // Acks the paused workload had already written count as before the cut.
  ASSERT_GE(r->guest.acks_before_cut, cut_at);
  EXPECT_EQ(r->guest.checker_exit_code, 0);
  std::vector<std::string> must_have(r->guest.acked.begin(),
                                     r->guest.acked.begin() + r->guest.acks_before_cut);
  EXPECT_THAT(r->guest.have, IsSupersetOf(must_have));
  // The writes after the cut went nowhere: the last commits are gone.
  EXPECT_LT(r->guest.have.size(), static_cast<size_t>(kCommits));
}

TEST_F(VmTest, FlakeyErrorWritesFailsTheCommitAndNothingLaterIsAcked) {
  constexpr int kCutAt = 3;
  RunSpec spec;
  spec.command = FdatasyncWorkload(kCommits);
  spec.recording = Recording::kNone;
  spec.flakey = vm::FlakeyMode::kErrorWrites;
  spec.flakey_after_acks = kCutAt;
  spec.checker = kLogChecker;
  auto r = Run(spec);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NE(r->guest.exit_code, 0) << "a commit after error_writes must fail";
  // At most the commit already in flight when the table switched can still have been acked.
  ASSERT_GE(r->guest.acks_before_cut, kCutAt);
  EXPECT_LE(r->guest.acks, static_cast<uint64_t>(r->guest.acks_before_cut + 1));
  EXPECT_LT(r->guest.acks, static_cast<uint64_t>(kCommits));
}

#ifdef POWERCUT_WORKLOAD_PATH
// The project's WAL under dm-flakey error_writes: the commit whose barrier fails returns an error,
// the WAL fences itself, and no commit after it is acknowledged (one in flight may complete).
TEST_F(VmTest, WalCommitFailsUnderErrorWritesAndNothingLaterIsAcked) {
  constexpr int kCutAt = 5;
  RunSpec spec;
  spec.command =
      fmt::format("{} wal run --barrier fdatasync --threads 1 --count 200", POWERCUT_WORKLOAD_PATH);
  spec.recording = Recording::kNone;
  spec.flakey = vm::FlakeyMode::kErrorWrites;
  spec.flakey_after_acks = kCutAt;
  spec.checker = "true";
  auto r = Run(spec);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NE(r->guest.exit_code, 0) << "the WAL must report the failed commit";
  ASSERT_GE(r->guest.acks_before_cut, kCutAt);
  fmt::print("WAL: {} acks before the switch, {} in all, exit {}\n", r->guest.acks_before_cut,
             r->guest.acks, r->guest.exit_code);
  EXPECT_LE(r->guest.acks, static_cast<uint64_t>(r->guest.acks_before_cut + 1));
}
#endif

// Live power cut at a seeded random write completion after a seeded random ack, disk cache on
// (each unflushed write kept, dropped or torn by the seed); one fresh guest then replays the
// journals of all the cut images and runs the checker on each. POWERCUT_VM_CUT_SEEDS overrides
// the number of seeds (default 10: 10 recording boots + 1 checking boot).
TEST_F(VmTest, LivePowerCutRandomKeepsEveryAckOfTheFdatasyncWorkload) {
  int seeds = 10;
  if (const char* e = std::getenv("POWERCUT_VM_CUT_SEEDS")) seeds = std::max(1, std::atoi(e));
  struct Cut {
    int seed;
    RunResult run;
    std::string image;
  };
  std::vector<Cut> cuts;
  for (int seed = 1; seed <= seeds; ++seed) {
    RunSpec spec;
    spec.command = FdatasyncWorkload(30);
    spec.cut.when = CutSpec::When::kRandom;
    spec.cut.random_max_acks = 12;
    spec.cut.random_max_writes = 8;
    spec.cut.seed = static_cast<uint64_t>(seed);
    spec.cut.model = harness::CacheModel{.mode = harness::CacheMode::kOn};
    spec.disk_bytes = 32ull << 20;
    auto r = Run(spec);
    ASSERT_TRUE(r.ok()) << r.status();
    if (!r->power_cut) {
      fmt::print("seed {}: the guest powered off before the cut\n", seed);
      continue;
    }
    // Keep the cut image; the next run reuses the output folder.
    std::string image = dir_ / fmt::format("cut-{}.img", seed);
    fs::rename(r->final_image, image);
    cuts.push_back({seed, *r, image});
  }
  std::vector<CheckSpec> checks;
  for (const Cut& c : cuts) checks.push_back(LogCheckOf(harness::FsKind::kExt4, c.image));
  auto results = CheckImagesInVm(*env_, checks);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), cuts.size());
  int exercised = 0;
  uint64_t dropped_or_torn = 0;
  for (size_t i = 0; i < cuts.size(); ++i) {
    const RunResult& r = cuts[i].run;
    const GuestResult& check = (*results)[i];
    fmt::print(
        "seed {}: cut after {} acks with {} unflushed writes ({} kept, {} dropped, {} torn); "
        "the checker has {}\n",
        cuts[i].seed, r.host_acks.size(), r.cut_report.candidates, r.cut_report.kept,
        r.cut_report.dropped, r.cut_report.torn, check.have.size());
    ASSERT_TRUE(check.ok) << "seed " << cuts[i].seed << ": " << check.failed_step << ": "
                          << check.error;
    EXPECT_EQ(check.checker_exit_code, 0);
    EXPECT_FALSE(r.host_acks.empty()) << "seed " << cuts[i].seed;
    EXPECT_THAT(check.have, IsSupersetOf(r.host_acks)) << "seed " << cuts[i].seed;
    exercised += r.cut_report.candidates > 0 ? 1 : 0;
    dropped_or_torn += r.cut_report.dropped + r.cut_report.torn;
  }
  // The cache model had something to decide at most cuts (else "on" was not exercised).
  EXPECT_GE(exercised * 10, seeds * 8)
      << exercised << " of " << seeds << " seeds cut with unflushed writes";
  EXPECT_GT(dropped_or_torn, 0u) << "no seed dropped or tore an unflushed write";
}

// xfs and btrfs: the fdatasync workload recorded by the NBD server (mkfs on the image before the
// guest boots), cut at a random write completion with the cache on, and both images checked in
// one fresh guest (the kernel replays the xfs log / the btrfs log tree).
TEST_F(VmTest, XfsAndBtrfsKeepEveryAckAcrossALivePowerCut) {
  struct Cut {
    harness::FsKind fs;
    RunResult run;
    std::string image;
  };
  std::vector<Cut> cuts;
  for (const harness::FsKind kind : {harness::FsKind::kXfs, harness::FsKind::kBtrfs}) {
    const std::string fs_name = harness::FsName(kind);
    RunSpec spec;
    spec.fs = kind;
    spec.command = FdatasyncWorkload(kCommits);
    spec.cut.when = CutSpec::When::kRandom;
    spec.cut.random_max_acks = kCommits / 2;
    spec.cut.random_max_writes = 4;
    spec.cut.seed = 3;
    spec.cut.model = harness::CacheModel{.mode = harness::CacheMode::kOn};
    auto r = Run(spec);
    ASSERT_TRUE(r.ok()) << fs_name << ": " << r.status();
    ASSERT_TRUE(r->power_cut) << fs_name << ": the guest powered off before the cut";
    EXPECT_GT(r->nbd_flushes, 0u) << fs_name;
    auto trace = harness::TraceFile::Open(r->trace);
    ASSERT_TRUE(trace.ok()) << trace.status();
    std::string image = dir_ / fmt::format("{}.img", fs_name);
    fs::rename(r->final_image, image);
    cuts.push_back({kind, *r, image});
  }
  std::vector<CheckSpec> checks;
  for (const Cut& c : cuts) checks.push_back(LogCheckOf(c.fs, c.image));
  auto results = CheckImagesInVm(*env_, checks);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), cuts.size());
  for (size_t i = 0; i < cuts.size(); ++i) {
    const RunResult& r = cuts[i].run;
    const GuestResult& check = (*results)[i];
    const char* name = harness::FsName(cuts[i].fs);
    fmt::print("{}: cut after {} acks with {} unflushed writes; the checker has {}\n", name,
               r.host_acks.size(), r.cut_report.candidates, check.have.size());
    ASSERT_TRUE(check.ok) << name << ": " << check.failed_step << ": " << check.error;
    EXPECT_EQ(check.checker_exit_code, 0) << name;
    EXPECT_FALSE(r.host_acks.empty()) << name;
    EXPECT_THAT(check.have, IsSupersetOf(r.host_acks)) << name;
    EXPECT_GT(r.cut_report.candidates, 0u) << name;
  }
}

// 512n and 4kn: the guest sees the sectors asked for, both recorders write traces in the logical
// sector (the NBD recorder's sectorsize; the kernel's dm-log-writes takes the device's), both
// replay to the final image, and the manifests say what the disk was. Under 4kn every request
// the guest sends is whole 4 KiB sectors; xfs is made with the physical sector as its own.
TEST_F(VmTest, SectorFormatsReachTheGuestAndBothRecorders) {
  for (const harness::SectorFormat format :
       {harness::SectorFormat::k512n, harness::SectorFormat::k4kn}) {
    const harness::DiskGeometry g = harness::GeometryOf(format);
    const char* name = harness::SectorFormatName(format);
    RunSpec spec;
    spec.fs = harness::FsKind::kXfs;
    spec.sector = format;
    spec.command = FdatasyncWorkload(3);
    spec.also_log_writes = true;
    auto r = Run(spec);
    ASSERT_TRUE(r.ok()) << name << ": " << r.status();
    ASSERT_EQ(r->guest.exit_code, 0) << name;
    EXPECT_EQ(r->guest.logical_block_size, g.logical_sector) << name;
    EXPECT_EQ(r->guest.physical_block_size, g.physical_sector) << name;
    EXPECT_EQ(r->geometry, g) << name;
    const std::string final_hash = HashOf(r->final_image);
    for (const std::string& trace : {r->trace, r->log_writes_trace}) {
      auto file = harness::TraceFile::Open(trace);
      ASSERT_TRUE(file.ok()) << file.status();
      EXPECT_EQ((*file)->trace().sector_size, g.logical_sector) << name << " " << trace;
      auto m = harness::ReadManifest(harness::ManifestPathFor(trace));
      ASSERT_TRUE(m.ok()) << m.status();
      EXPECT_EQ(m->block_size, g.logical_sector) << name << " " << trace;
      EXPECT_EQ(m->logical_sector, g.logical_sector) << name << " " << trace;
      EXPECT_EQ(m->physical_sector, g.physical_sector) << name << " " << trace;
      EXPECT_EQ(m->fs, "xfs") << name;
      EXPECT_EQ(m->mkfs_command,
                fmt::format("mkfs.xfs -f -q -s size={} {{image}}", g.physical_sector))
          << name;
      EXPECT_EQ(m->fs_block_size, 4096u) << name;
      std::string replayed = dir_ / "replayed.img";
      auto applied = harness::ReplayTrace(**file, r->base_image, replayed, {});
      ASSERT_TRUE(applied.ok()) << applied.status();
      EXPECT_EQ(HashOf(replayed), final_hash) << name << ": " << trace;
      fs::remove(replayed);
    }
  }
}

#ifdef POWERCUT_WORKLOAD_PATH
// A checkout under /tmp (item 7): the guest covers /tmp with tmpfs, yet a workload binary copied
// into a fresh folder there runs in the guest, as workload and as checker, because the guest
// keeps visible every folder the commands name. Nothing is built: the binary is the build's own.
TEST_F(VmTest, AWorkloadBinaryUnderTmpRunsAsWorkloadAndChecker) {
  const fs::path clone = fs::path(dir_.path()) / "clone" / "build" / "workloads";
  ASSERT_EQ(clone.string().rfind("/tmp/", 0), 0u) << clone;
  fs::create_directories(clone);
  const std::string binary = (clone / "powercut-workload").string();
  fs::copy_file(POWERCUT_WORKLOAD_PATH, binary);
  fs::permissions(binary, fs::perms::owner_all, fs::perm_options::add);
  RunSpec spec;
  spec.command = fmt::format("{} wal run --barrier fdatasync --threads 1 --count 5", binary);
  auto r = Run(spec);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->guest.exit_code, 0) << "workload output:\n" << ReadWholeFile(r->workload_log);
  EXPECT_EQ(r->host_acks.size(), 5u);
  EXPECT_TRUE(fs::is_regular_file(r->trace));
  EXPECT_TRUE(fs::is_regular_file(r->manifest));
  EXPECT_GT(r->trace_entries, 5u);
  CheckSpec check{.fs = harness::FsKind::kExt4,
                  .image = r->final_image,
                  .checker = fmt::format("'{}' wal check", binary)};
  auto c = CheckInVm(*env_, check);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->ok) << c->failed_step << ": " << c->error;
  EXPECT_EQ(c->checker_exit_code, 0);
  EXPECT_THAT(c->have, IsSupersetOf(r->host_acks));
}
#endif

}  // namespace
}  // namespace powercut::vm
