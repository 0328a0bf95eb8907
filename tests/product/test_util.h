// Helpers for the product tests: a temporary folder and running a command for its output.
#pragma once

#include <stdlib.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "base/temp_dir.h"

namespace powercut::product::testing {

// The shared TempDir (base/temp_dir.h), always under /var/tmp (disk-backed) as these tests
// always were: $POWERCUT_TEST_TMPDIR does not move the folders the product's VM tests hand the
// guest.
class TempDir : public powercut::testing::TempDir {
 public:
  TempDir() : powercut::testing::TempDir("/var/tmp", "powercut-product-test") {}
};

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs `command` with /bin/sh -c, stderr merged into stdout.
inline CommandResult RunCommand(const std::string& command) {
  CommandResult r;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Whether `pid` exists and is not a zombie (a reaped or exited child is not alive).
inline bool ProcessAlive(pid_t pid) {
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return false;
  auto close = stat.rfind(')');
  return close == std::string::npos || stat.substr(close + 2, 1) != "Z";
}

}  // namespace powercut::product::testing
