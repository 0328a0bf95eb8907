#include "harness/vm/warm/vm_run.h"

#include <algorithm>
#include <filesystem>

#include "base/status_macros.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "harness/vm/machine/disk_image.h"
#include "harness/vm/machine/guest_config.h"
#include "harness/vm/machine/run_folder.h"
#include "harness/vm/warm/guest_pool.h"

namespace powercut::vm {
absl::StatusOr<RunResult> RunInVm(const VmEnvironment& env, const RunSpec& spec,
                                  std::unique_ptr<WarmGuest>* keep_guest) {
  // One recording on a guest of its own: a pool of one, shut down after it.
  GuestPool pool(env);
  absl::StatusOr<RunResult> result = pool.Record(spec);
  if (keep_guest != nullptr) *keep_guest = pool.TakeIdleGuest();
  pool.Shutdown();
  return result;
}

absl::StatusOr<GuestResult> CheckInVm(const VmEnvironment& env, const CheckSpec& spec) {
  ASSIGN_OR_RETURN(std::vector<GuestResult> results, CheckImagesInVm(env, {spec}));
  return std::move(results[0]);
}

absl::StatusOr<std::vector<GuestResult>> CheckImagesInVm(const VmEnvironment& env,
                                                         const std::vector<CheckSpec>& specs) {
  if (specs.empty()) return std::vector<GuestResult>{};
  if (specs.size() > kMaxCheckImages) {
    return absl::InvalidArgumentError(
        fmt::format("{} images to check in one guest: at most {}; split them into several calls",
                    specs.size(), kMaxCheckImages));
  }
  ASSIGN_OR_RETURN(RunFolder run, CreateRunFolder());
  QemuOptions q = QemuOptionsFor(env, run.path());
  GuestJob job;
  job.mode = GuestJob::Mode::kCheck;
  std::vector<std::string> keep;
  std::chrono::seconds timeout{0};
  for (size_t i = 0; i < specs.size(); ++i) {
    const CheckSpec& spec = specs[i];
    RETURN_IF_ERROR(ValidateCommand(spec.checker, "checker"));
    RETURN_IF_ERROR(ValidateKeepPaths(spec.keep_paths));
    std::string image = spec.image;
    if (spec.copy_image) {
      image = run / fmt::format("check-{}.img", i);
      RETURN_IF_ERROR(CopySparse(spec.image, image));
    }
    q.disks.push_back(
        {.nbd_socket = "", .image_file = image, .geometry = harness::GeometryOf(spec.sector)});
    for (const std::string& m : GuestModulesFor(spec.fs, false, false)) {
      if (std::find(q.guest_modules.begin(), q.guest_modules.end(), m) == q.guest_modules.end()) {
        q.guest_modules.push_back(m);
      }
    }
    for (const std::string& k : spec.keep_paths) {
      if (std::find(keep.begin(), keep.end(), k) == keep.end()) keep.push_back(k);
    }
    timeout = std::max(timeout, spec.timeout);
    job.checks.push_back({.disk_serial = fmt::format("powercut{}", i),
                          .fs = spec.fs,
                          .command = spec.checker,
                          .mount_options = spec.mount_options});
  }
  std::vector<std::string> checkers;
  for (const CheckSpec& spec : specs) checkers.push_back(spec.checker);
  q.keep_paths = KeepPathsFor(env.agent, keep, checkers);
  RETURN_IF_ERROR(WriteAll(run / "job.json", GuestJobToJson(job)));
  ASSIGN_OR_RETURN(std::unique_ptr<Qemu> qemu, Qemu::Start(q));
  RETURN_IF_ERROR(qemu->WaitForExit(timeout).status());
  ASSIGN_OR_RETURN(GuestResult r, ReadGuestResult(run, "result.json", *qemu));
  if (!r.ok) return GuestStepError(r, *qemu);
  if (r.checks.size() != specs.size()) {
    return absl::InternalError(
        fmt::format("guest: the agent reported {} checks for {} images; last console lines:\n{}",
                    r.checks.size(), specs.size(), qemu->ConsoleTail()));
  }
  for (size_t i = 0; i < r.checks.size(); ++i) {
    GuestResult& c = r.checks[i];
    if (!c.ok && c.failed_step != "mount") return GuestStepError(c, *qemu);
    RETURN_IF_ERROR(CheckGuestGeometry(c, harness::GeometryOf(specs[i].sector)));
    c.ready_seconds = r.ready_seconds;
  }
  return std::move(r.checks);
}

}  // namespace powercut::vm
