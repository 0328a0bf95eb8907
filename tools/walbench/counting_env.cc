#include "tools/walbench/counting_env.h"

#include "wal/status_macros.h"

namespace powercut::walbench {
namespace {

class CountingFile final : public wal::File {
 public:
  CountingFile(std::unique_ptr<wal::File> base, bool dsync_fd, std::atomic<uint64_t>* barriers)
      : base_(std::move(base)), dsync_fd_(dsync_fd), barriers_(barriers) {}

  absl::Status Write(uint64_t offset, absl::Span<const uint8_t> data, bool dsync) override {
    if (dsync || dsync_fd_) barriers_->fetch_add(1, std::memory_order_relaxed);
    return base_->Write(offset, data, dsync);
  }
  absl::StatusOr<size_t> Read(uint64_t offset, size_t size, uint8_t* out) override {
    return base_->Read(offset, size, out);
  }
  absl::Status Sync(wal::SyncKind kind, uint64_t offset, uint64_t length) override {
    barriers_->fetch_add(1, std::memory_order_relaxed);
    return base_->Sync(kind, offset, length);
  }
  absl::Status WriteAndFdatasyncLinked(uint64_t offset, absl::Span<const uint8_t> data) override {
    barriers_->fetch_add(1, std::memory_order_relaxed);
    // Forwarded whole so the base keeps its io_uring submission (no double count: the base's
    // Write/Sync are not routed back through this wrapper).
    return base_->WriteAndFdatasyncLinked(offset, data);
  }
  absl::StatusOr<uint64_t> Size() override { return base_->Size(); }
  absl::Status Truncate(uint64_t size) override { return base_->Truncate(size); }
  absl::Status Close() override { return base_->Close(); }
  const std::string& path() const override { return base_->path(); }

 private:
  const std::unique_ptr<wal::File> base_;
  const bool dsync_fd_;
  std::atomic<uint64_t>* const barriers_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<wal::File>> CountingEnv::Open(const std::string& path,
                                                             const wal::OpenOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<wal::File> file, base_->Open(path, options));
  return std::unique_ptr<wal::File>(
      new CountingFile(std::move(file), options.dsync && !options.read_only, &barriers_));
}

}  // namespace powercut::walbench
