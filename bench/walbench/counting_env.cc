#include "bench/walbench/counting_env.h"

#include "base/status_macros.h"

namespace powercut::walbench {
namespace {

class CountingFile final : public wal::FileWrapper {
 public:
  CountingFile(std::unique_ptr<wal::File> base, bool dsync_fd, std::atomic<uint64_t>* barriers)
      : FileWrapper(std::move(base)), dsync_fd_(dsync_fd), barriers_(barriers) {}

  absl::Status Write(uint64_t offset, absl::Span<const uint8_t> data, bool dsync) override {
    if (dsync || dsync_fd_) barriers_->fetch_add(1, std::memory_order_relaxed);
    return FileWrapper::Write(offset, data, dsync);
  }
  absl::Status Sync(wal::SyncKind kind, uint64_t offset, uint64_t length) override {
    barriers_->fetch_add(1, std::memory_order_relaxed);
    return FileWrapper::Sync(kind, offset, length);
  }
  absl::Status WriteAndFdatasyncLinked(uint64_t offset, absl::Span<const uint8_t> data) override {
    barriers_->fetch_add(1, std::memory_order_relaxed);
    // Forwarded whole so the base keeps its io_uring submission (no double count: the base's
    // Write/Sync are not routed back through this wrapper).
    return FileWrapper::WriteAndFdatasyncLinked(offset, data);
  }

 private:
  const bool dsync_fd_;
  std::atomic<uint64_t>* const barriers_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<wal::File>> CountingEnv::Open(const std::string& path,
                                                             const wal::OpenOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<wal::File> file, EnvWrapper::Open(path, options));
  return std::unique_ptr<wal::File>(
      new CountingFile(std::move(file), options.dsync && !options.read_only, &barriers_));
}

}  // namespace powercut::walbench
