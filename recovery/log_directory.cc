#include "recovery/log_directory.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "base/status_macros.h"

namespace powercut::recovery {

bool IsSegmentTempFileName(const std::string& name) {
  constexpr std::string_view kSuffix = ".tmp";
  if (!std::string_view(name).ends_with(kSuffix)) return false;
  return wal::ParseSegmentFileName(std::string_view(name).substr(0, name.size() - kSuffix.size()))
      .has_value();
}

absl::StatusOr<LogDirectory> ListLogDirectory(wal::Env* env, const std::string& dir) {
  if (env == nullptr) env = wal::Env::Default();
  ASSIGN_OR_RETURN(const bool exists, env->Exists(dir));
  if (!exists) {
    return absl::NotFoundError(fmt::format(
        "WAL directory {} does not exist: check the path (wal::Wal::Open creates it when "
        "create_if_missing is set)",
        dir));
  }
  ASSIGN_OR_RETURN(const bool is_dir, env->IsDirectory(dir));
  if (!is_dir) {
    return absl::FailedPreconditionError(
        fmt::format("WAL path {} is not a directory: pass the directory that holds the "
                    "wal-*.log segments",
                    dir));
  }
  ASSIGN_OR_RETURN(const std::vector<std::string> names, env->ListDir(dir));
  LogDirectory log;
  log.dir = dir;
  for (const std::string& name : names) {
    if (const std::optional<wal::Lsn> first = wal::ParseSegmentFileName(name)) {
      log.segments.push_back(SegmentFile{*first, name, dir + "/" + name});
    } else if (IsSegmentTempFileName(name)) {
      log.temp_files.push_back(name);
    } else {
      return absl::FailedPreconditionError(fmt::format(
          "{}/{} is not a WAL segment (expected wal-<20-digit LSN>.log): a WAL directory holds "
          "only its segments; move the file out of {} and retry",
          dir, name, dir));
    }
  }
  std::sort(log.segments.begin(), log.segments.end(),
            [](const SegmentFile& a, const SegmentFile& b) { return a.first_lsn < b.first_lsn; });
  return log;
}

}  // namespace powercut::recovery
