#include "harness/trace/disk_geometry.h"

#include <string>

#include "fmt/format.h"

namespace powercut::harness {

const char* SectorFormatName(SectorFormat format) {
  switch (format) {
    case SectorFormat::k512n:
      return "512n";
    case SectorFormat::k512e:
      return "512e";
    case SectorFormat::k4kn:
      return "4kn";
  }
  return "?";
}

DiskGeometry GeometryOf(SectorFormat format) {
  switch (format) {
    case SectorFormat::k512n:
      return {512, 512};
    case SectorFormat::k512e:
      return {512, 4096};
    case SectorFormat::k4kn:
      return {4096, 4096};
  }
  return {};
}

SectorFormat SectorFormatOf(uint32_t logical_sector, uint32_t physical_sector) {
  if (logical_sector == 4096) return SectorFormat::k4kn;
  if (physical_sector == 512) return SectorFormat::k512n;
  return kDefaultSectorFormat;
}

absl::StatusOr<SectorFormat> ParseSectorFormat(std::string_view text) {
  for (SectorFormat f : {SectorFormat::k512n, SectorFormat::k512e, SectorFormat::k4kn}) {
    if (text == SectorFormatName(f)) return f;
  }
  return absl::InvalidArgumentError(fmt::format(
      "--sector {}: expected 512n (512-byte sectors), 512e (512-byte logical, 4,096-byte "
      "physical: the default) or 4kn (4,096-byte sectors)",
      std::string(text)));
}

}  // namespace powercut::harness
