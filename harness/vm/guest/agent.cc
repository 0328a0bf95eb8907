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
// guest, one job-<id>.json after another. The job's parts: agent_job.h.
#include "harness/vm/guest/agent.h"

#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "base/process.h"
#include "base/write_fully.h"
#include "fmt/format.h"
#include "harness/vm/guest/agent_job.h"
#include "harness/vm/guest/guest_devices.h"

namespace powercut::vm::guest {

GuestResult Agent::Run() {
  result_.ready_seconds = Uptime();
  if (job_.job_id == 0) Event("agent-start");
  bool ok = job_.mode != GuestJob::Mode::kCheck ? Workload()
            : job_.state_token.empty()          ? Check()
                                                : CheckState();
  result_.ok = ok;
  Event(fmt::format("agent-done ok={}", ok ? 1 : 0));
  return result_;
}

bool Agent::Fail(const std::string& step, const std::string& error) {
  result_.failed_step = step;
  result_.error = error;
  std::fprintf(stderr, "powercut-agent: step %s failed: %s\n", step.c_str(), error.c_str());
  return false;
}

bool Agent::Cmd(const std::string& step, const std::vector<std::string>& argv) {
  auto out = powercut::RunCommandOrError(step, argv);
  if (!out.ok()) return Fail(step, std::string(out.status().message()));
  return true;
}

void Agent::Send(const std::string& line) {
  if (port_fd_ < 0) return;
  // A port the host closed has nobody to tell; the host sees the guest's end by itself.
  powercut::WriteFully(port_fd_, prefix_ + line + "\n").IgnoreError();
}

bool Agent::Workload() {
  if (!Setup() || !Mount()) return false;
  if (job_.flakey.has_value() && job_.flakey_after_acks <= 0) SwitchToFlakey();
  Event("workload-start");
  result_.exit_code = RunCommand(job_.command, JobFileName("workload", job_.job_id, "log"),
                                 /*relay_acks=*/true, nullptr);
  Event(fmt::format("workload-exit {}", result_.exit_code));
  if (leftovers_survived_) return LeftoversSurvived();
  if (job_.flakey.has_value()) {
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
  if (job_.flakey.has_value() &&
      !Cmd("dm-flakey", {"dmsetup", "--noudevsync", "remove", kFlakeyName})) {
    return false;
  }
  if (job_.node_cut_disk >= 0 &&
      !Cmd("node-cut", {"dmsetup", "--noudevsync", "remove", kNodeCutName})) {
    return false;
  }
  // Removing the log-writes target writes its final superblock.
  if (log_writes_ && !Cmd("dm-log-writes", {"dmsetup", "--noudevsync", "remove", kLogWritesName})) {
    return false;
  }
  // The host detaches the disk next: nothing in the guest may still hold it.
  std::string held;
  if (!DiskReleased(disk_, &held)) return Fail("release", held);
  return true;
}

bool Agent::LeftoversSurvived() {
  return Fail("cleanup", fmt::format("the workload left {} process(es) behind that survived "
                                     "SIGKILL for 10 s (stuck in the kernel?)",
                                     result_.leftover_processes));
}

bool Agent::Check() {
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

bool Agent::CheckOne(const std::string& log_name) {
  if (!Setup() || !RecoverAndMount()) return false;
  std::string out;
  result_.checker_exit_code = RunCommand(job_.command, log_name, false, &out);
  result_.exit_code = result_.checker_exit_code;
  ParseChecker(out, &result_);
  sync();
  return Unmount();
}

void Agent::ParseChecker(const std::string& text, GuestResult* result) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("have ", 0) == 0) result->have.push_back(line.substr(5));
    if (line.rfind("corrupt ", 0) == 0) result->corrupt.push_back(line.substr(8));
  }
}

GuestResult RunGuestJob(const GuestJob& job, int port_fd, ResidentCheckers* residents) {
  return Agent(job, port_fd, residents).Run();
}

}  // namespace powercut::vm::guest
