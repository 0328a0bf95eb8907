// powercut check

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "base/process.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/check/engine.h"
#include "harness/check/report.h"
#include "harness/product/cell/cell_result.h"
#include "harness/product/matrix/builtin.h"
#include "harness/product/run/run.h"
#include "harness/trace/manifest.h"
#include "harness/vm/warm/guest_judge.h"
#include "tools/powercut/commands.h"
#include "tools/powercut/product_commands.h"

namespace powercut::cli {
namespace {

struct CheckArgs {
  harness::CheckOptions o;
  std::string cache = "off,on,lying", points = "acks,flushes", window = "16", order, json, junit;
  std::string budget, check_in, kernel;
  bool no_torn = false;
};

// What is judged: the trace, its base image, the checker and the file system.
void AddJudgedOptions(CLI::App* check, CheckArgs* a) {
  check->add_option("--trace", a->o.trace_path, "the dm-log-writes log")->required();
  check->add_option("--base", a->o.base_image, "base image (default: from LOG.manifest.json)");
  check
      ->add_option("--checker", a->o.checker,
                   "command run with /bin/sh -c on each image; prints `have <id>` lines")
      ->required();
  AddFsOption(check, &a->o.fs,
              fmt::format("raw (POWERCUT_DEV=image) or {} (boot recovery, loop mount, "
                          "POWERCUT_DIR); default: the file system the trace's manifest names, "
                          "else raw",
                          harness::FsNames(/*with_raw=*/false)));
  check->add_flag("--without-mount", a->o.without_mount,
                  "ext4: read each image with e2fsck + debugfs instead of a loop mount");
  check->add_flag("--fs-failures-are-violations", a->o.fs_failures_are_violations,
                  "count states the file system's own tools cannot bring back as violations");
}

// Which crash states: the cache models, the crash points and the states at each.
void AddStateOptions(CLI::App* check, CheckArgs* a) {
  check->add_option("--cache", a->cache, "cache models, comma-separated: off,on,lying or all");
  check->add_option("--window", a->window, "lying window: entries (16, 16e) or bytes (64KiB)");
  check->add_option("--atomic", a->o.atomic_unit,
                    "atomic unit for torn writes: 512 or 4096 "
                    "(default: the disk's physical sector from the manifest, else the log's "
                    "sector size)");
  check->add_option("--points", a->points, "crash points: " + std::string(harness::kPointChoices));
  check->add_option("--states", a->o.states.max_exhaustive,
                    "all subsets of the volatile writes up to this many (K, default 10)");
  check->add_option("--samples", a->o.states.samples, "seeded random subsets per point beyond K");
  check->add_option("--max-all-but-one", a->o.states.max_all_but_one,
                    "all-but-one states only for the N writes nearest the cut (0: every write)");
  check->add_flag("--no-torn", a->no_torn, "no torn-write variants");
  check->add_option("--seed", a->o.seed, "seed for every sample");
  check->add_flag("--ordered", a->o.ordered, "also require the commits present to be a prefix");
}

// How they are judged and reported.
void AddJudgingOptions(CLI::App* check, CheckArgs* a) {
  check->add_option("--workers", a->o.workers, "parallel checks (default: one per core)");
  check->add_option("--timeout", a->o.checker_timeout_s, "checker timeout in seconds");
  check->add_option("--order", a->order, "override the manifest: completion or flush-epoch");
  check->add_option("--workload", a->o.workload, "name in reports (default: the log's name)");
  check->add_option("--work-dir", a->o.work_dir,
                    "folder for working images (default: a temp "
                    "folder, removed afterwards)");
  check->add_flag("--exhaustive", a->o.exhaustive,
                  "check every state for full counts (default: a model stops at its first "
                  "violating state, where its verdict is decided)");
  check->add_option("--budget", a->budget,
                    "bound the checking time (30s, 2m, 1h); a pass cut short is incomplete "
                    "(exit 2)");
  AddCheckInOption(check, &a->check_in);
  AddKernelOption(check, &a->kernel);
  check->add_option("--json", a->json, "write the JSON report here");
  check->add_option("--junit", a->junit, "write a JUnit XML report here");
}

// Every flag turned into the check's options; an error is bad usage. `fs_given`: --fs was on the
// command line (else the recording's manifest names the file system).
absl::StatusOr<harness::CheckOptions> ParseCheckArgs(const CheckArgs& a, bool fs_given) {
  harness::CheckOptions o = a.o;
  o.states.torn = !a.no_torn;
  o.powercut = SelfPath("powercut");
  if (!fs_given) {
    // The recording says what its disk holds: judging an xfs recording as a raw device would
    // report false losses.
    auto manifest = harness::ReadManifest(harness::ManifestPathFor(o.trace_path));
    if (manifest.ok()) {
      // An unknown name is an error, never a raw device.
      ASSIGN_OR_RETURN(o.fs,
                       harness::ParseManifestFs(manifest->fs, "the trace's manifest: \"fs\""));
    }
  }
  // The same parsers, and so the same messages, as `powercut run` and `powercut matrix`.
  ASSIGN_OR_RETURN(o.points, harness::ParsePointSelection(a.points));
  ASSIGN_OR_RETURN(o.models, harness::ParseCacheModels(a.cache, a.window));
  RETURN_IF_ERROR(product::ValidateAtomicUnit(a.o.atomic_unit));
  if (a.o.states.max_exhaustive > 16) {
    return absl::InvalidArgumentError(fmt::format(
        "--states {}: expected 0-16 (every subset of up to K volatile writes; beyond that the "
        "--samples seeded subsets)",
        a.o.states.max_exhaustive));
  }
  if (!a.budget.empty()) {
    ASSIGN_OR_RETURN(o.budget_seconds, harness::ParseBudget(a.budget));
  }
  if (!a.order.empty()) {
    auto order = harness::ParseOrderSemantics(a.order);
    if (!order.ok()) {
      return absl::InvalidArgumentError("--order: " + std::string(order.status().message()));
    }
    o.order = *order;
  }
  return o;
}

// The --json and --junit files, when asked for.
absl::Status WriteCheckReports(const CheckArgs& a, const harness::CheckReport& report,
                               const std::vector<std::pair<std::string, double>>& check_phases) {
  if (!a.json.empty()) {
    nlohmann::json json = harness::ReportToJson(report);
    if (!check_phases.empty()) json["check_phases"] = product::PhasesToJson(check_phases);
    RETURN_IF_ERROR(harness::WriteTextFile(a.json, json.dump(2) + "\n"));
  }
  if (!a.junit.empty()) {
    RETURN_IF_ERROR(harness::WriteTextFile(a.junit, harness::ReportToJunit(report)));
  }
  return absl::OkStatus();
}

// `powercut check` once its flags are read; returns the exit code. Every error exits 2
// (CouldNotRun): bad usage, a broken checker, a trace that cannot be read, a VM that cannot be
// prepared, a report that cannot be written. Exit 1 is kept for violations, so that a job never
// reads "could not run" as "the program loses data" (docs/report.md).
int Check(const CheckArgs& a, bool fs_given) {
  absl::StatusOr<harness::CheckOptions> o = ParseCheckArgs(a, fs_given);
  if (!o.ok()) return CouldNotRun(std::string(o.status().message()));
  // --check-in guest: warm guests with the recording's sectors judge the file-system states.
  auto judging = product::JudgeTrace(
      a.check_in, o->fs, o->powercut, a.kernel, o->trace_path, o->checker, o->checker_timeout_s,
      o->without_mount ? "--without-mount reads states with debugfs on the host" : "");
  if (!judging.ok()) return CouldNotRun(std::string(judging.status().message()));
  o->judges = judging->judges;
  if (o->judges) o->states_per_judge = vm::kStatesPerCheckingGuest;
  auto report = harness::RunCheck(*o);
  // Neither a broken checker (cannot start, output not the protocol) nor an unreadable trace is
  // a finding: exit 2.
  if (!report.ok()) return CouldNotRun(std::string(report.status().message()));
  const std::vector<std::pair<std::string, double>> check_phases = judging->phases->Mean();
  std::printf("%s%s", product::GuestCheckPhasesLine(check_phases).c_str(),
              harness::ReportSummaryTable(*report).c_str());
  if (!a.kernel.empty() && !o->judges) {
    // Said, not silently dropped: the states were judged by the host's kernel.
    std::printf("note: --kernel is for checks in a guest; these states were checked on the host\n");
  }
  if (absl::Status s = WriteCheckReports(a, *report, check_phases); !s.ok()) {
    return CouldNotRun(std::string(s.message()));
  }
  uint64_t unchecked = 0;
  for (const auto& m : report->results) unchecked += m.could_not_check;
  if (report->passed() && report->NeverCameBack() != nullptr) {
    // Not one state came back (unavailable): nothing was shown to survive.
    std::printf("COULD NOT RUN (unavailable): the system did not come back on any crash state\n");
    return 2;
  }
  // An incomplete pass (the budget ran out first) did not show the program survives: exit 2.
  return !report->passed() ? 1 : unchecked > 0 || !report->complete() ? 2 : 0;
}

}  // namespace

void AddCheckCommands(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<CheckArgs>();
  CLI::App* check = app.add_subcommand(
      "check",
      "rebuild crash states of a trace under cache models and judge them with a checker (exit 0 "
      "pass, 1 violations, 2 could not run or not every state checked)");
  AddJudgedOptions(check, a.get());
  AddStateOptions(check, a.get());
  AddJudgingOptions(check, a.get());
  check->callback([=] { *exit_code = Check(*a, check->count("--fs") > 0); });
}

}  // namespace powercut::cli
