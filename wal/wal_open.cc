// Wal::Open: checks the directory, then starts a new log or continues an existing one whose tail
// is clean (scanned with SegmentReader, the same rules recovery/ uses).
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "wal/segment_manager.h"
#include "wal/segment_reader.h"
#include "wal/wal.h"
#include "wal/wal_impl.h"

namespace powercut::wal {
namespace {

OpenOptions SegmentOpenOptions(Barrier barrier) {
  OpenOptions o;
  o.direct = UsesDirectIo(barrier);
  o.dsync = barrier == Barrier::kOdsync || barrier == Barrier::kDirectDsync;
  o.io_uring = barrier == Barrier::kIoUring;
  return o;
}

std::string ParentOf(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  const size_t slash = d.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : d.substr(0, slash);
}

absl::Status ValidateOptions(const WalOptions& o) {
  if (o.segment_bytes % 4096 != 0 || o.segment_bytes < 4 * 4096) {
    return absl::InvalidArgumentError(
        fmt::format("WalOptions.segment_bytes = {}: must be a multiple of 4096 and at least 16384",
                    o.segment_bytes));
  }
  if (o.max_batch_bytes == 0) {
    return absl::InvalidArgumentError("WalOptions.max_batch_bytes must be > 0");
  }
  return absl::OkStatus();
}

// Makes `dir` exist (durably) or explains why it cannot.
absl::Status PrepareDirectory(Env* env, const std::string& dir, bool create_if_missing) {
  ASSIGN_OR_RETURN(bool exists, env->Exists(dir));
  if (!exists) {
    if (!create_if_missing) {
      return absl::NotFoundError(
          fmt::format("WAL directory {} does not exist (set create_if_missing or create it)", dir));
    }
    const std::string parent = ParentOf(dir);
    ASSIGN_OR_RETURN(bool parent_exists, env->Exists(parent));
    if (!parent_exists) {
      return absl::NotFoundError(fmt::format(
          "cannot create WAL directory {}: its parent {} does not exist (create it first)", dir,
          parent));
    }
    RETURN_IF_ERROR(env->CreateDir(dir));
    return env->SyncDir(parent);
  }
  ASSIGN_OR_RETURN(bool is_dir, env->IsDirectory(dir));
  if (!is_dir) {
    return absl::FailedPreconditionError(
        fmt::format("WAL path {} exists but is not a directory (use a directory path)", dir));
  }
  return absl::OkStatus();
}

struct ExistingSegment {
  Lsn first_lsn;
  std::string path;
  SegmentHeader header;
};

// Lists the segments of `dir` in LSN order with validated headers. Removes leftover "*.log.tmp"
// files (an interrupted segment creation: they never held a record). Anything else is an error.
absl::StatusOr<std::vector<ExistingSegment>> ListSegments(Env* env, const std::string& dir) {
  ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDir(dir));
  std::vector<ExistingSegment> segments;
  for (const std::string& name : names) {
    if (std::optional<Lsn> first = ParseSegmentFileName(name)) {
      segments.push_back({*first, dir + "/" + name, {}});
      continue;
    }
    if (name.ends_with(".log.tmp") &&
        ParseSegmentFileName(std::string_view(name).substr(0, name.size() - 4))) {
      RETURN_IF_ERROR(env->Remove(dir + "/" + name));
      continue;
    }
    return absl::FailedPreconditionError(fmt::format(
        "WAL directory {} contains {}, which is not a WAL segment: move it away or use an empty "
        "directory",
        dir, name));
  }
  std::sort(segments.begin(), segments.end(),
            [](const auto& a, const auto& b) { return a.first_lsn < b.first_lsn; });
  for (ExistingSegment& seg : segments) {
    ASSIGN_OR_RETURN(std::unique_ptr<File> file,
                     env->Open(seg.path, OpenOptions{.read_only = true}));
    uint8_t block[kSegmentHeaderSize];
    ASSIGN_OR_RETURN(size_t got, file->Read(0, sizeof(block), block));
    (void)file->Close();
    absl::StatusOr<SegmentHeader> header = DecodeSegmentHeader(absl::MakeConstSpan(block, got));
    if (!header.ok()) {
      return absl::Status(header.status().code(),
                          fmt::format("segment {}: {} (recover the log with the matching powercut "
                                      "version, or move the file away)",
                                      seg.path, StatusMessage(header.status())));
    }
    const bool foreign_log =
        &seg != &segments.front() && header->log_id != segments.front().header.log_id;
    if (header->first_lsn != seg.first_lsn || foreign_log) {
      return absl::FailedPreconditionError(fmt::format(
          "segment {}: its header (first LSN {}, log id {:x}) does not match its name or the "
          "log's first segment: recover the log with recovery::OpenAndRecover",
          seg.path, header->first_lsn, header->log_id));
    }
    seg.header = *header;
  }
  return segments;
}

// Where an existing log continues.
struct Continuation {
  Lsn next_lsn = 1;
  uint64_t write_offset = 0;  // in the last segment; 0: start a new segment at next_lsn
  // Set when the last segment is full but has no seal yet: where its seal goes.
  std::optional<uint64_t> seal_offset;
  // Earlier segments that end cleanly without a seal: the writer had made the next segment
  // durable but crashed before writing the seal. Open writes those seals.
  struct MissingSeal {
    std::string path;
    uint64_t salt;
    uint64_t offset;
    Lsn next_lsn;
  };
  std::vector<MissingSeal> missing_seals;
};

// Writes a kSeal (pointing to `next_lsn`) at `offset` of the segment and syncs it.
absl::Status WriteSeal(Env* env, const std::string& path, uint64_t salt, uint64_t offset,
                       Lsn next_lsn) {
  std::string seal;
  EncodeRecord(
      salt,
      RecordHeader{
          .length = 0, .lsn = next_lsn, .synced_lsn = next_lsn - 1, .type = RecordType::kSeal},
      {}, &seal);
  ASSIGN_OR_RETURN(std::unique_ptr<File> file, env->Open(path, OpenOptions{}));
  RETURN_IF_ERROR(file->Write(
      offset, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(seal.data()), seal.size())));
  RETURN_IF_ERROR(file->Sync(SyncKind::kFdatasync));
  return file->Close();
}

