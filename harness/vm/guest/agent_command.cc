// The guest agent's commands (agent_job.h): the workload or a checker in a child of its own (own
// process group and cgroup, the protocol's variables), its output read until it exits, and every
// `ack <id>` it writes relayed to the host (and marked in dm-log-writes), synchronously when
// asked.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/ack_id.h"
#include "base/write_fully.h"
#include "fmt/format.h"
#include "harness/check/checker.h"
#include "harness/vm/guest/agent_job.h"
#include "harness/vm/guest/guest_devices.h"
#include "harness/vm/guest/resident_checker.h"

namespace powercut::vm::guest {

int Agent::RunCommand(const std::string& command, const std::string& log_name, bool relay_acks,
                      std::string* stdout_text) {
  int ack_pipe[2];
  int out_pipe[2];
  if (pipe2(ack_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0) return -1;
  // Synchronous acks (GuestJob::sync_acks): the workload reads `ok <id>` here once the host
  // recorded the ack, so nothing it does afterwards lands before the ack's mark.
  // A node cut's requests are answered there too (agent_node_cut.cc).
  const bool sync_acks = relay_acks && (job_.sync_acks || job_.node_cut_disk >= 0);
  int sync_pipe[2] = {-1, -1};
  if (sync_acks && pipe2(sync_pipe, O_CLOEXEC) != 0) return -1;
  CommandLaunch launch = LaunchFor(command, log_name, relay_acks);
  launch.stdout_fd = stdout_text != nullptr ? out_pipe[1] : -1;
  launch.ack_fd = ack_pipe[1];
  launch.sync_fd = sync_pipe[0];
  JobCgroup cgroup(fmt::format("job-{}-{}", job_.job_id, ++commands_));
  ResidentChecker* resident = relay_acks ? nullptr : ResidentFor(launch);
  pid_t pid = -1;
  if (resident != nullptr) {
    absl::StatusOr<pid_t> began = BeginResident(resident, launch, cgroup);
    if (began.ok()) {
      pid = *began;
    } else {
      Event(fmt::format("resident-checker-dropped {}", std::string(began.status().message())));
      residents_->Drop();
      resident = nullptr;
    }
  }
  last_command_resident_ = resident != nullptr;
  if (resident == nullptr) pid = fork();
  if (pid == 0) ExecCommand(launch, cgroup);
  close(ack_pipe[1]);
  close(out_pipe[1]);
  if (sync_acks) close(sync_pipe[0]);
  sync_fd_ = sync_acks ? sync_pipe[1] : -1;
  if (pid < 0) {
    close(ack_pipe[0]);
    close(out_pipe[0]);
    if (sync_fd_ >= 0) close(sync_fd_);
    sync_fd_ = -1;
    return -1;
  }
  setpgid(pid, pid);
  workload_pgid_ = relay_acks ? pid : -1;
  ack_fd_ = ack_pipe[0];
  ack_pending_.clear();
  ReadUntilExit(pid, out_pipe[0], relay_acks, stdout_text);
  close(out_pipe[0]);
  close(ack_pipe[0]);
  if (sync_fd_ >= 0) close(sync_fd_);
  sync_fd_ = -1;
  ack_fd_ = -1;
  workload_pgid_ = -1;
  return resident != nullptr ? ReapResident(resident, pid, cgroup) : Reap(pid, cgroup);
}

ResidentChecker* Agent::ResidentFor(const CommandLaunch& launch) {
  if (!job_.resident_checker || residents_ == nullptr || launch.words.empty()) return nullptr;
  std::string why;
  ResidentChecker* server = residents_->For(launch.words, launch.env,
                                            fmt::format("{}/checker-server.log", kRunDir), &why);
  if (server == nullptr) Event(fmt::format("resident-checker-unavailable {}", why.substr(0, 200)));
  return server;
}

absl::StatusOr<pid_t> Agent::BeginResident(ResidentChecker* server, const CommandLaunch& launch,
                                           const JobCgroup& cgroup) {
  const int log_fd = open(launch.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  absl::StatusOr<pid_t> pid = absl::InternalError("cannot open the checker's log or /dev/null");
  if (log_fd >= 0 && devnull >= 0) {
    pid = server->Begin({.stdin_fd = devnull,
                         .stdout_fd = launch.stdout_fd >= 0 ? launch.stdout_fd : log_fd,
                         .stderr_fd = log_fd,
                         .ack_fd = launch.ack_fd,
                         .cgroup_procs = cgroup.valid() ? cgroup.path() + "/cgroup.procs" : "",
                         .working_dir = launch.dir});
  }
  if (log_fd >= 0) close(log_fd);
  if (devnull >= 0) close(devnull);
  return pid;
}

int Agent::ReapResident(ResidentChecker* server, pid_t pid, const JobCgroup& cgroup) {
  // The child has ended (ReadUntilExit): the server reaped it and says how.
  absl::StatusOr<int> status = server->End(30000);
  if (!status.ok()) {
    resident_failed_ = std::string(status.status().message());
    residents_->Drop();
    cgroup.KillAll(pid);
    return -1;
  }
  if (const uint64_t left = cgroup.Count(pid); left > 0) {
    result_.leftover_processes += left;
    Event(fmt::format("leftover-processes {}", left));
    if (!cgroup.KillAll(pid)) leftovers_survived_ = true;
  }
  return WIFEXITED(*status) ? WEXITSTATUS(*status) : 128 + WTERMSIG(*status);
}

CommandLaunch Agent::LaunchFor(const std::string& command, const std::string& log_name,
                               bool relay_acks) const {
  CommandLaunch launch;
  launch.command = command;
  launch.log_path = fmt::format("{}/{}", kRunDir, log_name);
  // A checker of plain words is exec'd directly, as on the host (harness/check/checker.cc):
  // one program start less per state. Built before the fork (the child only execs).
  if (!relay_acks && powercut::harness::PlainCommandWords(command, &launch.words)) {
    for (std::string& w : launch.words) launch.argv.push_back(w.data());
    launch.argv.push_back(nullptr);
  }
  if (Raw()) {
    launch.env.emplace_back("POWERCUT_DEV", device_);
  } else {
    launch.env.emplace_back("POWERCUT_DIR", mount_dir_);
    // A node cut unmounts the cut node's disk while the workload (the cluster launcher) runs: no
    // process of the workload may hold it as its working folder.
    launch.dir = job_.node_cut_disk >= 0 ? "/tmp" : mount_dir_;
  }
  // Disks 2..N of a set: POWERCUT_DIR_2 ... (POWERCUT_DEV_2 ... when raw; docs/protocol.md).
  for (size_t i = 0; i < extra_devices_.size(); ++i) {
    const bool raw = harness::FileSystemOf(job_.extra_disks[i].fs).raw();
    launch.env.emplace_back(fmt::format("{}_{}", raw ? "POWERCUT_DEV" : "POWERCUT_DIR", i + 2),
                            raw ? extra_devices_[i] : ExtraMountDir(i));
  }
  launch.env.emplace_back("POWERCUT_ACK_FD", "3");
  // A workload may leave one file of output for the host (docs/protocol.md): `powercut
  // fstest`'s expected states.
  if (relay_acks) {
    launch.env.emplace_back(
        "POWERCUT_OUTPUT",
        fmt::format("{}/{}", kRunDir, JobFileName("output", job_.job_id, "txt")));
  }
  launch.env.emplace_back("HOME", "/tmp");
  return launch;
}

void Agent::ExecCommand(const CommandLaunch& launch, const JobCgroup& cgroup) {
  setpgid(0, 0);  // so the whole workload can be paused while the dm table switches
  cgroup.EnterFromChild();
  int log_fd = open(launch.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  dup2(launch.stdout_fd >= 0 ? launch.stdout_fd : log_fd, STDOUT_FILENO);
  dup2(log_fd, STDERR_FILENO);
  // Above 4 first, so that placing one on 3 or 4 cannot close the other.
  const int ack_fd = fcntl(launch.ack_fd, F_DUPFD_CLOEXEC, 10);
  const int sync_fd = launch.sync_fd >= 0 ? fcntl(launch.sync_fd, F_DUPFD_CLOEXEC, 10) : -1;
  dup2(ack_fd, 3);  // dup2 clears FD_CLOEXEC on the new descriptor
  if (launch.sync_fd >= 0) {
    dup2(sync_fd, 4);
    setenv("POWERCUT_ACK_SYNC_FD", "4", 1);
  }
  int devnull = open("/dev/null", O_RDONLY);
  dup2(devnull, STDIN_FILENO);
  if (!launch.dir.empty() && chdir(launch.dir.c_str()) != 0) _exit(126);
  for (const auto& [name, value] : launch.env) setenv(name.c_str(), value.c_str(), 1);
  // Not found or not executable: sh runs it, so the outcome is sh's (127, 126), as on the host.
  if (!launch.argv.empty()) execvp(launch.argv[0], launch.argv.data());
  execl("/bin/sh", "sh", "-c", launch.command.c_str(), static_cast<char*>(nullptr));
  _exit(127);
}

int Agent::Reap(pid_t pid, const JobCgroup& cgroup) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (const uint64_t left = cgroup.Count(pid); left > 0) {
    result_.leftover_processes += left;
    Event(fmt::format("leftover-processes {}", left));
    if (!cgroup.KillAll(pid)) leftovers_survived_ = true;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void Agent::ReadUntilExit(pid_t pid, int out_fd, bool relay_acks, std::string* stdout_text) {
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  // A resident checker's child is its server's (resident_checker.h): reaped there already.
  const bool already_gone = pidfd < 0 && errno == ESRCH;
  bool out_open = stdout_text != nullptr;
  bool ack_open = true;
  auto read_into = [](int fd, std::string* into, bool* open_flag) {
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return false;
    if (n <= 0) {
      *open_flag = false;
      return false;
    }
    into->append(buf, static_cast<size_t>(n));
    return true;
  };
  bool exited = already_gone;
  // A checker past GuestJob::checker_timeout_s is killed with its process group (the cgroup
  // takes what left it); the pidfd then reports the exit.
  const double deadline =
      job_.checker_timeout_s > 0 && !relay_acks ? Uptime() + job_.checker_timeout_s : -1;
  const bool confirmations = sync_fd_ >= 0 && port_fd_ >= 0;
  while ((out_open || ack_open) && !exited) {
    pollfd p[4] = {{out_open ? out_fd : -1, POLLIN, 0},
                   {ack_open ? ack_fd_ : -1, POLLIN, 0},
                   {pidfd, POLLIN, 0},
                   {confirmations ? port_fd_ : -1, POLLIN, 0}};
    int wait_ms = HealTimeoutMs();
    if (deadline > 0 && !timed_out_) {
      const double left = deadline - Uptime();
      if (left <= 0) {
        timed_out_ = true;
        kill(-pid, SIGKILL);
        continue;
      }
      const int deadline_ms = static_cast<int>(left * 1000) + 1;
      wait_ms = wait_ms < 0 ? deadline_ms : std::min(wait_ms, deadline_ms);
    }
    if (poll(p, 4, wait_ms) < 0 && errno != EINTR) break;
    HealIfDue();
    if (p[3].revents != 0) ReadConfirmations();
    if (p[0].revents != 0) read_into(out_fd, stdout_text, &out_open);
    if (p[1].revents != 0 && read_into(ack_fd_, &ack_pending_, &ack_open) && relay_acks) {
      HandleCompleteLines();
    }
    exited = pidfd >= 0 && p[2].revents != 0;
  }
  if (pidfd >= 0) close(pidfd);
  // The process exited: take what it wrote before, without waiting for writers it left.
  for (int fd : {out_fd, ack_fd_}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  while (out_open && read_into(out_fd, stdout_text, &out_open)) {
  }
  while (ack_open && read_into(ack_fd_, &ack_pending_, &ack_open)) {
  }
  if (relay_acks) HandleCompleteLines();
}

void Agent::HandleCompleteLines() {
  size_t nl;
  while ((nl = ack_pending_.find('\n')) != std::string::npos) {
    std::string line = ack_pending_.substr(0, nl);
    ack_pending_.erase(0, nl + 1);
    HandleAckLine(line);
  }
}

void Agent::DrainAcks() {
  if (ack_fd_ < 0) return;
  int flags = fcntl(ack_fd_, F_GETFL);
  fcntl(ack_fd_, F_SETFL, flags | O_NONBLOCK);
  char buf[4096];
  ssize_t n;
  while ((n = read(ack_fd_, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) ack_pending_.append(buf, static_cast<size_t>(n));
  }
  fcntl(ack_fd_, F_SETFL, flags);
  HandleCompleteLines();
}

void Agent::HandleAckLine(const std::string& line) {
  if (job_.node_cut_disk >= 0 && (line == "power-off" || line == "power-on")) {
    HandleNodeCutLine(line);
    return;
  }
  if (line.rfind("ack ", 0) != 0 || !powercut::IsValidAckId(line.substr(4))) {
    ++result_.invalid_ack_lines;
    Send(fmt::format("event invalid-ack-line {}", line.substr(0, 80)));
    return;
  }
  std::string id = line.substr(4);
  if (log_writes_) DmMessage(kLogWritesName, "mark ack:" + id);
  Send("ack " + id);
  if (sync_fd_ >= 0 && job_.sync_acks && !ConfirmsOverPort()) {
    // A port the agent cannot read (a one-job guest): the ack is in the host's hands, which is
    // as close as it gets without an answer.
    WriteLine(sync_fd_, "ok " + id);
  }
  result_.acked.push_back(id);
  ++result_.acks;
  if (job_.flakey.has_value() && !flakey_switched_ &&
      static_cast<int64_t>(result_.acks) >= job_.flakey_after_acks) {
    SwitchToFlakey();
  }
}

bool Agent::ConfirmsOverPort() const {
  return port_fd_ >= 0 && (fcntl(port_fd_, F_GETFL) & O_ACCMODE) == O_RDWR;
}

void Agent::WriteLine(int fd, const std::string& line) {
  // A failed write means the workload is gone: nobody waits for the line.
  powercut::WriteFully(fd, line + "\n").IgnoreError();
}

void Agent::ReadConfirmations() {
  char buf[512];
  const ssize_t n = read(port_fd_, buf, sizeof buf);
  if (n <= 0) return;
  port_pending_.append(buf, static_cast<size_t>(n));
  size_t nl;
  while ((nl = port_pending_.find('\n')) != std::string::npos) {
    const std::string line = port_pending_.substr(0, nl);
    port_pending_.erase(0, nl + 1);
    const std::string prefix = prefix_ + "acked ";
    if (line.rfind(prefix, 0) == 0 && sync_fd_ >= 0) {
      WriteLine(sync_fd_, "ok " + line.substr(prefix.size()));
    }
  }
}
}  // namespace powercut::vm::guest
