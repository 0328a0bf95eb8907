#include "harness/vm/guest/resident_checker.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "fmt/format.h"

namespace powercut::vm::guest {
namespace {

// A server's start is one program start in the emulated CPU (~0.2-0.5 s, more on a loaded host).
constexpr int kReadyTimeoutMs = 60000;

}  // namespace

std::string ResidentChecker::KeyOf(const std::vector<std::string>& argv,
                                   const std::vector<std::pair<std::string, std::string>>& env) {
  std::string key;
  for (const std::string& a : argv) key += a + '\0';
  key += '\1';
  for (const auto& [name, value] : env) key += name + '=' + value + '\0';
  return key;
}

absl::StatusOr<std::unique_ptr<ResidentChecker>> ResidentChecker::Start(
    const std::vector<std::string>& argv,
    const std::vector<std::pair<std::string, std::string>>& env, const std::string& log_path) {
  if (argv.empty()) return absl::InvalidArgumentError("no program to start");
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return absl::InternalError(fmt::format("socketpair: {}", std::strerror(errno)));
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::string fd_text = std::to_string(sv[1]);
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    const int devnull = open("/dev/null", O_RDONLY);
    const int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(devnull, STDIN_FILENO);
    dup2(log, STDOUT_FILENO);
    dup2(log, STDERR_FILENO);
    fcntl(sv[1], F_SETFD, 0);  // the server's end survives the exec
    if (chdir("/") != 0) _exit(126);
    for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    setenv(kCheckServerFdVariable, fd_text.c_str(), 1);
    execv(args[0], args.data());
    _exit(127);
  }
  close(sv[1]);
  if (pid < 0) {
    close(sv[0]);
    return absl::InternalError(fmt::format("fork: {}", std::strerror(errno)));
  }
  setpgid(pid, pid);
  std::unique_ptr<ResidentChecker> server(new ResidentChecker(pid, sv[0], KeyOf(argv, env)));
  if (absl::Status ready = ReadCheckServerReady(sv[0], kReadyTimeoutMs); !ready.ok()) {
    return absl::Status(ready.code(), fmt::format("{} as a check server: {}", argv[0],
                                                  std::string(ready.message())));
  }
  return server;
}

ResidentChecker::~ResidentChecker() {
  close(fd_);  // the server's loop ends at the end of its socket
  kill(-pid_, SIGKILL);
  while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

absl::StatusOr<pid_t> ResidentChecker::Begin(const CheckRequest& request) {
  return SendCheckRequest(fd_, request);
}

absl::StatusOr<int> ResidentChecker::End(int timeout_ms) { return ReadCheckExit(fd_, timeout_ms); }

ResidentChecker* ResidentCheckers::For(const std::vector<std::string>& argv,
                                       const std::vector<std::pair<std::string, std::string>>& env,
                                       const std::string& log_path, std::string* why) {
  if (current_ != nullptr && current_->key() == ResidentChecker::KeyOf(argv, env)) {
    return current_.get();
  }
  current_.reset();
  absl::StatusOr<std::unique_ptr<ResidentChecker>> started =
      ResidentChecker::Start(argv, env, log_path);
  if (!started.ok()) {
    *why = std::string(started.status().message());
    return nullptr;
  }
  current_ = std::move(*started);
  return current_.get();
}

}  // namespace powercut::vm::guest
