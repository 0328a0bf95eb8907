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
// Not thread-safe: only the WAL's current group-commit leader calls it.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <string>

#include "absl/status/statusor.h"
#include "wal/env.h"
#include "wal/record_format.h"

namespace powercut::wal {

// The segment records are currently written to.
struct ActiveSegment {
  std::unique_ptr<File> file;  // opened with the barrier's flags (O_DIRECT, O_DSYNC, io_uring)
  std::string path;
  SegmentHeader header;
  uint64_t write_offset = kSegmentHeaderSize;  // where the next record goes
};

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
  absl::Status CreateFresh(const std::string& tmp, const SegmentHeader& header);
  absl::Status Recycle(const std::string& old_path, const std::string& tmp,
                       const SegmentHeader& header);
  absl::StatusOr<ActiveSegment> OpenForRecords(const std::string& path, const SegmentHeader& header,
                                               uint64_t write_offset);

  const SegmentManagerOptions options_;
  std::deque<Lsn> live_;  // first LSNs of the segments in the directory, oldest first
  std::mt19937_64 salt_rng_;
  uint64_t recycled_ = 0;
};

// A random 64-bit value from std::random_device (log ids, salts).
uint64_t RandomU64();

}  // namespace powercut::wal
