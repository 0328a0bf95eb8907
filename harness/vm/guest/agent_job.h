// The guest agent's one job (RunGuestJob, agent.h) as one class, its parts a file each: the
// job's steps (agent.cc), its disks (agent_disks.cc), the commands it runs with their acks
// relayed (agent_command.cc), and one crash state checked on a disk that stays attached
// (agent_state_check.cc). Internal to powercut-vm-agent.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "harness/fs/file_system.h"
#include "harness/vm/guest/agent.h"
#include "harness/vm/guest/guest_job.h"
#include "harness/vm/guest/job_cgroup.h"
#include "harness/vm/guest/resident_checker.h"
#include "harness/vm/guest/step_clock.h"

namespace powercut::vm::guest {

inline constexpr char kMountDir[] =
    "/tmp/powercut-fs";  // (+ "-<i>" for the i-th of several checks)
inline constexpr char kLogWritesName[] = "powercut-lw";
inline constexpr char kFlakeyName[] = "powercut-flakey";
inline constexpr char kNodeCutName[] = "powercut-node";
// How long a disk the host just hot-plugged may take to appear (ACPI event + virtio probe).
inline constexpr std::chrono::seconds kDiskAppears{30};

// What a command's child process gets, built before the fork (the child only execs).
struct CommandLaunch {
  std::string command;             // run with /bin/sh -c unless `argv` is set
  std::vector<std::string> words;  // a checker of plain words, exec'd directly
  std::vector<char*> argv;         // into `words`, null-terminated (empty: through sh)
  std::string log_path;            // stderr (and stdout unless stdout_fd is set)
  std::string dir;                 // the working folder ("" on a raw disk)
  std::vector<std::pair<std::string, std::string>> env;  // the protocol's variables
  int stdout_fd = -1;  // the stdout pipe's write end (-1: stdout to the log)
  int ack_fd = -1;     // the ack pipe's write end (POWERCUT_ACK_FD)
  int sync_fd = -1;    // the sync pipe's read end (POWERCUT_ACK_SYNC_FD; -1: none)
};

class Agent {
 public:
  Agent(GuestJob job, int port_fd, ResidentCheckers* residents = nullptr)
      : job_(std::move(job)),
        residents_(residents),
        port_fd_(port_fd),
        prefix_(job_.job_id == 0 ? "" : fmt::format("job {} ", job_.job_id)) {}

  // The job: a workload, a check of images, or a check of one crash state.
  GuestResult Run();

 private:
  bool Fail(const std::string& step, const std::string& error);
  bool Cmd(const std::string& step, const std::vector<std::string>& argv);
  void Send(const std::string& line);
  void Event(const std::string& text) { Send("event " + text); }
  bool Workload();
  bool LeftoversSurvived();
  bool Check();
  bool CheckOne(const std::string& log_name);
  static void ParseChecker(const std::string& text, GuestResult* result);

  // The job's disks (agent_disks.cc): found by serial, stacked under dm-log-writes or
  // dm-flakey, mounted; the flakey table switched and healed.
  static bool BlockSizes(const std::string& dev, uint32_t* logical, uint32_t* physical);
  bool DeviceSectors(const std::string& dev, uint64_t* sectors);
  bool Setup();
  std::string PassThroughTable() const;
  bool SwitchFlakey(const std::string& table);
  std::string FlakeyTable() const;
  bool MountExtras();
  bool UnmountExtras();
  bool Mount();
  bool Unmount();
  // The boot path, then the mount it ends with; an unrecoverable file system fails the "mount"
  // step with every step tried.
  bool RecoverAndMount();
  // The workload is paused (SIGSTOP of its process group) while the table switches, so an ack
  // is either written before the switch (and drained now: it must survive) or after it; only a
  // commit whose barrier was already inside the kernel can still complete after the switch.
  void SwitchToFlakey();
  // Milliseconds until the flakey window ends (-1: no heal pending), for poll.
  int HealTimeoutMs() const;
  // The window is over: the disk heals (pass-through again) while the workload runs on.
  void HealIfDue();
  bool Raw() const { return harness::FileSystemOf(job_.fs).raw(); }
  // A single node's power cut (agent_node_cut.cc): the cut disk under kNodeCutName, the
  // launcher's `power-off` / `power-on` requests, and the wait for the host's answer.
  bool SetupNodeCut();
  std::string NodeCutTable(bool powered) const;
  bool SwitchNodeCutTable(bool powered, std::string* why);
  void HandleNodeCutLine(const std::string& line);
  bool PowerOffNode(std::string* why);
  bool PowerOnNode(std::string* why);
  bool AwaitHost(const std::string& done, const std::string& failed, std::string* why);
  // Disk K (K >= 2) of a set: its mount point.
  std::string ExtraMountDir(size_t i) const { return fmt::format("{}-disk{}", mount_dir_, i + 2); }

