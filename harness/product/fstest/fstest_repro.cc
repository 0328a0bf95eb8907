#include "harness/product/fstest/fstest_repro.h"

#include <filesystem>
#include <map>

#include "absl/strings/escaping.h"
#include "base/image_io.h"
#include "base/scratch_dir.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/fs/file_system.h"
#include "harness/vm/warm/guest_judge.h"
#include "harness/vm/warm/guest_pool.h"

namespace powercut::product {
namespace {

using fstest::Workload;

// The first violation of the one model, or nullptr.
const harness::Verdict* FirstViolation(const RunOutcome& out) {
  if (!out.ran || !out.report || out.report->results.empty()) return nullptr;
  const harness::ModelResult& m = out.report->results.front();
  return m.violations > 0 && m.first_violation ? &*m.first_violation : nullptr;
}

std::string ClassOf(const harness::Verdict& v) {
  return v.why.empty() ? "recoverability" : FailureClassOf(v.why.front());
}

// Records and judges workloads, one at a time, in one warm guest and one checking guest.
class Runner {
 public:
  Runner(const FsTestReproOptions& o, const vm::VmEnvironment& env, harness::FsKind fs)
      : o_(o), env_(env), fs_(fs), pool_(env, PreloadFor(fs)), checks_(env) {}

  RunOutcome Run(const Workload& w, const std::string& keep_dir) {
    RunOptions r;
    r.name = fstest::WorkloadId(w);
    r.fs = {fs_};
    r.workload = fmt::format("{} run --hex {}", o_.exec_binary,
                             absl::BytesToHexString(fstest::WorkloadText(w, false)));
    r.checker = kFsTestJudge;
    r.models = {o_.model};
    r.points = ReplayChoice{}.points;  // acks: the persistence points
    r.states = ReplayChoice{}.states.Options();
    r.latest_ack_only = true;
    r.boot_checks = false;
    r.sync_acks = true;
    r.states.torn_inflight = false;
    r.judge_promises = [w](const vm::RunResult& run) {
      return FsTestPromises(w, run.workload_output);
    };
    r.mkfs_options = o_.mkfs_options;
    r.mount_options = o_.mount_options;
    r.check_pool = &checks_;
    r.keep_dir = keep_dir;
    r.timeout = std::chrono::seconds(o_.timeout_s);
    r.powercut = o_.powercut;
    r.workers = 1;
    return RunWorkload(env_, r, &pool_);
  }

  harness::StateJudgeFactory Judges(const std::string& promises) {
    return checks_.Factory({.fs = fs_,
                            .checker = kFsTestJudge,
                            .mount_options = o_.mount_options,
                            .fstest_promises = promises,
                            .boot_checks = false});
  }

 private:
  static vm::GuestConfig PreloadFor(harness::FsKind fs) {
    vm::GuestConfig c;
    c.Add({.modules = vm::GuestModulesFor(fs, false, false), .keep_paths = {}});
    return c;
  }

