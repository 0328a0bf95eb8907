// A directory under /var/tmp (a real disk file system, not tmpfs: O_DIRECT works there) that is
// removed with everything in it when the object goes out of scope.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace powercut::workloads {

class TempDir {
 public:
  TempDir() {
    std::string templ = "/var/tmp/powercut-workloads-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp(" << templ << ") failed";
    } else {
      path_ = templ;
    }
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // Creates and returns the subdirectory `name`.
  std::string Sub(const std::string& name) const {
    const std::string sub = path_ + "/" + name;
    std::filesystem::create_directories(sub);
    return sub;
  }

 private:
  std::string path_;
};

}  // namespace powercut::workloads
