// repro + shrinking, and checking an existing recording, on a synthetic raw-device trace written
// through the real Recorder and checked by a real checker program (raw_log_checker).
#include "harness/product/repro.h"

#include <unistd.h>

#include <filesystem>

#include "absl/synchronization/mutex.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/check/engine.h"
#include "harness/check/fsck.h"
#include "harness/check/image_check.h"
#include "harness/product/html_report.h"
#include "harness/product/run.h"
#include "harness/trace/raw_log.h"
#include "harness/trace/recorder.h"
#include "tests/product/test_util.h"

namespace powercut::product {
namespace {

using ::testing::HasSubstr;
using testing::ReadFile;
using testing::RunCommand;
using testing::TempDir;

constexpr uint64_t kDevice = 256 * 1024;

std::string Record(const TempDir& dir, harness::RawLogBarrier barrier, uint64_t commits) {
  std::string base = dir.File("base.img");
  { std::ofstream create(base); }
  std::filesystem::resize_file(base, kDevice);
  std::string log = dir.File("raw.log");
  auto rec = harness::Recorder::Create({log, 512, kDevice, base});
  EXPECT_TRUE(rec.ok()) << rec.status();
  EXPECT_TRUE(harness::WriteRawLog(**rec, commits, barrier).ok());
  EXPECT_TRUE((*rec)->Finish().ok());
  return log;
}

RunOptions RawOptions(const std::string& cache) {
  RunOptions o;
  o.fs = "raw";
  o.checker = RAW_LOG_CHECKER;
  o.models = *ParseCacheList(cache, "16");
  o.points = *ParsePoints("acks");
  o.states = *ParseStates("8");
  o.workers = 2;
  o.name = "rawlog";
  return o;
}

TEST(CheckRecording, NoBarrierLosesAcksUnderOnAndDrawsTheTimeline) {
  TempDir dir;
  std::string log = Record(dir, harness::RawLogBarrier::kNone, 6);
  RunOutcome out = CheckRecording(log, RawOptions("off,on"));
  ASSERT_TRUE(out.ran) << out.error;
  ASSERT_EQ(out.report->results.size(), 2u);
  EXPECT_EQ(out.report->results[0].violations, 0u);  // off: a completed write is durable
  EXPECT_GT(out.report->results[1].violations, 0u);  // on: nothing was flushed
  EXPECT_EQ(out.report->results[1].lost_acks_max, 6u);
  EXPECT_EQ(out.exit_code(), 1);
  ASSERT_TRUE(out.timeline.has_value());
  EXPECT_EQ(out.timeline->acks.size(), 6u);
  ASSERT_EQ(out.timeline->crashes.size(), 1u);
  EXPECT_EQ(out.timeline->crashes[0].cache, "on");
  EXPECT_FALSE(out.timeline->crashes[0].lost_entries.empty());
  std::string svg = TimelineSvg(*out.timeline, "t");
  EXPECT_THAT(svg, HasSubstr("class=\"lost\""));
  EXPECT_THAT(svg, HasSubstr("class=\"crash\""));
}

TEST(CheckRecording, ReportsEveryJudgedStateOfAKnownTotalForProgress) {
  TempDir dir;
  std::string log = Record(dir, harness::RawLogBarrier::kNone, 6);
  RunOptions o = RawOptions("off,on,lying");
  absl::Mutex mu;
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  o.on_state_checked = [&](uint64_t done, uint64_t total) {
    absl::MutexLock lock(&mu);
    calls.emplace_back(done, total);
  };
  RunOutcome out = CheckRecording(log, o);
  ASSERT_TRUE(out.ran) << out.error;
  uint64_t states = 0;
  for (const auto& m : out.report->results) states += m.states;
  absl::MutexLock lock(&mu);
  ASSERT_EQ(calls.size(), states);
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i].first, i + 1);    // one call per state, in order
    EXPECT_EQ(calls[i].second, states);  // the total is known from the first call on
  }
}

