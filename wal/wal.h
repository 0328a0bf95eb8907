// A journaling write-ahead log with a configurable durability barrier and group commit.
//
// Guarantees (see docs/barriers.md for what "durable" means under each barrier mode):
// - LSNs are dense (1, 2, 3, ...), assigned in Append order; recovery returns records in LSN order.
// - Sync(lsn) / Commit() return OK only after every record <= the LSN has passed the barrier.
// - Any failed write or barrier (EIO, ENOSPC, short write) fences the log: the failing call, every
//   waiting call and every later call returns an error saying durability is unknown
//   (absl::StatusCode::kDataLoss). The WAL never retries a barrier and then reports success.
//   Reopen + recovery (recovery/) is the way back.
// - Group commit: concurrent committers share a barrier. The first waiting committer leads and does
//   the write + barrier itself (no hand-off to a background thread); records appended while a
//   barrier is in flight are written by the next leader.
// - Segments are created as a temp file, preallocated by writing zeros (or recycled), fsynced,
//   renamed and the directory fsynced before any record goes in. The next segment is prepared
//   by one background thread per Wal (the only thread a Wal starts; it never touches the commit
//   path), so a segment switch costs a header write + fdatasync + rename + directory fsync; a
//   preparer error fences the log at the switch that needs that segment (docs/barriers.md).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "wal/barrier.h"
#include "wal/env.h"
#include "wal/record_format.h"

namespace powercut::wal {

struct WalOptions {
  Barrier barrier = Barrier::kFdatasync;
  Env* env = nullptr;  // nullptr: Env::Default()
  uint64_t segment_bytes = 64ull << 20;
  // Write zeros over a new segment before use. Off shows the cost of metadata commits per barrier.
  bool preallocate = true;
  // Reuse the oldest segment (after ReleaseUpTo) instead of creating a new one.
  bool recycle_segments = true;
  // Upper bound on the bytes one leader writes for one barrier.
  uint64_t max_batch_bytes = 4ull << 20;
  // A leader waits up to this long for more committers before its barrier (0: never waits).
  absl::Duration max_batch_wait = absl::ZeroDuration();
  // Create the directory if missing (its parent must exist).
  bool create_if_missing = true;
};

class Wal {
 public:
  // Opens the log in `dir` (created when missing and options.create_if_missing). An existing log
  // whose tail is clean (ends at zeros or a segment end) continues at the next LSN; a torn or
  // corrupt tail fails with FailedPrecondition naming the segment and offset: recover it first with
  // recovery::OpenAndRecover (recovery/), which repairs a torn tail and then calls Open. Files in
  // `dir` that are not segments are an error naming them. Scanning uses wal/segment_reader.h.
  static absl::StatusOr<std::unique_ptr<Wal>> Open(const std::string& dir, WalOptions options);

  virtual ~Wal() = default;

  // Buffers `record`; not durable until Sync covers its LSN.
  virtual absl::StatusOr<Lsn> Append(absl::Span<const uint8_t> record) = 0;

  // Returns once every record <= lsn is durable under the barrier (or the log is fenced).
  virtual absl::Status Sync(Lsn lsn) = 0;

  // Append + Sync, group-committed with concurrent callers.
  virtual absl::StatusOr<Lsn> Commit(absl::Span<const uint8_t> record) = 0;

  // Asynchronous commit: `done` runs exactly once, on some committing thread, after the record is
  // durable (OK with its LSN) or the log is fenced (the error). Must not block for long. There is
  // no background thread: when no leader is active the caller leads the round itself, so `done`
  // may run before CommitAsync returns; otherwise the active leader picks the record up.
  using CommitCallback = std::function<void(absl::StatusOr<Lsn>)>;
  virtual void CommitAsync(absl::Span<const uint8_t> record, CommitCallback done) = 0;

  // Highest LSN known durable; 0 when none.
  virtual Lsn DurableLsn() const = 0;
  // Highest LSN assigned so far.
  virtual Lsn LastLsn() const = 0;

  // Segments holding only records <= lsn may be recycled or removed.
  virtual absl::Status ReleaseUpTo(Lsn lsn) = 0;

  // Syncs what was appended (under the configured barrier), seals a recycled active segment (so
  // the log reopens without repair: docs/format.md), stops the preparer, then closes. Further
  // calls fail with FailedPrecondition. Destroying a Wal without Close syncs nothing, like a
  // process exit.
  virtual absl::Status Close() = 0;

  // OK, or the error that fenced the log.
  virtual absl::Status health() const = 0;
};

}  // namespace powercut::wal
