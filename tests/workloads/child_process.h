// Runs powercut-workload as a child process the way the tester does: an explicit environment, a
// pipe as POWERCUT_ACK_FD (fd 3 in the child), stdout and stderr captured in files.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace powercut::workloads {

class ChildProcess {
 public:
  struct Options {
    std::vector<std::string> argv;           // argv[0] is the program path
    std::map<std::string, std::string> env;  // the child's whole environment (plus sanitizer
                                             // options inherited from the test)
    bool ack_pipe = false;                   // give the child POWERCUT_ACK_FD=3 on a pipe
    std::string stdout_path;                 // where the child's stdout goes
    std::string stderr_path;                 // where the child's stderr goes
  };

  explicit ChildProcess(Options options);
  ~ChildProcess();  // kills (SIGKILL) and reaps the child if still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  bool started() const { return pid_ > 0; }
  const std::string& start_error() const { return start_error_; }

  // The next line the child wrote on the ack pipe (without '\n'); nullopt at EOF (the child and
  // everything it started closed the pipe). Blocks until a line or EOF arrives.
  std::optional<std::string> NextAckLine();

  void Kill(int signal);
  // Waits for the child; returns its exit code, or 128 + signal when a signal ended it.
  int Wait();

  static std::string ReadFile(const std::string& path);

 private:
  Options options_;
  pid_t pid_ = -1;
  int ack_read_fd_ = -1;
  std::string buffer_;
  bool eof_ = false;
  std::optional<int> exit_code_;
  std::string start_error_;
};

}  // namespace powercut::workloads
