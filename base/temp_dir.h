// A temporary folder for one test (or one benchmark program), removed with everything in it when
// the object is destroyed. The one copy shared by every suite under tests/ and by bench/.
//
// Guarantees: after construction either ok() is true and path() names a fresh, empty, private
// (mode 0700) directory created by mkdtemp, or ok() is false, path() is empty and error() says why.
// In a test the failure is also reported with ADD_FAILURE(), so a test can never run silently in
// "" (the current directory). Programs without GoogleTest (bench/) compile with
// POWERCUT_TEMP_DIR_NO_GTEST defined for the whole target and check ok() themselves.
#pragma once

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

#ifndef POWERCUT_TEMP_DIR_NO_GTEST
#include "gtest/gtest.h"
#endif

namespace powercut::testing {

// $`variable` if it is set and not empty, else `fallback`.
inline std::string ParentFromEnv(const char* variable, std::string fallback) {
  const char* value = std::getenv(variable);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
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
    const std::string pattern = parent + "/" + std::string(prefix) + "-XXXXXX";
    std::string name = pattern;  // mkdtemp fills in the Xs, even when it fails
    if (::mkdtemp(name.data()) == nullptr) {
      error_ = "cannot create a temporary folder: mkdtemp(" + pattern +
               ") failed: " + std::strerror(errno) + "; make " + parent +
               " an existing, writable folder";
#ifndef POWERCUT_TEMP_DIR_NO_GTEST
      ADD_FAILURE() << "TempDir: " << error_;
#endif
      return;
    }
    path_ = name;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }

  // The path of `name` inside the folder (nothing is created).
  std::string File(std::string_view name) const { return path_ + "/" + std::string(name); }
  std::string operator/(std::string_view name) const { return File(name); }

  // Creates the subfolder `name` (and its parents) and returns its path.
  std::string MakeSubdir(std::string_view name) const {
    std::string sub = File(name);
    std::error_code ignored;
    std::filesystem::create_directories(sub, ignored);
    return sub;
  }

 private:
  std::string path_;
  std::string error_;
};

}  // namespace powercut::testing
