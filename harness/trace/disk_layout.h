// Several recorded disks on one clock (docs/trace.md, "Several disks"): where each disk lives in
// the one address space a multi-disk trace writes to.
//
// A multi-disk recording is one dm-log-writes v1 log of a *disk set*: the disks laid end to end,
// each starting at a 1 MiB-aligned byte offset, as if they were one device. Entries stay in the
// recorder's completion order across all disks (one clock); an entry belongs to the disk whose
// bytes its sector falls in. A bare FLUSH carries no data, so the recorder writes the first sector
// of its disk in its `sector` field (the kernel writes 0 there, which is disk 1's first sector: a
// single-disk log is unchanged, and xfstests' replay-log replays a multi-disk log onto the set's
// concatenated image). Marks (acks) belong to no disk. The manifest's `disks` list says where each
// disk starts and how large it is; a trace without it is one disk.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace powercut::harness {

struct DiskExtent {
  uint64_t offset = 0;  // first byte of the disk in the set's address space
  uint64_t bytes = 0;   // the disk's size
  bool operator==(const DiskExtent&) const = default;
};

class DiskLayout {
 public:
  // Disks start at multiples of this in a packed layout.
  static constexpr uint64_t kAlignment = uint64_t{1} << 20;

  // One disk of unknown size (every single-disk trace).
  DiskLayout() = default;
  // Disks of the given sizes laid end to end, each at the next kAlignment boundary.
  static DiskLayout Packed(const std::vector<uint64_t>& sizes);
  // Checks the extents are non-empty, increasing, non-overlapping and start with disk 1 at 0.
  static absl::StatusOr<DiskLayout> FromExtents(std::vector<DiskExtent> extents);

  // Number of disks (at least 1).
  uint32_t count() const { return extents_.empty() ? 1 : static_cast<uint32_t>(extents_.size()); }
  bool several() const { return extents_.size() > 1; }
  // Empty for the default one-disk layout.
  const std::vector<DiskExtent>& extents() const { return extents_; }
  // Bytes of the whole set (the concatenated image): 0 for the default layout.
  uint64_t total_bytes() const;

  // The disk (0-based) holding byte `byte`, or count() when it is in no disk (a gap between two
  // disks or past the last).
  uint32_t DiskAt(uint64_t byte) const;
  // Whether [byte, byte + length) lies inside disk `disk`.
  bool Inside(uint32_t disk, uint64_t byte, uint64_t length) const;
  uint64_t OffsetOf(uint32_t disk) const { return extents_.empty() ? 0 : extents_[disk].offset; }

  bool operator==(const DiskLayout&) const = default;

 private:
  std::vector<DiskExtent> extents_;
};

}  // namespace powercut::harness
