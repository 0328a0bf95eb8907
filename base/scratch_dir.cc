#include "base/scratch_dir.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "base/signal_cleanup.h"
#include "fmt/format.h"

namespace powercut {

std::string DefaultScratchParent() {
  const char* tmpdir = std::getenv("TMPDIR");
  return tmpdir != nullptr && *tmpdir != '\0' ? std::string(tmpdir) : std::string("/tmp");
}

std::string ScratchLockPath(std::string_view folder) { return fmt::format("{}.lock", folder); }

namespace {

// Takes the lock of `folder` before a sweep can see it: the lock file is made under a name the
// sweep ignores, locked, then renamed into place (the lock goes with the inode). -1 when it cannot
// be made (the folder then works as before, it is only not swept after a SIGKILL).
int LockFolder(const std::string& folder) {
  const std::filesystem::path lock(ScratchLockPath(folder));
  const std::string staging =
      (lock.parent_path() / ("." + lock.filename().string() + ".new")).string();
  const int fd = ::open(staging.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0 || ::rename(staging.c_str(), lock.c_str()) != 0) {
    ::unlink(staging.c_str());
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

absl::StatusOr<ScratchDir> ScratchDir::Create(std::string_view prefix, const Options& options) {
  const std::string parent = options.parent.empty() ? DefaultScratchParent() : options.parent;
  const std::string pattern = fmt::format("{}/{}-XXXXXX", parent, prefix);
  std::string name = pattern;  // mkdtemp fills in the Xs
  if (::mkdtemp(name.data()) == nullptr) {
    return absl::UnavailableError(
        fmt::format("cannot create a scratch folder: mkdtemp({}) failed: {}; make {} an "
                    "existing, writable folder",
                    pattern, std::strerror(errno), parent));
  }
  const int lock_fd = options.lock ? LockFolder(name) : -1;
  if (options.remove_on_fatal_signal) RegisterCleanupFolder(name);
  return ScratchDir(std::move(name), options.remove_on_fatal_signal, lock_fd);
}

absl::StatusOr<ScratchDir> ScratchDir::Create(std::string_view prefix, std::string parent) {
  return Create(prefix, Options{.parent = std::move(parent)});
}

ScratchDir::ScratchDir(ScratchDir&& other) noexcept
    : path_(std::exchange(other.path_, "")),
      registered_(std::exchange(other.registered_, false)),
      lock_fd_(std::exchange(other.lock_fd_, -1)) {}

ScratchDir& ScratchDir::operator=(ScratchDir&& other) noexcept {
  if (this != &other) {
    Remove();
    path_ = std::exchange(other.path_, "");
    registered_ = std::exchange(other.registered_, false);
    lock_fd_ = std::exchange(other.lock_fd_, -1);
  }
  return *this;
}

ScratchDir::~ScratchDir() { Remove(); }

std::string ScratchDir::Release() {
  if (registered_) UnregisterCleanupFolder(path_);
  registered_ = false;
  Unlock();
  return std::exchange(path_, "");
}

// The lock file goes first, then the lock: a sweep never finds an unlocked lock file of a live
// folder.
void ScratchDir::Unlock() {
  if (lock_fd_ < 0) return;
  ::unlink(ScratchLockPath(path_).c_str());
  ::close(lock_fd_);
  lock_fd_ = -1;
}

void ScratchDir::Remove() {
  if (path_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
  Unlock();
  // Unregistered only after the removal: a signal in between still finds it.
  if (registered_) UnregisterCleanupFolder(path_);
  path_.clear();
  registered_ = false;
}

}  // namespace powercut
