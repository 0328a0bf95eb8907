#include "wal/segment_manager.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/status_macros.h"
#include "base/tsan_mutex.h"

namespace powercut::wal {
namespace {

// A spare's zeros are pushed out (sync_file_range) in pieces of this size (see CreateFresh).
constexpr uint64_t kSparePushBytes = 1 << 20;

// Adds "creating/recycling segment X" context without losing the status code.
absl::Status Annotate(const absl::Status& s, std::string_view what) {
  if (s.ok()) return s;
  return absl::Status(s.code(), fmt::format("{}: {}", what, StatusMessage(s)));
}

}  // namespace

uint64_t RandomU64() {
  std::random_device rd;
  return (uint64_t{rd()} << 32) ^ uint64_t { rd() };
}

std::string SpareSegmentName() { return SegmentFileName(UINT64_MAX) + ".tmp"; }

SegmentManager::SegmentManager(SegmentManagerOptions options)
    : options_(std::move(options)),
      spare_path_(options_.dir + "/" + SpareSegmentName()),
      salt_rng_(RandomU64()) {}

SegmentManager::~SegmentManager() { StopPreparer(/*remove_spare=*/false); }

void SegmentManager::StartPreparer() {
  if (preparer_.joinable()) return;
  cancel_.store(false, std::memory_order_relaxed);
  {
    MutexLock lock(&prep_mu_);
    stop_ = false;
  }
  preparer_ = std::thread([this] { PreparerLoop(); });
  SubmitJob(Job{});
  (void)WaitForSpare();  // a failure stays in spare_status_ for the switch that needs the spare
}

void SegmentManager::StopPreparer(bool remove_spare) {
  if (!preparer_.joinable()) return;
  cancel_.store(true, std::memory_order_relaxed);
  {
    MutexLock lock(&prep_mu_);
    stop_ = true;
    prep_cv_.SignalAll();
  }
  preparer_.join();
  if (remove_spare) {
    // Nothing durable depends on the spare (a fresh file of zeros, or a released segment).
    absl::StatusOr<bool> exists = options_.env->Exists(spare_path_);
    if (exists.ok() && *exists) (void)options_.env->Remove(spare_path_);
  }
}

absl::Status SegmentManager::WaitForSpare() {
  MutexLock lock(&prep_mu_);
  while (spare_state_ == SpareState::kPreparing) Wait(&prep_cv_, &prep_mu_);
  return spare_status_;
}

uint64_t SegmentManager::spare_waits() const {
  MutexLock lock(&prep_mu_);
  return spare_waits_;
}

void SegmentManager::SubmitJob(Job job) {
  MutexLock lock(&prep_mu_);
  job_ = std::move(job);
  spare_state_ = SpareState::kPreparing;
  spare_status_ = absl::OkStatus();
  prep_cv_.SignalAll();
}

void SegmentManager::PreparerLoop() {
  Lock(&prep_mu_);
  while (true) {
    while (!stop_ && !job_.has_value()) Wait(&prep_cv_, &prep_mu_);
    if (stop_) break;
    Job job = std::move(*job_);
    job_.reset();
    Unlock(&prep_mu_);
    bool recycled = false;
    const absl::Status s = Annotate(PrepareSpare(job, &recycled),
                                    fmt::format("preparing the next segment as {}", spare_path_));
    Lock(&prep_mu_);
    spare_status_ = s;
    spare_recycled_ = recycled;
    spare_state_ = s.ok() ? SpareState::kReady : SpareState::kFailed;
    prep_cv_.SignalAll();
  }
  if (spare_state_ == SpareState::kPreparing) {
    spare_state_ = SpareState::kFailed;
    spare_status_ = absl::CancelledError("the segment preparer was stopped");
  }
  prep_cv_.SignalAll();
  Unlock(&prep_mu_);
}

absl::Status SegmentManager::PrepareSpare(const Job& job, bool* recycled) {
  Env* env = options_.env;
  for (const std::string& path : job.remove) {
    // Without recycling, released segments are removed (their removal needs no barrier: a
    // resurrected released segment only holds records the user no longer needs).
    RETURN_IF_ERROR(Annotate(env->Remove(path), fmt::format("removing released segment {}", path)));
  }
  if (!job.recycle_from.empty()) {
    // The rename must be durable before the switch overwrites the header: a crash must never
    // leave the old name on a file whose header says another first LSN.
    RETURN_IF_ERROR(Annotate(env->Rename(job.recycle_from, spare_path_),
                             fmt::format("recycling segment {}", job.recycle_from)));
    RETURN_IF_ERROR(Annotate(env->SyncDir(options_.dir),
                             fmt::format("recycling segment {}", job.recycle_from)));
    *recycled = true;
    return absl::OkStatus();
  }
  return CreateFresh(spare_path_, /*header=*/nullptr);
}

void SegmentManager::AddExisting(Lsn first_lsn) { live_.push_back(first_lsn); }

std::string SegmentManager::PathFor(Lsn first_lsn) const {
  return options_.dir + "/" + SegmentFileName(first_lsn);
}

absl::StatusOr<ActiveSegment> SegmentManager::StartSegment(Lsn first_lsn, Lsn released_lsn) {
  SegmentHeader header;
  header.log_id = options_.log_id;
  header.segment_salt = salt_rng_();
  header.first_lsn = first_lsn;
  header.segment_size = options_.segment_bytes;
  header.block_size = options_.block_size;

  const std::string path = PathFor(first_lsn);
  if (preparer_.joinable()) return StartFromSpare(path, header, released_lsn);
  const std::string tmp = path + ".tmp";
  // Segment i holds records [live_[i], live_[i+1]); it is released when live_[i+1] - 1 <= released.
  const bool oldest_released = live_.size() >= 2 && live_[1] - 1 <= released_lsn;
  bool recycled = false;
  if (oldest_released && options_.recycle) {
    const std::string old_path = PathFor(live_.front());
    RETURN_IF_ERROR(Annotate(Recycle(old_path, tmp, header),
                             fmt::format("recycling segment {} as {}", old_path, path)));
    live_.pop_front();
    ++recycled_;
    recycled = true;
  } else {
    if (oldest_released) {
      // Without recycling, released segments are removed (their removal needs no barrier: a
      // resurrected released segment only holds records the user no longer needs).
      while (live_.size() >= 2 && live_[1] - 1 <= released_lsn) {
        RETURN_IF_ERROR(options_.env->Remove(PathFor(live_.front())));
        live_.pop_front();
      }
    }
    RETURN_IF_ERROR(Annotate(CreateFresh(tmp, &header), fmt::format("creating segment {}", path)));
  }
  RETURN_IF_ERROR(
      Annotate(options_.env->Rename(tmp, path), fmt::format("creating segment {}", path)));
  RETURN_IF_ERROR(Annotate(options_.env->SyncDir(options_.dir),
                           fmt::format("making segment {} durable", path)));
  live_.push_back(first_lsn);
  ASSIGN_OR_RETURN(ActiveSegment seg, OpenForRecords(path, header, kSegmentHeaderSize));
  seg.stale_tail = recycled;
  return seg;
}

absl::StatusOr<ActiveSegment> SegmentManager::StartFromSpare(const std::string& path,
                                                             const SegmentHeader& header,
                                                             Lsn released_lsn) {
  bool recycled = false;
  {
    MutexLock lock(&prep_mu_);
    if (spare_state_ == SpareState::kPreparing) ++spare_waits_;
    while (spare_state_ == SpareState::kPreparing) Wait(&prep_cv_, &prep_mu_);
    if (spare_state_ != SpareState::kReady) {
      return Annotate(spare_status_.ok() ? absl::InternalError("no spare segment") : spare_status_,
                      fmt::format("starting segment {}", path));
    }
    recycled = spare_recycled_;
    spare_state_ = SpareState::kNone;
  }
  Env* env = options_.env;
  {
    absl::StatusOr<std::unique_ptr<File>> opened = env->Open(spare_path_, OpenOptions{});
    RETURN_IF_ERROR(Annotate(opened.status(), fmt::format("starting segment {}", path)));
    std::unique_ptr<File> file = std::move(*opened);
    const std::string block = EncodeSegmentHeader(header);
    absl::Status s = file->Write(
        0, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(block.data()), block.size()));
    // The size and the zeros were fsynced by the preparer: only the header block is new.
    if (s.ok()) s = file->Sync(SyncKind::kFdatasync);
    absl::Status closed = file->Close();
    if (s.ok()) s = closed;
    RETURN_IF_ERROR(Annotate(s, fmt::format("starting segment {}", path)));
  }
  RETURN_IF_ERROR(
      Annotate(env->Rename(spare_path_, path), fmt::format("starting segment {}", path)));
  RETURN_IF_ERROR(
      Annotate(env->SyncDir(options_.dir), fmt::format("making segment {} durable", path)));
  // The next spare: recycle the oldest segment when it is released (segment i holds records
  // [live_[i], live_[i+1]), and the newest one is never released), else a fresh one.
  Job job;
  while (live_.size() >= 2 && live_[1] - 1 <= released_lsn) {
    if (options_.recycle) {
      job.recycle_from = PathFor(live_.front());
      live_.pop_front();
      ++recycled_;
      break;
    }
    job.remove.push_back(PathFor(live_.front()));
    live_.pop_front();
  }
  live_.push_back(header.first_lsn);
  absl::StatusOr<ActiveSegment> seg = OpenForRecords(path, header, kSegmentHeaderSize);
  // Submitted after every file-system call of the switch, so the switch's calls come first.
  SubmitJob(std::move(job));
  if (seg.ok()) seg->stale_tail = recycled;
  return seg;
}

