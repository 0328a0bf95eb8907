#include "wal/wal_impl.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "base/status_macros.h"
#include "base/tsan_mutex.h"

namespace powercut::wal {
namespace {

constexpr uint64_t kMaxPayload = UINT32_MAX;

absl::Span<const uint8_t> AsBytes(const std::string& s) {
  return absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

}  // namespace

WalImpl::WalImpl(const WalOptions& options, const SegmentManagerOptions& segment_options,
                 std::unique_ptr<SegmentManager> segments, ActiveSegment active, Lsn next_lsn,
                 const std::string& direct_tail)
    : options_(options),
      // A record must fit in an empty segment together with the seal that ends it.
      max_record_bytes_(std::min<uint64_t>(
          kMaxPayload, options.segment_bytes - kSegmentHeaderSize - 2 * kRecordHeaderSize)),
      segments_(std::move(segments)),
      active_(std::move(active)),
      block_size_(segment_options.block_size),
      pending_first_(next_lsn),
      last_lsn_(next_lsn - 1),
      durable_lsn_(next_lsn - 1) {
  if (!direct_tail.empty()) {
    aligned_capacity_ = 64 * 1024;
    aligned_ = static_cast<uint8_t*>(std::aligned_alloc(4096, aligned_capacity_));
    if (aligned_ == nullptr) std::abort();
    std::memcpy(aligned_, direct_tail.data(), direct_tail.size());
    tail_len_ = direct_tail.size();
  }
}

WalImpl::~WalImpl() {
  // Without Close, nothing more is synced: like a process exit, unsynced records may be lost.
  // The preparer stops first; a spare it leaves behind is a temp file the next Open removes.
  segments_->StopPreparer(/*remove_spare=*/false);
  if (active_.file) (void)active_.file->Close();
  std::free(aligned_);
}

absl::Status WalImpl::WaitForSpareSegment() {
  // segments_ is leader-only; the spare state it reads is under its own mutex, and the preparer
  // is joined only by Close/the destructor, which callers do not race with this.
  return segments_->WaitForSpare();
}

uint64_t WalImpl::spare_waits() const { return segments_->spare_waits(); }

absl::Status WalImpl::CheckUsable() const {
  if (!fence_.ok()) return fence_;
  if (closed_) return absl::FailedPreconditionError("the WAL is closed");
  return absl::OkStatus();
}

absl::Status WalImpl::Fence(const absl::Status& cause) {
  if (fence_.ok()) {
    fence_ = absl::DataLossError(
        fmt::format("durability unknown: {} (reopen and recover)", StatusMessage(cause)));
  }
  return fence_;
}

absl::Status WalImpl::health() const {
  MutexLock lock(&mu_);
  return fence_;
}

absl::StatusOr<Lsn> WalImpl::AppendLocked(absl::Span<const uint8_t> record) {
  RETURN_IF_ERROR(CheckUsable());
  if (record.size() > max_record_bytes_) {
    return absl::InvalidArgumentError(
        fmt::format("record of {} bytes does not fit in a segment (at most {} bytes with "
                    "segment_bytes = {}): raise WalOptions.segment_bytes",
                    record.size(), max_record_bytes_, options_.segment_bytes));
  }
  pending_data_.append(reinterpret_cast<const char*>(record.data()), record.size());
  pending_sizes_.push_back(static_cast<uint32_t>(record.size()));
  pending_bytes_ += kRecordHeaderSize + record.size();
  if (leader_collecting_ && pending_bytes_ >= options_.max_batch_bytes) batch_grew_.Signal();
  const Lsn lsn = last_lsn_.load(std::memory_order_relaxed) + 1;
  last_lsn_.store(lsn, std::memory_order_release);
  return lsn;
}

absl::StatusOr<Lsn> WalImpl::Append(absl::Span<const uint8_t> record) {
  MutexLock lock(&mu_);
  return AppendLocked(record);
}

absl::Status WalImpl::Sync(Lsn lsn) {
  MutexLock lock(&mu_);
  if (lsn > last_lsn_.load(std::memory_order_relaxed)) {
    return absl::InvalidArgumentError(fmt::format(
        "Sync({}): no record with that LSN was appended (last LSN is {})", lsn, LastLsn()));
  }
  return SyncLocked(lsn);
}

absl::StatusOr<Lsn> WalImpl::Commit(absl::Span<const uint8_t> record) {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Lsn lsn, AppendLocked(record));
  RETURN_IF_ERROR(SyncLocked(lsn));
  return lsn;
}

void WalImpl::CommitAsync(absl::Span<const uint8_t> record, CommitCallback done) {
  Lock(&mu_);
  absl::StatusOr<Lsn> lsn = AppendLocked(record);
  if (!lsn.ok()) {
    Unlock(&mu_);
    done(lsn.status());
    return;
  }
  callbacks_.emplace_back(*lsn, std::move(done));
  // With a leader in flight, it (or a later leader) picks the record up; see LeadRounds.
  if (!leader_active_) LeadRounds();
  Unlock(&mu_);
}

absl::Status WalImpl::SyncLocked(Lsn lsn) {
  while (true) {
    // A record that passed a barrier before the log was fenced is durable: say so.
    if (DurableLsn() >= lsn) return absl::OkStatus();
    if (!fence_.ok()) return fence_;
    if (!leader_active_) {
      LeadRounds();
      continue;
    }
    Wait(&round_done_, &mu_);
  }
}

void WalImpl::LeadRounds() {
  do {
    leader_active_ = true;
    if (options_.max_batch_wait > absl::ZeroDuration()) {
      // Give concurrent committers a moment to join this batch (until it is full).
      const absl::Time deadline = absl::Now() + options_.max_batch_wait;
      leader_collecting_ = true;
      while (pending_bytes_ < options_.max_batch_bytes && fence_.ok()) {
        if (WaitWithTimeout(&batch_grew_, &mu_, deadline - absl::Now())) break;
      }
      leader_collecting_ = false;
    }
    // Take the batch: everything pending, or a prefix bounded by max_batch_bytes.
    const Lsn first = pending_first_;
    size_t count = pending_sizes_.size();
    if (pending_bytes_ > options_.max_batch_bytes) {
      uint64_t bytes = 0;
      count = 0;
      while (count < pending_sizes_.size() &&
             (count == 0 ||
              bytes + kRecordHeaderSize + pending_sizes_[count] <= options_.max_batch_bytes)) {
        bytes += kRecordHeaderSize + pending_sizes_[count];
        ++count;
      }
    }
    if (count == pending_sizes_.size()) {
      batch_data_.swap(pending_data_);
      batch_sizes_.swap(pending_sizes_);
      pending_data_.clear();
      pending_sizes_.clear();
      pending_bytes_ = 0;
    } else {
      size_t payload = 0;
      for (size_t i = 0; i < count; ++i) payload += pending_sizes_[i];
      batch_data_.assign(pending_data_, 0, payload);
      pending_data_.erase(0, payload);
      batch_sizes_.assign(pending_sizes_.begin(), pending_sizes_.begin() + count);
      pending_sizes_.erase(pending_sizes_.begin(), pending_sizes_.begin() + count);
      pending_bytes_ -= payload + count * kRecordHeaderSize;
    }
    pending_first_ += count;
    const Lsn synced = DurableLsn();
    const Lsn released = released_lsn_;

    absl::Status status;
    if (count > 0 && fence_.ok()) {
      Unlock(&mu_);
      status = WriteBatch(first, synced, released);
      Lock(&mu_);
    }
    if (status.ok() && fence_.ok()) {
      durable_lsn_.store(first + count - 1, std::memory_order_release);
    } else if (!status.ok()) {
      (void)Fence(status);
    }
    leader_active_ = false;
    round_done_.SignalAll();

    // Callbacks whose record is now durable (or all of them, once fenced) run outside the lock.
    if (!callbacks_.empty()) {
      std::vector<std::pair<Lsn, CommitCallback>> ready;
      const Lsn durable = DurableLsn();
      while (!callbacks_.empty() && (!fence_.ok() || callbacks_.front().first <= durable)) {
        ready.push_back(std::move(callbacks_.front()));
        callbacks_.pop_front();
      }
      if (!ready.empty()) {
        const absl::Status fence = fence_;
        Unlock(&mu_);
        for (auto& [lsn, done] : ready) {
          // As in SyncLocked: a record that passed a barrier before the fence is durable.
          if (lsn <= durable) {
            done(lsn);
          } else {
            done(fence);
          }
        }
        Lock(&mu_);
      }
    }
    // An async record appended while this round was in flight has no thread waiting for it:
    // lead again rather than strand it.
  } while (!callbacks_.empty() && !leader_active_ && fence_.ok());
}

absl::Status WalImpl::WriteBatch(Lsn first_lsn, Lsn synced_lsn, Lsn released_lsn) {
  wbuf_.clear();
  const uint64_t segment_bytes = options_.segment_bytes;
  size_t at = 0;
  Lsn lsn = first_lsn;
  for (uint32_t size : batch_sizes_) {
    const uint64_t need = kRecordHeaderSize + uint64_t{size};
    // Always leave room for the seal that ends the segment.
    if (active_.write_offset + wbuf_.size() + need + kRecordHeaderSize > segment_bytes) {
      // The next segment is durable before the seal that points to it is written.
      ASSIGN_OR_RETURN(ActiveSegment next, segments_->StartSegment(lsn, released_lsn));
      EncodeRecord(
          active_.header.segment_salt,
          RecordHeader{
              .length = 0, .lsn = lsn, .synced_lsn = synced_lsn, .type = RecordType::kSeal},
          {}, &wbuf_);
      RETURN_IF_ERROR(FlushToSegment());
      RETURN_IF_ERROR(active_.file->Close());
      active_ = std::move(next);
      tail_len_ = 0;
      wbuf_.clear();
    }
    EncodeRecord(
        active_.header.segment_salt,
        RecordHeader{
            .length = size, .lsn = lsn, .synced_lsn = synced_lsn, .type = RecordType::kData},
        absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(batch_data_.data()) + at, size),
        &wbuf_);
    at += size;
    ++lsn;
  }
  batch_data_.clear();
  batch_sizes_.clear();
  if (wbuf_.empty()) return absl::OkStatus();
  return FlushToSegment();
}

