#include "wal/testing/fault_injection_env.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include "base/status_macros.h"
#include "base/tsan_mutex.h"

namespace powercut::wal {
namespace {

constexpr uint64_t kSector = 512;

std::string_view OpName(FaultOp op) {
  switch (op) {
    case FaultOp::kOpen:
      return "open";
    case FaultOp::kWrite:
      return "write";
    case FaultOp::kSync:
      return "sync";
    case FaultOp::kTruncate:
      return "truncate";
    case FaultOp::kRename:
      return "rename";
    case FaultOp::kRemove:
      return "remove";
    case FaultOp::kSyncDir:
      return "syncdir";
    case FaultOp::kCreateDir:
      return "mkdir";
    case FaultOp::kRead:
      return "read";
  }
  return "?";
}

std::string ParentDir(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

// A File whose calls go through the env's bookkeeping. Holds the env's mutex only inside the env.
class FaultInjectionFile final : public File {
 public:
  // `reader` is a second, buffered descriptor when `base` is O_DIRECT (before-images are read
  // into unaligned buffers); otherwise null and `base` is read.
  FaultInjectionFile(FaultInjectionEnv* env, std::unique_ptr<File> base,
                     std::unique_ptr<File> reader, bool dsync)
      : env_(env), base_(std::move(base)), reader_(std::move(reader)), dsync_(dsync) {}

  absl::Status Write(uint64_t offset, absl::Span<const uint8_t> data, bool dsync) override {
    return env_->FileWrite(*base_, reader_ ? *reader_ : *base_, offset, data, dsync || dsync_);
  }
  absl::StatusOr<size_t> Read(uint64_t offset, size_t size, uint8_t* out) override {
    RETURN_IF_ERROR(env_->FileRead(*base_));
    return base_->Read(offset, size, out);
  }
  absl::Status Sync(SyncKind kind, uint64_t offset, uint64_t length) override {
    return env_->FileSync(*base_, kind, offset, length);
  }
  absl::Status WriteAndFdatasyncLinked(uint64_t offset, absl::Span<const uint8_t> data) override {
    return env_->FileLinked(*base_, reader_ ? *reader_ : *base_, offset, data);
  }
  absl::StatusOr<uint64_t> Size() override { return base_->Size(); }
  absl::Status Truncate(uint64_t size) override { return env_->FileTruncate(*base_, size); }
  absl::Status Close() override {
    if (reader_) (void)reader_->Close();
    return base_->Close();
  }
  const std::string& path() const override { return base_->path(); }

 private:
  FaultInjectionEnv* const env_;
  std::unique_ptr<File> base_;
  std::unique_ptr<File> reader_;
  const bool dsync_;
};

FaultInjectionEnv::FaultInjectionEnv(Env* base) : base_(base) {}
FaultInjectionEnv::~FaultInjectionEnv() = default;

void FaultInjectionEnv::FailOp(FaultOp op, int nth, int error_number, bool every) {
  MutexLock lock(&mu_);
  rules_[op] = Rule{std::max(nth, 1), error_number, every, true};
}

void FaultInjectionEnv::ClearFaults() {
  MutexLock lock(&mu_);
  rules_.clear();
  crash_after_ = UINT64_MAX;
  crashed_ = false;
}

void FaultInjectionEnv::SetCrashAfter(uint64_t calls) {
  MutexLock lock(&mu_);
  crash_after_ = counted_ + calls;
  crashed_ = false;
}

bool FaultInjectionEnv::crashed() const {
  MutexLock lock(&mu_);
  return crashed_;
}

uint64_t FaultInjectionEnv::counted_calls() const {
  MutexLock lock(&mu_);
  return counted_;
}

CallCounts FaultInjectionEnv::counts() const {
  MutexLock lock(&mu_);
  return counts_;
}

absl::Status FaultInjectionEnv::Admit(FaultOp op, bool counted, const std::string& path) {
  if (crashed_) {
    return absl::UnavailableError(
        fmt::format("{}({}): simulated power cut: the machine is down", OpName(op), path));
  }
  if (counted) {
    if (counted_ >= crash_after_) {
      crashed_ = true;
      return absl::UnavailableError(
          fmt::format("{}({}): simulated power cut: the machine is down", OpName(op), path));
    }
    ++counted_;
  }
  auto it = rules_.find(op);
  if (it == rules_.end() || !it->second.active) return absl::OkStatus();
  Rule& rule = it->second;
  if (rule.countdown > 1) {
    --rule.countdown;
    return absl::OkStatus();
  }
  if (!rule.every) rule.active = false;
  return absl::ErrnoToStatus(
      rule.error_number, fmt::format("{}({}): {} (injected by FaultInjectionEnv)", OpName(op), path,
                                     std::strerror(rule.error_number)));
}

absl::Status FaultInjectionEnv::Track(File& base, File& reader, uint64_t offset,
                                      absl::Span<const uint8_t> data, bool durable) {
  FileState& state = files_[base.path()];
  if (durable) {
    // The durable bytes must survive even if an older pending write under them is undone.
    const uint64_t end = offset + data.size();
    for (PendingWrite& p : state.pending) {
      const uint64_t p_end = p.offset + p.before.size();
      const uint64_t lo = std::max(p.offset, offset), hi = std::min(p_end, end);
      if (lo < hi) {
        std::memcpy(p.before.data() + (lo - p.offset), data.data() + (lo - offset), hi - lo);
      }
      p.size_before = std::max(p.size_before, end);
    }
    return absl::OkStatus();
  }
  PendingWrite p;
  p.offset = offset;
  ASSIGN_OR_RETURN(p.size_before, reader.Size());
  p.before.assign(data.size(), '\0');
  if (offset < p.size_before) {
    const size_t want =
        static_cast<size_t>(std::min<uint64_t>(data.size(), p.size_before - offset));
    ASSIGN_OR_RETURN(size_t got,
                     reader.Read(offset, want, reinterpret_cast<uint8_t*>(p.before.data())));
    (void)got;
  }
  state.pending.push_back(std::move(p));
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::FileWrite(File& base, File& reader, uint64_t offset,
                                          absl::Span<const uint8_t> data, bool durable) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Admit(FaultOp::kWrite, true, base.path()));
  ++counts_.writes;
  if (durable) ++counts_.dsync_writes;
  RETURN_IF_ERROR(Track(base, reader, offset, data, durable));
  absl::Status s = base.Write(offset, data, durable);
  if (!s.ok() && !durable) files_[base.path()].pending.pop_back();
  return s;
}

absl::Status FaultInjectionEnv::FileSync(File& base, SyncKind kind, uint64_t offset,
                                         uint64_t length) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Admit(FaultOp::kSync, true, base.path()));
  switch (kind) {
    case SyncKind::kFdatasync:
      ++counts_.fdatasyncs;
      break;
    case SyncKind::kFsync:
      ++counts_.fsyncs;
      break;
    case SyncKind::kSyncFileRange:
      ++counts_.sync_file_ranges;
      break;
  }
  RETURN_IF_ERROR(base.Sync(kind, offset, length));
  // sync_file_range leaves data in the (modelled) volatile device cache: nothing becomes durable.
  if (kind != SyncKind::kSyncFileRange) files_[base.path()].pending.clear();
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::FileLinked(File& base, File& reader, uint64_t offset,
                                           absl::Span<const uint8_t> data) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Admit(FaultOp::kWrite, true, base.path()));
  RETURN_IF_ERROR(Admit(FaultOp::kSync, false, base.path()));
  ++counts_.linked;
  ++counts_.writes;
  RETURN_IF_ERROR(Track(base, reader, offset, data, false));
  absl::Status s = base.WriteAndFdatasyncLinked(offset, data);
  // On failure the write may or may not have happened: leave it pending (a power cut may drop it).
  if (s.ok()) files_[base.path()].pending.clear();
  return s;
}

