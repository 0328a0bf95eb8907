#include "harness/cluster/launcher.h"

#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/process.h"
#include "base/scratch_dir.h"
#include "fmt/format.h"
#include "harness/cluster/cluster.h"

namespace powercut::cluster {
namespace {

constexpr int kLogLines = 12;  // of each node's log, quoted when something went wrong

std::string ErrnoText() { return std::strerror(errno); }

void Say(const std::string& text) { std::fprintf(stderr, "powercut-cluster: %s\n", text.c_str()); }

// Node K's disk: the protocol's POWERCUT_DIR (node 1) or POWERCUT_DIR_K.
absl::StatusOr<std::vector<std::string>> NodeDirs(uint32_t nodes) {
  std::vector<std::string> dirs;
  for (uint32_t node = 1; node <= nodes; ++node) {
    const std::string name =
        node == 1 ? std::string("POWERCUT_DIR") : fmt::format("POWERCUT_DIR_{}", node);
    const char* dir = std::getenv(name.c_str());
    if (dir == nullptr || *dir == '\0') {
      return absl::InvalidArgumentError(fmt::format(
          "{} is not set: node {}'s disk. powercut-cluster runs under `powercut run --nodes N`, "
          "which mounts one disk per node (POWERCUT_DIR, POWERCUT_DIR_2 ...)",
          name, node));
    }
    dirs.emplace_back(dir);
  }
  return dirs;
}

absl::Status WriteProcFile(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  f.close();
  if (!f) return absl::InternalError(fmt::format("cannot write {}", path));
  return absl::OkStatus();
}

// A network namespace (its loopback only: every port free, nothing leaves) and a process
// namespace (its init's end kills everything in it) for the launcher's next child. As root
// directly; otherwise inside a user namespace of its own, where this user is root.
absl::Status EnterNamespaces() {
  if (::unshare(CLONE_NEWPID | CLONE_NEWNET) == 0) return absl::OkStatus();
  const std::string first = ErrnoText();
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  if (uid != 0 && ::unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET) == 0) {
    // setgroups must be denied before an unprivileged gid_map is written.
    if (absl::Status s = WriteProcFile("/proc/self/setgroups", "deny"); !s.ok()) return s;
    if (absl::Status s = WriteProcFile("/proc/self/uid_map", fmt::format("0 {} 1", uid)); !s.ok()) {
      return s;
    }
    return WriteProcFile("/proc/self/gid_map", fmt::format("0 {} 1", gid));
  }
  return absl::FailedPreconditionError(fmt::format(
      "cannot make the cluster's own network and process namespaces (unshare: {}): run as root "
      "(in the guest the workload is root; `powercut run --nodes` judges crash states as root), "
      "or allow unprivileged user namespaces",
      first));
}

// The namespace's loopback starts down: up, 127.0.0.0/8 is this namespace's alone.
absl::Status LoopbackUp() {
  const int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return absl::InternalError(fmt::format("socket: {}", ErrnoText()));
  ifreq request{};
  std::strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
  bool ok = ::ioctl(s, SIOCGIFFLAGS, &request) == 0;
  request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP);  // NOLINT(google-runtime-int)
  ok = ok && ::ioctl(s, SIOCSIFFLAGS, &request) == 0;
  const std::string why = ErrnoText();
  ::close(s);
  if (!ok) {
    return absl::InternalError(fmt::format("cannot bring the loopback of the cluster up: {}", why));
  }
  return absl::OkStatus();
}

// The protocol's variables, which a node never sees: its disk is POWERCUT_NODE_DIR, and the
// descriptors are the workload's (a node holding the ack pipe would keep it open after the
// workload's end).
bool IsProtocolVariable(const std::string& name) {
  return name.rfind("POWERCUT_DIR", 0) == 0 || name.rfind("POWERCUT_DEV", 0) == 0 ||
         name == "POWERCUT_ACK_FD" || name == "POWERCUT_ACK_SYNC_FD" || name == "POWERCUT_OUTPUT";
}

