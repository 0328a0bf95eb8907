// Recover: reads a WAL directory back, returns its records in LSN order and says how its tail
// ends: clean, torn (the unsynced end of the log, cut by a crash) or corrupt (damage in a region
// the log itself proves had passed a barrier). docs/recovery.md states the rules and the fault
// model; this header states what the API guarantees.
//
// Guarantees, on any directory content:
// - Never crashes, hangs or returns a record whose checksum (with its segment's salt) failed.
// - Returned records are in ascending LSN order; outside salvage mode they are dense (each LSN one
//   more than the one before) and start at the first segment's first LSN.
// - Errors name the directory or file, the offset and LSN where it applies, and what to do.
// - Reads only: nothing on disk changes (Repair, recovery/repair.h, is the only writer).
//
// An empty directory is an empty log: zero records, tail clean, next_lsn 1.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "wal/env.h"
#include "wal/record_format.h"
#include "wal/segment_reader.h"

namespace powercut::recovery {

enum class Mode {
  // Default. A torn tail is the normal result of a crash: records before it are returned. Damage
  // the log proves was synced (corrupt) fails with an error naming segment, offset and LSN.
  kTolerateTornTail,
  // Stops at the first bad record, whatever it is; returns the records before it and reports
  // how many valid records after it were dropped. Never fails because of damage.
  kPointInTime,
  // Any damage, a torn tail included, fails. Only a clean log recovers.
  kAbsolute,
  // Skips bad regions and keeps every valid record after them (LSNs may have holes, which are
  // listed in `damage`). For reading data out of a broken log, not for reopening it.
  kSalvage,
};

// "tolerate-torn-tail", "point-in-time", "absolute", "salvage".
std::string_view ModeName(Mode mode);
absl::StatusOr<Mode> ParseMode(std::string_view name);
const std::vector<Mode>& AllModes();

enum class TailState { kClean, kTorn, kCorrupt };
std::string_view TailStateName(TailState tail);  // "clean", "torn", "corrupt"

struct RecoveredRecord {
  wal::Lsn lsn = 0;
  std::string payload;  // empty when RecoverOptions::keep_payloads is false
};

// One segment file as recovery saw it.
struct SegmentSummary {
  std::string name;
  uint64_t file_size = 0;
  bool header_ok = false;
  std::string header_error;  // why the header was rejected (salvage mode only; else an error)
  wal::SegmentHeader header;
  bool scanned = false;        // its chain was walked (segments after the end of the log are not)
  uint64_t chain_end = 0;      // end offset of the valid chain from the header
  uint64_t chain_records = 0;  // data records in that chain
  wal::ScanStop stop = wal::ScanStop::kZero;
};

// A place where the log is not one clean, dense run of records.
struct Damage {
  std::string segment;          // file name where the damage starts
  uint64_t offset = 0;          // byte offset in that segment
  wal::Lsn first_lsn = 0;       // the first LSN missing from the returned records
  wal::Lsn next_found_lsn = 0;  // the next LSN found intact after it (0: none)
  std::string reason;
};

struct RecoveryResult {
  std::string dir;
  Mode mode = Mode::kTolerateTornTail;
  std::vector<RecoveredRecord> records;  // empty when Recover was given a RecordVisitor
  // Records returned (or passed to the visitor), and the LSNs of the first and last of them.
  uint64_t record_count = 0;
  wal::Lsn first_record_lsn = 0;
  wal::Lsn last_record_lsn = 0;
  TailState tail = TailState::kClean;
  // First LSN of the log (of its first segment), 0 for an empty directory.
  wal::Lsn first_lsn = 0;
  // Where the valid prefix of the log ends: the LSN the log continues with after Repair, and the
  // segment (index into `segments`, and its name) and offset where the next record would go.
  wal::Lsn next_lsn = 1;
  std::optional<size_t> tail_segment_index;
  std::string tail_segment;
  uint64_t tail_offset = 0;
  std::vector<SegmentSummary> segments;
  // damage[0] is the end of the valid prefix when tail is not clean; salvage adds every hole.
  std::vector<Damage> damage;
  // When corrupt: the record that proves the damaged region had passed a barrier, or the
  // structural inconsistency (no crash produces it).
  std::string corruption_evidence;
  // Valid records found after the end of the valid prefix and not returned (0 in salvage mode).
  uint64_t dropped_records = 0;
  // Leftover "*.log.tmp" files of an interrupted segment creation (ignored; Repair removes them).
  std::vector<std::string> temp_files;

  wal::Lsn last_lsn() const { return record_count == 0 ? next_lsn - 1 : last_record_lsn; }
  // One line: "clean, 1200 records (LSN 1..1200)" / "torn at wal-…log+8192 (LSN 17), 3 dropped".
  std::string Summary() const;
};

struct RecoverOptions {
  wal::Env* env = nullptr;  // nullptr: wal::Env::Default()
  Mode mode = Mode::kTolerateTornTail;
  // False: records carry their LSN only (classification and LSN ranges, without the memory).
  bool keep_payloads = true;
  size_t read_chunk_bytes = 4 << 20;
};

absl::StatusOr<RecoveryResult> Recover(const std::string& dir, const RecoverOptions& options = {});

// The streaming form, for callers that apply records as they come and need no copies: `visit` is
// called once for each record the form above would return, in the same order, and
// result.records stays empty (record_count and first/last_record_lsn are set).
// - `payload` points into the segment reader's buffer and is valid only during the call.
// - A non-OK status from `visit` stops recovery and is returned as is.
// - The valid prefix is visited as it is read, before the tail is classified: when Recover then
//   fails (a corrupt tail in the default mode, any damage in absolute mode), the caller must
//   discard what it was shown (e.g. apply in a transaction committed only on OK).
// - Salvage mode visits the records after the first hole after classification; those (few) are
//   copied once to put them in LSN order. options.keep_payloads is ignored.
using RecordVisitor = std::function<absl::Status(wal::Lsn lsn, absl::Span<const uint8_t> payload)>;
absl::StatusOr<RecoveryResult> Recover(const std::string& dir, const RecoverOptions& options,
                                       const RecordVisitor& visit);

}  // namespace powercut::recovery
