#include "base/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <functional>
#include <optional>
#include <string_view>
#include <thread>

#include "base/signal_cleanup.h"
#include "base/status_macros.h"
#include "base/tsan_mutex.h"
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

// A child's environment (ProcessOptions::unset_env, set_env) as "K=V" strings.
std::vector<std::string> ChildEnvironment(const ProcessOptions& o) {
  auto named = [](std::string_view kv, std::string_view name) {
    return kv.size() > name.size() && kv.starts_with(name) && kv[name.size()] == '=';
  };
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view kv(*e);
    bool dropped = false;
    for (const std::string& name : o.unset_env) dropped = dropped || named(kv, name);
    for (const auto& [name, value] : o.set_env) dropped = dropped || named(kv, name);
    if (!dropped) env.emplace_back(kv);
  }
  for (const auto& [name, value] : o.set_env) env.push_back(name + "=" + value);
  return env;
}

// argv and envp for exec, made before the child starts (a forked child must not allocate).
struct ExecStrings {
  ExecStrings(const std::vector<std::string>& args, const ProcessOptions& o)
      : arg_strings(args), env_strings(ChildEnvironment(o)) {
    for (std::string& a : arg_strings) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (std::string& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
  }
  ExecStrings(const ExecStrings&) = delete;
  ExecStrings& operator=(const ExecStrings&) = delete;

  std::vector<std::string> arg_strings;
  std::vector<std::string> env_strings;
  std::vector<char*> argv;  // null-terminated, into arg_strings
  std::vector<char*> envp;  // null-terminated, into env_strings
};

// Where a child's standard streams go.
struct ChildFds {
  int in;
  int out;
  int err;
};

// What the child reports through its exec pipe when it cannot run the program.
struct ExecFailure {
  int stage;  // 0: chdir, 1: exec
  int error;  // errno
};

// In the child after fork(): new process group, die with the parent, exec. Only async-signal-safe
// calls: everything was prepared before the fork.
[[noreturn]] void ExecChild(char* const* argv, char* const* envp, ChildFds fds,
                            const char* working_dir, pid_t parent, int report_fd) {
  setpgid(0, 0);
  if (working_dir != nullptr && chdir(working_dir) != 0) {
    ExecFailure f{0, errno};
    (void)!write(report_fd, &f, sizeof f);
    _exit(127);
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  dup2(fds.in, STDIN_FILENO);
  dup2(fds.out, STDOUT_FILENO);
  dup2(fds.err, STDERR_FILENO);
  // Default dispositions and an empty mask for the child, whatever powercut had.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
  execvpe(argv[0], argv, envp);
  ExecFailure f{1, errno};
  (void)!write(report_fd, &f, sizeof f);
  _exit(127);
}

// A started child, or why the program could not start (then pid is -1).
struct Started {
  pid_t pid = -1;
  std::string start_error;
};

absl::StatusOr<Started> ForkChild(const std::vector<std::string>& argv, const ProcessOptions& o,
                                  ChildFds fds) {
  ExecStrings exec(argv, o);
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    return absl::InternalError(fmt::format("pipe for `{}`: {}", argv[0], ErrnoText()));
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(report[0]);
    close(report[1]);
    return absl::InternalError(fmt::format("fork for `{}`: {}", argv[0], ErrnoText()));
  }
  if (pid == 0) {
    ExecChild(exec.argv.data(), exec.envp.data(), fds,
              o.working_dir.empty() ? nullptr : o.working_dir.c_str(), parent, report[1]);
  }
  // Also set the group from the parent, so a kill right after the start cannot miss it.
  setpgid(pid, pid);
  close(report[1]);
  // The report pipe closes on a successful exec (O_CLOEXEC); a failure writes to it first.
  ExecFailure failure{};
  ssize_t n;
  do {
    n = read(report[0], &failure, sizeof failure);
  } while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n != static_cast<ssize_t>(sizeof failure)) return Started{pid, ""};
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return Started{
      -1, failure.stage == 0
              ? fmt::format("cannot enter {}: {}", o.working_dir, std::strerror(failure.error))
              : fmt::format("cannot execute {}: {}", argv[0], std::strerror(failure.error))};
}

absl::StatusOr<Started> SpawnChild(const std::vector<std::string>& argv, const ProcessOptions& o,
                                   ChildFds fds) {
  ExecStrings exec(argv, o);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds.in, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds.out, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds.err, STDERR_FILENO);
  if (!o.working_dir.empty()) {
    posix_spawn_file_actions_addchdir_np(&actions, o.working_dir.c_str());
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGINT);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  pid_t pid = -1;
  // posix_spawnp searches PATH like sh would; PATH comes from our own environment.
  int rc = posix_spawnp(&pid, exec.argv[0], &actions, &attr, exec.argv.data(), exec.envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Started{-1, fmt::format("cannot execute {}: {}", argv[0], strerror(rc))};
  return Started{pid, ""};
}

// Reads the child's pipes into their sinks until both close, or until the deadline: then the
// child's group is killed and the pipes get one more second. Returns whether the deadline passed.
bool PumpOutput(pid_t pid, std::vector<std::pair<int, const OutputSink*>> pipes,
                double timeout_seconds) {
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> deadline;
  if (timeout_seconds > 0) {
    deadline =
        Clock::now() + std::chrono::microseconds(static_cast<int64_t>(timeout_seconds * 1e6));
  }
  std::vector<pollfd> fds;
  for (const auto& [fd, sink] : pipes) fds.push_back({fd, POLLIN, 0});
  size_t open_fds = fds.size();
  bool timed_out = false;
  char buf[65536];
  while (open_fds > 0) {
    int wait_ms = -1;
    if (deadline.has_value()) {
      auto now = Clock::now();
      if (now >= *deadline) {
        if (timed_out) break;
        timed_out = true;
        kill(-pid, SIGKILL);
        // A last second to drain (descendants that left the group may hold the pipes).
        deadline = now + std::chrono::seconds(1);
        continue;
      }
      wait_ms = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - now).count() + 1);
    }
    int n = poll(fds.data(), fds.size(), wait_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t r = read(fds[i].fd, buf, sizeof buf);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      (*pipes[i].second)(std::string_view(buf, static_cast<size_t>(r)));
    }
  }
  for (pollfd& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  return timed_out;
}

}  // namespace

