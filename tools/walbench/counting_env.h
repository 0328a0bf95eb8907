// An Env that forwards to another Env and counts the barrier syscalls passing through it.
//
// walbench wraps Env::Default() in it to count the WAL's barriers per commit inside the engine
// (exact, unlike device flush counters, which include every other writer on the disk). Counted:
// File::Sync of any kind, Write with dsync, every Write to a file opened with OpenOptions::dsync,
// WriteAndFdatasyncLinked, and Env::SyncDir.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "wal/env.h"

namespace powercut::walbench {

class CountingEnv final : public wal::Env {
 public:
  explicit CountingEnv(wal::Env* base) : base_(base) {}

  uint64_t barriers() const { return barriers_.load(std::memory_order_relaxed); }

  absl::StatusOr<std::unique_ptr<wal::File>> Open(const std::string& path,
                                                  const wal::OpenOptions& options) override;
  absl::Status Rename(const std::string& from, const std::string& to) override {
    return base_->Rename(from, to);
  }
  absl::Status Remove(const std::string& path) override { return base_->Remove(path); }
  absl::Status SyncDir(const std::string& dir) override {
    barriers_.fetch_add(1, std::memory_order_relaxed);
    return base_->SyncDir(dir);
  }
  absl::Status CreateDir(const std::string& dir) override { return base_->CreateDir(dir); }
  absl::StatusOr<bool> Exists(const std::string& path) override { return base_->Exists(path); }
  absl::StatusOr<bool> IsDirectory(const std::string& path) override {
    return base_->IsDirectory(path);
  }
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) override {
    return base_->ListDir(dir);
  }
  absl::StatusOr<uint64_t> FileSize(const std::string& path) override {
    return base_->FileSize(path);
  }
  absl::StatusOr<uint32_t> BlockSize(const std::string& dir) override {
    return base_->BlockSize(dir);
  }

 private:
  wal::Env* const base_;
  std::atomic<uint64_t> barriers_{0};
};

}  // namespace powercut::walbench
