// The xlog workload: the 2001 linux-kernel "xlog" test as a protocol workload.
//
// Overwrite variant (default): one preallocated file (or POWERCUT_DEV); data block 1 is rewritten
// with seq 1..N, each write followed by the barrier, then "ack <seq>". An ack is cumulative: the
// block holds seq >= n for every acked n.
// Append variant (--append): block i (i = 1..N) is appended, then the barrier, then "ack <i>".
// --ack-first (a known-bad control): "ack <i>" is sent after the write returns but before its
// fdatasync/fsync, so the ack claims a record that is only in the page cache.
//
// The barrier syscalls are issued here directly (not through wal::Env), so the workload measures
// and exposes exactly what the kernel does for each mode. Layout: workloads/xlog_format.h.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wal/barrier.h"
#include "workloads/ack_channel.h"
#include "workloads/check_result.h"

namespace powercut::workloads {

// The file the workload creates in POWERCUT_DIR (via "<name>.tmp", fsync, rename, directory fsync,
// so it either does not exist after a crash or has a durable header).
inline constexpr char kXlogFileName[] = "xlog.dat";

struct XlogOptions {
  wal::Barrier barrier = wal::Barrier::kFdatasync;
  bool append = false;
  // Ack each record after its write but before its barrier (fdatasync or fsync only): survives a
  // process crash, loses acked records to a power cut under every cache model.
  bool ack_first = false;
  uint64_t count = 2000;
  uint64_t seed = 1;
};

// Sets up the file (or device), then writes, barriers and acks `count` blocks. Stops at the first
// failed write or barrier and returns it (no later ack is sent: durability is unknown).
// InvalidArgument for a bad target (e.g. the file already exists).
absl::Status RunXlog(const Target& target, const XlogOptions& options, AckChannel& acks);

// Reads the file (or device) back. Overwrite: intact block of seq s -> have 1..s; a torn block
// whose sectors are all valid -> have 1..oldest sector seq and corrupt <newest seq>; a torn block
// with zero/garbage sectors -> corrupt <newest seq>. Append: have every intact block; corrupt for
// a damaged block before the last intact one; damage after it is a torn tail (a note).
// DataLoss when the store cannot be opened (damaged header in a file, unrecognisable block).
absl::StatusOr<CheckResult> CheckXlog(const Target& target);

}  // namespace powercut::workloads
