#include "base/scratch_dir.h"

#include <stdlib.h>

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
  if (options.remove_on_fatal_signal) RegisterCleanupFolder(name);
  return ScratchDir(std::move(name), options.remove_on_fatal_signal);
}

absl::StatusOr<ScratchDir> ScratchDir::Create(std::string_view prefix, std::string parent) {
  return Create(prefix, Options{.parent = std::move(parent)});
}

ScratchDir::ScratchDir(ScratchDir&& other) noexcept
    : path_(std::exchange(other.path_, "")), registered_(std::exchange(other.registered_, false)) {}

ScratchDir& ScratchDir::operator=(ScratchDir&& other) noexcept {
  if (this != &other) {
    Remove();
    path_ = std::exchange(other.path_, "");
    registered_ = std::exchange(other.registered_, false);
  }
  return *this;
}

ScratchDir::~ScratchDir() { Remove(); }

std::string ScratchDir::Release() {
  if (registered_) UnregisterCleanupFolder(path_);
  registered_ = false;
  return std::exchange(path_, "");
}

void ScratchDir::Remove() {
  if (path_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
  // Unregistered only after the removal: a signal in between still finds it.
  if (registered_) UnregisterCleanupFolder(path_);
  path_.clear();
  registered_ = false;
}

}  // namespace powercut
