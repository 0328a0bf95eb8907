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

#include "wal/env.h"

namespace powercut::walbench {

class CountingEnv final : public wal::EnvWrapper {
 public:
  explicit CountingEnv(wal::Env* base) : EnvWrapper(base) {}

  uint64_t barriers() const { return barriers_.load(std::memory_order_relaxed); }

  absl::StatusOr<std::unique_ptr<wal::File>> Open(const std::string& path,
                                                  const wal::OpenOptions& options) override;
  absl::Status SyncDir(const std::string& dir) override {
    barriers_.fetch_add(1, std::memory_order_relaxed);
    return EnvWrapper::SyncDir(dir);
  }

 private:
  std::atomic<uint64_t> barriers_{0};
};

}  // namespace powercut::walbench