absl::Status SegmentManager::CreateFresh(const std::string& tmp, const SegmentHeader* header) {
  Env* env = options_.env;
  ASSIGN_OR_RETURN(bool stale, env->Exists(tmp));
  if (stale) RETURN_IF_ERROR(env->Remove(tmp));
  OpenOptions open;
  open.create = true;
  open.exclusive = true;
  ASSIGN_OR_RETURN(std::unique_ptr<File> file, env->Open(tmp, open));
  absl::Status s;
  if (header != nullptr) {
    const std::string block = EncodeSegmentHeader(*header);
    s = file->Write(
        0, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(block.data()), block.size()));
  }
  if (s.ok() && options_.preallocate) {
    // Zeros written for real (not fallocate): fallocate leaves unwritten extents, and converting
    // them makes every later fdatasync commit file-system metadata. A spare (no header yet) gets
    // zeros over its header block too, so that its size and blocks are final before the switch.
    const std::string zeros(std::min<uint64_t>(options_.segment_bytes, 1 << 20), '\0');
    for (uint64_t off = header != nullptr ? kSegmentHeaderSize : 0;
         s.ok() && off < options_.segment_bytes;) {
      if (cancel_.load(std::memory_order_relaxed)) {
        s = absl::CancelledError("the WAL was closed");
        break;
      }
      const size_t n =
          static_cast<size_t>(std::min<uint64_t>(zeros.size(), options_.segment_bytes - off));
      s = file->Write(off, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(zeros.data()), n));
      if (s.ok() && header == nullptr && (off + n) % kSparePushBytes == 0) {
        // A spare is written while commits run: push each piece out at once, so that at most
        // one piece is dirty when a committer's barrier or the switch's directory fsync (a
        // journal commit, which in ext4's data=ordered mode writes the dirty data of newly
        // allocated blocks first) has to wait for it, instead of up to the whole segment.
        s = file->Sync(SyncKind::kSyncFileRange, off + n - kSparePushBytes, kSparePushBytes);
      }
      off += n;
    }
  }
  if (s.ok()) s = file->Sync(SyncKind::kFsync);
  absl::Status closed = file->Close();
  if (s.ok()) s = closed;
  if (!s.ok()) {
    (void)env->Remove(tmp);  // best effort: a leftover *.tmp is removed by the next Open anyway
    if (absl::IsResourceExhausted(s)) {
      return absl::ResourceExhaustedError(fmt::format(
          "{} (the disk is full: free space or use a smaller segment size; nothing durable was "
          "lost)",
          StatusMessage(s)));
    }
  }
  return s;
}