  // Running a command (agent_command.cc).
  // Runs `command` with the protocol's variables; relays acks while it runs. The command ends when
  // its own process exits: what it left behind (holding the ack pipe or a file on the disk) is
  // counted in leftover_processes and killed, so the disk can be unmounted.
  int RunCommand(const std::string& command, const std::string& log_name, bool relay_acks,
                 std::string* stdout_text);
  // RunCommand's steps: what the child gets, the child's side of the fork, and the command's end
  // (its exit status; what it left behind counted and killed).
  CommandLaunch LaunchFor(const std::string& command, const std::string& log_name,
                          bool relay_acks) const;
  [[noreturn]] static void ExecCommand(const CommandLaunch& launch, const JobCgroup& cgroup);
  int Reap(pid_t pid, const JobCgroup& cgroup);
  // A checker of GuestJob::resident_checker: the agent's server for its command (started when
  // needed; nullptr: run it the ordinary way), one state's child started there, and its end.
  ResidentChecker* ResidentFor(const CommandLaunch& launch);
  absl::StatusOr<pid_t> BeginResident(ResidentChecker* server, const CommandLaunch& launch,
                                      const JobCgroup& cgroup);
  int ReapResident(ResidentChecker* server, pid_t pid, const JobCgroup& cgroup);
  // Reads the command's stdout (checkers) and ack pipe until its own process exited, then what is
  // still buffered in both. (A process it left behind may hold the pipes open for ever.)
  void ReadUntilExit(pid_t pid, int out_fd, bool relay_acks, std::string* stdout_text);
  void HandleCompleteLines();
  // Reads whatever the (stopped) workload already wrote to the ack pipe.
  void DrainAcks();
  void HandleAckLine(const std::string& line);
  // Whether the host's `job <N> acked <id>` answers can be read (a warm guest's port is two-way).
  bool ConfirmsOverPort() const;
  static void WriteLine(int fd, const std::string& line);
  // The host's answers to synchronous acks: each `job <N> acked <id>` of this job lets the
  // workload run on (`ok <id>` on its POWERCUT_ACK_SYNC_FD).
  void ReadConfirmations();

  // One crash state (agent_state_check.cc) on the disk that stays attached between states
  // (GuestJob::state_token, harness/vm/warm/guest_judge.h): prove the cache holds nothing of the
  // previous state, run the boot path and the checker, and leave nothing holding the disk.
  // ok = false only when this guest cannot be trusted with the next state; the file system's
  // outcome is in fs_*.
  bool CheckState();
  static std::string KernelRelease();
  // `powercut fstest`'s judge, in this process: the promises against the mounted tree, then the
  // removal of everything (docs/fstest.md, "Judging in the guest"). Its text is the checker's.
  void JudgeFsTest();
  bool Released(StepClock* clock);
  // One disk of a state mounted at `dir` (mount(2), or mount(8) with the job's options), and the
  // mounted ones unmounted, newest first.
  bool MountDisk(const std::string& dev, const std::string& dir, harness::FsKind fs);
  bool UnmountDisks(const std::vector<std::string>& dirs);

  GuestJob job_;
  GuestResult result_;
  ResidentCheckers* const residents_;  // the serving agent's (not owned; null: none)
  // Set when a resident checker's server failed mid-state: the state's outcome is unknown.
  std::string resident_failed_;
  bool last_command_resident_ = false;      // the last command was a resident checker's child
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
  std::string node_cut_base_;  // the cut disk's own device, under kNodeCutName
  uint64_t node_cut_sectors_ = 0;
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

}  // namespace powercut::vm::guest
