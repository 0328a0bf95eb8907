#include "harness/check/image_check.h"

#include "harness/check/fsck.h"
#include "harness/check/loop_mount.h"

namespace powercut::harness {

absl::StatusOr<CheckerOutput> CheckImageFile(const std::string& image, const ImageCheckOptions& o) {
  if (o.fs == "raw") {
    return harness::RunChecker(o.checker, {{"POWERCUT_DEV", image}}, o.timeout_seconds);
  }
  if (o.fsck) {
    auto problem = FsckImage(o.fs, image);
    if (!problem.ok()) return problem.status();
    if (!problem->empty()) {
      CheckerOutput out;
      out.setup_error = *problem;
      return out;
    }
  }
  auto mount = harness::LoopMount::Mount(image, o.fs, o.mountpoint);
  if (!mount.ok()) {
    CheckerOutput out;
    out.setup_error = std::string(mount.status().message());
    return out;
  }
  auto out = harness::RunChecker(o.checker, {{"POWERCUT_DIR", o.mountpoint}}, o.timeout_seconds);
  absl::Status unmounted = (*mount)->Unmount();
  if (!out.ok()) return out.status();
  if (!unmounted.ok()) return unmounted;
  return out;
}

}  // namespace powercut::harness
