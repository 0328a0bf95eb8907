// Test helpers of tests/trace, state, check and base (the harness rooms): a temporary folder for
// one test (removed with everything in it when the test ends), and whole-file reads/writes and
// sparse images.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/temp_dir.h"

namespace powercut::harness::testing {

// The shared TempDir (base/temp_dir.h), under std::filesystem::temp_directory_path()
// ($TMPDIR or /tmp) as these tests always were.
class TempDir : public powercut::testing::TempDir {
 public:
  TempDir()
      : powercut::testing::TempDir(std::filesystem::temp_directory_path().string(),
                                   "powercut-test") {}
};

inline std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

inline void WriteAll(const std::string& path, const std::vector<uint8_t>& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

// A zero-filled (sparse) image.
inline void MakeImage(const std::string& path, uint64_t bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.close();
  std::filesystem::resize_file(path, bytes);
}

}  // namespace powercut::harness::testing