absl::Status FaultInjectionEnv::FileTruncate(File& base, uint64_t size) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Admit(FaultOp::kTruncate, true, base.path()));
  // Modelled as durable (the WAL truncates only during repair, followed by a sync).
  RETURN_IF_ERROR(base.Truncate(size));
  for (PendingWrite& p : files_[base.path()].pending) p.size_before = std::min(p.size_before, size);
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::FileRead(File& base) {
  MutexLock lock(&mu_);
  return Admit(FaultOp::kRead, false, base.path());
}

absl::StatusOr<std::unique_ptr<File>> FaultInjectionEnv::Open(const std::string& path,
                                                              const OpenOptions& options) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Admit(FaultOp::kOpen, !options.read_only, path));
  ++counts_.opens;
  bool existed = true;
  if (options.create) {
    ASSIGN_OR_RETURN(existed, base_->Exists(path));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<File> file, base_->Open(path, options));
  if (!existed) {
    dir_ops_.push_back(DirOp{DirOp::kCreate, path, ""});
    files_[path] = FileState{};
  }
  std::unique_ptr<File> reader;
  if (options.direct) {
    ASSIGN_OR_RETURN(reader, base_->Open(path, OpenOptions{.read_only = true}));
  }
  return std::unique_ptr<File>(
      new FaultInjectionFile(this, std::move(file), std::move(reader), options.dsync));
}

