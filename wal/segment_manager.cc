#include "wal/segment_manager.h"

#include <fmt/format.h>

#include <algorithm>

#include "wal/status_macros.h"

namespace powercut::wal {
namespace {

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

SegmentManager::SegmentManager(SegmentManagerOptions options)
    : options_(std::move(options)), salt_rng_(RandomU64()) {}

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
  const std::string tmp = path + ".tmp";
  // Segment i holds records [live_[i], live_[i+1]); it is released when live_[i+1] - 1 <= released.
  const bool oldest_released = live_.size() >= 2 && live_[1] - 1 <= released_lsn;
  if (oldest_released && options_.recycle) {
    const std::string old_path = PathFor(live_.front());
    RETURN_IF_ERROR(Annotate(Recycle(old_path, tmp, header),
                             fmt::format("recycling segment {} as {}", old_path, path)));
    live_.pop_front();
    ++recycled_;
  } else {
    if (oldest_released) {
      // Without recycling, released segments are removed (their removal needs no barrier: a
      // resurrected released segment only holds records the user no longer needs).
      while (live_.size() >= 2 && live_[1] - 1 <= released_lsn) {
        RETURN_IF_ERROR(options_.env->Remove(PathFor(live_.front())));
        live_.pop_front();
      }
    }
    RETURN_IF_ERROR(Annotate(CreateFresh(tmp, header), fmt::format("creating segment {}", path)));
  }
  RETURN_IF_ERROR(
      Annotate(options_.env->Rename(tmp, path), fmt::format("creating segment {}", path)));
  RETURN_IF_ERROR(Annotate(options_.env->SyncDir(options_.dir),
                           fmt::format("making segment {} durable", path)));
  live_.push_back(first_lsn);
  return OpenForRecords(path, header, kSegmentHeaderSize);
}

absl::Status SegmentManager::CreateFresh(const std::string& tmp, const SegmentHeader& header) {
  Env* env = options_.env;
  ASSIGN_OR_RETURN(bool stale, env->Exists(tmp));
  if (stale) RETURN_IF_ERROR(env->Remove(tmp));
  OpenOptions open;
  open.create = true;
  open.exclusive = true;
  ASSIGN_OR_RETURN(std::unique_ptr<File> file, env->Open(tmp, open));
  const std::string block = EncodeSegmentHeader(header);
  absl::Status s = file->Write(
      0, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(block.data()), block.size()));
  if (s.ok() && options_.preallocate) {
    // Zeros written for real (not fallocate): fallocate leaves unwritten extents, and converting
    // them makes every later fdatasync commit file-system metadata.
    const std::string zeros(std::min<uint64_t>(options_.segment_bytes, 1 << 20), '\0');
    for (uint64_t off = kSegmentHeaderSize; s.ok() && off < options_.segment_bytes;) {
      const size_t n =
          static_cast<size_t>(std::min<uint64_t>(zeros.size(), options_.segment_bytes - off));
      s = file->Write(off, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(zeros.data()), n));
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
