#include "workloads/clients_binary.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/process.h"

namespace powercut::workloads {
namespace {

struct CommandLine {
  int argc = 0;
  char** argv = nullptr;
};

CommandLine& Remembered() {
  static CommandLine line;
  return line;
}

// The folder of the running binary, so that the clients binary is found beside it from any
// working directory and under any name it was started by.
std::string OwnFolder() {
  const std::string path = SelfPath("");
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

void RememberCommandLine(int argc, char** argv) { Remembered() = {argc, argv}; }

void ExecClientsBinary(std::string_view workload) {
  const std::string path = fmt::format("{}/{}", OwnFolder(), kClientsBinaryName);
  const CommandLine& line = Remembered();
  std::fflush(nullptr);
  if (line.argv != nullptr) ::execv(path.c_str(), line.argv);
  const int error = line.argv == nullptr ? EINVAL : errno;
  fmt::print(stderr,
             "powercut-workload {}: cannot start {} ({}): the {} workload runs in it; it is built "
             "with powercut-workload and must stay in the same folder\n",
             workload, path, std::strerror(error), workload);
  ::_exit(error == ENOENT ? 127 : 126);
}

}  // namespace powercut::workloads
