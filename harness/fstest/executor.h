// Runs a workload on a real file system (in the guest, on the disk being recorded): each
// operation as the system calls it names, the bytes from content.h, files opened and closed per
// operation. After each persistence point returns, the executor acknowledges it (`ack <k>` on the
// protocol's ack descriptor) and then takes the expected state (tree.h), so the crash point sits
// right after the point and reading the tree cannot move it.
#pragma once

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "harness/fstest/tree.h"
#include "harness/fstest/workload.h"

namespace powercut::fstest {

struct ExecuteHooks {
  // Point k (1-based) returned: acknowledge it. An error stops the workload.
  std::function<absl::Status(int point)> ack;
  // The expected state right after point k (taken after the ack).
  std::function<absl::Status(int point, const Op& op, const Tree& tree)> snapshot;
};

// Runs `workload` under the folder `root` (POWERCUT_DIR). The first operation the kernel refuses
// stops it; the error names the line, the operation and the errno.
absl::Status Execute(const Workload& workload, const std::string& root, const ExecuteHooks& hooks);

}  // namespace powercut::fstest
