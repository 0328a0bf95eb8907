// The bare engine: the floor the device sets for durable commits.
//
// One thread: pwrite(record) + barrier, at successive offsets of a preallocated (zero-filled)
// file, so no barrier has to commit file-system metadata. Several threads: a leader/follower group
// commit in its simplest form. A committer copies its record into the pending batch; if no leader
// is active it becomes the leader, takes the whole batch, writes it with one pwrite and one barrier
// (without the lock), marks everything in it durable and wakes the waiters. There is no waiting
// for more committers and no per-record framing: nothing a real log could do with less work.
#include <fmt/format.h>

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "base/status_macros.h"
#include "bench/walbench/commit_engine.h"
#include "bench/walbench/raw_barrier.h"

namespace powercut::walbench {
namespace {

// The bare engine cycles through this much preallocated file.
constexpr uint64_t kBareFileBytes = 64ull << 20;

class BareEngine : public CommitEngine {
 public:
  BareEngine(std::unique_ptr<RawBarrierFile> file, int threads)
      : file_(std::move(file)), single_thread_(threads == 1) {}

  absl::Status Commit(int /*thread*/, absl::Span<const uint8_t> record) override {
    if (single_thread_) {
      const uint64_t offset = NextOffset(record.size());
      return file_->WriteDurably(offset, record);
    }
    absl::MutexLock lock(&mu_);
    const uint64_t seq = ++next_seq_;
    pending_.append(reinterpret_cast<const char*>(record.data()), record.size());
    while (durable_seq_ < seq) {
      if (!status_.ok()) return status_;
      if (leader_active_) {
        cv_.Wait(&mu_);
        continue;
      }
      LeadOneBatch();
    }
    return status_;
  }

  uint64_t BarrierCount() const override { return file_->barrier_calls(); }

  absl::Status Close() override { return absl::OkStatus(); }

 private:
  // Writes everything pending with one barrier. Called with mu_ held; releases it during I/O.
  void LeadOneBatch() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    leader_active_ = true;
    std::string batch;
    batch.swap(pending_);
    const uint64_t batch_last_seq = next_seq_;
    const uint64_t offset = NextOffset(batch.size());
    mu_.Unlock();
    absl::Status status = file_->WriteDurably(
        offset, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(batch.data()), batch.size()));
    mu_.Lock();
    leader_active_ = false;
    if (status.ok()) {
      durable_seq_ = batch_last_seq;
    } else if (status_.ok()) {
      status_ = absl::DataLossError(
          fmt::format("bare engine fenced after a failed barrier (durability unknown): {}",
                      std::string(status.message())));
    }
    cv_.SignalAll();
  }

  // The offset for `bytes` more, wrapping to the start of the preallocated file.
  uint64_t NextOffset(uint64_t bytes) {
    if (write_offset_ + bytes > kBareFileBytes) write_offset_ = 0;
    const uint64_t offset = write_offset_;
    write_offset_ += bytes;
    return offset;
  }

  const std::unique_ptr<RawBarrierFile> file_;
  const bool single_thread_;
  uint64_t write_offset_ = 0;  // the single thread's, or the leader's (under mu_)

  absl::Mutex mu_;
  absl::CondVar cv_;
  std::string pending_ ABSL_GUARDED_BY(mu_);
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t durable_seq_ ABSL_GUARDED_BY(mu_) = 0;
  bool leader_active_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<std::unique_ptr<CommitEngine>> OpenBareEngine(const EngineConfig& config,
                                                             const std::string& dir, int threads) {
  if (wal::UsesDirectIo(config.barrier)) {
    return absl::InvalidArgumentError(fmt::format(
        "engine bare does not run barrier {}: O_DIRECT needs block-aligned batches, and the bare "
        "loop writes records unpadded; use --barriers without direct modes for bare",
        wal::BarrierName(config.barrier)));
  }
  ASSIGN_OR_RETURN(auto file, RawBarrierFile::Open(dir + "/bare.dat", config.barrier));
  RETURN_IF_ERROR(file->Preallocate(kBareFileBytes));
  return std::unique_ptr<CommitEngine>(new BareEngine(std::move(file), threads));
}

}  // namespace powercut::walbench
