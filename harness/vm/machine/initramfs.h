// The project's own initramfs: busybox-static, the guest init (guest/init.sh), and the kernel
// modules the crash domain needs with every module they depend on, resolved from the unpacked
// kernel's modules.dep / modules.softdep / modules.alias (made by depmod from the modules' own
// depends= and softdep= info). Compressed modules (.ko.xz, .ko.zst) are decompressed on the host,
// because busybox insmod in the guest may not decompress them.
//
// The archive is built in memory and cached at <cache>/initramfs/<content hash>.cpio: equal inputs
// give the same file, and a file is published by an atomic rename.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/vm/machine/kernel.h"

namespace powercut::vm {

// Loaded at every boot: virtio (pci, blk, console) and 9p over virtio.
std::vector<std::string> BaseGuestModules();

// The base modules plus dm-mod, dm-log-writes, dm-flakey, every file system's guest_modules
// (harness/fs/file_system.h) and loop; the guest
// loads these on demand (kernel parameter powercut.modules=a,b).
std::vector<std::string> DefaultGuestModules();

// Module files (paths relative to the modules dir) in load order: dependencies first, each once.
// Unknown module names are an error naming the module and the kernel.
absl::StatusOr<std::vector<std::string>> ResolveModuleLoadOrder(
    const GuestKernel& kernel, const std::vector<std::string>& modules);

// The names of `modules` the kernel has neither as a module (modules.dep) nor built in
// (modules.builtin), in the order given.
absl::StatusOr<std::vector<std::string>> MissingModules(const GuestKernel& kernel,
                                                        const std::vector<std::string>& modules);

struct Initramfs {
  std::string path;    // the cached cpio archive
  std::string hash;    // content hash (hex)
  size_t modules = 0;  // number of modules inside
  size_t bytes = 0;
};

absl::StatusOr<Initramfs> BuildInitramfs(const GuestKernel& kernel,
                                         const std::vector<std::string>& modules);

// The guest init script (guest/init.sh, embedded at build time).
extern const char kGuestInitScript[];

}  // namespace powercut::vm