absl::Status WalImpl::FlushToSegment() {
  File& file = *active_.file;
  const uint64_t offset = active_.write_offset;
  const size_t len = wbuf_.size();
  absl::Status s;
  switch (options_.barrier) {
    case Barrier::kNone:
    case Barrier::kOdsync:  // the fd is O_DSYNC: the write is the barrier
      s = file.Write(offset, AsBytes(wbuf_));
      break;
    case Barrier::kFdatasync:
    case Barrier::kFsync:
      s = file.Write(offset, AsBytes(wbuf_));
      if (s.ok()) {
        s = file.Sync(options_.barrier == Barrier::kFsync ? SyncKind::kFsync
                                                          : SyncKind::kFdatasync);
      }
      break;
    case Barrier::kRwfDsync:
      s = file.Write(offset, AsBytes(wbuf_), /*dsync=*/true);
      break;
    case Barrier::kSyncFileRange:
      s = file.Write(offset, AsBytes(wbuf_));
      if (s.ok()) s = file.Sync(SyncKind::kSyncFileRange, offset, len);
      break;
    case Barrier::kIoUring:
      s = file.WriteAndFdatasyncLinked(offset, AsBytes(wbuf_));
      break;
    case Barrier::kDirect:
    case Barrier::kDirectDsync: {
      // O_DIRECT writes whole blocks from an aligned buffer: rewrite the partially filled last
      // block (kept at the front of aligned_) together with the new records, zero-padded.
      const size_t total = tail_len_ + len;
      const size_t padded = (total + block_size_ - 1) / block_size_ * block_size_;
      if (padded > aligned_capacity_) {
        size_t cap = std::max<size_t>(aligned_capacity_ * 2, 64 * 1024);
        while (cap < padded) cap *= 2;
        auto* grown = static_cast<uint8_t*>(std::aligned_alloc(4096, cap));
        if (grown == nullptr) return absl::ResourceExhaustedError("aligned_alloc failed");
        if (tail_len_ > 0) std::memcpy(grown, aligned_, tail_len_);
        std::free(aligned_);
        aligned_ = grown;
        aligned_capacity_ = cap;
      }
      std::memcpy(aligned_ + tail_len_, wbuf_.data(), len);
      std::memset(aligned_ + total, 0, padded - total);
      s = file.Write(offset - tail_len_, absl::MakeConstSpan(aligned_, padded));
      if (s.ok()) {
        const size_t new_tail = total % block_size_;
        if (new_tail > 0) std::memmove(aligned_, aligned_ + (total - new_tail), new_tail);
        tail_len_ = new_tail;
      }
      break;
    }
  }
  if (s.ok()) active_.write_offset += len;
  wbuf_.clear();
  return s;
}

