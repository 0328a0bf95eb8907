// The guest kernel booted through its PVH entry point: the bzImage's compressed payload unpacked
// once on the host into the plain ELF vmlinux it carries, and that ELF given to qemu's -kernel.
//
// Why: under TCG a bzImage boot spends about 3 s before the kernel's first instruction, almost
// all of it the kernel's own decompressor (Debian compresses with xz) running on an emulated CPU.
// qemu boots an ELF kernel that carries the PVH entry note (XEN_ELFNOTE_PHYS32_ENTRY; Debian's
// kernels have it: CONFIG_PVH=y) straight into 32-bit protected mode at that entry, with the
// same initrd, command line, memory map and ACPI tables, so the guest is the same kernel on the
// same machine, 3 s sooner (docs/vm.md, "PVH boot"). The same path works under KVM.
//
// Cached as <cache>/pvh/<content hash of the bzImage>.elf, published by an atomic rename.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "harness/vm/machine/kernel.h"

namespace powercut::vm {

// The payload of an x86 bzImage (boot protocol >= 2.08) unpacked: xz, gzip and zstd payloads.
// Errors: not a bzImage, a protocol too old, another compression (lz4, lzo, bzip2, lzma), a
// corrupt stream.
absl::StatusOr<std::string> UnpackBzImagePayload(const std::string& bzimage);

// Whether `elf` is a 64-bit x86 ELF image with a PVH entry note.
bool HasPvhEntry(const std::string& elf);

// The cached PVH-bootable ELF of `kernel`'s image (unpacked on first use). An error when the
// image cannot be booted that way (see above); the caller then boots the bzImage itself.
absl::StatusOr<std::string> PvhKernelFor(const GuestKernel& kernel);

}  // namespace powercut::vm
