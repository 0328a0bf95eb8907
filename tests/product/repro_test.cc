// repro + shrinking, and checking an existing recording, on a synthetic raw-device trace written
// through the real Recorder and checked by a real checker program (raw_log_checker).
#include "harness/product/repro/repro.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "absl/synchronization/mutex.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/check/engine.h"
#include "harness/check/image_check.h"
#include "harness/check/report.h"
#include "harness/fs/fsck.h"
#include "harness/product/cell/cell_result.h"
#include "harness/product/html/html_report.h"
#include "harness/product/run/recordings.h"
#include "harness/product/run/run.h"
#include "harness/state/materialize.h"
#include "harness/trace/manifest.h"
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
  o.fs = {harness::FsKind::kRaw};
  o.checker = RAW_LOG_CHECKER;
  o.models = *harness::ParseCacheModels(cache, "16");
  o.points = *harness::ParsePointSelection("acks");
  o.states = ParseStates("8")->Options();
  o.workers = 2;
  o.exhaustive = true;  // the tests assert full counts
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
  {
    absl::MutexLock lock(&mu);
    ASSERT_EQ(calls.size(), states);
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(calls[i].first, i + 1);    // one call per state, in order
      EXPECT_EQ(calls[i].second, states);  // the total is known from the first call on
    }
    calls.clear();
  }
  // Stopping at the first violation, the states left unchecked count as done: the progress line
  // ends at its total.
  o.exhaustive = false;
  RunOutcome stopped = CheckRecording(log, o);
  ASSERT_TRUE(stopped.ran) << stopped.error;
  absl::MutexLock lock(&mu);
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.back().first, states);
  EXPECT_EQ(calls.back().second, states);
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

// Item 9: a checker that does not speak the protocol, or cannot start, is exit 2 with the line
// quoted, never "lost 1 of 1 acked commits".
TEST(RunCommand, ABrokenCheckerIsExitTwoQuotingTheLine) {
  TempDir dir;
  std::string log = Record(dir, harness::RawLogBarrier::kFlushBeforeAck, 3);
  std::string json = dir.File("r.json");
  auto run = [&](const std::string& checker, const std::string& flags) {
    return RunCommand(fmt::format("{} run --trace {} --fs raw --workload x --checker {} {} --quiet",
                                  POWERCUT_BIN, log, checker, flags));
  };
  for (const std::string line : {"hello world", "have", "have 1 2", "HAVE 2"}) {
    auto r = run(fmt::format("\"echo '{}'\"", line), "--cache off,on --json " + json);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_THAT(r.output, HasSubstr("COULD NOT RUN (checker-protocol)")) << line;
    EXPECT_THAT(r.output, HasSubstr(fmt::format("is not the protocol: \"{}\"", line)));
    EXPECT_EQ(r.output.find("lost"), std::string::npos) << r.output;
    nlohmann::json j = nlohmann::json::parse(ReadFile(json));
    EXPECT_EQ(j["run"]["error_kind"], "checker-protocol");
  }
  // Broken on some images only: those states could not be checked, the rest is judged; no
  // violation, so exit 2 (not everything was checked), and the JSON counts them.
  auto r = run(fmt::format("'{} | sed \"s/^have 2$/have two!/\"'", RAW_LOG_CHECKER),
               "--cache off --points every --max-unchecked 1000 --json " + json);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("could not be checked"));
  EXPECT_THAT(r.output, HasSubstr("\"have two!\""));
  nlohmann::json j = nlohmann::json::parse(ReadFile(json));
  EXPECT_EQ(j["run"]["status"], "incomplete");
  EXPECT_GT(j["run"]["could_not_check"].get<int>(), 0);
  EXPECT_LT(j["run"]["could_not_check"].get<int>(), j["results"][0]["states"].get<int>());
  EXPECT_EQ(j["results"][0]["violations"], 0);

  for (const char* checker : {"powercut-no-such-checker", "/dev/null"}) {
    r = run(checker, "");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_THAT(r.output, HasSubstr("COULD NOT RUN (checker-cannot-start)"));
    EXPECT_THAT(r.output, HasSubstr("checker cannot start (exit 12"));
  }
  // `powercut check` says the same with exit 2.
  r = RunCommand(
      fmt::format("{} check --trace {} --checker 'echo hello world'", POWERCUT_BIN, log));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"hello world\""));
}