absl::Status SegmentManager::Recycle(const std::string& old_path, const std::string& tmp,
                                     const SegmentHeader& header) {
  Env* env = options_.env;
  RETURN_IF_ERROR(env->Rename(old_path, tmp));
  RETURN_IF_ERROR(env->SyncDir(options_.dir));
  ASSIGN_OR_RETURN(std::unique_ptr<File> file, env->Open(tmp, OpenOptions{}));
  const std::string block = EncodeSegmentHeader(header);
  absl::Status s = file->Write(
      0, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(block.data()), block.size()));
  if (s.ok()) s = file->Sync(SyncKind::kFsync);
  absl::Status closed = file->Close();
  return s.ok() ? closed : s;
}

absl::StatusOr<ActiveSegment> SegmentManager::ContinueSegment(Lsn first_lsn,
                                                              const SegmentHeader& header,
                                                              uint64_t write_offset) {
  if (live_.empty() || live_.back() != first_lsn) live_.push_back(first_lsn);
  return OpenForRecords(PathFor(first_lsn), header, write_offset);
}

absl::StatusOr<ActiveSegment> SegmentManager::OpenForRecords(const std::string& path,
                                                             const SegmentHeader& header,
                                                             uint64_t write_offset) {
  ActiveSegment seg;
  ASSIGN_OR_RETURN(seg.file, options_.env->Open(path, options_.write_open));
  seg.path = path;
  seg.header = header;
  seg.write_offset = write_offset;
  return seg;
}

}  // namespace powercut::wal
