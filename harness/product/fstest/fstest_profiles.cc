#include "harness/product/fstest/fstest_profiles.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_split.h"
#include "fmt/format.h"
#include "harness/fstest/model_fs.h"

namespace powercut::product {
namespace {

using harness::CacheMode;
using harness::FsKind;

// f2fs's two findings (docs/results.md, "f2fs" and "Profiles").
constexpr char kDirectDsync[] =
    "the first O_DIRECT synchronous overwrite after an fsync is acknowledged with neither FUA nor "
    "a FLUSH (docs/findings/f2fs-direct-dsync-REPORT.md)";
constexpr char kPunchAcrossEnd[] =
    "after a hole punched from inside the file to past its end and an fsync, the file comes back "
    "longer, its size rounded up to the punched range's last block (docs/results.md, "
    "\"Profiles\")";

// The measurements behind each row are in docs/results.md, "Profiles" (the commands, the crash
// states, the violating workloads); `measured` is their one-line summary.
const std::vector<FsTestProfile>& Table() {
  static const auto* table = new std::vector<FsTestProfile>{
      {.fs = FsKind::kExt4,
       .what = "mkfs.ext4 and mount defaults (data=ordered, delayed allocation)",
       .measured = "clean off and on"},
      {.fs = FsKind::kExt4,
       .name = "fast_commit",
       .mkfs_options = "-O fast_commit",
       .what = "fsync writes a fast-commit record of the inode's changes instead of a full "
               "journal commit where it can",
       .measured = "clean off and on"},
      {.fs = FsKind::kExt4,
       .name = "data_journal",
       .mount_options = "data=journal",
       .what = "data goes through the journal too (no delayed allocation; O_DIRECT falls back "
               "to buffered I/O)",
       .measured = "clean off and on"},
      {.fs = FsKind::kXfs, .what = "mkfs.xfs and mount defaults", .measured = "clean off and on"},
      {.fs = FsKind::kBtrfs,
       .what = "mkfs.btrfs and mount defaults (single data, DUP metadata)",
       .measured = "clean off and on"},
      {.fs = FsKind::kBtrfs,
       .name = "compress_zstd",
       .mount_options = "compress=zstd",
       .what = "data compressed with zstd where it shrinks (O_DIRECT writes are not compressed)",
       .measured = "clean off and on"},
      {.fs = FsKind::kF2fs,
       .what = "mkfs.f2fs and mount defaults (mode=adaptive, fsync_mode=posix)",
       .known = {{CacheMode::kOn, WorkloadFeature::kDirectSyncWrite, kDirectDsync},
                 {CacheMode::kOff, WorkloadFeature::kPunchHoleAcrossEnd, kPunchAcrossEnd},
                 {CacheMode::kOn, WorkloadFeature::kPunchHoleAcrossEnd, kPunchAcrossEnd}},
       .measured = "seq-1 with synchronous writes: 2 of 358 violate off and on (the hole punched "
                   "across the end); a user's O_DIRECT|O_DSYNC overwrite violates on"},
      {.fs = FsKind::kF2fs,
       .name = "fsync_strict",
       .mount_options = "fsync_mode=strict",
       .what = "fsync behaves as on ext4, xfs and btrfs (xfstests generic/342), at a cost",
       .known = {{CacheMode::kOn, WorkloadFeature::kDirectSyncWrite, kDirectDsync},
                 {CacheMode::kOff, WorkloadFeature::kPunchHoleAcrossEnd, kPunchAcrossEnd},
                 {CacheMode::kOn, WorkloadFeature::kPunchHoleAcrossEnd, kPunchAcrossEnd}},
       .measured = "as the default profile: the strict fsync changes neither finding"},
      {.fs = FsKind::kF2fs,
       .name = "lfs",
       .mount_options = "mode=lfs",
       .what = "log-structured only: every write out of place, no in-place update",
       .known = {{CacheMode::kOff, WorkloadFeature::kPunchHoleAcrossEnd, kPunchAcrossEnd},
                 {CacheMode::kOn, WorkloadFeature::kPunchHoleAcrossEnd, kPunchAcrossEnd}},
       .measured = "the hole punched across the end as the default profile; the O_DIRECT|O_DSYNC "
                   "overwrite is written out of place and flushed: clean"},
  };
  return *table;
}

std::string JoinOptions(const char* first, const std::string& user, const char* separator) {
  if (*first == '\0') return user;
  if (user.empty()) return first;
  return std::string(first) + separator + user;
}

// A punch_hole that starts inside the file and ends past its end, by the model's size before it.
bool PunchHoleAcrossEnd(const fstest::ModelFs& model, const fstest::Op& op) {
  if (op.kind != fstest::OpKind::kFalloc || op.mode != fstest::FallocMode::kPunchHole) return false;
  const std::optional<uint64_t> inode = model.Lookup(op.path);
  if (!inode) return false;
  const uint64_t size = model.inode(*inode).data.size();
  return op.offset < size && op.offset + op.length > size;
}

}  // namespace

bool HasFeature(const fstest::Workload& w, WorkloadFeature feature) {
  fstest::ModelFs model;
  for (const fstest::Op& op : w.ops) {
    switch (feature) {
      case WorkloadFeature::kDirectSyncWrite:
        if (op.kind == fstest::OpKind::kDwrite && op.sync != fstest::SyncWrite::kNone) return true;
        break;
      case WorkloadFeature::kPunchHoleAcrossEnd:
        if (PunchHoleAcrossEnd(model, op)) return true;
        break;
    }
    // A workload was validated on the model when it was read: every operation applies.
    if (!model.Apply(op).ok()) return false;
  }
  return false;
}

std::string_view FeatureName(WorkloadFeature feature) {
  switch (feature) {
    case WorkloadFeature::kDirectSyncWrite:
      return "an O_DIRECT synchronous write";
    case WorkloadFeature::kPunchHoleAcrossEnd:
      return "a hole punched across the end of the file";
  }
  return "";
}

std::span<const FsTestProfile> AllFsTestProfiles() { return Table(); }

const FsTestProfile& DefaultFsTestProfile(FsKind fs) {
  if (const FsTestProfile* p = FindFsTestProfile(fs, "default")) return *p;
  // Every file system the tester formats has a row; raw has none and never reaches here (a
  // file-system test refuses --fs raw first).
  static const FsTestProfile kNone{};
  return kNone;
}

const FsTestProfile* FindFsTestProfile(FsKind fs, std::string_view name) {
  for (const FsTestProfile& p : Table()) {
    if (p.fs == fs && name == p.name) return &p;
  }
  return nullptr;
}

std::string ProfileName(const FsTestProfile& p) {
  return p.is_default() ? harness::FsName(p.fs)
                        : fmt::format("{}:{}", harness::FsName(p.fs), p.name);
}

std::string ProfileVariant(const FsTestProfile& p) {
  return p.is_default() ? "" : fmt::format(":{}", p.name);
}

absl::StatusOr<std::vector<const FsTestProfile*>> ParseProfiles(std::string_view text,
                                                                const std::vector<FsKind>& fs) {
  auto allowed = [&](FsKind kind) {
    return fs.empty() || std::find(fs.begin(), fs.end(), kind) != fs.end();
  };
  auto names = [] {
    std::string out;
    for (const FsTestProfile& p : Table()) {
      out += (out.empty() ? "" : ", ") + fmt::format("{}:{}", harness::FsName(p.fs), p.name);
    }
    return out;
  };
  std::vector<const FsTestProfile*> out;
  std::set<const FsTestProfile*> seen;
  auto add = [&](const FsTestProfile& p) {
    if (seen.insert(&p).second) out.push_back(&p);
  };
  const std::vector<std::string> items = absl::StrSplit(std::string(text), ',');
  for (const std::string& item : items) {
    if (item.empty()) {
      return absl::InvalidArgumentError(fmt::format(
          "--profiles {}: an empty name; give FS:NAME, FS, FS:all or all ({})", text, names()));
    }
    if (item == "all") {
      for (const FsTestProfile& p : Table()) {
        if (allowed(p.fs)) add(p);
      }
      continue;
    }
    const size_t colon = item.find(':');
    const std::string fs_name = item.substr(0, colon);
    const std::string name = colon == std::string::npos ? "default" : item.substr(colon + 1);
    absl::StatusOr<FsKind> kind = harness::ParseFsKind(fs_name, "--profiles");
    if (!kind.ok()) return kind.status();
    if (!allowed(*kind)) {
      return absl::InvalidArgumentError(
          fmt::format("--profiles {}: {} is not one of --fs {} (leave out --fs to run the "
                      "profiles' file systems)",
                      text, item, harness::FsListName(fs)));
    }
    bool found = false;
    for (const FsTestProfile& p : Table()) {
      if (p.fs == *kind && (name == "all" || name == p.name)) {
        add(p);
        found = true;
      }
    }
    if (!found) {
      return absl::InvalidArgumentError(fmt::format(
          "--profiles {}: {} has no profile {} (the profiles: {})", text, fs_name, name, names()));
    }
  }
  return out;
}

std::string ProfileMkfsOptions(const FsTestProfile& p, const std::string& user) {
  return JoinOptions(p.mkfs_options, user, " ");
}

std::string ProfileMountOptions(const FsTestProfile& p, const std::string& user) {
  return JoinOptions(p.mount_options, user, ",");
}

CellExpect ProfileExpect(const FsTestProfile& p, const fstest::Workload& w,
                         const std::vector<harness::CacheModel>& models, bool expect_clean) {
  CellExpect expect;
  for (const harness::CacheModel& model : models) {
    ExpectedVerdict verdict = ExpectedVerdict::kMayLose;
    if (expect_clean && model.mode != CacheMode::kLying) {
      verdict = ExpectedVerdict::kSurvives;
      for (const KnownFinding& k : p.known) {
        if (k.model == model.mode && HasFeature(w, k.feature)) verdict = ExpectedVerdict::kMayLose;
      }
    }
    expect.models[ModelKindOf(model.mode)] = verdict;
  }
  return expect;
}

std::string ProfilesTable() {
  std::string out;
  for (const FsTestProfile& p : Table()) {
    std::string options;
    if (*p.mkfs_options != '\0') options += fmt::format("mkfs {}", p.mkfs_options);
    if (*p.mount_options != '\0') {
      options += fmt::format("{}mount {}", options.empty() ? "" : "; ", p.mount_options);
    }
    out += fmt::format("{}:{}  ({})\n  {}\n  measured: {}\n", harness::FsName(p.fs), p.name,
                       options.empty() ? "no options" : options, p.what, p.measured);
    // One line a finding, with every cache model it is known under.
    std::vector<std::pair<const KnownFinding*, std::string>> lines;
    for (const KnownFinding& k : p.known) {
      auto same = std::find_if(lines.begin(), lines.end(),
                               [&](const auto& l) { return l.first->feature == k.feature; });
      if (same == lines.end()) {
        lines.emplace_back(&k, harness::CacheModeName(k.model));
      } else {
        same->second += fmt::format(", {}", harness::CacheModeName(k.model));
      }
    }
    for (const auto& [k, caches] : lines) {
      out += fmt::format("  known (cache {}), workloads with {}: {}\n", caches,
                         FeatureName(k->feature), k->what);
    }
  }
  return out;
}

}  // namespace powercut::product