absl::StatusOr<ProcessEnd> RunProcess(const std::vector<std::string>& argv,
                                      const ProcessOptions& options, const OutputSink& on_stdout,
                                      const OutputSink& on_stderr) {
  if (argv.empty()) return absl::InvalidArgumentError("RunProcess: empty command");
  int out[2] = {-1, -1};
  int err[2] = {-1, -1};
  auto close_all = [&]() {
    for (int fd : {out[0], out[1], err[0], err[1]}) {
      if (fd >= 0) close(fd);
    }
  };
  if (pipe2(out, O_CLOEXEC) != 0 || (on_stderr != nullptr && pipe2(err, O_CLOEXEC) != 0)) {
    close_all();
    return absl::InternalError(fmt::format("pipe for `{}`: {}", argv[0], ErrnoText()));
  }
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ChildFds fds{devnull, out[1], on_stderr != nullptr ? err[1] : out[1]};
  absl::StatusOr<Started> started =
      options.die_with_parent ? ForkChild(argv, options, fds) : SpawnChild(argv, options, fds);
  close(devnull);
  close(out[1]);
  out[1] = -1;
  if (err[1] >= 0) close(err[1]);
  err[1] = -1;
  if (!started.ok() || started->pid < 0) {
    close_all();
    if (!started.ok()) return started.status();
    ProcessEnd end;
    end.exit_code = 127;
    end.start_error = std::move(started->start_error);
    return end;
  }
  const pid_t pid = started->pid;
  RegisterGroup(pid);
  std::vector<std::pair<int, const OutputSink*>> pipes = {{out[0], &on_stdout}};
  if (on_stderr != nullptr) pipes.emplace_back(err[0], &on_stderr);
  ProcessEnd end;
  end.timed_out = PumpOutput(pid, std::move(pipes), options.timeout_seconds);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  kill(-pid, SIGKILL);  // whatever the child left behind in its group
  UnregisterGroup(pid);
  if (WIFEXITED(status)) {
    end.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    end.signal = WTERMSIG(status);
  }
  return end;
}

absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         const ProcessOptions& options) {
  CommandResult result;
  ASSIGN_OR_RETURN(ProcessEnd end, RunProcess(argv, options, [&](std::string_view chunk) {
                     result.output.append(chunk);
                   }));
  if (!end.start_error.empty()) result.output = end.start_error + "\n";
  result.exit_code = end.signal != 0 ? 128 + end.signal : end.exit_code;
  result.timed_out = end.timed_out;
  return result;
}

absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         const std::string& working_dir) {
  ProcessOptions options;
  options.working_dir = working_dir;
  return RunCommand(argv, options);
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

namespace {

// PR_SET_PDEATHSIG fires when the *thread* that forked the child ends, not the process: a qemu
// forked by a matrix worker thread was killed when that thread ran out of cells, while another
// cell was recording on the guest. Children that outlive their caller's call (ChildProcess) are
// therefore forked by this one thread, which lives as long as powercut.
class LifetimeForker {
 public:
  static LifetimeForker& Get() {
    static LifetimeForker* forker = new LifetimeForker;  // never destroyed: its thread never ends
    return *forker;
  }

  absl::StatusOr<Started> Fork(const std::function<absl::StatusOr<Started>()>& fork) {
    Request request{&fork, std::nullopt};
    MutexLock lock(&mu_);
    while (pending_ != nullptr) Wait(&changed_, &mu_);
    pending_ = &request;
    changed_.SignalAll();
    while (!request.result.has_value()) Wait(&changed_, &mu_);
    return *std::move(request.result);
  }

 private:
  struct Request {
    const std::function<absl::StatusOr<Started>()>* fork;
    std::optional<absl::StatusOr<Started>> result;
  };

  LifetimeForker() {
    std::thread([this] { Loop(); }).detach();
  }

  [[noreturn]] void Loop() {
    for (;;) {
      Request* request;
      {
        MutexLock lock(&mu_);
        while (pending_ == nullptr) Wait(&changed_, &mu_);
        request = pending_;
      }
      absl::StatusOr<Started> result = (*request->fork)();
      MutexLock lock(&mu_);
      request->result = std::move(result);
      pending_ = nullptr;
      changed_.SignalAll();
    }
  }

  absl::Mutex mu_;
  absl::CondVar changed_;
  Request* pending_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace

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
  absl::StatusOr<Started> started = LifetimeForker::Get().Fork([&] {
    return ForkChild(argv, ProcessOptions{}, {devnull, out_fd, out_fd});
  });
  close(out_fd);
  close(devnull);
  if (!started.ok()) return started.status();
  if (started->pid < 0) {
    return absl::FailedPreconditionError(
        fmt::format("starting {}: {}", argv[0], started->start_error));
  }
  const pid_t pid = started->pid;
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

void InstallInterruptHandlers() {
  struct sigaction sa {};
  sa.sa_handler = KillLiveGroupsAndDie;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
}

std::string SelfPath(std::string_view fallback) {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return std::string(fallback);
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace powercut
