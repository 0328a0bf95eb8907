// Child processes of the VM crash domain: one-shot commands whose output is captured (apt-get,
// dpkg-deb, depmod, mkfs) and long-running children (qemu) that must never outlive powercut.
//
// Guarantees of ChildProcess:
//  - the child runs in its own process group, so killing it kills everything it started;
//  - the child gets SIGKILL when the thread that spawned it exits (PR_SET_PDEATHSIG), which covers
//    powercut itself being SIGKILLed; spawn long-running children from a long-lived thread;
//  - the destructor SIGKILLs the group and reaps the child;
//  - InstallInterruptHandlers() makes SIGINT/SIGTERM/SIGHUP kill every live ChildProcess group,
//    then run powercut::RunSignalCleanup() (detach registered mounts, remove registered folders),
//    before powercut exits with the signal.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace powercut {

struct CommandResult {
  int exit_code = 0;   // exit status, or 128 + signal number
  std::string output;  // stdout and stderr interleaved
};

// Runs argv[0] (searched in PATH) to completion and captures its output. Fails only when the
// command cannot be started; a non-zero exit is reported in CommandResult. Standard input is
// /dev/null.
// `working_dir` ("" = inherit) is the directory the command runs in.
absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         const std::string& working_dir = "");

// Like RunCommand, but a non-zero exit is an error that names `step`, the command line and the
// last lines of its output.
absl::StatusOr<std::string> RunCommandOrError(const std::string& step,
                                              const std::vector<std::string>& argv,
                                              const std::string& working_dir = "");

// The last `lines` lines of `text`.
std::string LastLines(const std::string& text, int lines);
// The same on one line, the lines joined with " | " (for one-line reports).
std::string LastLinesOnOneLine(const std::string& text, int lines);

// Whether `tool` is an executable in /usr/sbin, /sbin, /usr/bin or /bin (where Debian installs
// the file-system tools; PATH of an ordinary user lacks the sbin folders).
bool SystemToolInstalled(const std::string& tool);

class ChildProcess {
 public:
  // Starts argv with stdout and stderr appended to `output_path` ("" = /dev/null) and stdin from
  // /dev/null.
  static absl::StatusOr<ChildProcess> Spawn(const std::vector<std::string>& argv,
                                            const std::string& output_path);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }

  // Waits up to `timeout` for the child to exit; returns its exit code (128 + signal if killed),
  // or nullopt on timeout. Once it returned a code, later calls return the same code.
  std::optional<int> WaitFor(std::chrono::milliseconds timeout);
  // SIGKILLs the process group and reaps the child; returns its exit code.
  int Kill();

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  void Release();

  pid_t pid_ = -1;
  std::optional<int> exit_code_;
};

// SIGINT, SIGTERM and SIGHUP kill every live ChildProcess group, then detach every registered
// mount and remove every registered folder (harness/signal_cleanup.h), then powercut dies of the
// same signal.
void InstallInterruptHandlers();

// A scratch folder that the interrupt handler removes with everything in it: forwards to
// powercut::RegisterCleanupFolder (limits there).
void RegisterScratchFolder(const std::string& path);
void UnregisterScratchFolder(const std::string& path);

}  // namespace powercut
