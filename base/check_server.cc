#include "base/check_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/socket_io.h"
#include "fmt/format.h"

namespace powercut {
namespace {

constexpr int kRequestFds = 4;
constexpr size_t kMaxLine = 4096;

// One line (without its '\n') read byte by byte: the socket carries one exchange at a time, so
// nothing is read past the line. Unavailable at end of stream, DeadlineExceeded past the limit.
absl::StatusOr<std::string> ReadLine(int fd, int timeout_ms) {
  std::string line;
  for (;;) {
    pollfd p = {fd, POLLIN, 0};
    const int ready = poll(&p, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return absl::InternalError(fmt::format("poll: {}", std::strerror(errno)));
    if (ready == 0) return absl::DeadlineExceededError("the check server did not answer in time");
    char c = 0;
    const ssize_t n = read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError("the check server closed its socket");
    if (c == '\n') return line;
    if (line.size() >= kMaxLine) return absl::InternalError("the check server's line is too long");
    line.push_back(c);
  }
}

absl::StatusOr<uint64_t> ReadNumberAfter(int fd, const char* word, int timeout_ms) {
  absl::StatusOr<std::string> line = ReadLine(fd, timeout_ms);
  if (!line.ok()) return line.status();
  const std::string prefix = fmt::format("{} ", word);
  if (line->rfind(prefix, 0) != 0 || line->size() == prefix.size()) {
    return absl::InternalError(
        fmt::format("the check server answered '{}', expected '{} N'", line->substr(0, 80), word));
  }
  char* end = nullptr;
  const uint64_t n = std::strtoull(line->c_str() + prefix.size(), &end, 10);
  if (*end != '\0') {
    return absl::InternalError(fmt::format("the check server answered '{}'", line->substr(0, 80)));
  }
  return n;
}

void WriteLineOrExit(int fd, const std::string& line) {
  const std::string text = line + "\n";
  if (!SendAll(fd, text.data(), text.size()).ok()) {
    _exit(0);  // the agent went away: nothing to serve
  }
}

// The request's descriptors and text; false at end of stream (the agent is done).
bool ReceiveRequest(int fd, int fds[kRequestFds], std::string* text) {
  char buf[kMaxLine];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kRequestFds)];
  iovec iov = {buf, sizeof buf};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  while ((n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  if (n <= 0) return false;
  const cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (c == nullptr || c->cmsg_type != SCM_RIGHTS ||
      c->cmsg_len != CMSG_LEN(sizeof(int) * kRequestFds)) {
    return false;  // not the agent's request: stop serving rather than guess
  }
  std::memcpy(fds, CMSG_DATA(c), sizeof(int) * kRequestFds);
  text->assign(buf, static_cast<size_t>(n));
  return true;
}

// In the forked child: becomes the state's checker (see the header), or exits 126 as exec would
// for a working folder it cannot enter.
void BecomeChecker(int socket_fd, const int fds[kRequestFds], const std::string& text) {
  close(socket_fd);
  const size_t nl = text.find('\n');
  const std::string cgroup_procs = text.substr(0, nl);
  std::string dir = nl == std::string::npos ? "" : text.substr(nl + 1);
  if (!dir.empty() && dir.back() == '\n') dir.pop_back();
  if (!cgroup_procs.empty()) {
    const int cg = open(cgroup_procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (cg >= 0) {
      (void)!write(cg, "0", 1);
      close(cg);
    }
  }
  setpgid(0, 0);
  // Each lands above the four targets first, so that placing one cannot close another.
  int high[kRequestFds];
  for (int i = 0; i < kRequestFds; ++i) high[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 10);
  for (int i = 0; i < kRequestFds; ++i) {
    dup2(high[i], i);  // dup2 clears FD_CLOEXEC on the target
    close(high[i]);
    if (fds[i] >= kRequestFds) close(fds[i]);
  }
  if (!dir.empty() && chdir(dir.c_str()) != 0) _exit(126);
}

}  // namespace

void ServeChecksIfAsked() {
  const char* value = std::getenv(kCheckServerFdVariable);
  if (value == nullptr) return;
  const int socket_fd = std::atoi(value);
  unsetenv(kCheckServerFdVariable);  // the checkers it forks are plain starts
  if (socket_fd < 0 || fcntl(socket_fd, F_GETFD) < 0) return;
  fcntl(socket_fd, F_SETFD, FD_CLOEXEC);
  WriteLineOrExit(socket_fd, "ready");
  int fds[kRequestFds];
  std::string text;
  while (ReceiveRequest(socket_fd, fds, &text)) {
    const pid_t pid = fork();
    if (pid == 0) {
      BecomeChecker(socket_fd, fds, text);
      return;  // main goes on: this process is the state's checker
    }
    for (int fd : fds) close(fd);
    if (pid < 0) {
      WriteLineOrExit(socket_fd, fmt::format("error fork: {}", std::strerror(errno)));
      continue;
    }
    WriteLineOrExit(socket_fd, fmt::format("pid {}", pid));
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    WriteLineOrExit(socket_fd, fmt::format("exit {}", status));
  }
  _exit(0);
}

absl::StatusOr<pid_t> SendCheckRequest(int socket_fd, const CheckRequest& request) {
  const std::string text = fmt::format("{}\n{}\n", request.cgroup_procs, request.working_dir);
  const int fds[kRequestFds] = {request.stdin_fd, request.stdout_fd, request.stderr_fd,
                                request.ack_fd};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
  iovec iov = {const_cast<char*>(text.data()), text.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fds);
  std::memcpy(CMSG_DATA(c), fds, sizeof fds);
  ssize_t n;
  while ((n = sendmsg(socket_fd, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  if (n != static_cast<ssize_t>(text.size())) {
    return absl::UnavailableError(
        fmt::format("sending the check request: {}", n < 0 ? std::strerror(errno) : "short"));
  }
  absl::StatusOr<uint64_t> pid = ReadNumberAfter(socket_fd, "pid", 30000);
  if (!pid.ok()) return pid.status();
  return static_cast<pid_t>(*pid);
}

absl::StatusOr<int> ReadCheckExit(int socket_fd, int timeout_ms) {
  absl::StatusOr<uint64_t> status = ReadNumberAfter(socket_fd, "exit", timeout_ms);
  if (!status.ok()) return status.status();
  return static_cast<int>(*status);
}

absl::Status ReadCheckServerReady(int socket_fd, int timeout_ms) {
  absl::StatusOr<std::string> line = ReadLine(socket_fd, timeout_ms);
  if (!line.ok()) return line.status();
  if (*line != "ready") {
    return absl::InternalError(
        fmt::format("the check server said '{}' instead of 'ready'", line->substr(0, 80)));
  }
  return absl::OkStatus();
}

}  // namespace powercut
