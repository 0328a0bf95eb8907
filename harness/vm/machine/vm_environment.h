// What every guest boots with: the kernel (Debian's or the user's), the initramfs, the guest
// agent and the accelerator, found and checked once before any guest starts (PrepareVm), and the
// part of a qemu start they make (docs/vm.md).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "harness/vm/machine/initramfs.h"
#include "harness/vm/machine/kernel.h"
#include "harness/vm/machine/qemu.h"

namespace powercut::vm {

struct VmEnvironment {
  GuestKernel kernel;  // Debian's, or the user's (`--kernel`): recordings and checks boot it
  Initramfs initramfs;
  // What qemu's -kernel boots: the kernel's PVH-bootable ELF (pvh_kernel.h) where it has one,
  // else its bzImage; empty means kernel.vmlinuz. `boot` names the way for reports and docs.
  std::string boot_image;
  std::string boot = "bzImage";
  std::string agent;  // absolute path of powercut-vm-agent
  Accel accel = Accel::kTcg;
  // Guest modules (of DefaultGuestModules) the kernel has neither as modules nor built in; a job
  // that needs one fails before any boot (RequireModules).
  std::vector<std::string> missing_modules;
};

// An error naming what of `modules` the environment's kernel lacks (with the config option that
// provides each), `who` saying what needs them ("a recording on xfs"); OK when it has them all.
absl::Status RequireModules(const VmEnvironment& env, const std::vector<std::string>& modules,
                            const std::string& who);

// A hint for a guest that did not come up, from its console (a panic, modules that do not match
// the kernel, no root), naming the kernel; "" when the console says nothing recognisable.
std::string BootFailureHint(const VmEnvironment& env, const std::string& console);

// The guest's part of every qemu start: kernel, initramfs, agent, accelerator, and the run
// folder shared over 9p with its console log (run_dir/console.log).
QemuOptions QemuOptionsFor(const VmEnvironment& env, const std::string& run_dir);

// Fetches the kernel (Debian's; `kernel` non-empty: the user's, OpenUserKernel), checks that it
// has the drivers every guest needs (virtio, 9p), builds the initramfs and finds the guest agent:
// $POWERCUT_VM_AGENT, else powercut-vm-agent next to the running program, else `agent_hint`
// (e.g. a build-tree path).
absl::StatusOr<VmEnvironment> PrepareVm(const std::string& agent_hint = "",
                                        const std::string& kernel = "");

}  // namespace powercut::vm
