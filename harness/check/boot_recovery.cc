#include "harness/check/boot_recovery.h"

#include <unistd.h>

#include <algorithm>

#include "base/process.h"
#include "base/status_macros.h"
#include "fmt/format.h"

namespace powercut::harness {
namespace {

absl::StatusOr<FsStepResult> RunStep(const BootPath& fs, const FsStep& step,
                                     const std::string& image, double timeout_seconds) {
  if (!SystemToolInstalled(step.argv.front())) {
    // Not FailedPrecondition: the engine reads that as one state's failure; a missing tool stops
    // the whole check with this message instead (never a silent pass, never a false loss).
    return absl::NotFoundError(
        fmt::format("{} is not installed, so {} images cannot be recovered as a booting machine "
                    "would: apt-get install {}",
                    step.argv.front(), fs.fs_name, fs.package));
  }
  // Started once per crash state: posix_spawn, not fork (ProcessOptions::die_with_parent).
  ASSIGN_OR_RETURN(CommandResult out, RunCommand(WithImage(step.argv, image),
                                                 ProcessOptions{.timeout_seconds = timeout_seconds,
                                                                .die_with_parent = false}));
  FsStepResult r;
  r.name = step.name;
  r.exit_code = out.timed_out ? -1 : out.exit_code;
  bool ok = !out.timed_out && std::find(step.ok_exits.begin(), step.ok_exits.end(), r.exit_code) !=
                                  step.ok_exits.end();
  r.changed = ok && std::find(step.repaired_exits.begin(), step.repaired_exits.end(),
                              r.exit_code) != step.repaired_exits.end();
  r.detail = out.timed_out ? fmt::format("timed out after {} s", timeout_seconds)
                           : LastLinesOnOneLine(out.output, 3);
  return r;
}

bool StepOk(const FsStep& step, const FsStepResult& r) {
  return std::find(step.ok_exits.begin(), step.ok_exits.end(), r.exit_code) != step.ok_exits.end();
}

absl::StatusOr<BootChecks> RunChecks(const BootPath& fs, const std::string& image,
                                     double timeout_seconds) {
  BootChecks checks;
  for (const FsStep& step : fs.boot) {
    auto r = RunStep(fs, step, image, timeout_seconds);
    if (!r.ok()) return r.status();
    checks.repaired = checks.repaired || r->changed;
    checks.passed = checks.passed && StepOk(step, *r);
    checks.steps.push_back(*r);
  }
  return checks;
}

}  // namespace

absl::StatusOr<BootChecks> RunBootChecks(const FileSystem& fs, const std::string& image,
                                         double timeout_seconds) {
  return RunChecks({fs.name, fs.package, fs.boot_steps, {}}, image, timeout_seconds);
}

std::string FsRecovery::Describe() const {
  std::string out;
  for (const FsStepResult& s : steps) {
    if (!out.empty()) out += "; ";
    if (!s.disk.empty()) out += s.disk + ": ";
    if (s.name == "mount") {
      out += s.exit_code == 0 ? "mount ok" : "mount failed: " + s.detail;
    } else {
      out += fmt::format("{} exit {}{}", s.name, s.exit_code, s.changed ? " (repaired)" : "");
      if (s.exit_code != 0 && !s.detail.empty()) out += ": " + s.detail;
    }
  }
  return out;
}

absl::StatusOr<FsRecovery> RecoverFileSystem(const FileSystem& fs, const std::string& image,
                                             const std::function<absl::Status()>& mount,
                                             double timeout_seconds, bool boot_checks) {
  return RunBootPath(
      {fs.name, fs.package, boot_checks ? fs.boot_steps : std::vector<FsStep>{}, fs.recovery_steps},
      image, mount, timeout_seconds);
}

absl::StatusOr<FsRecovery> RunBootPath(const BootPath& fs, const std::string& image,
                                       const std::function<absl::Status()>& mount,
                                       double timeout_seconds) {
  FsRecovery rec;
  // A mount this process may not do, or of a type this kernel lacks, says nothing about the image.
  absl::Status not_permitted;
  auto try_mount = [&]() {
    absl::Status s = mount();
    if (absl::IsPermissionDenied(s) || absl::IsUnimplemented(s)) {
      not_permitted = s;
      return false;
    }
    rec.steps.push_back({.name = "mount",
                         .exit_code = s.ok() ? 0 : 1,
                         .detail = s.ok() ? "" : std::string(s.message())});
    return s.ok();
  };
  ASSIGN_OR_RETURN(BootChecks checks, RunChecks(fs, image, timeout_seconds));
  rec.steps = std::move(checks.steps);
  rec.repaired = checks.repaired;
  // A boot check that gave up would stop the boot for an administrator, who runs the recovery.
  if (checks.passed && try_mount()) return rec;
  if (!not_permitted.ok()) return not_permitted;
  for (const FsStep& step : fs.recovery) {
    auto r = RunStep(fs, step, image, timeout_seconds);
    if (!r.ok()) return r.status();
    rec.steps.push_back(*r);
    if (!StepOk(step, *r)) continue;
    if (try_mount()) {
      rec.repaired = true;
      return rec;
    }
    if (!not_permitted.ok()) return not_permitted;
  }
  rec.unrecoverable = true;
  return rec;
}

}  // namespace powercut::harness
