#include "wal/barrier.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <utility>

namespace powercut::wal {
namespace {

constexpr std::array<std::pair<Barrier, std::string_view>, 9> kNames = {{
    {Barrier::kNone, "none"},
    {Barrier::kFdatasync, "fdatasync"},
    {Barrier::kFsync, "fsync"},
    {Barrier::kOdsync, "odsync"},
    {Barrier::kRwfDsync, "rwf_dsync"},
    {Barrier::kDirectDsync, "direct_dsync"},
    {Barrier::kDirect, "direct"},
    {Barrier::kSyncFileRange, "sync_file_range"},
    {Barrier::kIoUring, "io_uring"},
}};

}  // namespace

std::string_view BarrierName(Barrier barrier) {
  for (const auto& [b, name] : kNames) {
    if (b == barrier) return name;
  }
  return "unknown";
}

const std::vector<Barrier>& AllBarriers() {
  static const auto* all = [] {
    auto* v = new std::vector<Barrier>;
    for (const auto& [b, name] : kNames) {
#if !POWERCUT_HAVE_URING
      if (b == Barrier::kIoUring) continue;
#endif
      v->push_back(b);
    }
    return v;
  }();
  return *all;
}

absl::StatusOr<Barrier> ParseBarrier(std::string_view name) {
  for (Barrier b : AllBarriers()) {
    if (BarrierName(b) == name) return b;
  }
  std::vector<std::string_view> names;
  for (Barrier b : AllBarriers()) names.push_back(BarrierName(b));
  return absl::InvalidArgumentError(
      fmt::format("unknown barrier '{}'; expected one of: {}", name, fmt::join(names, ", ")));
}

bool IsDurableWithVolatileCache(Barrier barrier) {
  switch (barrier) {
    case Barrier::kFdatasync:
    case Barrier::kFsync:
    case Barrier::kOdsync:
    case Barrier::kRwfDsync:
    case Barrier::kDirectDsync:
    case Barrier::kIoUring:
      return true;
    case Barrier::kNone:
    case Barrier::kDirect:
    case Barrier::kSyncFileRange:
      return false;
  }
  return false;
}

bool UsesDirectIo(Barrier barrier) {
  return barrier == Barrier::kDirect || barrier == Barrier::kDirectDsync;
}

}  // namespace powercut::wal
