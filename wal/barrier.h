// The durability barrier a WAL uses to make appended bytes durable.
//
// What each mode promises under a process crash and a power cut with the drive's volatile write
// cache off, on, or lying is tabulated in docs/barriers.md; the tester (harness/) proves the table.
#pragma once

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace powercut::wal {

enum class Barrier {
  kNone,           // write(2) only: survives a process crash, nothing else.
  kFdatasync,      // pwrite + fdatasync (the default).
  kFsync,          // pwrite + fsync.
  kOdsync,         // fd opened O_DSYNC: every pwrite is a barrier.
  kRwfDsync,       // pwritev2(..., RWF_DSYNC): per-write barrier without an O_DSYNC fd.
  kDirectDsync,    // O_DIRECT|O_DSYNC, aligned buffers (FUA where the device has it).
  kDirect,         // O_DIRECT alone: NOT durable with a volatile cache; kept for the tester.
  kSyncFileRange,  // sync_file_range(WAIT_BEFORE|WRITE|WAIT_AFTER): NOT a barrier; for the tester.
  kIoUring,        // io_uring: write SQE linked (IOSQE_IO_LINK) to an fdatasync SQE.
};

// The name used on command lines, in JSON and in docs: "none", "fdatasync", "fsync", "odsync",
// "rwf_dsync", "direct_dsync", "direct", "sync_file_range", "io_uring".
std::string_view BarrierName(Barrier barrier);
absl::StatusOr<Barrier> ParseBarrier(std::string_view name);

// Every mode compiled into this build (io_uring only with liburing).
const std::vector<Barrier>& AllBarriers();

// True when a successful barrier makes the bytes survive a power cut with a volatile write cache
// that honours FLUSH/FUA (fdatasync, fsync, odsync, rwf_dsync, direct_dsync, io_uring).
bool IsDurableWithVolatileCache(Barrier barrier);

// True when the mode needs O_DIRECT (aligned buffers, block-multiple writes).
bool UsesDirectIo(Barrier barrier);

}  // namespace powercut::wal