  const FsTestReproOptions& o_;
  const vm::VmEnvironment& env_;
  const harness::FsKind fs_;
  vm::GuestPool pool_;
  vm::GuestCheckPool checks_;
};

Workload WithOps(const Workload& w, const std::vector<size_t>& keep) {
  Workload c;
  c.source = w.source;
  for (size_t i : keep) c.ops.push_back(w.ops[i]);
  return c;
}

std::string Readme(const FsTestReproOptions& o, const FsTestReproResult& r) {
  std::string flags =
      fmt::format("--fs {} --cache {}", harness::FsName(o.fs), harness::CacheListName({o.model}));
  if (!o.mkfs_options.empty()) flags += " --mkfs-options " + harness::ShellJoin({o.mkfs_options});
  if (!o.mount_options.empty()) {
    flags += " --mount-options " + harness::ShellJoin({o.mount_options});
  }
  if (!o.kernel.empty()) flags += " --kernel " + harness::ShellJoin({o.kernel});
  return fmt::format(
      "# powercut fstest reproducer\n\n"
      "A file-system test workload that breaks a promise of its persistence points after a "
      "power cut ({}), shrunk to the fewest operations that still do ({} of {}), and its crash "
      "state shrunk to the fewest dropped writes.\n\n"
      "- original workload: `original.fst` ({})\n- minimal workload: `workload.fst`\n\n"
      "```\n{}```\n\n"
      "- the first violation of the minimal workload: {}\n- the minimal state: `{}` ({} dropped "
      "write(s)): {}\n\n"
      "Run the minimal workload again, recorded and judged in a guest (run in this folder):\n\n"
      "```\n{} fstest run --workloads workload.fst {}\n```\n\n"
      "Rebuild the minimal crash image: `{} state materialize --trace state/trace.log --state {} "
      "--out crash.img`. Files: `recording/` (the minimal workload's trace, base image and "
      "expected "
      "states), `state/` (`powercut repro`'s bundle of the state), `fstest-repro.json`.\n",
      r.failure_class, r.minimal.ops.size(), r.original.ops.size(), fstest::WorkloadId(r.original),
      fstest::WorkloadText(r.minimal, false), r.verdict, r.state.minimal_state_id,
      r.state.minimal_dropped.size(), r.state.minimal_verdict, o.powercut, flags, o.powercut,
      r.state.minimal_state_id);
}

}  // namespace

absl::StatusOr<Workload> FindFsTestWorkload(const std::string& id_or_file,
                                            const FsTestOptions& source) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(id_or_file, ec)) {
    ASSIGN_OR_RETURN(std::vector<Workload> ws, fstest::LoadWorkloads(id_or_file));
    return ws.front();
  }
  if (id_or_file.rfind("fst-", 0) != 0) {
    return absl::NotFoundError(fmt::format(
        "{}: neither a workload file nor a workload id (fst-<16 hex digits>)", id_or_file));
  }
  if (!source.workloads.empty()) {
    ASSIGN_OR_RETURN(std::vector<Workload> ws, fstest::LoadWorkloads(source.workloads));
    for (const Workload& w : ws) {
      if (fstest::WorkloadId(w) == id_or_file) return w;
    }
    return absl::NotFoundError(
        fmt::format("no workload in {} has the id {}", source.workloads, id_or_file));
  }
  ASSIGN_OR_RETURN(fstest::WorkloadSpace space, fstest::WorkloadSpace::Make(source.generator));
  if (space.size() > 10'000'000) {
    return absl::InvalidArgumentError(fmt::format(
        "the seq-{} space has {} workloads, too many to search for an id: give the workload's "
        "file (`powercut fstest list ... --write DIR`, or the report's text)",
        source.generator.seq, space.size()));
  }
  for (uint64_t i = 0; i < space.size(); ++i) {
    Workload w = space.At(i);
    if (fstest::WorkloadId(w) == id_or_file) return w;
  }
  return absl::NotFoundError(fmt::format(
      "no workload of the seq-{} space has the id {} (was it generated with other --seq or "
      "--persist, or is it one of your --workloads files?)",
      source.generator.seq, id_or_file));
}

