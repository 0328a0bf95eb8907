// Is a measured barrier physically plausible? Rules, in words, from the device facts and the
// numbers walbench measured. Pure functions: no I/O.
//
// The rules:
// 1. No block device under the directory (tmpfs, btrfs, overlay, ...): flushes cannot be counted,
//    so nothing can be said about the barrier; the numbers are those of the file system alone.
// 2. A barrier that should reach the media (wal::IsDurableWithVolatileCache) but issued fewer than
//    kMinFlushesPerBarrierOp device flushes per operation on a write-back device is not a barrier:
//    an acknowledged write can still sit in the drive's volatile cache. Exception: O_DSYNC-style
//    writes on a device with FUA may use FUA writes, which the stat file does not count.
// 3. On a rotational device, a durable rewrite of one block cannot complete more than once per
//    revolution: at most kMaxRpm/60 per second. Faster means the write cache answered, not the
//    platter (the 2001 xlog test: 2,000 fsyncs in 5.7 s on a 3,600 rpm disk, 351/s against a
//    physical limit of 60/s). Virtual disks (virtio) report rotational=1 too: then the rule says
//    that the "disk" is not a spinning disk, or it lies.
// 4. A write-through device needs and gets no flush: zero flushes per operation are expected.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench/walbench/block_device.h"
#include "wal/barrier.h"

namespace powercut::walbench {

// Fewer device flushes than this per durable operation means the barrier did not flush.
inline constexpr double kMinFlushesPerBarrierOp = 0.5;
// The fastest spindle the rotational rule assumes (5,400-7,200 rpm desktop disks).
inline constexpr double kMaxRpm = 7200;

enum class Verdict {
  kPlausible,           // a flush per operation where one is needed; nothing impossible
  kNoDevice,            // rule 1: cannot judge
  kNotABarrier,         // rule 2
  kFasterThanMedia,     // rule 3
  kNotDurableByDesign,  // none, direct, sync_file_range: documented as not a barrier
  kUnknown,             // e.g. FUA possible, or no flush counters on this kernel
};

std::string_view VerdictName(Verdict verdict);
// What a verdict means, in a sentence or two (printed once under the table).
std::string_view VerdictExplanation(Verdict verdict);

struct Finding {
  Verdict verdict = Verdict::kPlausible;
  std::string text;  // one sentence for a human
};

struct PlausibilityInput {
  bool has_device = false;
  WriteCache write_cache = WriteCache::kUnknown;
  std::optional<bool> fua;
  std::optional<bool> rotational;
  wal::Barrier barrier = wal::Barrier::kFdatasync;
  bool same_block_rewrite = false;
  double ops_per_sec = 0;
  std::optional<double> flushes_per_op;  // nullopt: not counted (no device, old kernel)
};

// Every rule that applies, most severe first; never empty.
std::vector<Finding> AssessBarrier(const PlausibilityInput& input);

// The highest rate a same-block durable rewrite can have on a disk spinning at `rpm`.
inline double MaxRewritesPerSecond(double rpm) { return rpm / 60.0; }

}  // namespace powercut::walbench
