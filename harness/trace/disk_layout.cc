#include "harness/trace/disk_layout.h"

#include <algorithm>

#include "fmt/format.h"

namespace powercut::harness {

DiskLayout DiskLayout::Packed(const std::vector<uint64_t>& sizes) {
  DiskLayout layout;
  if (sizes.size() < 2) return layout;  // one disk: the plain layout of every single-disk trace
  uint64_t next = 0;
  for (uint64_t bytes : sizes) {
    layout.extents_.push_back({next, bytes});
    next = (next + bytes + kAlignment - 1) / kAlignment * kAlignment;
  }
  return layout;
}

absl::StatusOr<DiskLayout> DiskLayout::FromExtents(std::vector<DiskExtent> extents) {
  DiskLayout layout;
  if (extents.size() < 2) return layout;
  uint64_t end = 0;
  for (size_t i = 0; i < extents.size(); ++i) {
    const DiskExtent& e = extents[i];
    if (e.bytes == 0 || (i == 0 && e.offset != 0) || (i > 0 && e.offset < end)) {
      return absl::InvalidArgumentError(fmt::format(
          "disk {} at byte {} of {} bytes: disks must be non-empty, start at 0 and not overlap "
          "(the previous one ends at byte {})",
          i + 1, e.offset, e.bytes, end));
    }
    end = e.offset + e.bytes;
  }
  layout.extents_ = std::move(extents);
  return layout;
}

uint64_t DiskLayout::total_bytes() const {
  return extents_.empty() ? 0 : extents_.back().offset + extents_.back().bytes;
}

uint32_t DiskLayout::DiskAt(uint64_t byte) const {
  if (extents_.empty()) return 0;
  auto it = std::upper_bound(extents_.begin(), extents_.end(), byte,
                             [](uint64_t b, const DiskExtent& e) { return b < e.offset; });
  if (it == extents_.begin()) return count();
  --it;
  if (byte >= it->offset + it->bytes) return count();
  return static_cast<uint32_t>(it - extents_.begin());
}

bool DiskLayout::Inside(uint32_t disk, uint64_t byte, uint64_t length) const {
  if (extents_.empty()) return disk == 0;
  if (disk >= extents_.size()) return false;
  const DiskExtent& e = extents_[disk];
  return byte >= e.offset && length <= e.bytes && byte - e.offset <= e.bytes - length;
}

}  // namespace powercut::harness