std::vector<std::string> ProtocolVariablesSet() {
  std::vector<std::string> names;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string name = entry.substr(0, entry.find('='));
    if (IsProtocolVariable(name)) names.push_back(name);
  }
  return names;
}

// One process of the cluster: a node (1..N) or the client (0).
struct Member {
  uint32_t node = 0;
  pid_t pid = -1;
  std::string log;            // the node's log file
  std::optional<int> status;  // its wait status once it ended
  // A client's own descriptors: its acks go to `ack_fd` (placed on 3; -1: the launcher's own),
  // and its stdout/stderr into files ("": the launcher's); `no_descriptors`: nothing past 2.
  int ack_fd = -1;
  std::string out_file;
  std::string err_file;
  bool no_descriptors = false;
  const NodeCgroup* cgroup = nullptr;  // the node's own cgroup (a node cut's node)
};

// "exit 3", "signal 9 (Killed)".
std::string EndText(int status) {
  if (WIFEXITED(status)) return fmt::format("status {}", WEXITSTATUS(status));
  return fmt::format("signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
}

// The shell's exit code for a wait status: the status, or 128 + the signal.
int ExitCodeOf(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The end of `text` in at most `bytes` bytes, cut at a line's start where one fits ("..." marks
// the cut): a node's share of the quoted logs.
std::string TailBytes(const std::string& text, size_t bytes) {
  if (text.size() <= bytes) return text;
  const size_t from = text.size() - bytes + 3;
  const size_t nl = text.find('\n', from);
  if (nl != std::string::npos && nl + 1 < text.size()) return "..." + text.substr(nl + 1);
  return "..." + text.substr(from);
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  return text.str();
}

// The forked child of a member: its own process group, stdin /dev/null; a node's output into its
// log and only its own variables; then /bin/sh -c `command`. Never returns.
[[noreturn]] void ExecMember(const Member& m, const std::string& command, const std::string& dir,
                             const std::vector<std::pair<std::string, std::string>>& env,
                             const std::vector<std::string>& unset) {
  ::setpgid(0, 0);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::signal(SIGPIPE, SIG_DFL);
  const int null = ::open("/dev/null", O_RDONLY);
  ::dup2(null, STDIN_FILENO);
  if (m.cgroup != nullptr) m.cgroup->EnterFromChild();
  if (m.node > 0) {
    const int log = ::open(m.log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(log, STDOUT_FILENO);
    ::dup2(log, STDERR_FILENO);
    ::close_range(3, ~0U, 0);  // the ack and sync descriptors, anything inherited
  } else {
    if (!m.out_file.empty()) {
      ::dup2(::open(m.out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), STDOUT_FILENO);
    }
    if (!m.err_file.empty()) {
      ::dup2(::open(m.err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), STDERR_FILENO);
    }
    if (m.ack_fd >= 0) {
      ::dup2(m.ack_fd, 3);  // the launcher reads the acks (a node cut counts them)
      ::close_range(4, ~0U, 0);
    }
    if (m.no_descriptors) ::close_range(3, ~0U, 0);
  }
  for (const std::string& name : unset) ::unsetenv(name.c_str());
  for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
  if (!dir.empty() && ::chdir(dir.c_str()) != 0) {
    std::fprintf(stderr, "powercut-cluster: cannot enter %s: %s\n", dir.c_str(),
                 std::strerror(errno));
    _exit(126);
  }
  ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
  _exit(127);
}

class Cluster {
 public:
  Cluster(const LauncherOptions& o, std::vector<std::string> dirs, std::string log_dir)
      : o_(o), dirs_(std::move(dirs)), log_dir_(std::move(log_dir)) {}

  // The namespace's init: starts the nodes and the client, waits, kills; returns the exit code.
  int Run() {
    sigset_t child;
    sigemptyset(&child);
    sigaddset(&child, SIGCHLD);
    ::sigprocmask(SIG_BLOCK, &child, nullptr);  // taken by sigtimedwait below
    if (absl::Status up = LoopbackUp(); !up.ok()) {
      Say(std::string(up.message()));
      return 2;
    }
    protocol_ = ProtocolVariablesSet();
    const std::vector<std::string>& protocol = protocol_;
    int client_acks = -1;  // a node cut: the client's ack pipe's write end
    if (o_.node_cut) {
      if (absl::Status s = PrepareNodeCut(&client_acks); !s.ok()) {
        Say(std::string(s.message()));
        return 2;
      }
    }
    for (uint32_t node = 1; node <= o_.nodes; ++node) {
      Member m{.node = node, .log = fmt::format("{}/node-{}.log", log_dir_, node)};
      if (o_.node_cut && o_.node_cut->node == node) m.cgroup = &cut_cgroup_;
      if (!Start(m, o_.node_command, dirs_[node - 1],
                 NodeEnvironment(node, o_.nodes, dirs_[node - 1]), protocol)) {
        return 2;
      }
      members_.push_back(std::move(m));
    }
    // The client: the protocol's descriptors and variables, but not the disks (a client never
    // loses power and reads the cluster only through its addresses), in the private folder so
    // that a relative path it writes lands nowhere near a recorded disk.
    std::vector<std::string> disks;
    for (const std::string& name : protocol) {
      if (name.rfind("POWERCUT_DIR", 0) == 0 || name.rfind("POWERCUT_DEV", 0) == 0) {
        disks.push_back(name);
      }
    }
    Member client{.node = 0, .ack_fd = client_acks};
    if (client_acks >= 0) disks.emplace_back("POWERCUT_ACK_SYNC_FD");  // the launcher's own
    if (!Start(client, o_.client_command, log_dir_, ClientEnvironment(o_.nodes), disks)) {
      KillAll();
      return 2;
    }
    if (client_acks >= 0) ::close(client_acks);
    members_.push_back(client);
    if (o_.node_cut) {
      WaitWithNodeCut(child);
      const int code = failed_node_ ? 2 : ExitCodeOf(*members_[o_.nodes].status);
      if (code == 0) CheckLiveCluster(child, disks);
      KillAll();
      (void)cut_cgroup_.KillAndWait([this] { Reap(); });
      cut_cgroup_ = NodeCgroup();  // its folder goes (the init ends with _exit)
      WriteNodeCutSection();
      return Verdict(false);
    }
    const bool timed_out = WaitForClient(child);
    KillAll();
    return Verdict(timed_out);
  }

 private:
  bool Start(Member& m, const std::string& command, const std::string& dir,
             const std::vector<std::pair<std::string, std::string>>& env,
             const std::vector<std::string>& unset) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      Say(fmt::format("cannot start {}: fork: {}", Name(m), ErrnoText()));
      return false;
    }
    if (pid == 0) ExecMember(m, command, dir, env, unset);
    ::setpgid(pid, pid);  // also here, so that a kill right after the fork finds the group
    m.pid = pid;
    return true;
  }

  static std::string Name(const Member& m) {
    return m.node == 0 ? std::string("the client")
                       : fmt::format("node {} ({})", m.node, NodeAddress(m.node));
  }

  Member& client() { return members_[o_.nodes]; }

  // Reaps children until the client ended (false) or, in check mode, its time is up (true);
  // in workload mode it also stops at the first node that ends.
  bool WaitForClient(const sigset_t& child) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(o_.timeout_seconds));
    while (true) {
      Reap();
      if (client().status) return false;
      if (o_.mode == LauncherMode::kWorkload && failed_node_) return false;
      timespec wait{};
      timespec* limit = nullptr;
      if (o_.mode == LauncherMode::kCheck) {
        const auto left = deadline - std::chrono::steady_clock::now();
        if (left <= std::chrono::steady_clock::duration::zero()) return true;
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
        wait.tv_sec = static_cast<time_t>(ns / 1000000000);
        wait.tv_nsec = static_cast<long>(ns % 1000000000);  // NOLINT(google-runtime-int)
        limit = &wait;
      }
      ::sigtimedwait(&child, nullptr, limit);
    }
  }

  // SIGKILL to every member's group still running (the client's first). What left its group
  // dies with the namespace when this init exits.
  void KillAll() {
    for (auto it = members_.rbegin(); it != members_.rend(); ++it) {
      if (!it->status && it->pid > 0) ::kill(-it->pid, SIGKILL);
    }
  }

  // Each node's last log lines, for stderr. `bytes` > 0: each node's share of that many bytes
  // (kNodeLogBytes: what the engine keeps of a checker's stderr holds every node's lines).
  std::string NodeLogs(size_t bytes = 0) const {
    std::string text;
    for (const Member& m : members_) {
      if (m.node == 0) continue;
      const std::string ended = m.status ? fmt::format(", exited with {}", EndText(*m.status)) : "";
      const std::string head = fmt::format("--- {}{}: last lines\n", Name(m), ended);
      std::string lines = LastLines(ReadFile(m.log), kLogLines);
      if (bytes > 0) {
        // At least a line's worth for each node, however many nodes share the bytes.
        const size_t share = std::max<size_t>(bytes / o_.nodes, head.size() + 80);
        lines = TailBytes(lines, share - head.size());
      }
      text += fmt::format("{}{}\n", head, lines);
    }
    return text;
  }

  // The nodes that ended on their own, for the one-line reason: "node 2 exited with status 1".
  std::string EndedNodes() const {
    std::string text;
    for (const Member& m : members_) {
      if (m.node == 0 || !m.status) continue;
      text += fmt::format("{}node {} exited with {}", text.empty() ? "" : ", ", m.node,
                          EndText(*m.status));
    }
    return text;
  }

  int Verdict(bool timed_out) {
    if (o_.mode == LauncherMode::kWorkload) {
      if (failed_node_ && !client().status) {
        const Member& m = members_[failed_node_ - 1];
        Say(fmt::format(
            "{} exited with {} while the workload ran: a node command must serve in the "
            "foreground until it is killed (check it by hand with POWERCUT_NODE={} "
            "POWERCUT_NODE_DIR=<folder> POWERCUT_NODE_ADDR={} POWERCUT_NODE_ADDRS={} "
            "POWERCUT_NODES={}); the workload was stopped. Its last lines:\n{}",
            Name(m), EndText(*m.status), m.node, NodeAddress(m.node), NodeAddresses(o_.nodes),
            o_.nodes, LastLines(ReadFile(m.log), kLogLines)));
        return 2;
      }
      const int code = ExitCodeOf(*client().status);
      if (code != 0) std::fprintf(stderr, "%s", NodeLogs().c_str());
      return code;
    }
    const std::string ended = EndedNodes();
    if (!timed_out) {
      const int code = ExitCodeOf(*client().status);
      if (code == 0) {
        if (!ended.empty()) Say(fmt::format("on this image {}; a quorum answered", ended));
        return 0;
      }
      if (code != 1) {
        std::fprintf(stderr, "%s", NodeLogs().c_str());
        return code;  // not the cluster's outcome: the checker's usage, start or crash
      }
    }
    const std::string why =
        timed_out ? fmt::format("the checker did not finish within {:g} s", o_.timeout_seconds)
                  : std::string("the checker exited with status 1");
    std::printf("%s %s (no quorum answered?)%s%s\n", kUnavailablePrefix, why.c_str(),
                ended.empty() ? "" : "; ", ended.c_str());
    std::fflush(stdout);
    std::fprintf(stderr, "%s", NodeLogs(kNodeLogBytes).c_str());
    return 1;
  }

  // Reaps every child that ended: a member's status, and the first node that ended by itself
  // (a node cut's node, while it is being cut, ends because it was killed).
  void Reap() {
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      for (Member& m : members_) {
        if (m.pid != pid) continue;
        m.status = status;
        const bool being_cut =
            o_.node_cut && m.node == o_.node_cut->node &&
            (step_ == CutStep::kAwaitOff || step_ == CutStep::kDown || step_ == CutStep::kAwaitOn);
        if (m.node > 0 && !being_cut && !failed_node_) failed_node_ = m.node;
      }
    }
  }

  // The node cut's pieces: the node's cgroup, the client's ack pipe (its read end kept here),
  // the agent's descriptors (the acks go on to it; its answers come back).
  absl::Status PrepareNodeCut(int* client_acks) {
    const NodeCutPlan& plan = *o_.node_cut;
    if (plan.node < 1 || plan.node > o_.nodes || plan.after_ack < 1) {
      return absl::InvalidArgumentError(
          fmt::format("--cut-node {} --cut-after-ack {}: a node of 1..{} after an ack (>= 1)",
                      plan.node, plan.after_ack, o_.nodes));
    }
    const char* ack = std::getenv("POWERCUT_ACK_FD");
    const char* answers = std::getenv("POWERCUT_ACK_SYNC_FD");
    if (ack == nullptr || answers == nullptr) {
      return absl::FailedPreconditionError(
          "a node cut needs POWERCUT_ACK_FD and POWERCUT_ACK_SYNC_FD from the guest agent: it "
          "runs under `powercut run --nodes N --node-cuts K`");
    }
    agent_acks_ = std::atoi(ack);
    agent_answers_ = std::atoi(answers);
    if (absl::Status s = NodeCgroup::Create(plan.node, &cut_cgroup_); !s.ok()) return s;
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
      return absl::InternalError(fmt::format("pipe: {}", ErrnoText()));
    }
    acks_in_ = pipe_fds[0];
    *client_acks = pipe_fds[1];
    outcome_.node = plan.node;
    return absl::OkStatus();
  }

  static void WriteLine(int fd, const std::string& line) {
    const std::string text = line + "\n";
    size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // the agent is gone: nobody reads the line
      done += static_cast<size_t>(n);
    }
  }

  double SinceStart() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

  // The client's acks, passed on to the agent line by line and counted; the cut is armed at its
  // ack. Returns what read(2) returned: 0 at the pipe's end, < 0 when nothing was there.
  ssize_t ForwardAcks() {
    char buf[4096];
    const ssize_t n = ::read(acks_in_, buf, sizeof buf);
    if (n < 0) return n;
    if (n == 0) {
      if (!acks_pending_.empty()) WriteLine(agent_acks_, acks_pending_);
      acks_pending_.clear();
      return 0;
    }
    acks_pending_.append(buf, static_cast<size_t>(n));
    size_t nl;
    while ((nl = acks_pending_.find('\n')) != std::string::npos) {
      const std::string line = acks_pending_.substr(0, nl);
      acks_pending_.erase(0, nl + 1);
      WriteLine(agent_acks_, line);
      if (line.rfind("ack ", 0) != 0) continue;
      ++acks_;
      if (step_ == CutStep::kWaiting && acks_ == o_.node_cut->after_ack) {
        step_ = CutStep::kArmed;
        cut_at_ =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(o_.node_cut->delay_ms);
      }
    }
    return n;
  }

  void CutFailed(const std::string& why) {
    outcome_.error = why;
    step_ = CutStep::kFailed;
    (void)cut_cgroup_.Freeze(false);  // whatever is left of the node runs on
  }

  // The instant: the node's tree frozen, then its disk's power off (the agent and the host).
  void PowerOff() {
    outcome_.acks_before = acks_;
    outcome_.at_seconds = SinceStart();
    cut_begin_ = std::chrono::steady_clock::now();
    if (absl::Status s = cut_cgroup_.Freeze(true); !s.ok()) {
      CutFailed(
          fmt::format("cannot freeze node {}: {}", o_.node_cut->node, std::string(s.message())));
      return;
    }
    WriteLine(agent_acks_, "power-off");
    step_ = CutStep::kAwaitOff;
  }

  // An answer of the agent: `ok <request>` or `error <request> <why>`.
  void HandleAnswer() {
    char buf[1024];
    const ssize_t n = ::read(agent_answers_, buf, sizeof buf);
    if (n <= 0) {
      if (n == 0) CutFailed("the guest agent closed its answers before the cut was done");
      return;
    }
    answers_.append(buf, static_cast<size_t>(n));
    size_t nl;
    while ((nl = answers_.find('\n')) != std::string::npos) {
      const std::string line = answers_.substr(0, nl);
      answers_.erase(0, nl + 1);
      if (line.rfind("ok ", 0) == 0 && step_ == CutStep::kAwaitOff) {
        outcome_.fired = true;
        Member& node = members_[o_.node_cut->node - 1];
        if (absl::Status s = cut_cgroup_.KillAndWait([this] { Reap(); }); !s.ok()) {
          CutFailed(fmt::format("node {} did not die: {}", node.node, std::string(s.message())));
          return;
        }
        step_ = CutStep::kDown;
        power_on_at_ = cut_begin_ + std::chrono::milliseconds(o_.node_cut->down_ms);
      } else if (line.rfind("ok ", 0) == 0 && step_ == CutStep::kAwaitOn) {
        Member& node = members_[o_.node_cut->node - 1];
        (void)cut_cgroup_.Freeze(false);
        std::ofstream(node.log, std::ios::app) << fmt::format(
            "=== powercut: node {} lost its power at {:.3f} s (after ack {}) and starts again on "
            "what its drive kept ===\n",
            node.node, outcome_.at_seconds, outcome_.acks_before);
        node.status.reset();
        if (!Start(node, o_.node_command, dirs_[node.node - 1],
                   NodeEnvironment(node.node, o_.nodes, dirs_[node.node - 1]), protocol_)) {
          CutFailed(fmt::format("cannot start node {} again", node.node));
          return;
        }
        outcome_.down_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - cut_begin_).count();
        step_ = CutStep::kDone;
      } else if (line.rfind("error ", 0) == 0) {
        CutFailed(line.substr(6));
      }
    }
  }

  // The workload with one node's power cut in it: returns once the client ended and the cut is
  // done (or never began, or failed), or a node ended by itself.
  void WaitWithNodeCut(const sigset_t& child) {
    const int signals = ::signalfd(-1, &child, SFD_CLOEXEC | SFD_NONBLOCK);
    start_ = std::chrono::steady_clock::now();
    bool acks_open = true;
    for (;;) {
      Reap();
      if (failed_node_) break;
      const bool client_done = client().status.has_value();
      const bool cutting =
          step_ == CutStep::kAwaitOff || step_ == CutStep::kDown || step_ == CutStep::kAwaitOn;
      if (client_done && acks_open) {
        // What it wrote before it ended, without waiting for a process it left holding the pipe.
        ::fcntl(acks_in_, F_SETFL, ::fcntl(acks_in_, F_GETFL) | O_NONBLOCK);
        while (ForwardAcks() > 0) {
        }
        if (!acks_pending_.empty()) WriteLine(agent_acks_, acks_pending_);
        acks_pending_.clear();
        acks_open = false;
      }
      if (client_done && !cutting && step_ != CutStep::kArmed) break;
      const auto now = std::chrono::steady_clock::now();
      // A workload that ended after the planned ack but before the delay ran out: the cut comes
      // now, still before the checker (the node's data is what it acked).
      if (step_ == CutStep::kArmed && (client_done || now >= cut_at_)) {
        PowerOff();
        continue;
      }
      if (step_ == CutStep::kDown && now >= power_on_at_) {
        WriteLine(agent_acks_, "power-on");
        step_ = CutStep::kAwaitOn;
        continue;
      }
      int wait_ms = -1;
      auto until = [&](std::chrono::steady_clock::time_point t) {
        return static_cast<int>(std::max<int64_t>(
            0, std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count() + 1));
      };
      if (step_ == CutStep::kArmed) wait_ms = until(cut_at_);
      if (step_ == CutStep::kDown) wait_ms = until(power_on_at_);
      const bool awaiting = step_ == CutStep::kAwaitOff || step_ == CutStep::kAwaitOn;
      pollfd p[3] = {{signals, POLLIN, 0},
                     {acks_open ? acks_in_ : -1, POLLIN, 0},
                     {awaiting ? agent_answers_ : -1, POLLIN, 0}};
      if (::poll(p, 3, wait_ms) < 0 && errno != EINTR) break;
      if (p[0].revents != 0) {
        signalfd_siginfo info;
        while (::read(signals, &info, sizeof info) > 0) {
        }
      }
      if (p[1].revents != 0) acks_open = ForwardAcks() != 0;
      if (p[2].revents != 0) HandleAnswer();
    }
    if (signals >= 0) ::close(signals);
    ::close(acks_in_);
  }

  // After the workload: the user's checker against the cluster as it runs (the cut node back),
  // with the launcher's --timeout.
  void CheckLiveCluster(const sigset_t& child, const std::vector<std::string>& unset) {
    Member checker{.node = 0,
                   .out_file = log_dir_ + "/checker.out",
                   .err_file = log_dir_ + "/checker.err",
                   .no_descriptors = true};
    if (!Start(checker, o_.node_cut->checker, log_dir_, ClientEnvironment(o_.nodes), unset)) {
      outcome_.error = "cannot start the checker";
      return;
    }
    members_.push_back(checker);
    Member& m = members_.back();
    outcome_.checker_ran = true;
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(o_.timeout_seconds));
    for (;;) {
      Reap();
      if (m.status) break;
      const auto left = deadline - std::chrono::steady_clock::now();
      if (left <= std::chrono::steady_clock::duration::zero()) {
        outcome_.checker_timed_out = true;
        ::kill(-m.pid, SIGKILL);
        break;
      }
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
      timespec wait{.tv_sec = static_cast<time_t>(ns / 1000000000),
                    .tv_nsec = static_cast<long>(ns % 1000000000)};  // NOLINT(google-runtime-int)
      ::sigtimedwait(&child, nullptr, &wait);
    }
    outcome_.checker_exit = m.status ? ExitCodeOf(*m.status) : -1;
    outcome_.checker_stdout = ReadFile(checker.out_file);
    outcome_.checker_stderr = TailBytes(ReadFile(checker.err_file), 2000);
  }

  void WriteNodeCutSection() {
    const char* output = std::getenv("POWERCUT_OUTPUT");
    if (output == nullptr || *output == '\0') {
      std::fprintf(stderr, "%s", FormatNodeCutSection(outcome_).c_str());
      return;
    }
    std::ofstream(output, std::ios::app) << FormatNodeCutSection(outcome_);
  }

  enum class CutStep { kWaiting, kArmed, kAwaitOff, kDown, kAwaitOn, kDone, kFailed };

  const LauncherOptions& o_;
  const std::vector<std::string> dirs_;
  const std::string log_dir_;
  std::vector<Member> members_;  // the nodes in order, then the client (then a live checker)
  uint32_t failed_node_ = 0;     // the first node that ended by itself
  std::vector<std::string> protocol_;
  // A node cut (LauncherOptions::node_cut).
  NodeCgroup cut_cgroup_;
  CutStep step_ = CutStep::kWaiting;
  int acks_in_ = -1;        // the client's acks
  int agent_acks_ = -1;     // on to the agent (and the requests)
  int agent_answers_ = -1;  // the agent's answers
  std::string acks_pending_;
  std::string answers_;
  uint64_t acks_ = 0;
  std::chrono::steady_clock::time_point start_, cut_at_, cut_begin_, power_on_at_;
  NodeCutOutcome outcome_;
};

