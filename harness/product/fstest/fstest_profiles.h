// Profiles (`powercut fstest run --profiles`, docs/fstest.md "Profiles"): named mkfs and mount
// options per file system, one more axis of a file-system test's matrix. Each file system has its
// `default` profile (no options: what `--fs` runs) and the variants a deployment picks (ext4
// `fast_commit` and `data=journal`, btrfs `compress=zstd`, f2fs `fsync_mode=strict` and
// `mode=lfs`, ...), each with the verdicts measured for it (docs/results.md, "Profiles"): what
// `--expect-clean` expects of its cells. The table is this file's only data; no other file names
// a profile.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/fs/file_system.h"
#include "harness/fstest/workload.h"
#include "harness/product/cell/cell_result.h"
#include "harness/state/cache_model.h"

namespace powercut::product {

// What a workload does that a profile's known finding is about (FsTestProfile::known).
enum class WorkloadFeature {
  // An O_DIRECT synchronous write (`dwrite P OFF LEN dsync|sync|rwf_dsync`).
  kDirectSyncWrite,
  // A hole punched across the end of the file: from before its end to past it.
  kPunchHoleAcrossEnd,
};

// Whether `workload` does it (run on the model file system: sizes are the model's).
bool HasFeature(const fstest::Workload& workload, WorkloadFeature feature);
std::string_view FeatureName(WorkloadFeature feature);

// A measured violation of a profile that a file system's developers would call a bug (or a
// documented weakness): the cells whose workload has `feature` may lose under `model` (their
// expected verdict there is may-lose); every other cell keeps the profile's verdict.
struct KnownFinding {
  harness::CacheMode model;
  WorkloadFeature feature;
  const char* what;  // one line, with where it is written up
};

struct FsTestProfile {
  harness::FsKind fs = harness::FsKind::kExt4;
  const char* name = "default";
  const char* mkfs_options = "";   // added to mkfs (before the user's `--mkfs-options`)
  const char* mount_options = "";  // every mount (before the user's `--mount-options`)
  const char* what = "";           // what it changes, one line
  // Measured (docs/results.md, "Profiles"): with `--expect-clean` a cell expects to survive off
  // and on, but where a known finding's feature is in its workload; lying may lose everywhere.
  std::vector<KnownFinding> known;
  const char* measured = "";  // the measurement, one line, for `fstest profiles`

  bool is_default() const { return std::string_view(name) == "default"; }
};

// Every profile, file system by file system in the file-system table's order, each one's
// `default` first.
std::span<const FsTestProfile> AllFsTestProfiles();
// The `default` profile of `fs` (no options).
const FsTestProfile& DefaultFsTestProfile(harness::FsKind fs);
// The profile `name` of `fs`, or nullptr.
const FsTestProfile* FindFsTestProfile(harness::FsKind fs, std::string_view name);
// "ext4:fast_commit"; a default profile is its file system's name ("ext4").
std::string ProfileName(const FsTestProfile& profile);
// What a cell name carries after its file system: "" for a default profile, ":fast_commit".
std::string ProfileVariant(const FsTestProfile& profile);

// `--profiles LIST`: comma-separated `FS:NAME`, `FS` (its default), `FS:all` (every profile of
// FS) or `all` (every profile of every file system in `fs`, or of every file system when `fs` is
// empty). With `fs` non-empty (`--fs` given), a profile of another file system is an error. An
// unknown name is an error listing the valid ones; a profile named twice runs once.
absl::StatusOr<std::vector<const FsTestProfile*>> ParseProfiles(
    std::string_view text, const std::vector<harness::FsKind>& fs);

// The profile's mkfs options followed by the user's (space-joined), and its mount options
// followed by the user's (comma-joined).
std::string ProfileMkfsOptions(const FsTestProfile& profile, const std::string& user);
std::string ProfileMountOptions(const FsTestProfile& profile, const std::string& user);

// The expected verdicts of `workload` on `profile` under `models`: with `expect_clean`, off and
// on survive unless a known finding's feature is in the workload, lying may lose; without it every
// model may lose (the run reports and exits 0).
CellExpect ProfileExpect(const FsTestProfile& profile, const fstest::Workload& workload,
                         const std::vector<harness::CacheModel>& models, bool expect_clean);

// The table as text (`powercut fstest profiles`): name, options, what, known findings, measured.
std::string ProfilesTable();

}  // namespace powercut::product
