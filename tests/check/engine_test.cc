// The whole engine on the recorder core: a raw-device log workload written through the Recorder
// in-process, checked by a real checker command (raw_log_checker) under each cache model.
#include "harness/check/engine.h"

#include <chrono>

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/check/checker.h"
#include "harness/check/report.h"
#include "harness/check/state_tally.h"
#include "harness/state/materialize.h"
#include "harness/trace/raw_log.h"
#include "harness/trace/raw_log_format.h"
#include "harness/trace/recorder.h"
#include "tests/harness_testing.h"

namespace powercut::harness {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;

constexpr uint64_t kDevice = 256 * 1024;

class RawLogEngine : public ::testing::Test {
 protected:
  // Records `commits` commits with `barrier` and returns the trace path.
  std::string Record(RawLogBarrier barrier, uint64_t commits = 6) {
    std::string base = dir_.File("base.img");
    testing::MakeImage(base, kDevice);
    std::string log = dir_.File("raw.log");
    Recorder::Options options{log, 512, kDevice, base};
    auto rec = Recorder::Create(options);
    EXPECT_TRUE(rec.ok()) << rec.status();
    EXPECT_TRUE(WriteRawLog(**rec, commits, barrier).ok());
    EXPECT_TRUE((*rec)->Finish().ok());
    return log;
  }

  // Exhaustive by default: most tests assert full counts. The early stop has its own tests.
  CheckReport Check(const std::string& log, const std::string& cache, int workers = 2,
                    bool exhaustive = true) {
    CheckOptions o;
    o.trace_path = log;
    o.checker = RAW_LOG_CHECKER;
    o.workers = workers;
    o.exhaustive = exhaustive;
    o.models = {*ParseCacheModel(cache)};
    o.points.every_entry = true;
    o.work_dir = dir_.File("work");
    auto report = RunCheck(o);
    EXPECT_TRUE(report.ok()) << report.status();
    return report.ok() ? *report : CheckReport{};
  }

