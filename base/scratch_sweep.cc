#include "base/scratch_sweep.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string_view>
#include <system_error>

#include "base/scratch_dir.h"

namespace powercut {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPrefix = "powercut-";
constexpr std::string_view kSuffix = ".lock";

// The blocks the tree under `dir` holds (not the apparent size: the images are sparse).
uint64_t AllocatedBytes(const fs::path& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec),
       end;
       !ec && it != end; it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) == 0) total += static_cast<uint64_t>(st.st_blocks) * 512;
  }
  return total;
}

// Removes the folder of `lock` when its owner is dead; true when it did.
bool SweepOne(const fs::path& lock, SweepResult* result) {
  const int fd = ::open(lock.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  bool swept = false;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
      ::flock(fd, LOCK_EX | LOCK_NB) == 0) {
    std::string folder = lock.string();
    folder.resize(folder.size() - kSuffix.size());
    struct stat dir {};
    if (::lstat(folder.c_str(), &dir) == 0 && S_ISDIR(dir.st_mode) && dir.st_uid == ::geteuid()) {
      result->bytes += AllocatedBytes(folder);
      std::error_code ec;
      fs::remove_all(folder, ec);
      if (!ec) ++result->folders;
    }
    // The folder gone (or already gone after a SIGTERM's cleanup): the lock file goes too.
    if (::access(folder.c_str(), F_OK) != 0) ::unlink(lock.c_str());
    swept = true;
  }
  ::close(fd);
  return swept;
}

}  // namespace

SweepResult SweepDeadScratchFolders(const std::vector<std::string>& parents) {
  SweepResult result;
  for (const std::string& parent : parents) {
    std::error_code ec;
    for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.size() <= kPrefix.size() + kSuffix.size() || !name.starts_with(kPrefix) ||
          !name.ends_with(kSuffix)) {
        continue;
      }
      SweepOne(it->path(), &result);
    }
  }
  return result;
}

std::vector<std::string> ScratchParents() {
  std::vector<std::string> parents;
  for (const std::string& p :
       {DefaultScratchParent(), std::string("/tmp"), std::string("/var/tmp")}) {
    std::error_code ec;
    const std::string canonical = fs::weakly_canonical(p, ec).string();
    const std::string key = ec ? p : canonical;
    if (std::find(parents.begin(), parents.end(), key) == parents.end()) parents.push_back(key);
  }
  return parents;
}

}  // namespace powercut
