// Writes a dm-log-writes v1 log byte-exactly as the kernel does (harness/trace_format.h,
// docs/trace.md).
//
// Guarantees: entries are appended in call order; after every FUA or MARK entry and on Finish() the
// superblock is rewritten with the entry count (as the kernel's log thread does), so a log cut
// short by a crash of the writer is still readable up to its last whole entry. Unlike the kernel,
// Create() also writes a superblock with nr_entries = 0, so that an empty log is valid.
// Not thread-safe: the Recorder serializes calls.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "harness/trace/trace_format.h"

namespace powercut::harness {

class TraceWriter {
 public:
  struct Options {
    std::string path;
    uint32_t sector_size = 512;
  };

  // Creates (truncates) the log file.
  static absl::StatusOr<std::unique_ptr<TraceWriter>> Create(const Options& options);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Appends one entry. `data` must be nr_sectors * sector_size bytes for a write (empty for a
  // flush, discard or mark); `mark` is the text of a MARK entry (data_len is set from it).
  absl::Status Append(EntryHeader header, std::string_view mark, absl::Span<const uint8_t> data);

  // Rewrites the superblock and fsyncs the log. Idempotent; Append after Finish is an error.
  absl::Status Finish();

  uint64_t entries() const { return entries_; }
  uint32_t sector_size() const { return sector_size_; }
  const std::string& path() const { return path_; }

 private:
  TraceWriter(std::string path, int fd, uint32_t sector_size);
  absl::Status WriteSuper();
  absl::Status PwriteAll(const uint8_t* data, size_t size, uint64_t offset, const char* what);

  const std::string path_;
  int fd_;
  const uint32_t sector_size_;
  uint64_t entries_ = 0;
  uint64_t next_offset_;  // byte offset of the next entry block
  bool finished_ = false;
};

}  // namespace powercut::harness
