// The guest every VM suite boots: qemu installed, the kernel fetched, the initramfs built and the
// agent found (POWERCUT_VM_AGENT_PATH, set by tests/vm/CMakeLists.txt). A suite that cannot have
// it skips with the returned error's message, which says what is missing.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "base/process.h"
#include "fmt/format.h"
#include "harness/vm/warm/vm_run.h"

namespace powercut::vm::testing {

inline absl::StatusOr<VmEnvironment> PrepareTestVm() {
  auto qemu = RunCommand({"qemu-system-x86_64", "--version"});
  if (!qemu.ok() || qemu->exit_code != 0) {
    return absl::FailedPreconditionError("qemu-system-x86_64 is not installed (qemu-system-x86)");
  }
  auto env = PrepareVm(POWERCUT_VM_AGENT_PATH);
  if (!env.ok()) {
    return absl::FailedPreconditionError(
        fmt::format("the guest cannot be prepared: {}", std::string(env.status().message())));
  }
  return env;
}

}  // namespace powercut::vm::testing
