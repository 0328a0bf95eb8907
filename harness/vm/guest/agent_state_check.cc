// One crash state checked by the guest agent (agent_job.h) on a disk that stays attached between
// states (GuestJob::state_token, harness/vm/warm/guest_judge.h): the state block, the boot path,
// the checker or `powercut fstest`'s judge, and the disk released.
#include <sys/mount.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "harness/check/boot_recovery.h"
#include "harness/fstest/judge.h"
#include "harness/vm/guest/agent_job.h"
#include "harness/vm/guest/guest_devices.h"

namespace powercut::vm::guest {

std::string Agent::KernelRelease() {
  utsname u{};
  return uname(&u) == 0 ? std::string(u.release) : std::string();
}

bool Agent::CheckState() {
  result_.kernel = KernelRelease();
  StepClock clock(&result_.phases);
  if (!Setup()) return false;
  std::string error;
  if (!FreshStateBlock(disk_, job_.state_token, &error)) return Fail("state-block", error);
  for (size_t i = 0; i < extra_devices_.size(); ++i) {
    if (!FreshStateBlock(extra_devices_[i], job_.extra_disks[i].state_token, &error)) {
      return Fail("state-block", fmt::format("disk {}: {}", i + 2, error));
    }
  }
  clock.Mark("state-block");
  // Disk 1, then 2..N of a set: each through its own file system's boot path.
  double mount_seconds = 0;  // of the boot paths' time, the mount attempts (journal replay)
  std::vector<std::string> mounted;
  for (size_t d = 0; d <= extra_devices_.size(); ++d) {
    const harness::FsKind fs = d == 0 ? job_.fs : job_.extra_disks[d - 1].fs;
    if (harness::FileSystemOf(fs).raw()) continue;
    const std::string dev = d == 0 ? device_ : extra_devices_[d - 1];
    const std::string dir = d == 0 ? mount_dir_ : ExtraMountDir(d - 1);
    auto mount = [&]() -> absl::Status {
      const auto start = std::chrono::steady_clock::now();
      const bool ok = MountDisk(dev, dir, fs);
      mount_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (!ok) return absl::UnavailableError(result_.error);
      return absl::OkStatus();
    };
    auto rec = powercut::harness::RecoverFileSystem(powercut::harness::FileSystemOf(fs), dev, mount,
                                                    300, job_.boot_checks);
    if (!rec.ok()) return Fail("boot-recovery", std::string(rec.status().message()));
    result_.failed_step.clear();
    result_.error.clear();
    const std::string label = extra_devices_.empty() ? "" : fmt::format("disk {}", d + 1);
    for (const auto& s : rec->steps) {
      result_.fs_steps.push_back({.disk = label,
                                  .name = s.name,
                                  .exit_code = s.exit_code,
                                  .changed = s.changed,
                                  .detail = s.detail});
    }
    result_.fs_repaired = result_.fs_repaired || rec->repaired;
    if (rec->unrecoverable) {
      result_.fs_unrecoverable = true;
      clock.Split("fsck", "mount", mount_seconds);
      if (!UnmountDisks(mounted)) return false;
      return Released(&clock);
    }
    mounted.push_back(dir);
  }
  clock.Split("fsck", "mount", mount_seconds);
  if (!job_.fstest_promises.empty()) {
    JudgeFsTest();
    clock.Mark("judge");
    if (!UnmountDisks(mounted)) return false;
    clock.Mark("umount");
    return Released(&clock);
  }
  const std::string log = fmt::format("{}/checker-state.log", kRunDir);
  ::truncate(log.c_str(), 0);  // stderr of this state only (the file is reused)
  timed_out_ = false;
  result_.checker_exit_code =
      RunCommand(job_.command, "checker-state.log", false, &result_.checker_stdout);
  if (!resident_failed_.empty()) {
    return Fail("checker", "the resident checker's server failed: " + resident_failed_);
  }
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
  // The step says how the checker started: forked by its resident server, or exec'd.
  clock.Mark(last_command_resident_ ? "checker-fork" : "checker");
  if (leftovers_survived_) return LeftoversSurvived();
  if (!UnmountDisks(mounted)) return false;
  clock.Mark("umount");
  return Released(&clock);
}

bool Agent::MountDisk(const std::string& dev, const std::string& dir, harness::FsKind fs) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (job_.mount_options.empty()) {
    // The system call, not mount(8): an exec under TCG costs more than the mount itself.
    if (::mount(dev.c_str(), dir.c_str(), harness::FsName(fs), 0, nullptr) == 0) return true;
    return Fail("mount", fmt::format("mount -t {} {} {}: {}", harness::FsName(fs), dev, dir,
                                     std::strerror(errno)));
  }
  return Cmd("mount", {"mount", "-t", harness::FsName(fs), "-o", job_.mount_options, dev, dir});
}

bool Agent::UnmountDisks(const std::vector<std::string>& dirs) {
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    if (::umount2(it->c_str(), 0) != 0) {
      return Fail("unmount", fmt::format("umount {}: {}", *it, std::strerror(errno)));
    }
  }
  return true;
}

void Agent::JudgeFsTest() {
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

bool Agent::Released(StepClock* clock) {
  std::string held;
  if (!DiskReleased(disk_, &held)) return Fail("release", held);
  for (size_t i = 0; i < extra_devices_.size(); ++i) {
    if (!DiskReleased(extra_devices_[i], &held)) {
      return Fail("release", fmt::format("disk {}: {}", i + 2, held));
    }
  }
  clock->Mark("release");
  return true;
}
}  // namespace powercut::vm::guest