  TempDir dir_;
};

TEST_F(RawLogEngine, FlushBeforeAckPassesOffAndOn) {
  std::string log = Record(RawLogBarrier::kFlushBeforeAck);
  for (const char* cache : {"off", "on"}) {
    CheckReport r = Check(log, cache);
    ASSERT_EQ(r.results.size(), 1u);
    EXPECT_EQ(r.results[0].violations, 0u) << cache << "\n" << ReportSummaryTable(r);
    EXPECT_GT(r.results[0].states, r.results[0].points);  // torn variants exist (4096/512 units)
    EXPECT_GT(r.results[0].deduplicated, 0u);
    EXPECT_EQ(r.results[0].lost_acks_max, 0u);
  }
}

TEST_F(RawLogEngine, FuaWritesPassOn) {
  CheckReport r = Check(Record(RawLogBarrier::kFua), "on");
  EXPECT_EQ(r.results[0].violations, 0u) << ReportSummaryTable(r);
}

TEST_F(RawLogEngine, NoBarrierFailsOnButPassesOff) {
  std::string log = Record(RawLogBarrier::kNone);
  CheckReport off = Check(log, "off");
  EXPECT_EQ(off.results[0].violations, 0u) << ReportSummaryTable(off);
  CheckReport on = Check(log, "on");
  const ModelResult& r = on.results[0];
  EXPECT_GT(r.violations, 0u);
  // Nothing is ever flushed: at the last ack all 6 commits can be lost.
  EXPECT_EQ(r.lost_acks_max, 6u);
  ASSERT_TRUE(r.first_violation.has_value());
  EXPECT_FALSE(r.first_violation->lost.empty());
  EXPECT_THAT(r.first_violation->rebuild, HasSubstr("state materialize"));
  EXPECT_THAT(r.first_violation->Describe(), HasSubstr("cache on"));
}

TEST_F(RawLogEngine, AckBeforeWriteFailsOff) {
  CheckReport r = Check(Record(RawLogBarrier::kAckBeforeWrite), "off");
  EXPECT_GT(r.results[0].violations, 0u);
  // The latest point comes first: the last commit (5) was acked before its write.
  EXPECT_EQ(r.results[0].first_violation->lost, (std::vector<std::string>{"5"}));
}

TEST_F(RawLogEngine, LyingCacheLosesEvenFlushedCommits) {
  CheckReport r = Check(Record(RawLogBarrier::kFlushBeforeAck), "lying");
  EXPECT_GT(r.results[0].violations, 0u);
}

TEST_F(RawLogEngine, OneWorkerAndTwoWorkersAgree) {
  std::string log = Record(RawLogBarrier::kNone, 8);
  CheckReport one = Check(log, "on", 1);
  CheckReport two = Check(log, "on", 2);
  EXPECT_EQ(one.results[0].states, two.results[0].states);
  EXPECT_EQ(one.results[0].violations, two.results[0].violations);
  EXPECT_EQ(one.results[0].lost_acks_distribution, two.results[0].lost_acks_distribution);
  EXPECT_EQ(one.results[0].first_violation->state_id, two.results[0].first_violation->state_id);
}

// A flush-epoch log as the kernel's dm-log-writes writes it: commit 0 is a plain write, so it
// is logged only with the next FLUSH (e3), after commit 1's FUA write (e1) that completed later.
//   e0 ack:0 | e1 FUA commit 1 | e2 ack:1 | e3 W commit 0 | e4 FLUSH | e5 FUA commit 2 |
//   e6 ack:2 | e7 FLUSH
// Read as completion order, the crash after ack:0 loses commit 0: a false loss on a write-through
// disk. As flush-epoch order, cache off uses the FLUSH points and the FUA point e5 (nothing plain
// logged before the next FLUSH), not e1 (commit 0's write follows it), and passes.
TEST_F(RawLogEngine, FlushEpochCacheOffUsesOnlyTheFuaPointsTheLogProves) {
  std::string base = dir_.File("base.img");
  testing::MakeImage(base, kDevice);
  std::string log = dir_.File("epoch.log");
  auto rec = Recorder::Create({log, 512, kDevice, base});
  ASSERT_TRUE(rec.ok()) << rec.status();
  Recorder& r = **rec;
  ASSERT_TRUE(r.RecordAck("0").ok());
  ASSERT_TRUE(r.RecordWrite(1 * kRawLogBlock, RawLogRecord(1), true).ok());
  ASSERT_TRUE(r.RecordAck("1").ok());
  ASSERT_TRUE(r.RecordWrite(0, RawLogRecord(0), false).ok());
  ASSERT_TRUE(r.RecordFlush().ok());
  ASSERT_TRUE(r.RecordWrite(2 * kRawLogBlock, RawLogRecord(2), true).ok());
  ASSERT_TRUE(r.RecordAck("2").ok());
  ASSERT_TRUE(r.RecordFlush().ok());
  ASSERT_TRUE(r.Finish().ok());
  CheckOptions o;
  o.trace_path = log;
  o.checker = RAW_LOG_CHECKER;
  o.models = {*ParseCacheModel("off")};
  o.work_dir = dir_.File("work");
  o.exhaustive = true;
  o.order = OrderSemantics::kCompletion;
  auto completion = RunCheck(o);
  ASSERT_TRUE(completion.ok()) << completion.status();
  EXPECT_GT(completion->results[0].violations, 0u);
  o.order = OrderSemantics::kFlushEpoch;
  auto epoch = RunCheck(o);
  ASSERT_TRUE(epoch.ok()) << epoch.status();
  const ModelResult& m = epoch->results[0];
  EXPECT_EQ(m.points, 3u);  // after e4, e5, e7
  EXPECT_EQ(m.violations, 0u) << ReportSummaryTable(*epoch);
  ASSERT_FALSE(m.notes.empty());
  EXPECT_THAT(m.notes.back(), HasSubstr("2 points right after a FLUSH and 1 right after a FUA "
                                        "write"));
  EXPECT_THAT(m.notes.back(), HasSubstr("skipped 1 FUA points"));
  EXPECT_THAT(m.notes.back(), HasSubstr("and 3 other points"));
}

TEST_F(RawLogEngine, ReportsNameTheFirstViolation) {
  CheckReport r = Check(Record(RawLogBarrier::kNone), "on");
  nlohmann::json j = ReportToJson(r);
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_EQ(j["results"][0]["cache"], "on");
  EXPECT_GT(j["results"][0]["violations"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["results"][0]["lost_acks_max"], 6);
  EXPECT_EQ(j["results"][0]["first_violation"]["state"], r.results[0].first_violation->state_id);
  std::string junit = ReportToJunit(r);
  EXPECT_THAT(junit, HasSubstr("<failure"));
  EXPECT_THAT(junit, HasSubstr(r.results[0].first_violation->state_id));
  EXPECT_THAT(ReportSummaryTable(r), HasSubstr("FAIL"));
}

TEST_F(RawLogEngine, ACheckerThatWritesTheRawImageIsReported) {
  std::string log = Record(RawLogBarrier::kFlushBeforeAck, 2);
  CheckOptions o;
  o.trace_path = log;
  o.checker = "printf x >> \"$POWERCUT_DEV\"";
  o.workers = 1;
  o.models = {*ParseCacheModel("off")};
  auto report = RunCheck(o);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->results[0].first_violation.has_value());
  EXPECT_THAT(report->results[0].first_violation->mount_error, HasSubstr("wrote to the raw image"));
}

TEST_F(RawLogEngine, MissingBaseAndBadCheckerOptionsAreClearErrors) {
  std::string base = dir_.File("b.img");
  testing::MakeImage(base, kDevice);
  std::string log = dir_.File("nomanifest.log");
  auto rec = Recorder::Create({log, 512, kDevice});
  ASSERT_TRUE(rec.ok());
  ASSERT_TRUE((*rec)->Finish().ok());
  CheckOptions o;
  o.trace_path = log;
  o.checker = "true";
  EXPECT_THAT(std::string(RunCheck(o).status().message()), HasSubstr("pass --base"));
  EXPECT_THAT(std::string(ParseFsKind("ntfs").status().message()),
              HasSubstr("--fs 'ntfs': unknown file system; expected one of raw, ext4, xfs"));
  o.base_image = base;
  o.fs = FsKind::kXfs;
  o.without_mount = true;
  EXPECT_THAT(std::string(RunCheck(o).status().message()), HasSubstr("ext4 only"));
}

// A broken checker is not data loss: each of these makes every state "could not check" (no
// violation, the line quoted), and past max_could_not_check checker runs the check stops.
TEST_F(RawLogEngine, ACheckerThatDoesNotSpeakTheProtocolIsNotDataLoss) {
  std::string log = Record(RawLogBarrier::kFlushBeforeAck, 3);
  for (const std::string line : {"hello world", "have", "have 1 2", "HAVE 2"}) {
    CheckOptions o;
    o.trace_path = log;
    o.checker = fmt::format("echo '{}'", line);
    o.workers = 2;
    o.models = {*ParseCacheModel("on")};
    o.work_dir = dir_.File("work");
    o.max_could_not_check = 1000000;
    auto report = RunCheck(o);
    ASSERT_TRUE(report.ok()) << report.status();
    const ModelResult& m = report->results[0];
    EXPECT_GT(m.states, 1u);
    EXPECT_EQ(m.could_not_check, m.states) << line;
    EXPECT_EQ(m.violations, 0u) << line;  // not "lost 1 of 1 acked commits"
    EXPECT_TRUE(report->passed());        // no violation; the product layers exit 2 on these
    ASSERT_TRUE(m.first_could_not_check.has_value());
    EXPECT_FALSE(m.first_could_not_check->violation());
    EXPECT_THAT(m.first_could_not_check->could_not_check,
                HasSubstr(fmt::format("line 1 is not the protocol: \"{}\"", line)));
    EXPECT_THAT(m.first_could_not_check->Describe(), HasSubstr("could not check"));
    EXPECT_EQ(ReportToJson(*report)["results"][0]["could_not_check"], m.states);

    // With the default threshold the check stops, quoting the line.
    o.max_could_not_check = 3;
    auto stopped = RunCheck(o);
    ASSERT_FALSE(stopped.ok()) << line;
    EXPECT_TRUE(IsBrokenChecker(stopped.status())) << stopped.status();
    EXPECT_THAT(std::string(stopped.status().message()),
                HasSubstr(fmt::format("not the protocol on 3 crash images, the first: checker "
                                      "stdout line 1 is not the protocol: \"{}\"",
                                      line)));
  }
}

// A system that does not come back is its own outcome: counted apart (`unavailable`, the first
// with its state id, rebuild command, reason and stderr), never a violation, never "could not
// check", and however many states it is, it does not stop the check (--max-unchecked).
TEST_F(RawLogEngine, AnUnavailableSystemIsCountedApartAndDoesNotStopTheCheck) {
  std::string log = Record(RawLogBarrier::kFlushBeforeAck, 3);
  CheckOptions o;
  o.trace_path = log;
  o.checker =
      "echo 'have 1'; echo 'unavailable the cluster did not come back: no quorum answered'; "
      "echo 'node 2: raft: no leader' >&2; exit 1";
  o.workers = 2;
  o.models = {*ParseCacheModel("on")};
  o.work_dir = dir_.File("work");
  o.max_could_not_check = 1;  // one could-not-check run would stop it: these are not
  auto report = RunCheck(o);
  ASSERT_TRUE(report.ok()) << report.status();
  const ModelResult& m = report->results[0];
  EXPECT_GT(m.states, 1u);
  EXPECT_EQ(m.states, m.states_planned);  // not stopped
  EXPECT_EQ(m.unavailable, m.states);
  EXPECT_EQ(m.violations, 0u);
  EXPECT_EQ(m.checker_failures, 0u);
  EXPECT_EQ(m.could_not_check, 0u);
  EXPECT_EQ(m.lost_acks_max, 0u);
  EXPECT_TRUE(report->passed());
  // Nothing came back: not a pass for `run` and `check` (exit 2).
  ASSERT_NE(report->NeverCameBack(), nullptr);
  ASSERT_TRUE(m.first_unavailable.has_value());
  const Verdict& first = *m.first_unavailable;
  EXPECT_EQ(first.unavailable, "the cluster did not come back: no quorum answered");
  EXPECT_THAT(first.stderr_tail, HasSubstr("raft: no leader"));
  EXPECT_THAT(first.rebuild, HasSubstr("--state " + first.state_id));

  nlohmann::json j = ReportToJson(*report)["results"][0];
  EXPECT_EQ(j["unavailable"], m.states);
  EXPECT_EQ(j["violations"], 0);
  EXPECT_EQ(j["first_unavailable"]["state"], first.state_id);
  EXPECT_EQ(j["first_unavailable"]["unavailable"], first.unavailable);
  EXPECT_THAT(j["first_unavailable"]["checker_stderr_tail"].get<std::string>(),
              HasSubstr("raft: no leader"));
  EXPECT_THAT(j["first_unavailable"]["rebuild"].get<std::string>(), HasSubstr(first.state_id));
  EXPECT_TRUE(j["first_violation"].is_null());

  const std::string table = ReportSummaryTable(*report);
  EXPECT_THAT(table, HasSubstr("unavail"));
  EXPECT_THAT(table, HasSubstr(fmt::format("unavailable (on): the system did not come back in {} "
                                           "of {} states",
                                           m.states, m.states)));
  EXPECT_THAT(table, HasSubstr("    node 2: raft: no leader"));
  const std::string junit = ReportToJunit(*report);
  EXPECT_THAT(junit, HasSubstr("name=\"cache=on unavailable\""));
  EXPECT_THAT(junit, HasSubstr("<skipped message=\"the system did not come back in"));
  EXPECT_THAT(junit, HasSubstr("failures=\"0\""));
}

// Some states come back and are judged, the others are counted apart: the violations are the
// judged states' only, and the run is not "never came back".
TEST_F(RawLogEngine, StatesThatComeBackAreJudgedBesideUnavailableOnes) {
  std::string log = Record(RawLogBarrier::kNone, 6);
  CheckOptions o;
  o.trace_path = log;
  // Nothing committed on the image: the "system" does not come back.
  o.checker = fmt::format(
      "out=$({}); if [ -z \"$out\" ]; then echo 'unavailable nothing answered'; exit 1; fi; "
      "echo \"$out\"",
      RAW_LOG_CHECKER);
  o.workers = 2;
  o.exhaustive = true;
  o.models = {*ParseCacheModel("on")};
  o.points.every_entry = true;
  o.work_dir = dir_.File("work");
  auto report = RunCheck(o);
  ASSERT_TRUE(report.ok()) << report.status();
  const ModelResult& m = report->results[0];
  EXPECT_GT(m.unavailable, 0u);
  EXPECT_LT(m.unavailable, m.states);
  EXPECT_GT(m.violations, 0u);  // cache on without a barrier loses acked commits
  EXPECT_LE(m.violations + m.unavailable, m.states);
  ASSERT_TRUE(m.first_violation.has_value());
  EXPECT_EQ(m.first_violation->unavailable, "");
  EXPECT_EQ(report->NeverCameBack(), nullptr);
}

TEST_F(RawLogEngine, ACheckerThatCannotStartStopsTheCheck) {
  std::string log = Record(RawLogBarrier::kFlushBeforeAck, 3);
  for (const char* checker : {"powercut-no-such-checker --check", "/dev/null"}) {
    CheckOptions o;
    o.trace_path = log;
    o.checker = checker;
    o.models = {*ParseCacheModel("off")};
    o.work_dir = dir_.File("work");
    auto report = RunCheck(o);
    ASSERT_FALSE(report.ok()) << checker;
    EXPECT_TRUE(IsBrokenChecker(report.status())) << report.status();
    EXPECT_THAT(std::string(report.status().message()), HasSubstr("checker cannot start (exit 12"));
    EXPECT_THAT(std::string(report.status().message()), HasSubstr(checker));
  }
  // Any other failure is not a broken checker.
  CheckOptions o;
  o.trace_path = dir_.File("missing.log");
  o.checker = "true";
  EXPECT_FALSE(IsBrokenChecker(RunCheck(o).status()));
}

TEST_F(RawLogEngine, TheWorstViolationLosesLostAcksMax) {
  CheckReport r = Check(Record(RawLogBarrier::kNone, 6), "on");
  const ModelResult& m = r.results[0];
  ASSERT_TRUE(m.worst_violation.has_value());
  ASSERT_TRUE(m.first_violation.has_value());
  EXPECT_EQ(m.worst_violation->lost.size(), m.lost_acks_max);
  EXPECT_EQ(m.lost_acks_max, 6u);
  // The states that can lose the most are checked first: the first violation is the worst.
  EXPECT_EQ(m.first_violation->lost.size(), m.lost_acks_max);
  EXPECT_EQ(m.first_violation->state_id, m.worst_violation->state_id);
  EXPECT_EQ(ReportToJson(r)["results"][0]["worst_violation"]["state"], m.worst_violation->state_id);
  // Every state was judged: the worst case itself, not a lower bound.
  EXPECT_TRUE(m.lost_acks_exact());
  EXPECT_EQ(ReportToJson(r)["results"][0]["lost_acks_max_exact"], true);
  EXPECT_THAT(ReportSummaryTable(r), Not(HasSubstr("≥")));
  // Among equals the first in check order: one worker and two agree.
  CheckReport one = Check(Record(RawLogBarrier::kNone, 6), "on", 1);
  EXPECT_EQ(one.results[0].worst_violation->state_id, m.worst_violation->state_id);
}

// Without --exhaustive a model stops at its first violating state in check order: the same
// state, the same counts, whatever the number of workers; and the state the exhaustive check
// names first. The states that can lose the most come first, so the loss reported at the stop is
// the exhaustive worst case here, marked as a lower bound ("≥8") since the rest went unchecked.
TEST_F(RawLogEngine, AModelStopsAtItsFirstViolationWhateverTheWorkers) {
  std::string log = Record(RawLogBarrier::kNone, 8);
  CheckReport all = Check(log, "on", 2, /*exhaustive=*/true);
  const ModelResult& full = all.results[0];
  ASSERT_GT(full.violations, 1u);
  EXPECT_EQ(full.stopped, StopReason::kNone);
  EXPECT_EQ(full.states, full.states_planned);
  for (int workers : {1, 2}) {
    CheckReport r = Check(log, "on", workers, /*exhaustive=*/false);
    const ModelResult& m = r.results[0];
    EXPECT_EQ(m.stopped, StopReason::kFirstViolation) << workers;
    EXPECT_EQ(m.violations, 1u) << workers;
    EXPECT_TRUE(m.complete());
    EXPECT_EQ(m.states_planned, full.states_planned);
    EXPECT_LT(m.states, m.states_planned);
    EXPECT_EQ(m.states_unchecked(), m.states_planned - m.states);
    ASSERT_TRUE(m.first_violation.has_value());
    EXPECT_EQ(m.first_violation->state_id, full.first_violation->state_id) << workers;
    EXPECT_EQ(m.examples.size(), 1u);
    // Only the states up to the first violation count: a pass after it is never folded in.
    uint64_t counted = 0;
    for (const auto& [lost, n] : m.lost_acks_distribution) counted += n;
    EXPECT_EQ(counted, m.states);
    // The first state checked: the latest point with every volatile write dropped, which loses
    // every ack (nothing was ever flushed).
    EXPECT_THAT(m.first_violation->state_id, HasSubstr("_kN"));
    EXPECT_EQ(m.first_violation->acked_before, 8u);
    EXPECT_EQ(m.states, 1u) << ReportSummaryTable(r);
    EXPECT_EQ(m.lost_acks_max, full.lost_acks_max);
    EXPECT_EQ(m.lost_acks_max, 8u);
    EXPECT_FALSE(m.lost_acks_exact());
    nlohmann::json j = ReportToJson(r)["results"][0];
    EXPECT_EQ(j["lost_acks_max"], 8);
    EXPECT_EQ(j["lost_acks_max_exact"], false);
    EXPECT_THAT(ReportSummaryTable(r), HasSubstr("≥8 "));
    EXPECT_THAT(ReportSummaryTable(r), HasSubstr("≥L: "));
    EXPECT_THAT(ReportToJunit(r), HasSubstr("losing 8 acked commits"));
    EXPECT_EQ(j["stopped"], "first_violation");
    EXPECT_EQ(j["complete"], true);
    EXPECT_EQ(j["states_checked"], m.states);
    EXPECT_EQ(j["states_planned"], m.states_planned);
    EXPECT_EQ(j["states_unchecked"], m.states_planned - m.states);
    EXPECT_THAT(ReportSummaryTable(r), HasSubstr(fmt::format("1of{}*", m.states_planned)));
    EXPECT_THAT(ReportSummaryTable(r), HasSubstr("NofM*: "));
  }
  // Deeper in the plan: a checker that hides commit 1 while commit 3 is missing (the log itself
  // is flushed before every ack, so cache on loses nothing else) violates only at the points
  // between ack 1 and commit 3's flush, which come after every later point's states.
  CheckOptions o;
  o.trace_path = Record(RawLogBarrier::kFlushBeforeAck, 8);
  o.checker = fmt::format(
      "out=$({}); if echo \"$out\" | grep -qx 'have 3'; then echo \"$out\"; else echo \"$out\" "
      "| grep -vx 'have 1'; fi",
      RAW_LOG_CHECKER);
  o.models = {*ParseCacheModel("on")};
  o.points.every_entry = true;
  o.work_dir = dir_.File("work");
  std::vector<ModelResult> runs;
  for (int workers : {1, 2}) {
    o.workers = workers;
    auto r = RunCheck(o);
    ASSERT_TRUE(r.ok()) << r.status();
    runs.push_back(r->results[0]);
  }
  EXPECT_GT(runs[0].states, 2u);
  EXPECT_EQ(runs[0].states, runs[1].states);
  EXPECT_EQ(runs[0].checked, runs[1].checked);
  EXPECT_EQ(runs[0].deduplicated, runs[1].deduplicated);
  EXPECT_EQ(runs[0].lost_acks_distribution, runs[1].lost_acks_distribution);
  ASSERT_TRUE(runs[0].first_violation && runs[1].first_violation);
  EXPECT_EQ(runs[0].first_violation->state_id, runs[1].first_violation->state_id);
  EXPECT_EQ(runs[0].first_violation->lost, (std::vector<std::string>{"1"}));
  o.exhaustive = true;
  auto full_late = RunCheck(o);
  ASSERT_TRUE(full_late.ok()) << full_late.status();
  EXPECT_EQ(runs[0].first_violation->state_id, full_late->results[0].first_violation->state_id);
  EXPECT_GT(full_late->results[0].violations, 1u);
}

// The plan's head (the latest point's worst state and the one that can lose more) is folded
// whatever it finds: a violation in its first state stops the tally only after the second, and
// the loss reported is the larger; past the head the first violation stops it.
TEST(StateTally, FoldsTheHeadWhateverItFindsThenStopsAtTheFirstViolation) {
  auto lose = [](const char* id, std::vector<std::string> lost) {
    return Verdict{.state_id = id, .lost = std::move(lost)};
  };
  {
    ModelResult m;
    absl::flat_hash_set<Hash128> images;
    StateTally tally(&m, 5, /*stop_at_violation=*/true, /*min_states=*/2, &images);
    tally.Add(1, Hash128{2, 0}, lose("s1", {"1", "2", "3"}));  // out of order: waits for s0
    EXPECT_EQ(m.states, 0u);
    tally.Add(0, Hash128{1, 0}, lose("s0", {"3"}));
    tally.Add(2, Hash128{3, 0}, lose("s2", {"1", "2", "3", "4"}));  // after the stop: ignored
    EXPECT_EQ(tally.stopped_at(), 1u);
    EXPECT_EQ(m.states, 2u);
    EXPECT_EQ(m.violations, 2u);
    EXPECT_EQ(m.lost_acks_max, 3u);
    EXPECT_EQ(m.first_violation->state_id, "s0");
    EXPECT_EQ(m.worst_violation->state_id, "s1");
  }
  {
    ModelResult m;
    absl::flat_hash_set<Hash128> images;
    StateTally tally(&m, 5, /*stop_at_violation=*/true, /*min_states=*/2, &images);
    tally.Add(0, Hash128{1, 0}, lose("s0", {"3"}));
    tally.Add(1, Hash128{2, 0}, Verdict{.state_id = "s1"});  // passes: the head still ends here
    EXPECT_EQ(tally.stopped_at(), 1u);
    EXPECT_EQ(m.states, 2u);
    EXPECT_EQ(m.violations, 1u);
  }
  {
    ModelResult m;
    absl::flat_hash_set<Hash128> images;
    StateTally tally(&m, 5, /*stop_at_violation=*/true, /*min_states=*/1, &images);
    tally.Add(0, Hash128{1, 0}, Verdict{.state_id = "s0"});
    tally.Add(1, Hash128{2, 0}, lose("s1", {"3"}));
    tally.Add(2, Hash128{3, 0}, lose("s2", {"1", "2", "3"}));
    EXPECT_EQ(tally.stopped_at(), 1u);
    EXPECT_EQ(m.states, 2u);
    EXPECT_EQ(m.lost_acks_max, 1u);
  }
}

// The check order changes which state comes first, not what a state id means: the first
// violation's id rebuilds an image on which the checker misses the lost commits.
TEST_F(RawLogEngine, AnEarlyStopsStateIdRebuildsTheViolatingImage) {
  std::string log = Record(RawLogBarrier::kNone, 8);
  CheckReport r = Check(log, "on", 2, false);
  const Verdict& v = *r.results[0].first_violation;
  std::string image = dir_.File("rebuilt.img");
  ASSERT_TRUE(MaterializeState(log, "", v.state_id, image).ok());
  auto out = RunChecker(RAW_LOG_CHECKER, {{"POWERCUT_DEV", image}}, 30);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_FALSE(v.lost.empty());
  for (const std::string& id : v.lost) EXPECT_FALSE(out->have.contains(id)) << id;
}

// --budget: a checker that takes time (it hashes 128 MiB per image) on a plan of many states;
// the check stops taking states when the budget runs out and says its pass is incomplete.
TEST_F(RawLogEngine, ABudgetCutsAPassShortAndSaysItIsIncomplete) {
  std::string log = Record(RawLogBarrier::kFlushBeforeAck, 8);
  CheckOptions o;
  o.trace_path = log;
  o.checker = fmt::format("head -c 134217728 /dev/zero | cksum >/dev/null && {}", RAW_LOG_CHECKER);
  o.workers = 2;
  o.models = {*ParseCacheModel("off")};
  o.points.every_entry = true;
  o.work_dir = dir_.File("work");
  o.budget_seconds = 1;
  const auto start = std::chrono::steady_clock::now();
  auto report = RunCheck(o);
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(report.ok()) << report.status();
  const ModelResult& m = report->results[0];
  EXPECT_EQ(m.stopped, StopReason::kBudget);
  EXPECT_EQ(m.violations, 0u);
  EXPECT_FALSE(m.complete());
  EXPECT_FALSE(report->complete());
  EXPECT_TRUE(report->passed());  // no violation found; the product layers exit 2 on this
  EXPECT_LT(m.states, m.states_planned);
  EXPECT_GT(m.states_planned, 50u);
  // Past the budget each worker finishes the one state it is checking, no more.
  EXPECT_LT(elapsed, o.budget_seconds + 20) << m.states << " of " << m.states_planned;
  nlohmann::json j = ReportToJson(*report);
  EXPECT_EQ(j["results"][0]["complete"], false);
  EXPECT_EQ(j["results"][0]["stopped"], "budget");
  EXPECT_EQ(j["complete"], false);
  EXPECT_THAT(ReportToJunit(*report), HasSubstr("<skipped message=\"incomplete"));
  EXPECT_THAT(ReportSummaryTable(*report), HasSubstr("INCOMPLETE"));
  EXPECT_THAT(ReportSummaryTable(*report), HasSubstr("~"));
  EXPECT_FALSE(ParseBudget("soon").ok());
  EXPECT_FALSE(ParseBudget("0s").ok());
  EXPECT_EQ(*ParseBudget("2m"), 120);
  EXPECT_EQ(*ParseBudget("30s"), 30);
  EXPECT_EQ(*ParseBudget("45"), 45);
}

TEST(Checker, ParsesHaveAndCorruptAndPassesTheEnvironment) {
  auto out = RunChecker(
      "echo \"have $POWERCUT_DEV\"; echo 'have 2'; echo; echo 'corrupt 3'; echo 'have 4 '; "
      "echo diagnostics >&2; printf 'have 5'; exit 3",
      {{"POWERCUT_DEV", "dev1"}}, 10);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->exit_code, 3);
  EXPECT_FALSE(out->recovered());
  EXPECT_EQ(out->have, (absl::flat_hash_set<std::string>{"dev1", "2", "4", "5"}));
  EXPECT_EQ(out->corrupt, (absl::flat_hash_set<std::string>{"3"}));
  EXPECT_EQ(out->protocol_error, "");  // blank lines and stderr are not protocol errors
  EXPECT_EQ(out->stderr_tail, "diagnostics\n");
}

