#include "tests/workloads/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

namespace powercut::workloads {

ChildProcess::ChildProcess(Options options) : options_(std::move(options)) {
  int pipe_fds[2] = {-1, -1};
  if (options_.ack_pipe) {
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
      start_error_ = std::string("pipe2: ") + std::strerror(errno);
      return;
    }
  }
  for (const char* inherited : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS", "LSAN_OPTIONS"}) {
    if (const char* value = std::getenv(inherited)) options_.env.emplace(inherited, value);
  }
  if (options_.ack_pipe) options_.env["POWERCUT_ACK_FD"] = "3";

  std::vector<std::string> env_strings;
  env_strings.reserve(options_.env.size());
  for (const auto& [name, value] : options_.env) {
    std::string entry = name;
    entry += '=';
    entry += value;
    env_strings.push_back(std::move(entry));
  }
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (std::string& s : options_.argv) argv.push_back(s.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, options_.stdout_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, options_.stderr_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (options_.ack_pipe) {
    // dup2 onto fd 3 clears O_CLOEXEC on the copy, except when the source already is fd 3:
    // move it out of the way first.
    if (pipe_fds[1] == 3) {
      int moved = ::fcntl(pipe_fds[1], F_DUPFD_CLOEXEC, 10);
      ::close(pipe_fds[1]);
      pipe_fds[1] = moved;
    }
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 3);
  }
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (options_.ack_pipe) ::close(pipe_fds[1]);
  if (rc != 0) {
    start_error_ = std::string("posix_spawn(") + options_.argv[0] + "): " + std::strerror(rc);
    if (options_.ack_pipe) ::close(pipe_fds[0]);
    return;
  }
  pid_ = pid;
  ack_read_fd_ = options_.ack_pipe ? pipe_fds[0] : -1;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !exit_code_.has_value()) {
    ::kill(pid_, SIGKILL);
    Wait();
  }
  if (ack_read_fd_ >= 0) ::close(ack_read_fd_);
}

std::optional<std::string> ChildProcess::NextAckLine() {
  for (;;) {
    const size_t newline = buffer_.find('\n');
    if (newline != std::string::npos) {
      std::string line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return line;
    }
    if (eof_ || ack_read_fd_ < 0) {
      if (buffer_.empty()) return std::nullopt;
      std::string partial = std::move(buffer_);  // an unterminated line: returned as is
      buffer_.clear();
      return partial;
    }
    char chunk[4096];
    const ssize_t n = ::read(ack_read_fd_, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof_ = true;
      continue;
    }
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

void ChildProcess::Kill(int signal) {
  if (pid_ > 0 && !exit_code_.has_value()) ::kill(pid_, signal);
}

int ChildProcess::Wait() {
  if (exit_code_.has_value()) return *exit_code_;
  if (pid_ <= 0) return -1;
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  if (r < 0) {
    exit_code_ = -1;
  } else if (WIFEXITED(status)) {
    exit_code_ = WEXITSTATUS(status);
  } else {
    exit_code_ = 128 + WTERMSIG(status);
  }
  return *exit_code_;
}

std::string ChildProcess::ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace powercut::workloads
