// The one scratch-folder class: a private folder that goes away with everything in it when its
// owner is done, or when a fatal signal ends the process first.
//
// Guarantees: Create() either returns a ScratchDir whose path() names a fresh, empty, private
// (mode 0700) folder `parent`/`prefix`-XXXXXX made by mkdtemp, or an error saying which folder
// could not be made and what to do. Unless told otherwise the folder is registered with
// base/signal_cleanup.h, so SIGINT/SIGTERM/SIGHUP remove it (best effort, limits there). The
// destructor removes it; Release() keeps it (and unregisters it) and hands back its path. Moving
// moves the ownership; a moved-from or default-constructed ScratchDir owns nothing.
//
// A killed owner leaves nothing for long: beside the folder lies `<folder>.lock`, which the owner
// holds an exclusive flock(2) on for as long as it owns the folder (the descriptor is close-on-
// exec, so children never hold it). SIGKILL releases the lock with the process; the next
// SweepDeadScratchFolders (base/scratch_sweep.h, run at every start of powercut) then removes the
// folder and its lock file. Release() removes the lock file, so a kept folder is never swept.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace powercut {

// $TMPDIR if it is set and not empty, else /tmp.
std::string DefaultScratchParent();

// The lock file of a scratch folder: `<folder>.lock`.
std::string ScratchLockPath(std::string_view folder);

class ScratchDir {
 public:
  struct Options {
    // The folder it is made in ("" = DefaultScratchParent()). Choose it for what the folder must
    // hold: a disk-backed file system for images and O_DIRECT (/var/tmp), short paths for unix
    // sockets (/tmp).
    std::string parent;
    // Register it with base/signal_cleanup.h. Tests that run RunSignalCleanup() themselves turn
    // this off, so that cleanup does not remove the folder the test works in.
    bool remove_on_fatal_signal = true;
    // Hold `<folder>.lock` (above) so that a sweep removes the folder once its owner is dead.
    bool lock = true;
  };

  static absl::StatusOr<ScratchDir> Create(std::string_view prefix, const Options& options);
  static absl::StatusOr<ScratchDir> Create(std::string_view prefix, std::string parent = "");

  ScratchDir() = default;
  ScratchDir(ScratchDir&& other) noexcept;
  ScratchDir& operator=(ScratchDir&& other) noexcept;
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir();

  // "" when it owns nothing.
  const std::string& path() const { return path_; }
  // The path of `name` inside the folder (nothing is created).
  std::string File(std::string_view name) const { return path_ + "/" + std::string(name); }
  std::string operator/(std::string_view name) const { return File(name); }

  // Keeps the folder: it is no longer removed on destruction or on a fatal signal. Returns its
  // path; the ScratchDir owns nothing afterwards.
  std::string Release();

 private:
  ScratchDir(std::string path, bool registered, int lock_fd)
      : path_(std::move(path)), registered_(registered), lock_fd_(lock_fd) {}
  void Remove();
  void Unlock();

  std::string path_;
  bool registered_ = false;
  int lock_fd_ = -1;  // the flock on `path_`.lock, -1 when there is none
};

}  // namespace powercut
