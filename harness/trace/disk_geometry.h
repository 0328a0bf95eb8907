// The sector geometry of the recorded disk: its logical sector (the unit of addressing, what the
// trace's sectorsize is) and its physical sector (what the drive writes atomically, and so the
// default atomic unit of torn writes). Like a drive's spec sheet:
//
//   512n   512-byte logical and physical sectors (old drives: a torn write can split at 512 B)
//   512e   512-byte logical, 4,096-byte physical (most drives and cloud volumes; this machine's
//          own disk): the default, since it is what databases run on
//   4kn    4,096-byte logical and physical sectors
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace powercut::harness {

enum class SectorFormat { k512n, k512e, k4kn };

struct DiskGeometry {
  uint32_t logical_sector = 512;
  uint32_t physical_sector = 4096;
  bool operator==(const DiskGeometry&) const = default;
};

inline constexpr SectorFormat kDefaultSectorFormat = SectorFormat::k512e;

const char* SectorFormatName(SectorFormat format);  // "512n" / "512e" / "4kn"
DiskGeometry GeometryOf(SectorFormat format);
// The format of a disk a manifest describes by its sector sizes (0 = unknown: the default).
SectorFormat SectorFormatOf(uint32_t logical_sector, uint32_t physical_sector);
// "512n", "512e" or "4kn"; the error lists the three.
absl::StatusOr<SectorFormat> ParseSectorFormat(std::string_view text);

}  // namespace powercut::harness