// Walks the chain of every segment; succeeds only when the log ends cleanly.
absl::StatusOr<Continuation> FindContinuation(Env* env, const std::vector<ExistingSegment>& segs,
                                              uint64_t segment_bytes) {
  Continuation c;
  c.next_lsn = segs.front().first_lsn;
  for (size_t i = 0; i < segs.size(); ++i) {
    const bool last = i + 1 == segs.size();
    if (segs[i].first_lsn != c.next_lsn) {
      return absl::FailedPreconditionError(fmt::format(
          "segment {} starts at LSN {} but the log before it ends at LSN {}: recover the log "
          "with recovery::OpenAndRecover",
          segs[i].path, segs[i].first_lsn, c.next_lsn - 1));
    }
    ASSIGN_OR_RETURN(std::unique_ptr<SegmentReader> reader, SegmentReader::Open(env, segs[i].path));
    ASSIGN_OR_RETURN(ChainScan scan, reader->ScanAll());
    ASSIGN_OR_RETURN(TailProbe probe, reader->ProbeTail(scan.end_offset, scan.next_lsn));
    const SegmentTail tail = ClassifySegmentTail(scan, probe);
    const bool sealed = scan.stop == ScanStop::kSeal;
    // A clean but unsealed segment followed by one that starts right after it: a crash between
    // creating the next segment and writing the seal.
    const bool seal_missing = !last && !sealed && tail == SegmentTail::kClean &&
                              segs[i + 1].first_lsn == scan.next_lsn &&
                              scan.end_offset + kRecordHeaderSize <= reader->data_end();
    if (seal_missing) {
      c.missing_seals.push_back(
          {segs[i].path, segs[i].header.segment_salt, scan.end_offset, scan.next_lsn});
    }
    if (tail != SegmentTail::kClean || (!last && !sealed && !seal_missing)) {
      return absl::FailedPreconditionError(fmt::format(
          "segment {} has a {} end at offset {} (LSN {}, {}): recover the log with "
          "recovery::OpenAndRecover before appending",
          segs[i].path, tail == SegmentTail::kClean ? "premature" : SegmentTailName(tail),
          scan.end_offset, scan.next_lsn, ScanStopName(scan.stop)));
    }
    c.next_lsn = scan.next_lsn;
    c.write_offset = 0;
    if (last && !sealed) {
      // Room for one more record header plus the seal: keep appending here, else seal and roll.
      const uint64_t limit = std::min<uint64_t>(segs[i].header.segment_size, segment_bytes);
      if (scan.end_offset + 2 * kRecordHeaderSize < limit) {
        c.write_offset = scan.end_offset;
      } else {
        c.seal_offset = scan.end_offset;
      }
    }
  }
  return c;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Wal>> Wal::Open(const std::string& dir, WalOptions options) {
  if (options.env == nullptr) options.env = Env::Default();
  RETURN_IF_ERROR(ValidateOptions(options));
  Env* env = options.env;
  RETURN_IF_ERROR(PrepareDirectory(env, dir, options.create_if_missing));
  ASSIGN_OR_RETURN(std::vector<ExistingSegment> existing, ListSegments(env, dir));

  SegmentManagerOptions so;
  so.env = env;
  so.dir = dir;
  so.log_id = existing.empty() ? RandomU64() : existing.front().header.log_id;
  so.segment_bytes = options.segment_bytes;
  ASSIGN_OR_RETURN(so.block_size, env->BlockSize(dir));
  so.preallocate = options.preallocate;
  so.recycle = options.recycle_segments;
  so.write_open = SegmentOpenOptions(options.barrier);
  auto manager = std::make_unique<SegmentManager>(so);

  if (existing.empty()) {
    ASSIGN_OR_RETURN(ActiveSegment active,
                     manager->StartSegment(/*first_lsn=*/1, /*released_lsn=*/0));
    manager->StartPreparer();
    return std::unique_ptr<Wal>(
        new WalImpl(options, so, std::move(manager), std::move(active), /*next_lsn=*/1, ""));
  }

  ASSIGN_OR_RETURN(Continuation c, FindContinuation(env, existing, options.segment_bytes));
  for (const Continuation::MissingSeal& m : c.missing_seals) {
    RETURN_IF_ERROR(WriteSeal(env, m.path, m.salt, m.offset, m.next_lsn));
  }
  const ExistingSegment& tail = existing.back();
  {
    // What was found may sit only in the page cache (the writer died before its barrier): make it
    // durable before anything is acknowledged on top of it.
    ASSIGN_OR_RETURN(std::unique_ptr<File> file, env->Open(tail.path, OpenOptions{}));
    RETURN_IF_ERROR(file->Sync(SyncKind::kFsync));
    RETURN_IF_ERROR(file->Close());
  }
  for (const ExistingSegment& seg : existing) {
    if (c.write_offset == 0 || &seg != &tail) manager->AddExisting(seg.first_lsn);
  }
  if (c.write_offset == 0) {
    ASSIGN_OR_RETURN(ActiveSegment active, manager->StartSegment(c.next_lsn, /*released_lsn=*/0));
    if (c.seal_offset) {
      // Like a roll while running: the next segment is durable before the seal pointing to it.
      RETURN_IF_ERROR(
          WriteSeal(env, tail.path, tail.header.segment_salt, *c.seal_offset, c.next_lsn));
    }
    manager->StartPreparer();
    return std::unique_ptr<Wal>(
        new WalImpl(options, so, std::move(manager), std::move(active), c.next_lsn, ""));
  }
  std::string direct_tail;
  if (UsesDirectIo(options.barrier)) {
    // O_DIRECT rewrites the partially filled block in full: start from its bytes on disk.
    direct_tail.resize(c.write_offset % so.block_size);
    if (!direct_tail.empty()) {
      ASSIGN_OR_RETURN(std::unique_ptr<File> file,
                       env->Open(tail.path, OpenOptions{.read_only = true}));
      ASSIGN_OR_RETURN(size_t got,
                       file->Read(c.write_offset - direct_tail.size(), direct_tail.size(),
                                  reinterpret_cast<uint8_t*>(direct_tail.data())));
      RETURN_IF_ERROR(file->Close());
      if (got != direct_tail.size()) {
        return absl::DataLossError(
            fmt::format("segment {}: short read of its last block", tail.path));
      }
    }
  }
  ASSIGN_OR_RETURN(ActiveSegment active,
                   manager->ContinueSegment(tail.first_lsn, tail.header, c.write_offset));
  // The next segment is prepared in the background from here on (wal/segment_manager.h).
  manager->StartPreparer();
  return std::unique_ptr<Wal>(
      new WalImpl(options, so, std::move(manager), std::move(active), c.next_lsn, direct_tail));
}

}  // namespace powercut::wal