TEST(CheckRecording, FlushedCommitsPass) {
  TempDir dir;
  std::string log = Record(dir, harness::RawLogBarrier::kFlushBeforeAck, 5);
  RunOutcome out = CheckRecording(log, RawOptions("off,on"));
  ASSERT_TRUE(out.ran) << out.error;
  EXPECT_TRUE(out.passed());
  EXPECT_EQ(out.exit_code(), 0);
}

TEST(RunCommand, ACrashingCheckerIsReportedAsSuchAndTheJsonHasTheContract) {
  TempDir dir;
  std::string log = Record(dir, harness::RawLogBarrier::kFlushBeforeAck, 4);
  std::string json = dir.File("r.json");
  auto r = RunCommand(
      fmt::format("{} run --trace {} --fs raw --cache off,on --points acks --states 4 --workload x "
                  "--checker 'kill -SEGV $$' --json {} --quiet",
                  POWERCUT_BIN, log, json));
  // Killed by a signal on every state, also where every write was kept: the checker is broken,
  // so the run could not test anything (exit 2, "checker-crash"), not a violation.
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("COULD NOT RUN (checker-crash)"));
  EXPECT_THAT(r.output, HasSubstr("the checker crashed"));
  nlohmann::json j = nlohmann::json::parse(ReadFile(json));
  ASSERT_EQ(j["results"].size(), 2u);
  for (const auto& m : j["results"]) {
    for (const char* key : {"cache", "states", "violations", "lost_acks_max", "first_violation"}) {
      EXPECT_TRUE(m.contains(key)) << key;
    }
    EXPECT_GT(m["violations"].get<int>(), 0);
    EXPECT_TRUE(m["first_violation"].is_object() || m["first_violation"].is_string());
  }
  EXPECT_EQ(j["run"]["status"], "error");
  EXPECT_EQ(j["run"]["error_kind"], "checker-crash");

  // A checker that fails (exit 1, no signal) on every state stays a violation, with a note.
  r = RunCommand(
      fmt::format("{} run --trace {} --fs raw --cache off --points acks --states 4 --workload x "
                  "--checker false --quiet",
                  POWERCUT_BIN, log));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("the checker failed on every crash state"));

  // The same recording with the real checker passes, and a missing trace is "could not run".
  r =
      RunCommand(fmt::format("{} run --trace {} --fs raw --cache off,on --workload x --checker {} "
                             "--quiet",
                             POWERCUT_BIN, log, RAW_LOG_CHECKER));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(fmt::format("{} run --trace {} --fs raw --workload x --checker {} --quiet",
                             POWERCUT_BIN, dir.File("missing.log"), RAW_LOG_CHECKER));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("missing.log"));
}