// Every flag is checked before the VM boots (no --trace: a flag that slipped through would boot
// the VM and the test would notice the time and the message), with one vocabulary.
TEST(RunCommand, EveryFlagIsValidatedBeforeTheVmBoots) {
  struct Case {
    std::string flags, message;
  };
  std::string points_message = "--points bogus: \"bogus\" is not a crash-point choice: " +
                               std::string(harness::kPointChoices);
  for (const Case& c : std::vector<Case>{
           {"--atomic 1000", "--atomic 1000: expected 512 or 4096"},
           {"--points bogus", points_message},
           {"--states 0", "--states 0: expected exhaustive or a positive number"},
           {"--states many", "--states many: expected exhaustive"},
           {"--cache sometimes",
            "--cache sometimes: \"sometimes\" is not a cache model: off, on, "
            "lying or all"},
           {"--window 16parsecs", "--window 16parsecs: lying window"},
           {"--fs ntfs",
            "--fs 'ntfs': unknown file system; expected one of raw, ext4, xfs, btrfs, f2fs"},
           {"--recordings-cap lots", "--recordings-cap lots: expected a size"},
           {"--cache off --expect on=survives", "--expect on=survives: cache on is not checked"},
           {"--cache off,on --expect off=survives", "no verdict for cache on"},
           {"--cache off --expect off=fine", "the verdict is survives, loses or may-lose"},
       }) {
    for (const char* command : {"run --workload true --checker true", "matrix --workloads xlog"}) {
      if (std::string(command).rfind("matrix", 0) == 0 &&
          (c.flags.find("--expect") != std::string::npos ||
           c.flags.find("--fs") != std::string::npos)) {
        continue;  // run-only flags; matrix --fs has its own test (Plan)
      }
      auto start = std::chrono::steady_clock::now();
      auto r = RunCommand(fmt::format("{} {} {} --quiet", POWERCUT_BIN, command, c.flags));
      EXPECT_EQ(r.exit_code, 2) << command << " " << c.flags << ": " << r.output;
      EXPECT_THAT(r.output, HasSubstr(c.message)) << command << " " << c.flags;
      EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << c.flags;
    }
  }
  // One list of choices per message: `--points bogus` names them once.
  auto r = RunCommand(
      fmt::format("{} run --workload true --checker true --points bogus --quiet", POWERCUT_BIN));
  EXPECT_EQ(r.output.find("every"), r.output.rfind("every")) << r.output;
  r = RunCommand(fmt::format("{} check --trace x.log --checker true --points bogus", POWERCUT_BIN));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr(points_message));
  r = RunCommand(fmt::format("{} check --trace x.log --checker true --atomic 1000", POWERCUT_BIN));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--atomic 1000: expected 512 or 4096"));
}

