// The one way powercut starts a child: one-shot commands whose output is captured or streamed
// (apt-get, mkfs, file-system tools, checkers: RunProcess, RunCommand) and long-running children
// (qemu: ChildProcess) that must never outlive powercut.
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
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace powercut {

// How a child starts and how long it may run. Whatever the options, the child runs in its own
// process group, with stdin from /dev/null and the default dispositions and an empty mask for
// SIGINT, SIGTERM and SIGPIPE; when it ends (or times out) its whole group is SIGKILLed, so nothing
// it started outlives it.
struct ProcessOptions {
  std::string working_dir;  // "" = inherit
  // The child's environment is this process's, without the variables named in `unset_env` and
  // without the inherited values of those in `set_env`, plus `set_env`.
  std::vector<std::string> unset_env;
  std::vector<std::pair<std::string, std::string>> set_env;
  // 0 = no limit. At the limit the child's group is SIGKILLed; output written before is kept
  // (the pipes get one more second to drain, for descendants that left the group).
  double timeout_seconds = 0;
  // The child gets SIGKILL when the thread that started it exits (PR_SET_PDEATHSIG, which needs
  // code in the child, so it is started with fork). false starts it with posix_spawn, which copies
  // no page tables: the choice for children started once per crash state (checkers).
  bool die_with_parent = true;
};

// How a child ended.
struct ProcessEnd {
  int exit_code = -1;  // exit status, or -1 when a signal ended it
  int signal = 0;      // the signal that ended it, if any
  bool timed_out = false;
  // Non-empty when the program could not be started at all (not found, not executable, working
  // folder missing): what went wrong. exit_code is then 127, as sh gives for a missing command.
  std::string start_error;
};

// Receives a child's output as it arrives, in chunks of any size.
using OutputSink = std::function<void(std::string_view chunk)>;

// The one way to start a child and wait for it: runs argv[0] (searched in PATH) with `options`,
// passing stdout to `on_stdout` and stderr to `on_stderr` (stderr shares stdout's pipe, keeping
// their interleaving, when `on_stderr` is null). Fails only when this process cannot make a pipe
// or a child; a program that cannot start is reported in ProcessEnd::start_error.
absl::StatusOr<ProcessEnd> RunProcess(const std::vector<std::string>& argv,
                                      const ProcessOptions& options, const OutputSink& on_stdout,
                                      const OutputSink& on_stderr = nullptr);

struct CommandResult {
  int exit_code = 0;   // exit status, or 128 + signal number
  std::string output;  // stdout and stderr interleaved
  bool timed_out = false;
};

// Runs argv (RunProcess) to completion and captures its output. Fails only when no child can be
// made; a non-zero exit is reported in CommandResult, and a program that cannot start exits 127
// with the reason as its output.
absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         const ProcessOptions& options);
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

// The absolute path of the running program (/proc/self/exe), so that it can start itself or a
// sibling binary from any working directory; `fallback` when the link cannot be read.
std::string SelfPath(std::string_view fallback);

}  // namespace powercut