TEST(Checker, EveryLineThatIsNotTheProtocolIsAProtocolError) {
  for (const char* good : {"have 1", "corrupt x.y:z-1_", "", "   ", "have 7\r", "have 7 \t"}) {
    CheckerOutput out;
    ParseCheckerLine(good, 1, &out);
    EXPECT_EQ(out.protocol_error, "") << good;
    EXPECT_EQ(out.protocol_error_lines, 0u) << good;
  }
  for (const char* bad :
       {"hello world", "have", "have 1 2", "HAVE 2", "have  1", " have 1", "corrupt", "have bad/id",
        "ack 1", "why", "why 1", "why bad/id because", "WHY 1 x", "unavailable",
        "UNAVAILABLE no quorum", "unavailable:no quorum", "cluster-unavailable: no quorum"}) {
    CheckerOutput out;
    ParseCheckerLine("have 1", 1, &out);
    ParseCheckerLine(bad, 2, &out);
    ParseCheckerLine("more noise", 3, &out);
    EXPECT_EQ(out.protocol_error_lines, 2u) << bad;
    // The first offending line, quoted, with its number.
    EXPECT_THAT(out.protocol_error,
                HasSubstr(fmt::format("line 2 is not the protocol: \"{}\"", bad)));
    EXPECT_THAT(
        out.protocol_error,
        HasSubstr("`have <id>`, `corrupt <id>`, `why <id> <text>` or `unavailable <text>`"));
    EXPECT_EQ(out.have.size(), 1u) << bad;  // nothing taken from the bad line
  }
  CheckerOutput long_id;
  ParseCheckerLine("have " + std::string(65, '1'), 4, &long_id);
  EXPECT_THAT(long_id.protocol_error, HasSubstr("line 4"));
  CheckerOutput binary;
  ParseCheckerLine(std::string("have \x01\xff", 7), 1, &binary);
  EXPECT_THAT(binary.protocol_error, HasSubstr("\"have \\x01\\xff\""));
}