// Item 10: no expectation unless given; with --expect the exit status says whether each model
// matched it; the timeline marks the worst state, the one the table's "lost max" counts.
TEST(RunCommand, ExpectationsOnlyWhenGivenAndTheTimelineMarksTheWorstState) {
  TempDir dir;
  std::string log = Record(dir, harness::RawLogBarrier::kNone, 6);
  auto run = [&](const std::string& extra) {
    return RunCommand(fmt::format(
        "{} run --trace {} --fs raw --cache off,on --workload x --checker {} --html {} --json {} "
        "--recordings-cap 0 --quiet --exhaustive {}",
        POWERCUT_BIN, log, RAW_LOG_CHECKER, dir.File("r.html"), dir.File("r.json"), extra));
  };
  auto r = run("");
  EXPECT_EQ(r.exit_code, 1) << r.output;  // violations, no expectation: the raw rule
  std::string html = ReadFile(dir.File("r.html"));
  EXPECT_EQ(html.find("UNEXPECTED"), std::string::npos);
  EXPECT_EQ(html.find("expected survives"), std::string::npos);
  EXPECT_THAT(html, HasSubstr("violations (no expectation given)"));
  nlohmann::json j = nlohmann::json::parse(ReadFile(dir.File("r.json")));
  EXPECT_TRUE(j["run"]["expect"].is_null());
  // The timeline's crash is the worst state: the table's lost max (6) and its state id.
  const nlohmann::json& on = j["results"][1];
  ASSERT_EQ(on["cache"], "on");
  EXPECT_EQ(on["lost_acks_max"], 6);
  std::string worst = on["worst_violation"]["state"].get<std::string>();
  // Worst first: the first state checked is the worst (docs/cache-models.md).
  EXPECT_EQ(worst, on["first_violation"]["state"].get<std::string>());
  EXPECT_THAT(html, HasSubstr("crash (on): 6 lost"));
  EXPECT_THAT(html, HasSubstr(worst));
  EXPECT_THAT(html, HasSubstr("FAIL 6 / "));

  r = run("--expect off=survives,on=loses");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("every cache model as expected"));
  EXPECT_THAT(ReadFile(dir.File("r.html")), HasSubstr("as expected"));
  j = nlohmann::json::parse(ReadFile(dir.File("r.json")));
  EXPECT_EQ(j["run"]["verdict"], "ok");
  EXPECT_EQ(j["run"]["expect"]["models"]["on"], "loses");

  r = run("--expect off=survives,on=survives");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("UNEXPECTED: cache on: expected survives"));
  EXPECT_THAT(ReadFile(dir.File("r.html")), HasSubstr("UNEXPECTED: cache on: expected survives"));

  r = run("--expect off=loses,on=may-lose");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cache off: expected loses, got no violation"));
}

// `state list` prints the ids `check` tests: the atomic unit is the manifest's physical sector
// (a 512e recording tears at 4 KiB), as in check, not the log's logical sector.
TEST(StateList, TearsAtThePhysicalSectorAsCheckDoes) {
  TempDir dir;
  std::string log = Record(dir, harness::RawLogBarrier::kNone, 3);
  auto manifest = harness::ReadManifest(log + ".manifest.json");
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  manifest->logical_sector = 512;
  manifest->physical_sector = 4096;
  ASSERT_TRUE(harness::WriteManifest(log + ".manifest.json", *manifest).ok());
  auto r = RunCommand(fmt::format("{} state list --trace {} --cache off,on", POWERCUT_BIN, log));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("_off_a4096_p"));
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("_a512_")));
  RunOutcome out = CheckRecording(log, RawOptions("off"));
  ASSERT_TRUE(out.ran) << out.error;
  EXPECT_EQ(out.report->atomic_unit, 4096u);
  r = RunCommand(
      fmt::format("{} state list --trace {} --cache off --atomic 512", POWERCUT_BIN, log));
  EXPECT_THAT(r.output, HasSubstr("_off_a512_p"));
}

