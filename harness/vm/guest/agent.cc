// powercut-vm-agent: the guest agent. Runs inside the VM (chrooted into the host root by the
// guest init) and does one job from /run/powercut/job.json:
//   workload: [dm-log-writes | dm-flakey table] -> mount -> run the workload with POWERCUT_DIR /
//             POWERCUT_DEV and POWERCUT_ACK_FD -> relay each `ack <id>` over virtio-serial (and as
//             a dm-log-writes mark) -> [flakey: switch table at the chosen ack; remount; checker]
//             -> unmount -> remove dm devices;
//   check:    the boot path a machine runs after a power cut (harness/check/boot_recovery.h:
//             e2fsck -p for ext4, the mount's journal replay, the recovery tools where the mount
//             fails) -> run the checker -> parse have/corrupt.
// One job: agent_main.cc runs it from job.json (then the init powers the guest off) or, in a warm
// guest, one job-<id>.json after another.
#include "harness/vm/guest/agent.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "base/ack_id.h"
#include "base/process.h"
#include "base/write_fully.h"
#include "fmt/format.h"
#include "harness/check/boot_recovery.h"
#include "harness/check/checker.h"
#include "harness/fstest/judge.h"
#include "harness/vm/guest/guest_devices.h"
#include "harness/vm/guest/job_cgroup.h"
#include "harness/vm/guest_job.h"

namespace powercut::vm::guest {
namespace {

namespace fs = std::filesystem;

constexpr char kMountDir[] = "/tmp/powercut-fs";  // (+ "-<i>" for the i-th of several checks)
constexpr char kLogWritesName[] = "powercut-lw";
constexpr char kFlakeyName[] = "powercut-flakey";
// How long a disk the host just hot-plugged may take to appear (ACPI event + virtio probe).
constexpr std::chrono::seconds kDiskAppears{30};

// Seconds per step of a job, in order (GuestResult::phases).
class StepClock {
 public:
  explicit StepClock(std::vector<std::pair<std::string, double>>* phases) : phases_(phases) {}
  // The time since the previous mark is `name`'s.
  void Mark(const std::string& name) { phases_->emplace_back(name, Lap()); }
  // The time since the previous mark, of which `second_seconds` were `second`'s.
  void Split(const std::string& first, const std::string& second, double second_seconds) {
    const double lap = Lap();
    phases_->emplace_back(first, std::max(0.0, lap - second_seconds));
    phases_->emplace_back(second, second_seconds);
  }

 private:
  double Lap() {
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    return s;
  }
  std::vector<std::pair<std::string, double>>* phases_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

class Agent {
 public:
  Agent(GuestJob job, int port_fd)
      : job_(std::move(job)),
        port_fd_(port_fd),
        prefix_(job_.job_id == 0 ? "" : fmt::format("job {} ", job_.job_id)) {}

  GuestResult Run() {
    result_.ready_seconds = Uptime();
    if (job_.job_id == 0) Event("agent-start");
    bool ok = job_.mode != GuestJob::Mode::kCheck ? Workload()
              : job_.state_token.empty()          ? Check()
                                                  : CheckState();
    result_.ok = ok;
    Event(fmt::format("agent-done ok={}", ok ? 1 : 0));
    return result_;
  }

 private:
  bool Fail(const std::string& step, const std::string& error) {
    result_.failed_step = step;
    result_.error = error;
    std::fprintf(stderr, "powercut-agent: step %s failed: %s\n", step.c_str(), error.c_str());
    return false;
  }

  bool Cmd(const std::string& step, const std::vector<std::string>& argv) {
    auto out = powercut::RunCommandOrError(step, argv);
    if (!out.ok()) return Fail(step, std::string(out.status().message()));
    return true;
  }

  void Send(const std::string& line) {
    if (port_fd_ < 0) return;
    // A port the host closed has nobody to tell; the host sees the guest's end by itself.
    powercut::WriteFully(port_fd_, prefix_ + line + "\n").IgnoreError();
  }
  void Event(const std::string& text) { Send("event " + text); }