// `why <id> <text>`: the checker's reason for not having an id, kept (the first per id), never a
// `have`, and quoted in the verdict by the oracle (boot_recovery_test.cc).
TEST(Checker, AWhyLineKeepsTheCheckersReasonForAnId) {
  CheckerOutput out;
  ParseCheckerLine("have 1", 1, &out);
  ParseCheckerLine("why 2 missing A/foo: not there", 2, &out);
  ParseCheckerLine("why 2 a second reason", 3, &out);
  EXPECT_EQ(out.protocol_error, "");
  EXPECT_EQ(out.have, (absl::flat_hash_set<std::string>{"1"}));
  ASSERT_EQ(out.why.size(), 1u);
  EXPECT_EQ(out.why.at("2"), "missing A/foo: not there");
}

// `unavailable <text>`: the system did not come back to answer; the first line's text is kept,
// and it is the protocol, not an error, whatever came before it.
TEST(Checker, AnUnavailableLineSaysTheSystemDidNotComeBack) {
  CheckerOutput out;
  ParseCheckerLine("have 1", 1, &out);
  ParseCheckerLine("unavailable the cluster did not come back: no quorum answered\r", 2, &out);
  ParseCheckerLine("unavailable a second reason", 3, &out);
  EXPECT_EQ(out.protocol_error, "");
  EXPECT_EQ(out.unavailable, "the cluster did not come back: no quorum answered");
  EXPECT_EQ(out.have, (absl::flat_hash_set<std::string>{"1"}));
  CheckerOutput none;
  ParseCheckerLine("have 1", 1, &none);
  EXPECT_EQ(none.unavailable, "");
}

