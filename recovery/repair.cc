#include "recovery/repair.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "base/status_macros.h"

namespace powercut::recovery {
namespace {

constexpr size_t kZeroChunk = 1 << 20;

// Zeroes the non-zero parts of [from, end) of `file` in kZeroChunk pieces, front to back.
absl::StatusOr<uint64_t> ZeroRange(wal::File& file, uint64_t from, uint64_t end) {
  if (from >= end) return 0;
  const size_t chunk = static_cast<size_t>(std::min<uint64_t>(kZeroChunk, end - from));
  std::vector<uint8_t> buffer(chunk);
  const std::vector<uint8_t> zeros(chunk, 0);
  uint64_t zeroed = 0;
  for (uint64_t offset = from; offset < end;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(chunk, end - offset));
    size_t got = 0;
    while (got < want) {
      ASSIGN_OR_RETURN(const size_t n, file.Read(offset + got, want - got, buffer.data() + got));
      if (n == 0) break;
      got += n;
    }
    if (got == 0) break;
    const bool all_zero =
        std::all_of(buffer.begin(), buffer.begin() + got, [](uint8_t b) { return b == 0; });
    if (!all_zero) {
      RETURN_IF_ERROR(file.Write(offset, absl::MakeConstSpan(zeros.data(), got)));
      zeroed += got;
    }
    offset += got;
  }
  return zeroed;
}

}  // namespace

absl::StatusOr<RepairReport> Repair(const RecoveryResult& result, wal::Env* env) {
  if (env == nullptr) env = wal::Env::Default();
  if (result.mode == Mode::kSalvage) {
    return absl::FailedPreconditionError(fmt::format(
        "{}: a salvage result has holes and cannot be made appendable; copy its records out, or "
        "recover with mode point-in-time and repair that",
        result.dir));
  }
  if (result.tail == TailState::kCorrupt && result.mode != Mode::kPointInTime) {
    return absl::FailedPreconditionError(fmt::format(
        "{}: the log is corrupt at {} offset {} (LSN {}); repairing would drop records the log "
        "proves were durable. Recover with mode point-in-time first if that is what you want",
        result.dir, result.tail_segment, result.tail_offset, result.next_lsn));
  }
  RepairReport report;
  if (result.tail_segment_index.has_value()) {
    const size_t tail = *result.tail_segment_index;
    const SegmentSummary& segment = result.segments.at(tail);
    const std::string path = result.dir + "/" + segment.name;
    ASSIGN_OR_RETURN(std::unique_ptr<wal::File> file, env->Open(path, wal::OpenOptions{}));
    ASSIGN_OR_RETURN(const uint64_t size, file->Size());
    const uint64_t declared = segment.header_ok ? segment.header.segment_size : size;
    const uint64_t from = std::max<uint64_t>(result.tail_offset, wal::kSegmentHeaderSize);
    ASSIGN_OR_RETURN(report.zeroed_bytes, ZeroRange(*file, from, std::min(size, declared)));
    bool truncated = false;
    if (size > declared) {
      RETURN_IF_ERROR(file->Truncate(declared));
      truncated = true;
    }
    if (report.zeroed_bytes > 0 || truncated) {
      RETURN_IF_ERROR(file->Sync(truncated ? wal::SyncKind::kFsync : wal::SyncKind::kFdatasync));
    }
    RETURN_IF_ERROR(file->Close());
    for (size_t i = result.segments.size(); i-- > tail + 1;) {
      const std::string later = result.dir + "/" + result.segments[i].name;
      ASSIGN_OR_RETURN(const bool exists, env->Exists(later));
      if (!exists) continue;
      RETURN_IF_ERROR(env->Remove(later));
      report.removed.push_back(result.segments[i].name);
    }
  }
  for (const std::string& name : result.temp_files) {
    const std::string path = result.dir + "/" + name;
    ASSIGN_OR_RETURN(const bool exists, env->Exists(path));
    if (!exists) continue;
    RETURN_IF_ERROR(env->Remove(path));
    report.removed.push_back(name);
  }
  if (!report.removed.empty()) RETURN_IF_ERROR(env->SyncDir(result.dir));
  return report;
}

}  // namespace powercut::recovery
