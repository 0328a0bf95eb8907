// A scratch directory under /var/tmp (or $POWERCUT_BENCH_TMPDIR) for one benchmark program,
// removed with everything in it when the program exits.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace powercut::bench {

class ScratchDir {
 public:
  ScratchDir() {
    const char* env = std::getenv("POWERCUT_BENCH_TMPDIR");
    std::string pattern = std::string(env != nullptr ? env : "/var/tmp") + "/pcbench-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (mkdtemp(buffer.data()) != nullptr) path_ = buffer.data();
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  // Empty when the directory could not be created.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace powercut::bench
