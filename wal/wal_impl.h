// WalImpl: the Wal behind Wal::Open. See wal.h for the contract; docs/barriers.md for the
// group-commit algorithm and the syscalls each barrier mode issues.
//
// Threading: mu_ guards the append buffer, LSN counters, the leader flag, the fence and the
// callbacks. Everything under "leader-only" is touched only by the thread that set leader_active_
// (under mu_) and is handed to the next leader through mu_, so it needs no lock of its own.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "wal/segment_manager.h"
#include "wal/wal.h"

namespace powercut::wal {

class WalImpl final : public Wal {
 public:
  // `active` is the segment records go to next; `next_lsn` the LSN the next Append gets. For the
  // O_DIRECT modes, `direct_tail` holds the bytes of the partially filled block before
  // active.write_offset (empty when the offset is block-aligned).
  WalImpl(const WalOptions& options, const SegmentManagerOptions& segment_options,
          std::unique_ptr<SegmentManager> segments, ActiveSegment active, Lsn next_lsn,
          const std::string& direct_tail);
  ~WalImpl() override;

  absl::StatusOr<Lsn> Append(absl::Span<const uint8_t> record) override;
  absl::Status Sync(Lsn lsn) override;
  absl::StatusOr<Lsn> Commit(absl::Span<const uint8_t> record) override;
  void CommitAsync(absl::Span<const uint8_t> record, CommitCallback done) override;
  Lsn DurableLsn() const override { return durable_lsn_.load(std::memory_order_acquire); }
  Lsn LastLsn() const override { return last_lsn_.load(std::memory_order_acquire); }
  absl::Status ReleaseUpTo(Lsn lsn) override;
  absl::Status Close() override;
  absl::Status health() const override;

  // Waits until the next segment is prepared (wal/segment_manager.h) and returns the preparer's
  // status. For tests and benchmarks that want no background I/O; not needed for correctness.
  absl::Status WaitForSpareSegment() ABSL_LOCKS_EXCLUDED(mu_);
  // Segment switches that had to wait for the preparer.
  uint64_t spare_waits() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Copies the record into the append buffer and assigns its LSN.
  absl::StatusOr<Lsn> AppendLocked(absl::Span<const uint8_t> record)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits for / leads rounds until `lsn` is durable or the log is fenced.
  absl::Status SyncLocked(Lsn lsn) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Leads one group-commit round (and more while async callbacks would otherwise be stranded).
  // Releases mu_ during I/O; held again on return.
  void LeadRounds() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Leader-only: encodes the taken batch and writes it with one write + one barrier per segment.
  absl::Status WriteBatch(Lsn first_lsn, Lsn synced_lsn, Lsn released_lsn);
  // Leader-only: writes wbuf_ to the active segment and issues the barrier.
  absl::Status FlushToSegment();
  absl::Status Fence(const absl::Status& cause) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckUsable() const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const WalOptions options_;
  const uint64_t max_record_bytes_;

  // --- leader-only ---
  std::unique_ptr<SegmentManager> segments_;
  ActiveSegment active_;
  std::string batch_data_;  // payloads of the batch being written
  std::vector<uint32_t> batch_sizes_;
  std::string wbuf_;  // encoded records for one segment
  // Direct modes: a block-aligned copy of what goes to disk; its first tail_len_ bytes are the
  // partially filled last block already on disk, rewritten in full with the next write.
  uint8_t* aligned_ = nullptr;
  size_t aligned_capacity_ = 0;
  size_t tail_len_ = 0;
  uint32_t block_size_;

  // --- shared ---
  mutable absl::Mutex mu_;
  absl::CondVar round_done_;  // signalled whenever a leader finishes a round
  absl::CondVar batch_grew_;  // signalled when a collecting leader's batch is full
  std::string pending_data_ ABSL_GUARDED_BY(mu_);  // payloads appended, not yet taken
  std::vector<uint32_t> pending_sizes_ ABSL_GUARDED_BY(mu_);
  Lsn pending_first_ ABSL_GUARDED_BY(mu_);           // LSN of pending_sizes_[0]
  uint64_t pending_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // encoded size of the pending records
  bool leader_active_ ABSL_GUARDED_BY(mu_) = false;
  bool leader_collecting_ ABSL_GUARDED_BY(mu_) = false;  // waiting out max_batch_wait
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status fence_ ABSL_GUARDED_BY(mu_);
  Lsn released_lsn_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<std::pair<Lsn, CommitCallback>> callbacks_ ABSL_GUARDED_BY(mu_);  // LSN order
  std::atomic<Lsn> last_lsn_;                                                  // written under mu_
  std::atomic<Lsn> durable_lsn_;                                               // written under mu_
};

}  // namespace powercut::wal