// Item 8: the rebuild commands of a finished run still work. The recording of a failing run
// moves beside the report; its commands name it; running one rebuilds exactly the state.
TEST(Recordings, ARebuildCommandWorksAfterTheRunFolderIsGone) {
  TempDir dir;
  std::filesystem::create_directories(dir.File("run"));
  TempDir original;
  std::string log = Record(original, harness::RawLogBarrier::kNone, 6);
  // The "temporary" run folder: trace, manifest and base image as the VM leaves them.
  for (const char* f : {"raw.log", "raw.log.manifest.json", "base.img"}) {
    std::filesystem::copy_file(original.File(f), dir.File(std::string("run/") + f));
  }
  std::string run_trace = dir.File("run/raw.log");
  auto manifest = harness::ReadManifest(run_trace + ".manifest.json");
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  manifest->base_image = "base.img";  // as the VM writes it: beside the trace
  ASSERT_TRUE(harness::WriteManifest(run_trace + ".manifest.json", *manifest).ok());
  RunOutcome out = CheckRecording(run_trace, RawOptions("on"));
  ASSERT_TRUE(out.ran) << out.error;
  ASSERT_FALSE(out.passed());
  // A state the file system's tools could not bring back names the kept recording too (its
  // description is the report's fs_summary).
  out.report->results[0].first_fs_unrecoverable = out.report->results[0].first_violation;
  RecordingStore store;
  store.dir = dir.File("report/recordings");
  KeepRecording(run_trace, "rawlog/none/raw", POWERCUT_BIN, &store, &out);
  std::filesystem::remove_all(dir.File("run"));  // the run ended: its folder is gone

  ASSERT_EQ(store.kept.size(), 1u);
  EXPECT_EQ(out.recording_dir, dir.File("report/recordings/rawlog_none_raw"));
  EXPECT_GT(out.recording_bytes, 0u);
  EXPECT_EQ(store.kept_bytes, out.recording_bytes);
  EXPECT_THAT(store.Summary(), HasSubstr("1 kept in " + dir.File("report/recordings")));
  const harness::Verdict& worst = *out.report->results[0].worst_violation;
  EXPECT_THAT(worst.rebuild, HasSubstr(out.recording_dir + "/trace.log"));
  EXPECT_THAT(worst.Describe(), HasSubstr(out.recording_dir));
  EXPECT_THAT(out.report->results[0].first_fs_unrecoverable->rebuild,
              HasSubstr(out.recording_dir + "/trace.log"));
  // The JSON and the cell (table/HTML) carry the same command.
  nlohmann::json j = harness::ReportToJson(*out.report);
  EXPECT_EQ(j["results"][0]["worst_violation"]["rebuild"], worst.rebuild);
  CellResult cell;
  FillCell(out, &cell);
  EXPECT_EQ(cell.recording, out.recording_dir);
  EXPECT_THAT(cell.models[0].summary, HasSubstr(out.recording_dir + "/trace.log"));
  ASSERT_TRUE(out.timeline.has_value());
  EXPECT_THAT(out.timeline->crashes[0].summary, HasSubstr(out.recording_dir));

  // Run the printed command from elsewhere; compare with the same state rebuilt from the
  // original recording.
  auto r = RunCommand(fmt::format("cd {} && {}", dir.path(), worst.rebuild));
  ASSERT_EQ(r.exit_code, 0) << worst.rebuild << "\n" << r.output;
  std::string expected = original.File("expected.img");
  ASSERT_TRUE(harness::MaterializeState(log, "", worst.state_id, expected).ok());
  std::string rebuilt = ReadFile(dir.File("crash.img"));
  EXPECT_EQ(rebuilt.size(), kDevice);
  EXPECT_TRUE(rebuilt == ReadFile(expected)) << "the rebuilt image differs";
  // And it is the losing image: the checker finds none of the acked commits on it.
  auto check =
      RunCommand(fmt::format("POWERCUT_DEV={} {}", dir.File("crash.img"), RAW_LOG_CHECKER));
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_EQ(check.output.find("have"), std::string::npos) << check.output;
}

TEST(Recordings, OverTheCapTheRecordingIsDroppedAndTheReportSaysSo) {
  TempDir dir;
  std::string log = Record(dir, harness::RawLogBarrier::kNone, 4);
  RunOutcome out = CheckRecording(log, RawOptions("on"));
  ASSERT_FALSE(out.passed());
  RecordingStore store;
  store.dir = dir.File("recordings");
  store.cap_bytes = 1024;
  KeepRecording(log, "rawlog", POWERCUT_BIN, &store, &out);
  EXPECT_TRUE(store.kept.empty());
  ASSERT_EQ(store.dropped.size(), 1u);
  EXPECT_THAT(store.Summary(), HasSubstr("1 dropped: rawlog ("));
  EXPECT_THAT(store.Summary(), HasSubstr("--recordings-cap of 1.0 KiB"));
  EXPECT_EQ(out.recording_dir, "");
  EXPECT_THAT(out.report->results[0].first_violation->rebuild, HasSubstr("recording not kept"));
  EXPECT_TRUE(std::filesystem::exists(log));  // nothing moved
  EXPECT_EQ(store.ToJson()["dropped"][0]["name"], "rawlog");

  EXPECT_EQ(*ParseByteSize("1GiB", "--recordings-cap"), uint64_t{1} << 30);
  EXPECT_EQ(*ParseByteSize("4096", "--recordings-cap"), 4096u);
  EXPECT_EQ(*ParseByteSize("0", "--recordings-cap"), 0u);
  EXPECT_FALSE(ParseByteSize("1 GB", "--recordings-cap").ok());
  EXPECT_FALSE(ParseByteSize("GiB", "--recordings-cap").ok());
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(12), "12 B");
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
