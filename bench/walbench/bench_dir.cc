#include "bench/walbench/bench_dir.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

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
  std::string pattern = parent;
  if (pattern.empty() || pattern.back() != '/') pattern += '/';
  pattern += "walbench-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) {
    return absl::PermissionDeniedError(fmt::format(
        "--dir {}: cannot create a scratch directory there ({}); pass a writable directory", parent,
        std::strerror(errno)));
  }
  return std::unique_ptr<BenchDir>(new BenchDir(std::string(buffer.data())));
}

BenchDir::~BenchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
  if (ec) {
    fmt::print(stderr, "walbench: could not remove scratch directory {}: {}\n", path_,
               ec.message());
  }
}

absl::StatusOr<std::string> BenchDir::NewRunDir(std::string_view label) {
  std::string dir = fmt::format("{}/{}-{}", path_, label, next_run_++);
  if (mkdir(dir.c_str(), 0755) != 0) {
    return absl::InternalError(fmt::format("mkdir({}): {}", dir, std::strerror(errno)));
  }
  return dir;
}

absl::Status BenchDir::RemoveRunDir(const std::string& run_dir) {
  // Only a direct child of the scratch directory: never anything the user owns.
  const std::filesystem::path child(run_dir);
  if (child.parent_path() != std::filesystem::path(path_)) {
    return absl::InvalidArgumentError(
        fmt::format("refusing to remove {}: not a run directory inside {}", run_dir, path_));
  }
  std::error_code ec;
  std::filesystem::remove_all(child, ec);
  if (ec) {
    return absl::InternalError(fmt::format("removing {}: {}", run_dir, ec.message()));
  }
  const int fd = open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    syncfs(fd);  // best effort: only moves work out of the next timed window
    close(fd);
  }
  return absl::OkStatus();
}

}  // namespace powercut::walbench
