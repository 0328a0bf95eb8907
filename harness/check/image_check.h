// Checks one crash image outside the engine (for `powercut repro`): raw images are handed to the
// checker as POWERCUT_DEV; file-system images are (optionally fsck'd, then) loop-mounted
// read-write, so the kernel replays the journal, and the checker gets POWERCUT_DIR. The image is
// modified by the mount: pass a scratch image.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "harness/check/checker.h"

namespace powercut::harness {

struct ImageCheckOptions {
  std::string fs = "raw";
  std::string checker;
  double timeout_seconds = 60;
  bool fsck = false;
  std::string mountpoint;  // an empty folder (file systems only)
};

// A mount or fsck failure is reported in CheckerOutput::setup_error (the state is not
// recoverable), not as an error; errors mean the checker could not be started.
absl::StatusOr<CheckerOutput> CheckImageFile(const std::string& image,
                                             const ImageCheckOptions& options);

}  // namespace powercut::harness
