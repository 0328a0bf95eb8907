// The recorder core: turns block-device events (write, flush, FUA write, discard, ack) into a
// dm-log-writes v1 trace in exact completion order (docs/trace.md).
//
// The NBD block server of the VM crash domain (harness/vm/) calls this after each request has
// completed on the backing store and before it replies to the guest; an ack mark is recorded when
// the guest agent relays `ack <id>`. Because every call is made after the request completed, the
// trace order is the device's completion order, and an `ack:<id>` mark follows every request
// completed before the ack was sent.
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
  };

  static absl::StatusOr<std::unique_ptr<Recorder>> Create(const Options& options);
  virtual ~Recorder() = default;

  // A completed write of `data` at byte `offset` (sector-aligned); `fua` if it carried FUA.
  virtual absl::Status RecordWrite(uint64_t offset, absl::Span<const uint8_t> data, bool fua) = 0;
  // A completed cache flush (FLUSH with no data).
  virtual absl::Status RecordFlush() = 0;
  virtual absl::Status RecordDiscard(uint64_t offset, uint64_t length) = 0;
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
