// The recorder core: turns block-device events (write, flush, FUA write, discard, ack) into a
// dm-log-writes v1 trace in exact completion order (docs/trace.md).
//
// The NBD block server of the VM crash domain (harness/vm/) calls this after each request has
// completed on the backing store and before it replies to the guest; an ack mark is recorded when
// the guest agent relays `ack <id>`. Because every call is made after the request completed, the
// trace order is the device's completion order, and an `ack:<id>` mark follows every request
// completed before the ack was sent.
//
// Several disks on one clock (harness/trace/disk_layout.h): one recorder serves every disk's block
// server, so the trace holds all disks' requests in the one order they completed in. The Disk*
// calls take the disk (0-based) and an offset inside it; the others are disk 0's.
//
// Thread-safe: calls are serialized; the order of entries is the order the calls were made.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "harness/trace/disk_layout.h"

namespace powercut::harness {

class Recorder {
 public:
  struct Options {
    std::string log_path;        // the dm-log-writes v1 log to write
    uint32_t sector_size = 512;  // the log's sectorsize (512 or 4096)
    uint64_t device_bytes = 0;   // size of the recorded device; writes beyond it are an error
    // Optional: a copy of the device's content before recording. When set, Finish() also writes
    // the manifest (harness/manifest.h) beside the log, with order semantics "completion".
    std::string base_image;
    // Several disks: where each lies in the trace's address space (device_bytes is then unused:
    // each disk's own size bounds its writes). Default: one disk.
    DiskLayout disks;
  };

  static absl::StatusOr<std::unique_ptr<Recorder>> Create(const Options& options);
  virtual ~Recorder() = default;

  // A completed write of `data` at byte `offset` (sector-aligned) of disk `disk`; `fua` if it
  // carried FUA.
  virtual absl::Status RecordDiskWrite(uint32_t disk, uint64_t offset,
                                       absl::Span<const uint8_t> data, bool fua) = 0;
  // A completed cache flush (FLUSH with no data) of disk `disk`: its entry's sector is the disk's
  // first sector (0 for disk 1, as the kernel writes it).
  virtual absl::Status RecordDiskFlush(uint32_t disk) = 0;
  virtual absl::Status RecordDiskDiscard(uint32_t disk, uint64_t offset, uint64_t length) = 0;
  // The same for disk 0 (a single-disk recording).
  absl::Status RecordWrite(uint64_t offset, absl::Span<const uint8_t> data, bool fua) {
    return RecordDiskWrite(0, offset, data, fua);
  }
  absl::Status RecordFlush() { return RecordDiskFlush(0); }
  absl::Status RecordDiscard(uint64_t offset, uint64_t length) {
    return RecordDiskDiscard(0, offset, length);
  }
  // A mark; `text` must fit in one sector after the entry header. Acks are marks "ack:<id>".
  virtual absl::Status RecordMark(std::string_view text) = 0;
  // `id` must be 1..64 characters of [A-Za-z0-9_.:-] (the workload protocol).
  absl::Status RecordAck(std::string_view id);

  // Number of entries so far.
  virtual uint64_t entries() const = 0;
  // Writes the final superblock and fsyncs the log. Idempotent.
  virtual absl::Status Finish() = 0;
};

}  // namespace powercut::harness
