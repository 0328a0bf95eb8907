// A temporary directory for one test, on a disk-backed file system, removed with its contents.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace powercut::walbench {

class ScratchDir {
 public:
  ScratchDir() {
    const char* env = std::getenv("POWERCUT_TEST_TMPDIR");
    std::string pattern = std::string(env != nullptr ? env : "/var/tmp") + "/walbench-test-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (mkdtemp(buffer.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp(" << pattern << ") failed";
      return;
    }
    path_ = buffer.data();
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace powercut::walbench
