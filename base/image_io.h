// Small file helpers for disk images: whole-buffer pread/pwrite, sparse copies, zeroing ranges,
// whole files read and published.
// Every error names the file and the system call.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace powercut {

absl::Status PwriteFull(int fd, const uint8_t* data, size_t size, uint64_t offset,
                        const std::string& path);
absl::Status PreadFull(int fd, uint8_t* data, size_t size, uint64_t offset,
                       const std::string& path);

// Makes [offset, offset+length) read as zeros (punches a hole; writes zeros where punching is
// not supported).
absl::Status ZeroRange(int fd, uint64_t offset, uint64_t length, const std::string& path);

// Copies `src` to `dst` (created or truncated), keeping holes: only the data extents of `src`
// (SEEK_DATA/SEEK_HOLE) are copied, with copy_file_range (a reflink where the file system can).
absl::Status CopySparse(const std::string& src, const std::string& dst);

// Copies the data extents of open `src_fd` onto open `dst_fd` of the same size, and punches the
// holes of `src` in `dst`: afterwards dst reads exactly like src.
absl::Status CopyOnto(int src_fd, int dst_fd, uint64_t size, const std::string& src,
                      const std::string& dst);
// The same for `length` bytes of `src` from `src_offset` onto `dst` from `dst_offset` (one disk of
// a multi-disk image: harness/trace/disk_layout.h).
absl::Status CopyRangeOnto(int src_fd, uint64_t src_offset, int dst_fd, uint64_t dst_offset,
                           uint64_t length, const std::string& src, const std::string& dst);

absl::StatusOr<uint64_t> FileSize(const std::string& path);

// The whole file; NotFound naming it when it cannot be opened.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);

// Writes `data` to a temporary file beside `path` and renames it to `path`, so a concurrent
// reader (another powercut filling the same cache) sees no file or the whole one, never a part.
// Errors name the file and remove the temporary one.
absl::Status PublishFile(const std::string& path, std::string_view data);

// Maps a file read-only (shared); unmapped on destruction.
class ReadOnlyMap {
 public:
  static absl::StatusOr<std::unique_ptr<ReadOnlyMap>> Open(const std::string& path);
  ~ReadOnlyMap();
  ReadOnlyMap(const ReadOnlyMap&) = delete;
  ReadOnlyMap& operator=(const ReadOnlyMap&) = delete;
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  ReadOnlyMap(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}
  const uint8_t* data_;
  uint64_t size_;
};

}  // namespace powercut
