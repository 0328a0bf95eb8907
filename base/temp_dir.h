// A temporary folder for one test, removed with everything in it when the object is destroyed:
// base/scratch_dir.h's ScratchDir (the one scratch-folder class) with what a test needs on top.
// The one copy shared by every suite under tests/.
//
// Guarantees: after construction either ok() is true and path() names a fresh, empty, private
// (mode 0700) directory created by ScratchDir, or ok() is false, path() is empty and error() says
// why; the failure is also reported with ADD_FAILURE(), so a test can never run silently in ""
// (the current directory). Unlike a ScratchDir it is not registered for removal on a fatal signal:
// tests run RunSignalCleanup() themselves and must keep their own folder.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

#include "base/scratch_dir.h"
#include "gtest/gtest.h"

namespace powercut::testing {

// $`variable` if it is set and not empty, else `fallback`.
inline std::string ParentFromEnv(const char* variable, std::string_view fallback) {
  const char* value = std::getenv(variable);
  return std::string(value != nullptr && *value != '\0' ? std::string_view(value) : fallback);
}

// $POWERCUT_TEST_TMPDIR, else /var/tmp: a disk-backed file system (not /tmp, which may be tmpfs,
// where O_DIRECT fails).
inline std::string DefaultParent() { return ParentFromEnv("POWERCUT_TEST_TMPDIR", "/var/tmp"); }

class TempDir {
 public:
  // Creates `parent`/`prefix`-XXXXXX. Choose `parent` for what the folder must hold: a disk-backed
  // file system for O_DIRECT (the default), short paths for unix sockets (/tmp, the VM tests).
  explicit TempDir(std::string parent = DefaultParent(),
                   std::string_view prefix = "powercut-test") {
    auto dir = ScratchDir::Create(
        prefix, ScratchDir::Options{.parent = std::move(parent), .remove_on_fatal_signal = false});
    if (!dir.ok()) {
      error_ = std::string(dir.status().message());
      ADD_FAILURE() << "TempDir: " << error_;
      return;
    }
    dir_ = std::move(*dir);
  }

  bool ok() const { return !dir_.path().empty(); }
  const std::string& error() const { return error_; }
  const std::string& path() const { return dir_.path(); }

  // The path of `name` inside the folder (nothing is created).
  std::string File(std::string_view name) const { return dir_.File(name); }
  std::string operator/(std::string_view name) const { return File(name); }

  // Creates the subfolder `name` (and its parents) and returns its path.
  std::string MakeSubdir(std::string_view name) const {
    std::string sub = File(name);
    std::error_code ignored;
    std::filesystem::create_directories(sub, ignored);
    return sub;
  }

 private:
  ScratchDir dir_;
  std::string error_;
};

}  // namespace powercut::testing