TEST(Checker, AKilledCheckersCutLastLineIsNotJudged) {
  auto out = RunChecker("echo 'have 1'; printf 'hav'; sleep 30", {}, 0.5);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->timed_out);
  EXPECT_EQ(out->protocol_error, "");
  EXPECT_TRUE(out->have.contains("1"));
}

TEST(Checker, PlainWordsThatAreNoProgramRunThroughTheShell) {
  // `exit 1` is plain words but a shell builtin: a failed check, not an error that stops the run.
  auto builtin = RunChecker("exit 1", {}, 10);
  ASSERT_TRUE(builtin.ok()) << builtin.status();
  EXPECT_EQ(builtin->exit_code, 1);
  EXPECT_FALSE(builtin->recovered());
  auto missing = RunChecker("powercut-no-such-checker have", {}, 10);
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_EQ(missing->exit_code, 127);
  EXPECT_TRUE(missing->cannot_start());
  EXPECT_FALSE(builtin->cannot_start());
  auto direct = RunChecker("echo have 7", {}, 10);
  ASSERT_TRUE(direct.ok()) << direct.status();
  EXPECT_TRUE(direct->recovered());
  EXPECT_TRUE(direct->have.contains("7"));
}

TEST(Checker, TimeoutKillsTheWholeProcessGroup) {
  auto start = std::chrono::steady_clock::now();
  auto out = RunChecker("sleep 30 & sleep 30; echo never", {}, 0.3);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->timed_out);
  EXPECT_FALSE(out->recovered());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace powercut::harness
