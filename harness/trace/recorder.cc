#include "harness/trace/recorder.h"

#include "absl/synchronization/mutex.h"
#include "base/ack_id.h"
#include "base/status_macros.h"
#include "base/tsan_mutex.h"
#include "fmt/format.h"
#include "harness/trace/manifest.h"
#include "harness/trace/trace_writer.h"

namespace powercut::harness {
namespace {

// Serializes the events onto one TraceWriter; the call order is the trace order.
class TraceRecorder final : public Recorder {
 public:
  TraceRecorder(Options options, std::unique_ptr<TraceWriter> writer)
      : options_(std::move(options)), writer_(std::move(writer)) {}

  absl::Status RecordDiskWrite(uint32_t disk, uint64_t offset, absl::Span<const uint8_t> data,
                               bool fua) override {
    RETURN_IF_ERROR(CheckRange("write", disk, offset, data.size()));
    EntryHeader h;
    h.sector = (options_.disks.OffsetOf(disk) + offset) / options_.sector_size;
    h.nr_sectors = data.size() / options_.sector_size;
    h.flags = fua ? kFlagFua : 0;
    powercut::MutexLock lock(&mu_);
    return writer_->Append(h, {}, data);
  }

  absl::Status RecordDiskFlush(uint32_t disk) override {
    if (disk >= options_.disks.count()) return NoSuchDisk(disk);
    EntryHeader h;
    h.sector = options_.disks.OffsetOf(disk) / options_.sector_size;
    h.flags = kFlagFlush;
    powercut::MutexLock lock(&mu_);
    return writer_->Append(h, {}, {});
  }

  absl::Status RecordDiskDiscard(uint32_t disk, uint64_t offset, uint64_t length) override {
    RETURN_IF_ERROR(CheckRange("discard", disk, offset, length));
    EntryHeader h;
    h.sector = (options_.disks.OffsetOf(disk) + offset) / options_.sector_size;
    h.nr_sectors = length / options_.sector_size;
    h.flags = kFlagDiscard;
    powercut::MutexLock lock(&mu_);
    return writer_->Append(h, {}, {});
  }

  absl::Status RecordMark(std::string_view text) override {
    if (text.find('\0') != std::string_view::npos) {
      return absl::InvalidArgumentError("recorder: a mark may not contain a NUL byte");
    }
    EntryHeader h;
    h.flags = kFlagMark;
    powercut::MutexLock lock(&mu_);
    return writer_->Append(h, text, {});
  }

  uint64_t entries() const override {
    powercut::MutexLock lock(&mu_);
    return writer_->entries();
  }

  absl::Status Finish() override {
    powercut::MutexLock lock(&mu_);
    RETURN_IF_ERROR(writer_->Finish());
    if (!options_.base_image.empty() && !manifest_written_) {
      ASSIGN_OR_RETURN(TraceManifest m,
                       MakeManifest(options_.base_image, options_.sector_size,
                                    OrderSemantics::kCompletion, writer_->entries()));
      if (options_.disks.several()) {
        for (const DiskExtent& e : options_.disks.extents()) {
          m.disks.push_back({.offset = e.offset, .bytes = e.bytes});
        }
      }
      RETURN_IF_ERROR(WriteManifest(ManifestPathFor(options_.log_path), m));
      manifest_written_ = true;
    }
    return absl::OkStatus();
  }

 private:
  absl::Status NoSuchDisk(uint32_t disk) const {
    return absl::InvalidArgumentError(
        fmt::format("recorder: disk {} of a set of {} disks", disk + 1, options_.disks.count()));
  }

  absl::Status CheckRange(const char* what, uint32_t disk, uint64_t offset, uint64_t length) const {
    if (disk >= options_.disks.count()) return NoSuchDisk(disk);
    const uint64_t ss = options_.sector_size;
    if (length == 0 || offset % ss != 0 || length % ss != 0) {
      return absl::InvalidArgumentError(fmt::format(
          "recorder: {} at byte {} of {} bytes is not a non-empty multiple of the {}-byte sector",
          what, offset, length, ss));
    }
    const uint64_t device_bytes =
        options_.disks.several() ? options_.disks.extents()[disk].bytes : options_.device_bytes;
    if (device_bytes != 0 && (offset > device_bytes || length > device_bytes - offset)) {
      return absl::OutOfRangeError(
          fmt::format("recorder: {} at byte {} of {} bytes ends beyond the {}-byte device", what,
                      offset, length, device_bytes));
    }
    return absl::OkStatus();
  }

  const Options options_;
  mutable absl::Mutex mu_;
  std::unique_ptr<TraceWriter> writer_ ABSL_GUARDED_BY(mu_);
  bool manifest_written_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Recorder>> Recorder::Create(const Options& options) {
  if (options.log_path.empty()) return absl::InvalidArgumentError("recorder: log_path is empty");
  ASSIGN_OR_RETURN(auto writer, TraceWriter::Create({options.log_path, options.sector_size}));
  return std::unique_ptr<Recorder>(new TraceRecorder(options, std::move(writer)));
}

absl::Status Recorder::RecordAck(std::string_view id) {
  if (!IsValidAckId(id)) {
    return absl::InvalidArgumentError(fmt::format(
        "recorder: ack id \"{}\" is not 1..64 characters of [A-Za-z0-9_.:-]", std::string(id)));
  }
  return RecordMark(fmt::format("{}{}", kAckMarkPrefix, id));
}

}  // namespace powercut::harness