namespace {

// The workload: delta debugging over its operations, each candidate recorded and judged; the
// operations kept (all of them without o.shrink).
std::vector<size_t> ShrinkOps(const FsTestReproOptions& o, Runner& runner, FsTestReproResult& r) {
  std::vector<size_t> all(r.original.ops.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  std::vector<size_t> minimal = all;
  if (o.shrink) {
    std::map<std::string, bool> seen;
    minimal = DeltaDebug(all, [&](const std::vector<size_t>& subset) {
      const Workload c = WithOps(r.original, subset);
      if (!fstest::ValidateWorkload(c).ok()) return false;
      const std::string text = fstest::WorkloadText(c, false);
      auto it = seen.find(text);
      if (it != seen.end()) return it->second;
      const RunOutcome out = runner.Run(c, "");
      const harness::Verdict* cv = FirstViolation(out);
      const bool still = cv != nullptr && ClassOf(*cv) == r.failure_class;
      r.tries.push_back({text, still});
      return seen[text] = still;
    });
  }
  return minimal;
}

// Its recording, kept in the bundle, and its first violating state shrunk.
absl::Status ShrinkState(const FsTestReproOptions& o, harness::FsKind fs, Runner& runner,
                         FsTestReproResult& r) {
  std::error_code ec;
  std::filesystem::create_directories(o.bundle, ec);
  const std::string recording = o.bundle + "/recording";
  std::filesystem::remove_all(recording, ec);
  RunOutcome last = runner.Run(r.minimal, recording);
  const harness::Verdict* lv = FirstViolation(last);
  if (lv == nullptr) {
    return absl::FailedPreconditionError(
        "the minimal workload violated while shrinking but not when recorded again: the "
        "violation depends on timing; the tries are in the bundle's fstest-repro.json");
  }
  ASSIGN_OR_RETURN(std::string promises, FsTestPromises(r.minimal, recording + "/output.txt"));
  ReproOptions ro;
  ro.state_id = lv->state_id;
  ro.trace = recording + "/trace.log";
  ro.bundle = o.bundle + "/state";
  ro.checker = kFsTestJudge;
  ro.fs = fs;
  ro.latest_ack_only = true;
  ro.shrink = o.shrink;
  ro.powercut = o.powercut;
  ro.kernel = o.kernel;
  ro.judges = runner.Judges(promises);
  ASSIGN_OR_RETURN(r.state, Repro(ro));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<FsTestReproResult> ReproFsTest(const FsTestReproOptions& o) {
  if (o.bundle.empty()) return absl::InvalidArgumentError("fstest repro: pass --bundle DIR");
  const harness::FsKind fs = o.fs;
  FsTestReproResult r;
  ASSIGN_OR_RETURN(r.original, FindFsTestWorkload(o.workload, o.source));
  ASSIGN_OR_RETURN(vm::VmEnvironment env, vm::PrepareVm(o.agent_hint, o.kernel));
  Runner runner(o, env, fs);
  ASSIGN_OR_RETURN(ScratchDir work, ScratchDir::Create("powercut-fstest-repro", "/var/tmp"));

  RunOutcome first = runner.Run(r.original, work.File("original"));
  if (!first.ran) {
    return absl::FailedPreconditionError(fmt::format("the workload could not run ({}): {}",
                                                     RunErrorName(first.error_kind), first.error));
  }
  const harness::Verdict* v = FirstViolation(first);
  r.violates = v != nullptr;
  if (!r.violates) {
    r.minimal = r.original;
    r.note = fmt::format("the workload does not violate under cache {} on this run",
                         harness::CacheListName({o.model}));
    return r;
  }
  r.failure_class = ClassOf(*v);
  r.verdict = v->Describe();

  const std::vector<size_t> minimal = ShrinkOps(o, runner, r);
  r.minimal = WithOps(r.original, minimal);
  r.minimal.source = "workload.fst";

  RETURN_IF_ERROR(ShrinkState(o, fs, runner, r));
  RETURN_IF_ERROR(PublishFile(o.bundle + "/workload.fst", fstest::WorkloadText(r.minimal)));
  RETURN_IF_ERROR(PublishFile(o.bundle + "/original.fst", fstest::WorkloadText(r.original)));
  RETURN_IF_ERROR(PublishFile(o.bundle + "/README.md", Readme(o, r)));
  RETURN_IF_ERROR(
      PublishFile(o.bundle + "/fstest-repro.json", FsTestReproToJson(r).dump(2) + "\n"));
  return r;
}

nlohmann::json FsTestReproToJson(const FsTestReproResult& r) {
  nlohmann::json tries = nlohmann::json::array();
  for (const auto& t : r.tries) tries.push_back({{"text", t.text}, {"violates", t.violates}});
  return {
      {"original",
       {{"id", fstest::WorkloadId(r.original)}, {"text", fstest::WorkloadText(r.original, false)}}},
      {"minimal",
       {{"id", fstest::WorkloadId(r.minimal)}, {"text", fstest::WorkloadText(r.minimal, false)}}},
      {"violates", r.violates},
      {"class", r.failure_class},
      {"verdict", r.verdict},
      {"tries", tries},
      {"state", ReproToJson(r.state)},
      {"note", r.note}};
}

}  // namespace powercut::product
