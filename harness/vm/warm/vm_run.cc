#include "harness/vm/vm_run.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "base/install_layout.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "harness/vm/disk_image.h"
#include "harness/vm/guest_config.h"
#include "harness/vm/pvh_kernel.h"
#include "harness/vm/run_folder.h"
#include "harness/vm/warm_guest.h"

namespace powercut::vm {
namespace {

namespace fs = std::filesystem;

constexpr char kAgentName[] = "powercut-vm-agent";

}  // namespace

QemuOptions QemuOptionsFor(const VmEnvironment& env, const std::string& run_dir) {
  QemuOptions q;
  q.kernel = env.boot_image.empty() ? env.kernel.vmlinuz : env.boot_image;
  q.initramfs = env.initramfs.path;
  q.agent = env.agent;
  q.run_dir = run_dir;
  q.console_log = run_dir + "/console.log";
  q.accel = env.accel;
  return q;
}

absl::Status RequireModules(const VmEnvironment& env, const std::vector<std::string>& modules,
                            const std::string& who) {
  std::vector<std::string> lacking;
  for (const std::string& m : modules) {
    if (std::find(env.missing_modules.begin(), env.missing_modules.end(), m) ==
        env.missing_modules.end()) {
      continue;
    }
    const std::string option = ModuleConfigOption(m);
    lacking.push_back(option.empty() ? m : fmt::format("{} ({})", m, option));
  }
  if (lacking.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(fmt::format(
      "the guest kernel {} lacks {}, which {} needs (neither a module in {}/modules.dep nor "
      "built in): build it as a module (=m) or built in (=y), or pick another --kernel",
      KernelName(env.kernel), fmt::join(lacking, ", "), who, env.kernel.modules_dir));
}

std::string BootFailureHint(const VmEnvironment& env, const std::string& console) {
  struct Sign {
    const char* text;
    const char* meaning;
  };
  static constexpr Sign kSigns[] = {
      {"Invalid module format", "its modules were not built for this kernel image"},
      {"Unknown symbol", "its modules were not built for this kernel image"},
      {"Kernel panic", "the kernel panicked"},
      {"Unable to mount root", "the kernel found no root file system (no initramfs support?)"},
      {"powercut-init: fail", "the guest's init failed a step"},
  };
  for (const Sign& sign : kSigns) {
    size_t at = console.find(sign.text);
    if (at == std::string::npos) continue;
    size_t begin = console.rfind('\n', at);
    begin = begin == std::string::npos ? 0 : begin + 1;
    const std::string line = console.substr(begin, console.find('\n', at) - begin);
    return fmt::format("guest kernel {}: {} (\"{}\")", KernelName(env.kernel), sign.meaning, line);
  }
  return "";
}

absl::StatusOr<VmEnvironment> PrepareVm(const std::string& agent_hint, const std::string& kernel) {
  VmEnvironment env;
  if (kernel.empty()) {
    ASSIGN_OR_RETURN(env.kernel, FetchKernel());
  } else {
    ASSIGN_OR_RETURN(env.kernel, OpenUserKernel(kernel));
  }
  ASSIGN_OR_RETURN(env.missing_modules, MissingModules(env.kernel, DefaultGuestModules()));
  // Without these no guest comes up: fail before booting, naming them.
  RETURN_IF_ERROR(RequireModules(env, BaseGuestModules(),
                                 "every guest (virtio disks, the "
                                 "console port, the host root over 9p)"));
  std::vector<std::string> load;
  for (const std::string& m : DefaultGuestModules()) {
    if (std::find(env.missing_modules.begin(), env.missing_modules.end(), m) ==
        env.missing_modules.end()) {
      load.push_back(m);
    }
  }
  ASSIGN_OR_RETURN(env.initramfs, BuildInitramfs(env.kernel, load));
  // POWERCUT_VM_BOOT=bzimage keeps the slower bzImage boot (to compare, or for a kernel whose
  // PVH entry misbehaves); otherwise a kernel without a PVH entry falls back to it silently.
  const char* boot = std::getenv("POWERCUT_VM_BOOT");
  if (boot == nullptr || std::string(boot) != "bzimage") {
    if (auto pvh = PvhKernelFor(env.kernel); pvh.ok()) {
      env.boot_image = *pvh;
      env.boot = "pvh";
    }
  }
  std::vector<std::string> candidates;
  if (const char* e = std::getenv("POWERCUT_VM_AGENT"); e != nullptr && *e != '\0') {
    candidates.emplace_back(e);
  }
  if (!agent_hint.empty()) candidates.push_back(agent_hint);
  const InstallLayout layout = InstallLayout::OfSelf();
  candidates.push_back(layout.Find(kAgentName));
  for (const auto& c : candidates) {
    if (access(c.c_str(), X_OK) == 0) {
      env.agent = fs::absolute(c).lexically_normal().string();
      break;
    }
  }
  if (env.agent.empty()) {
    return absl::NotFoundError(fmt::format(
        "guest agent: {} not found (looked in $POWERCUT_VM_AGENT and at {}, in {}): build the "
        "target powercut-vm-agent, or install it with this program (cmake --install)",
        kAgentName, layout.Find(kAgentName), layout.Describe()));
  }
  env.accel = ChooseAccel();
  return env;
}

absl::StatusOr<RunResult> RunInVm(const VmEnvironment& env, const RunSpec& spec) {
  // One recording on a guest of its own: a pool of one, shut down after it.
  GuestPool pool(env);
  absl::StatusOr<RunResult> result = pool.Record(spec);
  pool.Shutdown();
  return result;
}

absl::StatusOr<GuestResult> CheckInVm(const VmEnvironment& env, const CheckSpec& spec) {
  ASSIGN_OR_RETURN(std::vector<GuestResult> results, CheckImagesInVm(env, {spec}));
  return std::move(results[0]);
}

absl::StatusOr<std::vector<GuestResult>> CheckImagesInVm(const VmEnvironment& env,
                                                         const std::vector<CheckSpec>& specs) {
  if (specs.empty()) return std::vector<GuestResult>{};
  if (specs.size() > kMaxCheckImages) {
    return absl::InvalidArgumentError(
        fmt::format("{} images to check in one guest: at most {}; split them into several calls",
                    specs.size(), kMaxCheckImages));
  }
  ASSIGN_OR_RETURN(RunFolder run, CreateRunFolder());
  QemuOptions q = QemuOptionsFor(env, run.path());
  GuestJob job;
  job.mode = GuestJob::Mode::kCheck;
  std::vector<std::string> keep;
  std::chrono::seconds timeout{0};
  for (size_t i = 0; i < specs.size(); ++i) {
    const CheckSpec& spec = specs[i];
    RETURN_IF_ERROR(ValidateCommand(spec.checker, "checker"));
    RETURN_IF_ERROR(ValidateKeepPaths(spec.keep_paths));
    std::string image = spec.image;
    if (spec.copy_image) {
      image = run / fmt::format("check-{}.img", i);
      RETURN_IF_ERROR(CopySparse(spec.image, image));
    }
    q.disks.push_back(
        {.nbd_socket = "", .image_file = image, .geometry = harness::GeometryOf(spec.sector)});
    for (const std::string& m : GuestModulesFor(spec.fs, false, false)) {
      if (std::find(q.guest_modules.begin(), q.guest_modules.end(), m) == q.guest_modules.end()) {
        q.guest_modules.push_back(m);
      }
    }
    for (const std::string& k : spec.keep_paths) {
      if (std::find(keep.begin(), keep.end(), k) == keep.end()) keep.push_back(k);
    }
    timeout = std::max(timeout, spec.timeout);
    job.checks.push_back({.disk_serial = fmt::format("powercut{}", i),
                          .fs = spec.fs,
                          .command = spec.checker,
                          .mount_options = spec.mount_options});
  }
  std::vector<std::string> checkers;
  for (const CheckSpec& spec : specs) checkers.push_back(spec.checker);
  q.keep_paths = KeepPathsFor(env.agent, keep, checkers);
  RETURN_IF_ERROR(WriteAll(run / "job.json", GuestJobToJson(job)));
  ASSIGN_OR_RETURN(std::unique_ptr<Qemu> qemu, Qemu::Start(q));
  RETURN_IF_ERROR(qemu->WaitForExit(timeout).status());
  ASSIGN_OR_RETURN(GuestResult r, ReadGuestResult(run, "result.json", *qemu));
  if (!r.ok) return GuestStepError(r, *qemu);
  if (r.checks.size() != specs.size()) {
    return absl::InternalError(
        fmt::format("guest: the agent reported {} checks for {} images; last console lines:\n{}",
                    r.checks.size(), specs.size(), qemu->ConsoleTail()));
  }
  for (size_t i = 0; i < r.checks.size(); ++i) {
    GuestResult& c = r.checks[i];
    if (!c.ok && c.failed_step != "mount") return GuestStepError(c, *qemu);
    RETURN_IF_ERROR(CheckGuestGeometry(c, harness::GeometryOf(specs[i].sector)));
    c.ready_seconds = r.ready_seconds;
  }
  return std::move(r.checks);
}

}  // namespace powercut::vm
