#include "workloads/clients_binary.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/install_layout.h"

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

}  // namespace

void RememberCommandLine(int argc, char** argv) { Remembered() = {argc, argv}; }

void ExecClientsBinary(std::string_view workload) {
  // Where the running binary's layout puts it (base/install_layout.h), from any working directory
  // and under any name this one was started by.
  const InstallLayout layout = InstallLayout::OfSelf();
  const std::string path = layout.Find(kClientsBinaryName);
  const CommandLine& line = Remembered();
  std::fflush(nullptr);
  if (line.argv != nullptr) ::execv(path.c_str(), line.argv);
  const int error = line.argv == nullptr ? EINVAL : errno;
  fmt::print(stderr,
             "powercut-workload {}: cannot start {} ({}): the {} workload runs in it; it is built "
             "with powercut-workload and installed with it ({})\n",
             workload, path, std::strerror(error), workload, layout.Describe());
  ::_exit(error == ENOENT ? 127 : 126);
}

}  // namespace powercut::workloads
