// One crash state checked by the guest agent (agent_job.h) on a disk that stays attached between
// states (GuestJob::state_token, harness/vm/warm/guest_judge.h): the state block, the boot path,
// the checker or `powercut fstest`'s judge, and the disk released.
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
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
  clock->Mark("release");
  return true;
}
}  // namespace powercut::vm::guest