absl::Status WalImpl::ReleaseUpTo(Lsn lsn) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckUsable());
  // Only durable records can be released: a segment is reused only after its records are synced.
  released_lsn_ = std::max(released_lsn_, std::min(lsn, DurableLsn()));
  return absl::OkStatus();
}

absl::Status WalImpl::Close() {
  MutexLock lock(&mu_);
  if (closed_) return absl::FailedPreconditionError("the WAL is already closed");
  absl::Status status = fence_;
  const Lsn last = LastLsn();
  if (status.ok() && last > DurableLsn()) status = SyncLocked(last);
  closed_ = true;
  // Let any leader finish before the segment is closed under it.
  while (leader_active_) Wait(&round_done_, &mu_);
  if (status.ok() && active_.file && active_.stale_tail) {
    // A recycled segment holds old records (another salt) after the last new one, so its chain
    // would end in a checksum mismatch, which reads as a torn tail. A seal (LSN = the next LSN)
    // ends the chain cleanly: the log reopens without repair and continues in a new segment.
    // No leader can start now (closed_ is set and nothing is pending), so this thread writes
    // as the leader would.
    EncodeRecord(
        active_.header.segment_salt,
        RecordHeader{
            .length = 0, .lsn = last + 1, .synced_lsn = DurableLsn(), .type = RecordType::kSeal},
        {}, &wbuf_);
    status = FlushToSegment();
    if (!status.ok()) status = Fence(status);
  }
  segments_->StopPreparer(/*remove_spare=*/true);
  if (active_.file) {
    absl::Status closed = active_.file->Close();
    active_.file.reset();
    if (status.ok()) status = closed;
  }
  return status;
}

}  // namespace powercut::wal
