// Scratch disk images for the guest: sparse files, made with mkfs on the host (the same mkfs
// binaries the guest would run, since the guest runs the host's userspace), and copied sparsely
// (the base image is kept before recording starts). Never touches a block device: every function
// refuses a path that is not a regular file (or, for Create, does not exist yet).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace powercut::vm {

// Creates (or truncates) a sparse file of `bytes`.
absl::Status CreateSparseImage(const std::string& path, uint64_t bytes);

// Makes file system `fs` (ext4, xfs, btrfs; "raw" does nothing) on the image file.
absl::Status MakeFileSystem(const std::string& fs, const std::string& image);

// Copies an image keeping holes (cp --sparse=always).
absl::Status CopySparse(const std::string& from, const std::string& to);

// The smallest image `fs` accepts (xfs needs 300 MiB).
uint64_t MinimumImageBytes(const std::string& fs);

// The bytes of a dm-log-writes log device actually used (superblock + entries), read from its
// superblock; the rest of the device is unused.
absl::StatusOr<uint64_t> LogWritesUsedBytes(const std::string& log_device_image);

}  // namespace powercut::vm