TEST(Repro, ShrinksToOneDroppedWriteAndTheBundleRechecksOnItsOwn) {
  TempDir dir;
  std::string log = Record(dir, harness::RawLogBarrier::kNone, 8);
  RunOutcome out = CheckRecording(log, RawOptions("on"));
  ASSERT_TRUE(out.ran) << out.error;
  // The state that drops every unflushed write at the last ack.
  std::string worst;
  for (const auto& v : out.report->results[0].examples) {
    if (v.dropped.size() >= 8) worst = v.state_id;
  }
  if (worst.empty()) {
    auto id = harness::DecodeStateId(out.report->results[0].first_violation->state_id);
    ASSERT_TRUE(id.ok());
    id->state.point = out.report->trace_entries;
    id->state.kept = {harness::SubsetSpec::kNone, 0};
    id->state.torn_entry.reset();
    worst = harness::EncodeStateId(id->trace_hash8, id->state);
  }
  ReproOptions o{.state_id = worst,
                 .trace = log,
                 .bundle = dir.File("bundle"),
                 .checker = RAW_LOG_CHECKER,
                 .fs = harness::FsKind::kRaw,
                 .powercut = POWERCUT_BIN};
  auto r = Repro(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->violates);
  EXPECT_GE(r->dropped.size(), 8u);
  ASSERT_EQ(r->minimal_dropped.size() + (r->minimal_torn ? 1 : 0), 1u) << r->minimal_verdict;
  EXPECT_NE(r->minimal_state_id, worst);
  EXPECT_THAT(r->minimal_verdict, HasSubstr("lost"));
  EXPECT_GT(r->steps.size(), 1u);
  for (const char* f : {"trace.log", "trace.log.manifest.json", "base.img", "state.txt",
                        "README.md", "repro.json"}) {
    EXPECT_TRUE(std::filesystem::exists(dir.File("bundle/") + f)) << f;
  }
  EXPECT_THAT(ReadFile(dir.File("bundle/README.md")), HasSubstr(r->minimal_state_id));
  // Self-contained: move the bundle away from the original trace and re-check it there.
  std::filesystem::rename(dir.File("bundle"), dir.File("moved"));
  std::filesystem::remove(log);
  std::filesystem::remove(dir.File("base.img"));
  auto recheck = RunCommand(
      fmt::format("cd {} && {} repro {} --trace trace.log --checker {} "
                  "--fs raw --recheck",
                  dir.File("moved"), POWERCUT_BIN, r->minimal_state_id, RAW_LOG_CHECKER));
  EXPECT_EQ(recheck.exit_code, 1) << recheck.output;
  EXPECT_THAT(recheck.output, HasSubstr("lost"));
}

TEST(Repro, RejectsAStateOfAnotherTraceAndAPassingStateIsNotShrunk) {
  TempDir dir;
  std::string log = Record(dir, harness::RawLogBarrier::kFlushBeforeAck, 3);
  ReproOptions o{
      .state_id = "pc1_deadbeef_on_a512_p3_kA", .trace = log, .checker = RAW_LOG_CHECKER};
  auto r = Repro(o);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("deadbeef"));
  o.state_id = "garbage";
  EXPECT_FALSE(Repro(o).ok());
}

TEST(Fsck, ACleanExt4PassesAndADamagedOneIsAnFsckViolation) {
  TempDir dir;
  std::string image = dir.File("fs.img");
  ASSERT_EQ(RunCommand(fmt::format("truncate -s 16M {0} && mkfs.ext4 -q -F {0}", image)).exit_code,
            0);
  auto clean = harness::FsckImage(harness::FsKind::kExt4, image);
  ASSERT_TRUE(clean.ok()) << clean.status();
  EXPECT_EQ(*clean, "");
  // Clear the root directory's inode: e2fsck -n reports it (exit 4 or 12, "still has errors").
  ASSERT_EQ(RunCommand(fmt::format("debugfs -w -R 'clri <2>' {}", image)).exit_code, 0);
  auto damaged = harness::FsckImage(harness::FsKind::kExt4, image);
  ASSERT_TRUE(damaged.ok()) << damaged.status();
  EXPECT_THAT(*damaged, HasSubstr("fsck: e2fsck exit "));
  EXPECT_THAT(*damaged, HasSubstr("errors"));
  // The same through the image check --fsck uses: a setup error, so the state is unrecoverable.
  std::filesystem::create_directories(dir.File("mnt"));
  auto out =
      harness::CheckImageFile(image, {.fs = harness::FsKind::kExt4,
                                      .checker = "true",
                                      .mountpoint = dir.File("mnt"),
                                      .before_mount = harness::FsckHook(harness::FsKind::kExt4)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(out->checker.recovered());
  EXPECT_THAT(out->checker.setup_error, HasSubstr("fsck:"));
  auto raw = harness::FsckCommand(harness::FsKind::kRaw, image);
  ASSERT_FALSE(raw.ok());
  EXPECT_THAT(raw.status().message(), HasSubstr("--fsck needs a file system"));
}

}  // namespace
}  // namespace powercut::product