absl::Status FaultInjectionEnv::Rename(const std::string& from, const std::string& to) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Admit(FaultOp::kRename, true, from));
  ++counts_.renames;
  RETURN_IF_ERROR(base_->Rename(from, to));
  auto it = files_.find(from);
  FileState moved = it == files_.end() ? FileState{} : std::move(it->second);
  if (it != files_.end()) files_.erase(it);
  files_[to] = std::move(moved);
  dir_ops_.push_back(DirOp{DirOp::kRename, to, from});
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::Remove(const std::string& path) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Admit(FaultOp::kRemove, true, path));
  RETURN_IF_ERROR(base_->Remove(path));
  files_.erase(path);
  // The file is gone for good: forget directory operations that would resurrect or move it.
  std::erase_if(dir_ops_, [&](const DirOp& op) { return op.path == path; });
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::SyncDir(const std::string& dir) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Admit(FaultOp::kSyncDir, true, dir));
  ++counts_.syncdirs;
  RETURN_IF_ERROR(base_->SyncDir(dir));
  std::erase_if(dir_ops_, [&](const DirOp& op) { return ParentDir(op.path) == dir; });
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::CreateDir(const std::string& dir) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Admit(FaultOp::kCreateDir, true, dir));
  return base_->CreateDir(dir);
}

absl::StatusOr<bool> FaultInjectionEnv::Exists(const std::string& path) {
  return base_->Exists(path);
}
absl::StatusOr<bool> FaultInjectionEnv::IsDirectory(const std::string& path) {
  return base_->IsDirectory(path);
}
absl::StatusOr<std::vector<std::string>> FaultInjectionEnv::ListDir(const std::string& dir) {
  return base_->ListDir(dir);
}
absl::StatusOr<uint64_t> FaultInjectionEnv::FileSize(const std::string& path) {
  return base_->FileSize(path);
}
absl::StatusOr<uint32_t> FaultInjectionEnv::BlockSize(const std::string& dir) {
  return base_->BlockSize(dir);
}

void FaultInjectionEnv::MarkAllDurable() {
  MutexLock lock(&mu_);
  for (auto& [path, state] : files_) state.pending.clear();
  dir_ops_.clear();
}

absl::Status FaultInjectionEnv::SimulatePowerCut(PowerCutMode mode, uint64_t seed) {
  MutexLock lock(&mu_);
  std::mt19937_64 rng(seed);
  for (auto& [path, state] : files_) RETURN_IF_ERROR(UndoUnsyncedWrites(path, state, mode, rng));
  RETURN_IF_ERROR(UndoUnsyncedDirOps());
  rules_.clear();
  crash_after_ = UINT64_MAX;
  crashed_ = false;
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::RestoreBefore(File& file, const PendingWrite& write,
                                              uint64_t from_byte) {
  if (from_byte < write.before.size()) {
    RETURN_IF_ERROR(file.Write(
        write.offset + from_byte,
        absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(write.before.data()) + from_byte,
                            write.before.size() - from_byte)));
  }
  return file.Truncate(std::max(write.size_before, write.offset + from_byte));
}

absl::Status FaultInjectionEnv::UndoUnsyncedWrites(const std::string& path, FileState& state,
                                                   PowerCutMode mode, std::mt19937_64& rng) {
  if (state.pending.empty()) return absl::OkStatus();
  const size_t n = state.pending.size();
  size_t keep = 0;
  if (mode != PowerCutMode::kDropUnsynced) {
    keep = std::uniform_int_distribution<size_t>(0, n)(rng);
  }
  ASSIGN_OR_RETURN(std::unique_ptr<File> file, base_->Open(path, OpenOptions{}));
  for (size_t i = n; i > keep; --i) RETURN_IF_ERROR(RestoreBefore(*file, state.pending[i - 1], 0));
  if (mode == PowerCutMode::kTornPrefix && keep > 0) {
    const PendingWrite& last = state.pending[keep - 1];
    // Tear points: every 512-byte file-offset boundary strictly inside the write.
    std::vector<uint64_t> cuts;
    for (uint64_t b = (last.offset / kSector + 1) * kSector; b < last.offset + last.before.size();
         b += kSector) {
      cuts.push_back(b - last.offset);
    }
    if (!cuts.empty()) {
      const uint64_t cut = cuts[std::uniform_int_distribution<size_t>(0, cuts.size() - 1)(rng)];
      RETURN_IF_ERROR(RestoreBefore(*file, last, cut));
    }
  }
  RETURN_IF_ERROR(file->Sync(SyncKind::kFdatasync));
  RETURN_IF_ERROR(file->Close());
  state.pending.clear();
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::UndoUnsyncedDirOps() {
  for (auto it = dir_ops_.rbegin(); it != dir_ops_.rend(); ++it) {
    if (it->kind == DirOp::kRename) {
      RETURN_IF_ERROR(base_->Rename(it->path, it->from));
      auto node = files_.find(it->path);
      if (node != files_.end()) {
        FileState moved = std::move(node->second);
        files_.erase(node);
        files_[it->from] = std::move(moved);
      }
    } else {
      ASSIGN_OR_RETURN(bool exists, base_->Exists(it->path));
      if (exists) RETURN_IF_ERROR(base_->Remove(it->path));
      files_.erase(it->path);
    }
  }
  dir_ops_.clear();
  return absl::OkStatus();
}

}  // namespace powercut::wal
