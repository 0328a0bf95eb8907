// Reads a dm-log-writes v1 log (harness/trace_format.h, docs/trace.md) tolerantly but never
// trustingly.
//
// Tolerated, with a note in Trace::notes: a superblock whose nr_entries lags the entries present
// (the kernel rewrites it only after FUA and MARK entries: the reader goes on while the next block
// is a well-formed entry), and a log cut in the middle of an entry (read up to the last whole
// entry). Rejected, with an error naming the log, the entry index and its byte offset: wrong magic
// or version, a bad sectorsize, garbage entries (unknown flags, non-zero padding, data_len on a
// write), a mark longer than a block can hold, and entries beyond the device size. Never crashes
// on any input (fuzzed by tests/fuzz/trace_reader_fuzzer.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "base/hash.h"
#include "harness/trace/disk_layout.h"
#include "harness/trace/trace_format.h"

namespace powercut::harness {

struct TraceEntry {
  uint64_t index = 0;
  uint64_t log_offset = 0;  // byte offset of the entry block in the log
  EntryHeader header;
  std::string mark;          // MARK text
  uint64_t data_offset = 0;  // byte offset of the data in the log
  // Which disk of a set (0-based; harness/trace/disk_layout.h) the entry wrote or flushed: 0 in a
  // single-disk trace and for marks.
  uint32_t disk = 0;

  bool is_mark() const { return header.flags & kFlagMark; }
  bool is_flush() const { return header.flags & kFlagFlush; }
  bool is_fua() const { return header.flags & kFlagFua; }
  bool is_discard() const { return header.flags & kFlagDiscard; }
  // A write or discard: something that changes device content.
  bool changes_content() const { return !is_mark() && header.nr_sectors > 0; }
};

struct Trace {
  uint32_t sector_size = 512;
  uint32_t disks = 1;  // disks recorded on this trace's one clock (TraceReadOptions::disks)
  uint64_t super_nr_entries = 0;  // what the superblock says
  std::vector<TraceEntry> entries;
  std::vector<std::string> notes;  // what was tolerated (lagging superblock, cut log)
  uint64_t parsed_bytes = 0;       // end of the last whole entry
  Hash128 hash;                    // of the sectorsize and the entry bytes (not nr_entries)

  // First 8 hex digits of `hash`: the trace part of state ids.
  std::string ShortHash() const { return hash.Hex().substr(0, 8); }
};

struct TraceReadOptions {
  uint64_t device_bytes = 0;  // when non-zero, entries must lie inside the device
  std::string name = "log";   // for messages: the log's path
  // Several disks on one clock (the manifest's `disks`): each entry gets the disk it lies in, and
  // an entry in no disk, or across two, is an error.
  DiskLayout disks;
};

// Parses a whole log held in memory.
absl::StatusOr<Trace> ParseTrace(absl::Span<const uint8_t> log, const TraceReadOptions& options);

// A log file mapped read-only, with its parsed entries; data() returns an entry's data bytes.
class TraceFile {
 public:
  static absl::StatusOr<std::unique_ptr<TraceFile>> Open(const std::string& path,
                                                         TraceReadOptions options = {});
  ~TraceFile();
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;

  const Trace& trace() const { return trace_; }
  const std::string& path() const { return path_; }
  absl::Span<const uint8_t> data(const TraceEntry& entry) const;

 private:
  TraceFile(std::string path, const uint8_t* map, size_t size, Trace trace)
      : path_(std::move(path)), map_(map), size_(size), trace_(std::move(trace)) {}
  std::string path_;
  const uint8_t* map_;
  size_t size_;
  Trace trace_;
};

}  // namespace powercut::harness
