// Scratch disk images for the guest: sparse files, made with mkfs on the host (the same mkfs
// binaries the guest would run, since the guest runs the host's userspace), and copied sparsely
// (the base image is kept before recording starts). Never touches a block device: every function
// refuses a path that is not a regular file (or, for Create, does not exist yet).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "harness/fs/file_system.h"
#include "harness/trace/disk_geometry.h"

namespace powercut::vm {

// Creates (or truncates) a sparse file of `bytes`.
absl::Status CreateSparseImage(const std::string& path, uint64_t bytes);

// Makes file system `fs` on the image file as a deployment makes it on a disk of `geometry`
// (harness::FileSystem::MkfsArgv); raw does nothing. Returns the command line run, with the
// image shown as "{image}" ("" for raw). `options` are the user's (`--mkfs-options`, split at
// blanks); a refusal quotes mkfs's own message.
absl::StatusOr<std::string> MakeFileSystem(harness::FsKind fs,
                                           const harness::DiskGeometry& geometry,
                                           const std::string& image,
                                           const std::string& options = "");
// `--mkfs-options` / `--mount-options` split at blanks (no quoting: neither takes spaces).
std::vector<std::string> SplitOptions(const std::string& options);

// The block size of the file system on the image, read back from its superblock with the file
// system's own tool (the table's block_size_reading); 0 for raw.
absl::StatusOr<uint32_t> FileSystemBlockSize(harness::FsKind fs, const std::string& image);

// Copies an image keeping holes (cp --sparse=always).
absl::Status CopySparse(const std::string& from, const std::string& to);

// The bytes of a dm-log-writes log device actually used (superblock + entries), read from its
// superblock; the rest of the device is unused.
absl::StatusOr<uint64_t> LogWritesUsedBytes(const std::string& log_device_image);

}  // namespace powercut::vm
