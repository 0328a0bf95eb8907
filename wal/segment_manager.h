// SegmentManager: creates, recycles and removes the segment files of one log directory.
//
// Guarantees: StartSegment returns a segment whose header and directory entry are durable before
// any record goes in:
//   new:      open "<name>.tmp" -> write the header (+ zeros to the full size when preallocating)
//             -> fsync -> close -> rename to SegmentFileName(first_lsn) -> fsync(dir)
//   recycled: rename the oldest released segment to "<new name>.tmp" -> fsync(dir) -> write a fresh
//             header with a new random salt -> fsync -> close -> rename -> fsync(dir)
// so a crash at any point leaves either a complete segment under its final name or a "*.tmp" file
// that never held a record of the new segment (Wal::Open removes those). Stale records left in a
// recycled segment carry the old salt and so fail their checksum.
//
// The spare (once StartPreparer ran): a background thread prepares the next segment off the
// commit path, as the file kSpareSegmentName ("wal-18446744073709551615.log.tmp": a temp name,
// so Wal::Open and recovery treat a leftover spare like any interrupted creation and remove it):
//   fresh:    open(spare, O_CREAT|O_EXCL) -> zeros to the full size (when preallocating), each
//             1 MiB pushed out with sync_file_range so little is dirty at any time -> fsync
//   recycled: rename(oldest released segment, spare) -> fsync(dir)
// and a switch (StartSegment) then only does: write the header (new salt, first LSN) ->
// fdatasync -> rename(spare, final name) -> fsync(dir), waiting for the preparer if the spare is
// not ready yet. Right after each switch the preparer starts on the next spare (recycling the
// oldest released segment when there is one). A preparer error is kept and returned by the switch
// that needs the spare (which fences the log); until then the log runs on.
//
// Not thread-safe: only the WAL's current group-commit leader calls it (the preparer thread is
// internal and touches only the spare file and the state under prep_mu_).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "wal/env.h"
#include "wal/record_format.h"

namespace powercut::wal {

// The segment records are currently written to.
struct ActiveSegment {
  std::unique_ptr<File> file;  // opened with the barrier's flags (O_DIRECT, O_DSYNC, io_uring)
  std::string path;
  SegmentHeader header;
  uint64_t write_offset = kSegmentHeaderSize;  // where the next record goes
  // Recycled: the bytes after the last record may be old records (of another salt), so the
  // chain does not end at zeros; a clean Close seals such a segment (docs/format.md).
  bool stale_tail = false;
};

// The name the next segment is prepared under (a segment temp name no real segment can have:
// LSN 2^64-1 is never assigned).
std::string SpareSegmentName();

struct SegmentManagerOptions {
  Env* env = nullptr;
  std::string dir;
  uint64_t log_id = 0;
  uint64_t segment_bytes = 0;  // a multiple of 4096
  uint32_t block_size = 4096;
  bool preallocate = true;
  bool recycle = true;
  OpenOptions write_open;  // how the returned segment is opened for records
};

class SegmentManager {
 public:
  explicit SegmentManager(SegmentManagerOptions options);
  // Stops the preparer (an unfinished spare is left as a temp file for the next Open to remove).
  ~SegmentManager();
  SegmentManager(const SegmentManager&) = delete;
  SegmentManager& operator=(const SegmentManager&) = delete;

  // Starts the preparer thread on the first spare and waits until it is ready, so that right
  // after Wal::Open no background I/O is in flight. A failure is kept for the first switch.
  void StartPreparer();
  // Stops the preparer (cancelling a zero-fill in progress) and, with `remove_spare`, removes
  // the spare file (best effort: a leftover temp file is removed by the next Open).
  void StopPreparer(bool remove_spare);
  // Waits until the preparer is idle; returns the spare's status (OK when ready). For tests and
  // benchmarks that want a quiet file system.
  absl::Status WaitForSpare();
  // Switches that found the spare still in preparation and had to wait for it.
  uint64_t spare_waits() const;

  // Registers a segment already in the directory (reopen), oldest first.
  void AddExisting(Lsn first_lsn);

  // Makes the segment whose first record has `first_lsn` durable (see above) and opens it. Segments
  // holding only records <= `released_lsn` (never the newest one) are recycled (or, without
  // recycling, removed) first.
  absl::StatusOr<ActiveSegment> StartSegment(Lsn first_lsn, Lsn released_lsn);

  // Opens an existing segment for appending at `write_offset` (reopen of a clean log).
  absl::StatusOr<ActiveSegment> ContinueSegment(Lsn first_lsn, const SegmentHeader& header,
                                                uint64_t write_offset);

  size_t live_segments() const { return live_.size(); }
  uint64_t recycled_count() const { return recycled_; }

 private:
  std::string PathFor(Lsn first_lsn) const;
  // With `header` null: a spare (zeros over the header block too; the switch writes it).
  absl::Status CreateFresh(const std::string& tmp, const SegmentHeader* header);
  absl::Status Recycle(const std::string& old_path, const std::string& tmp,
                       const SegmentHeader& header);
  absl::StatusOr<ActiveSegment> OpenForRecords(const std::string& path, const SegmentHeader& header,
                                               uint64_t write_offset);
  // The switch through the spare (see the class comment).
  absl::StatusOr<ActiveSegment> StartFromSpare(const std::string& path, const SegmentHeader& header,
                                               Lsn released_lsn);

  // What the preparer does next: remove released segments (no recycling), then make the spare
  // by renaming `recycle_from` (when set) or by creating a fresh one.
  struct Job {
    std::string recycle_from;
    std::vector<std::string> remove;
  };
  void SubmitJob(Job job);
  void PreparerLoop();
  absl::Status PrepareSpare(const Job& job, bool* recycled);

  const SegmentManagerOptions options_;
  const std::string spare_path_;
  std::deque<Lsn> live_;  // first LSNs of the segments in the directory, oldest first
  std::mt19937_64 salt_rng_;
  uint64_t recycled_ = 0;

  // --- the preparer ---
  enum class SpareState { kNone, kPreparing, kReady, kFailed };
  std::thread preparer_;  // joinable once StartPreparer ran; started and joined by the leader
  mutable absl::Mutex prep_mu_;
  absl::CondVar prep_cv_;  // signalled on a new job, a finished spare, or stop
  SpareState spare_state_ ABSL_GUARDED_BY(prep_mu_) = SpareState::kNone;
  absl::Status spare_status_ ABSL_GUARDED_BY(prep_mu_);
  bool spare_recycled_ ABSL_GUARDED_BY(prep_mu_) = false;
  std::optional<Job> job_ ABSL_GUARDED_BY(prep_mu_);
  bool stop_ ABSL_GUARDED_BY(prep_mu_) = false;
  uint64_t spare_waits_ ABSL_GUARDED_BY(prep_mu_) = 0;
  // Read by the preparer between zero-fill chunks so that Close does not wait for 64 MiB.
  std::atomic<bool> cancel_{false};
};

// A random 64-bit value from std::random_device (log ids, salts).
uint64_t RandomU64();

}  // namespace powercut::wal
