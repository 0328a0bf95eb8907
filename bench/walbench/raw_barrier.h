// A file written with the raw syscall sequence of one barrier mode, with no WAL in between.
//
// walbench measures barriers with this class (and builds its "bare" commit engine on it) so that
// a number is the cost of the barrier itself: pwrite + fdatasync is exactly those two syscalls.
// The sequence per mode is the one wal/barrier.h documents:
//   none             pwrite
//   fdatasync/fsync  pwrite; fdatasync / fsync
//   odsync           open(O_DSYNC); pwrite
//   rwf_dsync        pwritev2(RWF_DSYNC)
//   direct_dsync     open(O_DIRECT|O_DSYNC); pwrite (aligned)
//   direct           open(O_DIRECT); pwrite (aligned)
//   sync_file_range  pwrite; sync_file_range(WAIT_BEFORE|WRITE|WAIT_AFTER)
//   io_uring         write SQE linked (IOSQE_IO_LINK) to an fdatasync SQE, one submit
// Not thread-safe: one writer at a time (the bare group-commit engine has one leader at a time).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "wal/barrier.h"

namespace powercut::walbench {

// A heap buffer aligned for O_DIRECT (4 KiB), zero-filled, of `size` rounded up to 4 KiB.
class AlignedBuffer {
 public:
  explicit AlignedBuffer(size_t size);
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer();

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_;
  size_t size_;
};

class RawBarrierFile {
 public:
  // Opens `path` (creating it) with the open flags `barrier` needs. Fails naming the path, the mode
  // and the errno (e.g. O_DIRECT on tmpfs: EINVAL).
  static absl::StatusOr<std::unique_ptr<RawBarrierFile>> Open(const std::string& path,
                                                              wal::Barrier barrier);
  RawBarrierFile(const RawBarrierFile&) = delete;
  RawBarrierFile& operator=(const RawBarrierFile&) = delete;
  ~RawBarrierFile();

  // Writes zeros over [0, bytes) and fsyncs, so later overwrites change no metadata.
  absl::Status Preallocate(uint64_t bytes);

  // Writes `data` at `offset` and issues the mode's barrier. Direct modes need `data` (address and
  // size) and `offset` aligned to the device's logical block size.
  absl::Status WriteDurably(uint64_t offset, absl::Span<const uint8_t> data);

  // Barrier syscalls issued (fdatasync, fsync, sync_file_range, O_DSYNC/RWF_DSYNC writes, io_uring
  // fdatasync); 0 for none and direct, which issue none.
  uint64_t barrier_calls() const { return barrier_calls_.load(std::memory_order_relaxed); }
  wal::Barrier barrier() const { return barrier_; }
  const std::string& path() const { return path_; }

 private:
  struct Ring;
  RawBarrierFile(std::string path, wal::Barrier barrier, int fd);

  absl::Status PwriteAll(uint64_t offset, absl::Span<const uint8_t> data, int flags);

  std::string path_;
  wal::Barrier barrier_;
  int fd_;
  std::unique_ptr<Ring> ring_;  // io_uring mode only
  std::atomic<uint64_t> barrier_calls_{0};
};

}  // namespace powercut::walbench
