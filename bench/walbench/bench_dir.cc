#include "bench/walbench/bench_dir.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace powercut::walbench {

absl::StatusOr<std::unique_ptr<BenchDir>> BenchDir::Create(const std::string& parent) {
  struct stat st;
  if (stat(parent.c_str(), &st) != 0) {
    return absl::NotFoundError(
        fmt::format("--dir {}: {}; pass an existing directory on the file system to measure",
                    parent, std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(fmt::format(
        "--dir {}: not a directory; pass a directory on the file system to measure", parent));
  }
  std::string where = parent;
  while (where.size() > 1 && where.back() == '/') where.pop_back();
  auto dir = ScratchDir::Create("walbench", where);
  if (!dir.ok()) {
    // ScratchDir's message names the folder and says to make it writable.
    return absl::PermissionDeniedError(
        fmt::format("--dir {}: {}", parent, std::string(dir.status().message())));
  }
  return std::unique_ptr<BenchDir>(new BenchDir(std::move(*dir)));
}

absl::StatusOr<std::string> BenchDir::NewRunDir(std::string_view label) {
  std::string dir = fmt::format("{}/{}-{}", dir_.path(), label, next_run_++);
  if (mkdir(dir.c_str(), 0755) != 0) {
    return absl::InternalError(fmt::format("mkdir({}): {}", dir, std::strerror(errno)));
  }
  return dir;
}

absl::Status BenchDir::RemoveRunDir(const std::string& run_dir) {
  // Only a direct child of the scratch directory: never anything the user owns.
  const std::filesystem::path child(run_dir);
  if (child.parent_path() != std::filesystem::path(dir_.path())) {
    return absl::InvalidArgumentError(
        fmt::format("refusing to remove {}: not a run directory inside {}", run_dir, dir_.path()));
  }
  std::error_code ec;
  std::filesystem::remove_all(child, ec);
  if (ec) {
    return absl::InternalError(fmt::format("removing {}: {}", run_dir, ec.message()));
  }
  const int fd = open(dir_.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    syncfs(fd);  // best effort: only moves work out of the next timed window
    close(fd);
  }
  return absl::OkStatus();
}

}  // namespace powercut::walbench