  static bool BlockSizes(const std::string& dev, uint32_t* logical, uint32_t* physical) {
    const int fd = ::open(dev.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    int l = 0;
    unsigned int p = 0;
    const bool ok = ::ioctl(fd, BLKSSZGET, &l) == 0 && ::ioctl(fd, BLKPBSZGET, &p) == 0;
    const int saved = errno;
    ::close(fd);
    errno = saved;
    *logical = static_cast<uint32_t>(l);
    *physical = p;
    return ok;
  }

  bool DeviceSectors(const std::string& dev, uint64_t* sectors) {
    std::string s = ReadLine(fmt::format("/sys/block/{}/size", fs::path(dev).filename().string()));
    if (s.empty()) return false;
    *sectors = std::stoull(s);
    return true;
  }

  bool Setup() {
    disk_ = FindDisk(job_.disk_serial, kDiskAppears);
    if (disk_.empty()) {
      return Fail("find-disk", fmt::format("no virtio disk with serial {}", job_.disk_serial));
    }
    const std::string queue =
        fmt::format("/sys/block/{}/queue", fs::path(disk_).filename().string());
    result_.device_cache = ReadLine(queue + "/write_cache");
    // The sector sizes from the device itself (FindDisk returns it only once it opens and its
    // queue is registered: a read just before that gave physical 0 and failed a recording).
    if (!BlockSizes(disk_, &result_.logical_block_size, &result_.physical_block_size)) {
      return Fail("find-disk", fmt::format("cannot read the sector sizes of {}: {}", disk_,
                                           std::strerror(errno)));
    }
    uint64_t sectors = 0;
    if (!DeviceSectors(disk_, &sectors)) return Fail("find-disk", "cannot read the disk size");
    sectors_ = sectors;
    device_ = disk_;
    if (job_.head_hash_bytes > 0) {
      HeadHashes h = HashDiskHead(disk_, job_.head_hash_bytes);
      result_.head_hash_direct = h.direct;
      result_.head_hash_cached = h.cached;
    }
    for (const GuestExtraDisk& d : job_.extra_disks) {  // disks 2..N of a set
      std::string dev = FindDisk(d.disk_serial, kDiskAppears);
      if (dev.empty()) {
        return Fail("find-disk", fmt::format("no virtio disk with serial {}", d.disk_serial));
      }
      extra_devices_.push_back(dev);
    }
    if (!job_.log_writes_serial.empty()) {
      std::string log = FindDisk(job_.log_writes_serial, kDiskAppears);
      if (log.empty()) {
        return Fail("dm-log-writes",
                    fmt::format("no virtio disk with serial {}", job_.log_writes_serial));
      }
      if (!Cmd("dm-log-writes", {"dmsetup", "--noudevsync", "create", kLogWritesName, "--table",
                                 fmt::format("0 {} log-writes {} {}", sectors, disk_, log)})) {
        return false;
      }
      device_ = FindDmDevice(kLogWritesName);
      if (device_.empty()) return Fail("dm-log-writes", "the dm device did not appear");
      log_writes_ = true;
    }
    if (!job_.flakey.empty()) {
      // The failing disk: disk 1 (over dm-log-writes when both run) or disk K of a set, whose
      // device the workload then reaches through the flakey target; the others keep working.
      std::string* failing = &device_;
      flakey_sectors_ = sectors;
      if (job_.flakey_disk > 0) {
        if (job_.flakey_disk > extra_devices_.size()) {
          return Fail("dm-flakey", fmt::format("flakey disk {} of a set of {}",
                                               job_.flakey_disk + 1, extra_devices_.size() + 1));
        }
        failing = &extra_devices_[job_.flakey_disk - 1];
        if (!DeviceSectors(*failing, &flakey_sectors_)) {
          return Fail("dm-flakey", fmt::format("cannot read the size of {}", *failing));
        }
      }
      flakey_base_ = *failing;
      if (!Cmd("dm-flakey",
               {"dmsetup", "--noudevsync", "create", kFlakeyName, "--table", PassThroughTable()})) {
        return false;
      }
      *failing = FindDmDevice(kFlakeyName);
      if (failing->empty()) return Fail("dm-flakey", "the dm device did not appear");
    }
    return true;
  }

  std::string PassThroughTable() const {
    return fmt::format("0 {} linear {} 0", flakey_sectors_, flakey_base_);
  }

  bool SwitchFlakey(const std::string& table) {
    return Cmd("dm-flakey", {"dmsetup", "--noudevsync", "suspend", "--nolockfs", kFlakeyName}) &&
           Cmd("dm-flakey", {"dmsetup", "--noudevsync", "load", kFlakeyName, "--table", table}) &&
           Cmd("dm-flakey", {"dmsetup", "--noudevsync", "resume", kFlakeyName});
  }

  std::string FlakeyTable() const {
    // Always "down" (up 0 s, down 3600 s): every write is dropped or fails from now on.
    return fmt::format("0 {} flakey {} 0 0 3600 1 {}", flakey_sectors_, flakey_base_, job_.flakey);
  }

  bool Raw() const { return harness::FileSystemOf(job_.fs).raw(); }

  // Disk K (K >= 2) of a set: its mount point.
  std::string ExtraMountDir(size_t i) const { return fmt::format("{}-disk{}", mount_dir_, i + 2); }

  bool MountExtras() {
    for (size_t i = 0; i < extra_devices_.size(); ++i) {
      const harness::FsKind fs = job_.extra_disks[i].fs;
      if (harness::FileSystemOf(fs).raw()) continue;
      const std::string dir = ExtraMountDir(i);
      fs::create_directories(dir);
      std::vector<std::string> argv = {"mount", "-t", harness::FsName(fs)};
      if (!job_.mount_options.empty()) {
        argv.emplace_back("-o");
        argv.push_back(job_.mount_options);
      } else if (::mount(extra_devices_[i].c_str(), dir.c_str(), harness::FsName(fs), 0, nullptr) ==
                 0) {
        continue;
      } else {
        return Fail("mount", fmt::format("mount -t {} {} {}: {}", harness::FsName(fs),
                                         extra_devices_[i], dir, std::strerror(errno)));
      }
      argv.push_back(extra_devices_[i]);
      argv.push_back(dir);
      if (!Cmd("mount", argv)) return false;
    }
    return true;
  }

  bool UnmountExtras() {
    for (size_t i = extra_devices_.size(); i-- > 0;) {
      if (harness::FileSystemOf(job_.extra_disks[i].fs).raw()) continue;
      const std::string dir = ExtraMountDir(i);
      if (::umount2(dir.c_str(), 0) != 0) {
        return Fail("unmount", fmt::format("umount {}: {}", dir, std::strerror(errno)));
      }
    }
    return true;
  }

  bool Mount() {
    if (!MountExtras()) return false;
    if (Raw()) return true;
    fs::create_directories(mount_dir_);
    if (job_.mount_options.empty()) {
      // The system call, not mount(8): under TCG an exec of mount (libmount, libblkid, over 9p)
      // costs a few hundred ms of every recording. With options, mount(8) parses them into
      // flags and data.
      if (::mount(device_.c_str(), mount_dir_.c_str(), harness::FsName(job_.fs), 0, nullptr) != 0) {
        return Fail("mount", fmt::format("mount -t {} {} {}: {}", harness::FsName(job_.fs), device_,
                                         mount_dir_, std::strerror(errno)));
      }
      return true;
    }
    std::vector<std::string> argv = {"mount", "-t", harness::FsName(job_.fs)};
    if (!job_.mount_options.empty()) {
      argv.emplace_back("-o");
      argv.push_back(job_.mount_options);
    }
    argv.push_back(device_);
    argv.push_back(mount_dir_);
    return Cmd("mount", argv);
  }

  bool Unmount() {
    if (!UnmountExtras()) return false;
    if (Raw()) return true;
    if (::umount2(mount_dir_.c_str(), 0) != 0) {  // umount(8) would add an exec, as for mount
      return Fail("unmount", fmt::format("umount {}: {}", mount_dir_, std::strerror(errno)));
    }
    return true;
  }

  // Runs `command` with the protocol's variables; relays acks while it runs. The command ends when
  // its own process exits: what it left behind (holding the ack pipe or a file on the disk) is
  // counted in leftover_processes and killed, so the disk can be unmounted.
  int RunCommand(const std::string& command, const std::string& log_name, bool relay_acks,
                 std::string* stdout_text) {
    int ack_pipe[2];
    int out_pipe[2];
    if (pipe2(ack_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0) return -1;
    // Synchronous acks (GuestJob::sync_acks): the workload reads `ok <id>` here once the host
    // recorded the ack, so nothing it does afterwards lands before the ack's mark.
    const bool sync_acks = relay_acks && job_.sync_acks;
    int sync_pipe[2] = {-1, -1};
    if (sync_acks && pipe2(sync_pipe, O_CLOEXEC) != 0) return -1;
    std::string log_path = fmt::format("{}/{}", kRunDir, log_name);
    const std::string output_path =
        fmt::format("{}/{}", kRunDir, JobFileName("output", job_.job_id, "txt"));
    // A checker of plain words is exec'd directly, as on the host (harness/check/checker.cc):
    // one program start less per state. Built before the fork (the child only execs).
    std::vector<std::string> words;
    std::vector<char*> direct;
    if (!relay_acks && powercut::harness::PlainCommandWords(command, &words)) {
      for (std::string& w : words) direct.push_back(w.data());
      direct.push_back(nullptr);
    }
    // Disks 2..N of a set: POWERCUT_DIR_2 ... (POWERCUT_DEV_2 ... when raw; docs/protocol.md).
    std::vector<std::pair<std::string, std::string>> extra_env;
    for (size_t i = 0; i < extra_devices_.size(); ++i) {
      const bool raw = harness::FileSystemOf(job_.extra_disks[i].fs).raw();
      extra_env.emplace_back(fmt::format("{}_{}", raw ? "POWERCUT_DEV" : "POWERCUT_DIR", i + 2),
                             raw ? extra_devices_[i] : ExtraMountDir(i));
    }
    JobCgroup cgroup(fmt::format("job-{}-{}", job_.job_id, ++commands_));
    pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);  // so the whole workload can be paused while the dm table switches
      cgroup.EnterFromChild();
      int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      dup2(stdout_text != nullptr ? out_pipe[1] : log_fd, STDOUT_FILENO);
      dup2(log_fd, STDERR_FILENO);
      // Above 4 first, so that placing one on 3 or 4 cannot close the other.
      const int ack_fd = fcntl(ack_pipe[1], F_DUPFD_CLOEXEC, 10);
      const int sync_fd = sync_acks ? fcntl(sync_pipe[0], F_DUPFD_CLOEXEC, 10) : -1;
      dup2(ack_fd, 3);  // dup2 clears FD_CLOEXEC on the new descriptor
      if (sync_acks) {
        dup2(sync_fd, 4);
        setenv("POWERCUT_ACK_SYNC_FD", "4", 1);
      }
      int devnull = open("/dev/null", O_RDONLY);
      dup2(devnull, STDIN_FILENO);
      if (Raw()) {
        setenv("POWERCUT_DEV", device_.c_str(), 1);
      } else {
        setenv("POWERCUT_DIR", mount_dir_.c_str(), 1);
        if (chdir(mount_dir_.c_str()) != 0) _exit(126);
      }
      for (const auto& [name, value] : extra_env) setenv(name.c_str(), value.c_str(), 1);
      setenv("POWERCUT_ACK_FD", "3", 1);
      // A workload may leave one file of output for the host (docs/protocol.md): `powercut
      // fstest`'s expected states.
      if (relay_acks) setenv("POWERCUT_OUTPUT", output_path.c_str(), 1);
      setenv("HOME", "/tmp", 1);
      // Not found or not executable: sh runs it, so the outcome is sh's (127, 126), as on the
      // host.
      if (!direct.empty()) execvp(direct[0], direct.data());
      execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
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

  // Reads the command's stdout (checkers) and ack pipe until its own process exited, then what is
  // still buffered in both. (A process it left behind may hold the pipes open for ever.)
  void ReadUntilExit(pid_t pid, int out_fd, bool relay_acks, std::string* stdout_text) {
    const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
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
    bool exited = false;
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

  void HandleCompleteLines() {
    size_t nl;
    while ((nl = ack_pending_.find('\n')) != std::string::npos) {
      std::string line = ack_pending_.substr(0, nl);
      ack_pending_.erase(0, nl + 1);
      HandleAckLine(line);
    }
  }

  // Reads whatever the (stopped) workload already wrote to the ack pipe.
  void DrainAcks() {
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

  void HandleAckLine(const std::string& line) {
    if (line.rfind("ack ", 0) != 0 || !powercut::IsValidAckId(line.substr(4))) {
      ++result_.invalid_ack_lines;
      Send(fmt::format("event invalid-ack-line {}", line.substr(0, 80)));
      return;
    }
    std::string id = line.substr(4);
    if (log_writes_) DmMessage(kLogWritesName, "mark ack:" + id);
    Send("ack " + id);
    if (sync_fd_ >= 0 && !ConfirmsOverPort()) {
      // A port the agent cannot read (a one-job guest): the ack is in the host's hands, which is
      // as close as it gets without an answer.
      WriteLine(sync_fd_, "ok " + id);
    }
    result_.acked.push_back(id);
    ++result_.acks;
    if (!job_.flakey.empty() && !flakey_switched_ &&
        static_cast<int64_t>(result_.acks) >= job_.flakey_after_acks) {
      SwitchToFlakey();
    }
  }

  // The workload is paused (SIGSTOP of its process group) while the table switches, so an ack
  // is either written before the switch (and drained now: it must survive) or after it; only a
  // commit whose barrier was already inside the kernel can still complete after the switch.
  void SwitchToFlakey() {
    flakey_switched_ = true;
    const pid_t pgid = workload_pgid_;
    if (pgid > 0) {
      StopProcessGroup(pgid);
      DrainAcks();
    }
    result_.acks_before_cut = static_cast<int64_t>(result_.acks);
    if (SwitchFlakey(FlakeyTable())) Event(fmt::format("flakey {}", job_.flakey));
    if (job_.flakey_heal_ms > 0) {
      heal_at_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(job_.flakey_heal_ms);
    }
    if (pgid > 0) kill(-pgid, SIGCONT);
  }

  static void ParseChecker(const std::string& text, GuestResult* result) {
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind("have ", 0) == 0) result->have.push_back(line.substr(5));
      if (line.rfind("corrupt ", 0) == 0) result->corrupt.push_back(line.substr(8));
    }
  }

  // Whether the host's `job <N> acked <id>` answers can be read (a warm guest's port is two-way).
  bool ConfirmsOverPort() const {
    return port_fd_ >= 0 && (fcntl(port_fd_, F_GETFL) & O_ACCMODE) == O_RDWR;
  }

  static void WriteLine(int fd, const std::string& line) {
    // A failed write means the workload is gone: nobody waits for the line.
    powercut::WriteFully(fd, line + "\n").IgnoreError();
  }

  // The host's answers to synchronous acks: each `job <N> acked <id>` of this job lets the
  // workload run on (`ok <id>` on its POWERCUT_ACK_SYNC_FD).
  void ReadConfirmations() {
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

  bool Workload() {
    if (!Setup() || !Mount()) return false;
    if (!job_.flakey.empty() && job_.flakey_after_acks <= 0) SwitchToFlakey();
    Event("workload-start");
    result_.exit_code = RunCommand(job_.command, JobFileName("workload", job_.job_id, "log"),
                                   /*relay_acks=*/true, nullptr);
    Event(fmt::format("workload-exit {}", result_.exit_code));
    if (leftovers_survived_) return LeftoversSurvived();
    if (!job_.flakey.empty()) {
      if (!flakey_switched_) SwitchToFlakey();
      heal_at_.reset();  // the unmount below runs on the failing disk, as without a window
      // As xfstests: unmount with the writes going nowhere, restore the pass-through table,
      // remount (journal replay) and check.
      if (!Unmount() || !SwitchFlakey(PassThroughTable()) || !Mount()) return false;
      std::string out;
      result_.checker_exit_code =
          RunCommand(job_.checker, JobFileName("checker", job_.job_id, "log"), false, &out);
      ParseChecker(out, &result_);
      if (leftovers_survived_) return LeftoversSurvived();
    }
    sync();
    if (!Unmount()) return false;
    if (!job_.flakey.empty() &&
        !Cmd("dm-flakey", {"dmsetup", "--noudevsync", "remove", kFlakeyName})) {
      return false;
    }
    // Removing the log-writes target writes its final superblock.
    if (log_writes_ &&
        !Cmd("dm-log-writes", {"dmsetup", "--noudevsync", "remove", kLogWritesName})) {
      return false;
    }
    // The host detaches the disk next: nothing in the guest may still hold it.
    std::string held;
    if (!DiskReleased(disk_, &held)) return Fail("release", held);
    return true;
  }

  // Milliseconds until the flakey window ends (-1: no heal pending), for poll.
  int HealTimeoutMs() const {
    if (!heal_at_) return -1;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        *heal_at_ - std::chrono::steady_clock::now());
    return static_cast<int>(std::max<int64_t>(0, left.count()));
  }

  // The window is over: the disk heals (pass-through again) while the workload runs on.
  void HealIfDue() {
    if (!heal_at_ || std::chrono::steady_clock::now() < *heal_at_) return;
    heal_at_.reset();
    if (SwitchFlakey(PassThroughTable())) {
      result_.flakey_healed = true;
      Event("flakey-healed");
    }
  }

  bool LeftoversSurvived() {
    return Fail("cleanup", fmt::format("the workload left {} process(es) behind that survived "
                                       "SIGKILL for 10 s (stuck in the kernel?)",
                                       result_.leftover_processes));
  }

  bool Check() {
    if (job_.checks.empty()) return CheckOne("checker.log");
    // Several images in one boot: each on its own disk and mount point, one after another; a
    // failure is that image's, the others are still checked.
    const GuestResult agent = result_;
    std::vector<GuestResult> results;
    for (size_t i = 0; i < job_.checks.size(); ++i) {
      const powercut::vm::GuestCheck& c = job_.checks[i];
      job_.disk_serial = c.disk_serial;
      job_.fs = c.fs;
      job_.command = c.command;
      job_.mount_options = c.mount_options;
      mount_dir_ = fmt::format("{}-{}", kMountDir, i);
      result_ = GuestResult{};
      result_.ok = CheckOne(fmt::format("checker-{}.log", i));
      results.push_back(std::move(result_));
    }
    result_ = agent;
    result_.checks = std::move(results);
    return true;
  }

  // The boot path, then the mount it ends with; an unrecoverable file system fails the "mount"
  // step with every step tried.
  bool RecoverAndMount() {
    if (Raw()) return true;
    auto mount = [this]() -> absl::Status {
      if (!Mount()) return absl::UnavailableError(result_.error);
      result_.failed_step.clear();
      result_.error.clear();
      return absl::OkStatus();
    };
    auto rec = powercut::harness::RecoverFileSystem(powercut::harness::FileSystemOf(job_.fs),
                                                    device_, mount, 300);
    if (!rec.ok()) return Fail("boot-recovery", std::string(rec.status().message()));
    std::fprintf(stderr, "powercut-agent: boot path: %s\n", rec->Describe().c_str());
    if (rec->unrecoverable) return Fail("mount", "file system unrecoverable: " + rec->Describe());
    return true;
  }

  static std::string KernelRelease() {
    utsname u{};
    return uname(&u) == 0 ? std::string(u.release) : std::string();
  }

  // One crash state on the disk that stays attached between states (GuestJob::state_token,
  // harness/vm/guest_judge.h): prove the cache holds nothing of the previous state, run the boot
  // path and the checker, and leave nothing holding the disk. ok = false only when this guest
  // cannot be trusted with the next state; the file system's outcome is in fs_*.
  bool CheckState() {
    result_.kernel = KernelRelease();
    StepClock clock(&result_.phases);
    if (!Setup()) return false;
    std::string error;
    if (!FreshStateBlock(disk_, job_.state_token, &error)) return Fail("state-block", error);
    clock.Mark("state-block");
    if (!Raw()) {
      double mount_seconds = 0;  // of the boot path's time, the mount attempts (journal replay)
      auto mount = [this, &mount_seconds]() -> absl::Status {
        const auto start = std::chrono::steady_clock::now();
        const bool ok = Mount();
        mount_seconds +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (!ok) return absl::UnavailableError(result_.error);
        return absl::OkStatus();
      };
      auto rec = powercut::harness::RecoverFileSystem(powercut::harness::FileSystemOf(job_.fs),
                                                      device_, mount, 300, job_.boot_checks);
      if (!rec.ok()) return Fail("boot-recovery", std::string(rec.status().message()));
      clock.Split("fsck", "mount", mount_seconds);
      result_.failed_step.clear();
      result_.error.clear();
      for (const auto& s : rec->steps) {
        result_.fs_steps.push_back(
            {.name = s.name, .exit_code = s.exit_code, .changed = s.changed, .detail = s.detail});
      }
      result_.fs_repaired = rec->repaired;
      result_.fs_unrecoverable = rec->unrecoverable;
      if (rec->unrecoverable) return Released(&clock);
    }
    if (!job_.fstest_promises.empty()) {
      JudgeFsTest();
      clock.Mark("judge");
      if (!Unmount()) return false;
      clock.Mark("umount");
      return Released(&clock);
    }
    const std::string log = fmt::format("{}/checker-state.log", kRunDir);
    ::truncate(log.c_str(), 0);  // stderr of this state only (the file is reused)
    timed_out_ = false;
    result_.checker_exit_code =
        RunCommand(job_.command, "checker-state.log", false, &result_.checker_stdout);
    result_.exit_code = result_.checker_exit_code;
    result_.checker_timed_out = timed_out_;
    if (result_.checker_exit_code > 128 && !timed_out_) {
      result_.checker_signal = result_.checker_exit_code - 128;
    }
    std::ifstream in(log, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    const std::string all = text.str();
    result_.checker_stderr_tail = all.size() > 2048 ? all.substr(all.size() - 2048) : all;
    clock.Mark("checker");
    if (leftovers_survived_) return LeftoversSurvived();
    if (!Unmount()) return false;
    clock.Mark("umount");
    return Released(&clock);
  }

  // `powercut fstest`'s judge, in this process: the promises against the mounted tree, then the
  // removal of everything (docs/fstest.md, "Judging in the guest"). Its text is the checker's.
  void JudgeFsTest() {
    const nlohmann::json j = nlohmann::json::parse(job_.fstest_promises, nullptr, false);
    absl::StatusOr<std::vector<powercut::fstest::PointPromises>> points =
        j.is_discarded() ? absl::InvalidArgumentError("the promises are not JSON")
                         : powercut::fstest::PromisesFromJson(j);
    absl::StatusOr<std::string> out =
        points.ok() ? powercut::fstest::JudgeMountedState(mount_dir_, *points) : points.status();
    if (out.ok()) {
      result_.checker_stdout = *out;
      result_.checker_exit_code = 0;
    } else {
      result_.checker_stderr_tail = std::string(out.status().message());
      result_.checker_exit_code = 1;
    }
    result_.exit_code = result_.checker_exit_code;
  }

  bool Released(StepClock* clock) {
    std::string held;
    if (!DiskReleased(disk_, &held)) return Fail("release", held);
    clock->Mark("release");
    return true;
  }

  bool CheckOne(const std::string& log_name) {
    if (!Setup() || !RecoverAndMount()) return false;
    std::string out;
    result_.checker_exit_code = RunCommand(job_.command, log_name, false, &out);
    result_.exit_code = result_.checker_exit_code;
    ParseChecker(out, &result_);
    sync();
    return Unmount();
  }

  GuestJob job_;
  GuestResult result_;
  std::string mount_dir_ = kMountDir;       // POWERCUT_DIR
  std::vector<std::string> extra_devices_;  // disks 2..N of a set (GuestJob::extra_disks)
  const int port_fd_;                       // the virtio-serial port (-1: none)
  const std::string prefix_;                // "job <id> " in a warm guest, else ""
  int commands_ = 0;                        // commands run so far (each gets its own cgroup)
  bool leftovers_survived_ = false;
  bool timed_out_ = false;  // the last command passed checker_timeout_s and was killed
  std::string disk_;
  std::string device_;
  std::string flakey_base_;
  uint64_t flakey_sectors_ = 0;  // the failing disk's size in 512-byte sectors
  uint64_t sectors_ = 0;
  bool log_writes_ = false;
  bool flakey_switched_ = false;
  std::optional<std::chrono::steady_clock::time_point> heal_at_;  // the flakey window's end
  pid_t workload_pgid_ = -1;                                      // while the workload runs
  int ack_fd_ = -1;                                               // its ack pipe (read end)
  int sync_fd_ = -1;          // its POWERCUT_ACK_SYNC_FD (write end), with GuestJob::sync_acks
  std::string port_pending_;  // a partial line from the host
  std::string ack_pending_;   // a partial ack line
};

}  // namespace

GuestResult RunGuestJob(const GuestJob& job, int port_fd) { return Agent(job, port_fd).Run(); }

}  // namespace powercut::vm::guest
