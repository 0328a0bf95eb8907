// The agent's side of a resident checker (base/check_server.h): powercut's own workload program
// started once as a check server, then forked per crash state. A warm checking guest keeps one
// across its jobs (agent_main.cc), so a matrix cell's states share one start; another command or
// environment replaces it.
//
// A server that does not come up, or fails in the middle of a request, is dropped and the state
// is run the ordinary way (exec): the resident path only ever saves time, it never changes what a
// state's checker sees.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "base/check_server.h"

namespace powercut::vm::guest {

class ResidentChecker {
 public:
  // The program `argv` (plain words) with `env` set, stderr to `log_path`, in `/` (the server
  // holds no mount), started as a check server; an error when it does not say ready.
  static absl::StatusOr<std::unique_ptr<ResidentChecker>> Start(
      const std::vector<std::string>& argv,
      const std::vector<std::pair<std::string, std::string>>& env, const std::string& log_path);
  ~ResidentChecker();  // closes the socket, kills the server's process group, reaps it
  ResidentChecker(const ResidentChecker&) = delete;
  ResidentChecker& operator=(const ResidentChecker&) = delete;

  // What a server was started for: a server serves only states of the same command and
  // environment.
  static std::string KeyOf(const std::vector<std::string>& argv,
                           const std::vector<std::pair<std::string, std::string>>& env);
  const std::string& key() const { return key_; }

  // One state: the child's pid, then (after it ended) its raw wait status.
  absl::StatusOr<pid_t> Begin(const CheckRequest& request);
  absl::StatusOr<int> End(int timeout_ms);

 private:
  ResidentChecker(pid_t pid, int fd, std::string key) : pid_(pid), fd_(fd), key_(std::move(key)) {}
  pid_t pid_;
  int fd_;
  std::string key_;
};

// The servers of one agent: at most one at a time (a checking guest runs one cell's states
// after another).
class ResidentCheckers {
 public:
  // The server for this command and environment, started when there is none or another's;
  // nullptr when it cannot start (the reason in *why).
  ResidentChecker* For(const std::vector<std::string>& argv,
                       const std::vector<std::pair<std::string, std::string>>& env,
                       const std::string& log_path, std::string* why);
  // Drops the current server (it failed a request).
  void Drop() { current_.reset(); }

 private:
  std::unique_ptr<ResidentChecker> current_;
};

}  // namespace powercut::vm::guest
