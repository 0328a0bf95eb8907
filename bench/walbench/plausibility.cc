#include "bench/walbench/plausibility.h"

#include <fmt/format.h>

namespace powercut::walbench {

std::string_view VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kPlausible:
      return "plausible";
    case Verdict::kNoDevice:
      return "no_device";
    case Verdict::kNotABarrier:
      return "not_a_barrier";
    case Verdict::kFasterThanMedia:
      return "faster_than_media";
    case Verdict::kNotDurableByDesign:
      return "not_durable_by_design";
    case Verdict::kUnknown:
      return "unknown";
  }
  return "unknown";
}

std::string_view VerdictExplanation(Verdict verdict) {
  switch (verdict) {
    case Verdict::kPlausible:
      return "a device flush per durable operation where the cache needs one; nothing "
             "physically impossible";
    case Verdict::kNoDevice:
      return "no block device under the directory (tmpfs, btrfs, overlay, ...): flushes cannot "
             "be counted, so no barrier can be judged";
    case Verdict::kNotABarrier:
      return "the call returned without a device flush on a write-back device: an acknowledged "
             "write can still sit in the drive's volatile cache when the power goes";
    case Verdict::kFasterThanMedia:
      return "faster than one write per revolution: the write cache answered, not the media, or "
             "the device is not a spinning disk at all (virtual disks such as virtio report "
             "rotational=1). The 2001 xlog test saw 2,000 fsyncs in 5.7 s (351/s) on a 3,600 rpm "
             "disk that can do 60/s";
    case Verdict::kNotDurableByDesign:
      return "none, direct and sync_file_range send no FLUSH/FUA: by design they are not "
             "barriers with a volatile write cache (docs/barriers.md)";
    case Verdict::kUnknown:
      return "cannot judge: FUA writes (not counted by the stat file) or no flush counters";
  }
  return "";
}

std::vector<Finding> AssessBarrier(const PlausibilityInput& in) {
  std::vector<Finding> findings;
  const std::string_view name = wal::BarrierName(in.barrier);
  const bool durable = wal::IsDurableWithVolatileCache(in.barrier);

  if (!in.has_device) {
    findings.push_back(
        {Verdict::kNoDevice, fmt::format("no block device under the directory: device flushes were "
                                         "not counted and {} cannot be judged here",
                                         name)});
    return findings;
  }

  if (durable && in.rotational.value_or(false) && in.same_block_rewrite) {
    const double limit = MaxRewritesPerSecond(kMaxRpm);
    if (in.ops_per_sec > limit) {
      findings.push_back(
          {Verdict::kFasterThanMedia,
           fmt::format("{:.0f} durable rewrites/s of one block on a device that reports "
                       "rotational=1; a {:.0f} rpm disk can do at most {:.0f}/s (one per "
                       "revolution)",
                       in.ops_per_sec, kMaxRpm, limit)});
    }
  }

  if (in.write_cache == WriteCache::kWriteThrough) {
    findings.push_back(
        {durable ? Verdict::kPlausible : Verdict::kNotDurableByDesign,
         fmt::format("the device reports write through: a write is on the media when it "
                     "completes, the block layer sends no flush, and 0 flushes/op is expected "
                     "for {}",
                     name)});
    return findings;
  }

  if (!in.flushes_per_op.has_value()) {
    findings.push_back({Verdict::kUnknown,
                        "the kernel's stat file has no flush counters (Linux < 5.5): flushes "
                        "were not counted"});
    return findings;
  }
  const double flushes = *in.flushes_per_op;

  if (!durable) {
    findings.push_back(
        {Verdict::kNotDurableByDesign,
         fmt::format("{} is not a barrier with a volatile write cache by design ({:.2f} device "
                     "flushes/op{})",
                     name, flushes,
                     flushes >= kMinFlushesPerBarrierOp
                         ? "; the flushes seen came from other I/O on the disk"
                         : "")});
    return findings;
  }

  if (flushes < kMinFlushesPerBarrierOp) {
    const bool fua_possible = in.fua.value_or(false) && (in.barrier == wal::Barrier::kOdsync ||
                                                         in.barrier == wal::Barrier::kRwfDsync ||
                                                         in.barrier == wal::Barrier::kDirectDsync);
    if (fua_possible) {
      findings.push_back(
          {Verdict::kUnknown, fmt::format("{} issued {:.2f} device flushes/op, but the device has "
                                          "FUA, and FUA writes are not counted in the stat file",
                                          name, flushes)});
    } else {
      findings.push_back(
          {Verdict::kNotABarrier,
           fmt::format("{} issued {:.2f} device flushes/op on a write-back device: it is NOT a "
                       "barrier here",
                       name, flushes)});
    }
  } else if (findings.empty()) {
    findings.push_back(
        {Verdict::kPlausible,
         fmt::format("{} issued {:.2f} device flushes/op on a write-back device", name, flushes)});
  }
  return findings;
}

}  // namespace powercut::walbench
