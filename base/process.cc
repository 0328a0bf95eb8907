#include "base/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "base/signal_cleanup.h"
#include "fmt/format.h"
#include "fmt/ranges.h"

namespace powercut {
namespace {

// Process groups of live ChildProcesses, read by the signal handler (async-signal-safe).
constexpr int kMaxLiveGroups = 64;
std::atomic<pid_t> g_live_groups[kMaxLiveGroups];

void RegisterGroup(pid_t pgid) {
  for (auto& slot : g_live_groups) {
    pid_t expected = 0;
    if (slot.compare_exchange_strong(expected, pgid)) return;
  }
}

void UnregisterGroup(pid_t pgid) {
  for (auto& slot : g_live_groups) {
    pid_t expected = pgid;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

void KillLiveGroupsAndDie(int sig) {
  for (auto& slot : g_live_groups) {
    pid_t pgid = slot.load();
    if (pgid > 0) kill(-pgid, SIGKILL);
  }
  // The guests are dead (or dying) before their mounts are detached and their images removed.
  powercut::RunSignalCleanup();
  signal(sig, SIG_DFL);
  raise(sig);
}

int DecodeWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::string ErrnoText() { return std::strerror(errno); }

// In the child after fork(): new process group, die with the parent, exec.
[[noreturn]] void ExecChild(const std::vector<std::string>& argv, int stdin_fd, int out_fd,
                            bool die_with_parent, pid_t parent,
                            const std::string& working_dir = "") {
  setpgid(0, 0);
  if (!working_dir.empty() && chdir(working_dir.c_str()) != 0) {
    dprintf(out_fd, "cannot enter %s: %s\n", working_dir.c_str(), std::strerror(errno));
    _exit(127);
  }
  if (die_with_parent) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
  }
  dup2(stdin_fd, STDIN_FILENO);
  dup2(out_fd, STDOUT_FILENO);
  dup2(out_fd, STDERR_FILENO);
  // Default dispositions and an empty mask for the child, whatever powercut had.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  dprintf(out_fd, "cannot execute %s: %s\n", args[0], std::strerror(errno));
  _exit(127);
}

}  // namespace

absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         const std::string& working_dir) {
  if (argv.empty()) return absl::InvalidArgumentError("RunCommand: empty command");
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    return absl::InternalError(fmt::format("pipe for `{}`: {}", argv[0], ErrnoText()));
  }
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(out[0]);
    close(out[1]);
    close(devnull);
    return absl::InternalError(fmt::format("fork for `{}`: {}", argv[0], ErrnoText()));
  }
  if (pid == 0) ExecChild(argv, devnull, out[1], /*die_with_parent=*/true, parent, working_dir);
  close(out[1]);
  close(devnull);
  RegisterGroup(pid);
  CommandResult result;
  char buf[65536];
  for (;;) {
    ssize_t n = read(out[0], buf, sizeof buf);
    if (n > 0) {
      result.output.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(out[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  UnregisterGroup(pid);
  result.exit_code = DecodeWaitStatus(status);
  return result;
}

std::string LastLines(const std::string& text, int lines) {
  size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n') --pos;
  for (int i = 0; i < lines && pos > 0; ++i) {
    size_t nl = text.rfind('\n', pos - 1);
    if (nl == std::string::npos) return text;
    pos = nl;
  }
  return pos == 0 ? text : text.substr(pos + 1);
}

std::string LastLinesOnOneLine(const std::string& text, int lines) {
  std::string tail = LastLines(text, lines);
  while (!tail.empty() && tail.back() == '\n') tail.pop_back();
  std::string out;
  size_t start = 0;
  while (start <= tail.size()) {
    size_t end = tail.find('\n', start);
    if (end == std::string::npos) end = tail.size();
    if (end > start) out += (out.empty() ? "" : " | ") + tail.substr(start, end - start);
    start = end + 1;
  }
  return out;
}

bool SystemToolInstalled(const std::string& tool) {
  for (const char* dir : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) {
    if (::access((std::string(dir) + "/" + tool).c_str(), X_OK) == 0) return true;
  }
  return false;
}

absl::StatusOr<std::string> RunCommandOrError(const std::string& step,
                                              const std::vector<std::string>& argv,
                                              const std::string& working_dir) {
  auto result = RunCommand(argv, working_dir);
  if (!result.ok()) {
    return absl::Status(result.status().code(),
                        fmt::format("{}: {}", step, std::string(result.status().message())));
  }
  if (result->exit_code != 0) {
    return absl::FailedPreconditionError(
        fmt::format("{}: `{}` exited with status {}; its last output:\n{}", step,
                    fmt::join(argv, " "), result->exit_code, LastLines(result->output, 30)));
  }
  return std::move(result->output);
}

absl::StatusOr<ChildProcess> ChildProcess::Spawn(const std::vector<std::string>& argv,
                                                 const std::string& output_path) {
  if (argv.empty()) return absl::InvalidArgumentError("ChildProcess::Spawn: empty command");
  std::string out_path = output_path.empty() ? "/dev/null" : output_path;
  int out_fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out_fd < 0) {
    return absl::InternalError(
        fmt::format("starting {}: cannot open its log {}: {}", argv[0], out_path, ErrnoText()));
  }
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(out_fd);
    close(devnull);
    return absl::InternalError(fmt::format("fork for {}: {}", argv[0], ErrnoText()));
  }
  if (pid == 0) ExecChild(argv, devnull, out_fd, /*die_with_parent=*/true, parent);
  // Also set the group from the parent, so a kill right after Spawn cannot miss it.
  setpgid(pid, pid);
  close(out_fd);
  close(devnull);
  RegisterGroup(pid);
  return ChildProcess(pid);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_), exit_code_(other.exit_code_) {
  other.pid_ = -1;
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    Release();
    pid_ = other.pid_;
    exit_code_ = other.exit_code_;
    other.pid_ = -1;
  }
  return *this;
}

ChildProcess::~ChildProcess() { Release(); }

void ChildProcess::Release() {
  if (pid_ > 0 && !exit_code_.has_value()) Kill();
  pid_ = -1;
}

std::optional<int> ChildProcess::WaitFor(std::chrono::milliseconds timeout) {
  if (exit_code_.has_value() || pid_ <= 0) return exit_code_;
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
  if (pidfd >= 0) {
    pollfd p{pidfd, POLLIN, 0};
    int rc;
    do {
      rc = poll(&p, 1, static_cast<int>(timeout.count()));
    } while (rc < 0 && errno == EINTR);
    close(pidfd);
  }
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exit_code_ = DecodeWaitStatus(status);
    // The leader is gone; whatever else is left in its group goes too.
    kill(-pid_, SIGKILL);
    UnregisterGroup(pid_);
  }
  return exit_code_;
}

int ChildProcess::Kill() {
  if (exit_code_.has_value()) return *exit_code_;
  if (pid_ <= 0) return -1;
  kill(-pid_, SIGKILL);
  kill(pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  UnregisterGroup(pid_);
  exit_code_ = DecodeWaitStatus(status);
  return *exit_code_;
}

void RegisterScratchFolder(const std::string& path) { powercut::RegisterCleanupFolder(path); }

void UnregisterScratchFolder(const std::string& path) { powercut::UnregisterCleanupFolder(path); }

void InstallInterruptHandlers() {
  struct sigaction sa {};
  sa.sa_handler = KillLiveGroupsAndDie;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
}

}  // namespace powercut
