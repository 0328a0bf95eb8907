#include "harness/vm/machine/vm_environment.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "base/install_layout.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "harness/vm/machine/pvh_kernel.h"

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

}  // namespace powercut::vm