// Appends each node's log to $POWERCUT_OUTPUT (the host keeps it beside the recording).
void NodeLogsToOutput(const std::string& log_dir, uint32_t nodes) {
  const char* output = std::getenv("POWERCUT_OUTPUT");
  if (output == nullptr || *output == '\0') return;
  std::ofstream out(output, std::ios::app);
  for (uint32_t node = 1; node <= nodes; ++node) {
    const std::string log = fmt::format("{}/node-{}.log", log_dir, node);
    out << fmt::format("=== node {} ({}): {}\n", node, NodeAddress(node), log) << ReadFile(log);
  }
}

}  // namespace

int RunLauncher(const LauncherOptions& o) {
  if (absl::Status s = ValidateNodeCount(o.nodes); !s.ok()) {
    Say(std::string(s.message()));
    return 2;
  }
  if (o.node_command.empty() || o.client_command.empty()) {
    Say("give the node command (--node CMD) and the client's after --");
    return 2;
  }
  if (o.mode == LauncherMode::kCheck &&
      !(o.timeout_seconds > 0 && std::isfinite(o.timeout_seconds))) {
    Say("--timeout S: the checker's limit in seconds, above 0");
    return 2;
  }
  absl::StatusOr<std::vector<std::string>> dirs = NodeDirs(o.nodes);
  if (!dirs.ok()) {
    Say(std::string(dirs.status().message()));
    return 2;
  }
  // The logs: not on a recorded disk (their writes would be recorded and cut with the rest),
  // in a private folder (a tmpfs in the guest).
  ScratchDir scratch;
  std::string log_dir = o.keep_logs;
  if (log_dir.empty()) {
    absl::StatusOr<ScratchDir> made = ScratchDir::Create("powercut-cluster");
    if (!made.ok()) {
      Say(std::string(made.status().message()));
      return 2;
    }
    scratch = *std::move(made);
    log_dir = scratch.path();
  } else {
    std::error_code ec;
    std::filesystem::create_directories(log_dir, ec);
    log_dir = std::filesystem::absolute(log_dir, ec).string();
  }
  // Out of the folder it was started in: that is disk 1 in the guest (the protocol's working
  // folder), which a node cut of node 1 must unmount.
  if (::chdir("/") != 0) {
    Say(fmt::format("cannot leave the working folder: {}", ErrnoText()));
    return 2;
  }
  if (absl::Status s = EnterNamespaces(); !s.ok()) {
    Say(std::string(s.message()));
    return 2;
  }
  // The namespace's init dies with this process; a pipe tells it whether this process died
  // before the death signal was armed.
  int alive[2];
  if (::pipe2(alive, O_CLOEXEC) != 0) {
    Say(fmt::format("pipe: {}", ErrnoText()));
    return 2;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t init = ::fork();
  if (init < 0) {
    Say(fmt::format("fork: {}", ErrnoText()));
    return 2;
  }
  if (init == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::close(alive[1]);
    pollfd parent{alive[0], POLLIN, 0};
    if (::poll(&parent, 1, 0) > 0) _exit(2);  // the parent is gone already
    Cluster cluster(o, *dirs, log_dir);
    const int code = cluster.Run();
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(code);  // not return: the scratch folder is the parent's to remove
  }
  ::close(alive[0]);
  int status = 0;
  while (::waitpid(init, &status, 0) < 0 && errno == EINTR) {
  }
  ::close(alive[1]);
  if (o.mode == LauncherMode::kWorkload) NodeLogsToOutput(log_dir, o.nodes);
  return ExitCodeOf(status);
}

}  // namespace powercut::cluster
