// Where file-system crash states are judged (`--check-in`; docs/run.md, "Where crash states are
// judged"): the parts of run.h that choose host loop mounts or warm guests and set the guests up
// (the guest agent found beside the running program: AgentHint).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/install_layout.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/fs/file_system.h"
#include "harness/product/run/run.h"
#include "harness/trace/manifest.h"

namespace powercut::product {

bool MayLoopMount() {
  // CAP_SYS_ADMIN (bit 21 of CapEff) and a loop-control device: root in an unprivileged
  // container has neither, and would otherwise fall back to debugfs or fail.
  std::ifstream status("/proc/self/status");
  std::string line;
  uint64_t caps = 0;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) == 0) caps = std::strtoull(line.c_str() + 7, nullptr, 16);
  }
  return (caps & (uint64_t{1} << 21)) != 0 && ::access("/dev/loop-control", R_OK | W_OK) == 0;
}

absl::StatusOr<CheckIn> ParseCheckIn(const std::string& text) {
  // The recording kernel judges by default, root or not (docs/run.md, "Where crash states are
  // judged"); the host's loop mounts only when asked, and only where they can work.
  if (text == "guest" || text.empty()) return CheckIn::kGuest;
  if (text == "host") {
    if (!MayLoopMount()) {
      return absl::InvalidArgumentError(
          "--check-in host: loop mounts on this host need root (CAP_SYS_ADMIN and "
          "/dev/loop-control); drop --check-in host to judge in guests booted with the recording "
          "kernel (no root needed)");
    }
    return CheckIn::kHost;
  }
  return absl::InvalidArgumentError(fmt::format(
      "--check-in {}: expected guest (the recording kernel judges, no root needed) or host (loop "
      "mounts on this host: needs root)",
      text));
}

const char* CheckInName(CheckIn where) { return where == CheckIn::kGuest ? "guest" : "host"; }

std::string AgentHint(const std::string& self) {
  const std::string agent = InstallLayout::Of(self).Find("powercut-vm-agent");
  std::error_code ec;
  return std::filesystem::is_regular_file(agent, ec) && ::access(agent.c_str(), X_OK) == 0 ? agent
                                                                                           : "";
}

absl::StatusOr<std::unique_ptr<vm::GuestCheckPool>> CheckPoolFor(CheckIn where,
                                                                 const std::string& agent_hint,
                                                                 const std::string& kernel) {
  if (where == CheckIn::kHost) return std::unique_ptr<vm::GuestCheckPool>();
  auto env = vm::PrepareVm(agent_hint, kernel);
  if (!env.ok()) {
    return absl::Status(env.status().code(),
                        fmt::format("--check-in guest: cannot prepare the VM: {}",
                                    std::string(env.status().message())));
  }
  return CheckPoolFor(where, *env);
}

std::unique_ptr<vm::GuestCheckPool> CheckPoolFor(CheckIn where, const vm::VmEnvironment& env) {
  if (where == CheckIn::kHost) return nullptr;
  return std::make_unique<vm::GuestCheckPool>(env);
}

harness::StateJudgeFactory JudgesForTrace(vm::GuestCheckPool* pool, harness::FsKind fs,
                                          const std::string& trace, const std::string& checker,
                                          double checker_timeout_s, vm::GuestCheckPhases* phases) {
  auto manifest = harness::ReadManifest(harness::ManifestPathFor(trace));
  const harness::SectorFormat sector =
      manifest.ok() ? harness::SectorFormatOf(manifest->logical_sector, manifest->physical_sector)
                    : harness::kDefaultSectorFormat;
  return pool->Factory({.fs = fs,
                        .sector = sector,
                        .checker = checker,
                        .mount_options = "",
                        .checker_timeout_s = checker_timeout_s,
                        .phases = phases});
}

absl::StatusOr<TraceJudging> JudgeTrace(const std::string& check_in, harness::FsKind fs,
                                        const std::string& powercut, const std::string& kernel,
                                        const std::string& trace, const std::string& checker,
                                        double checker_timeout_s, std::string_view host_only) {
  ASSIGN_OR_RETURN(CheckIn where, ParseCheckIn(check_in));
  TraceJudging judging;
  if (where == CheckIn::kHost || harness::FileSystemOf(fs).raw()) return judging;
  if (!host_only.empty()) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: pass --check-in host with it, or drop it (without root, states are judged in guests)",
        host_only));
  }
  ASSIGN_OR_RETURN(judging.pool, CheckPoolFor(where, AgentHint(powercut), kernel));
  judging.judges = JudgesForTrace(judging.pool.get(), fs, trace, checker, checker_timeout_s,
                                  judging.phases.get());
  return judging;
}

std::string GuestCheckPhasesLine(const std::vector<std::pair<std::string, double>>& phases) {
  if (phases.empty()) return "";
  std::string s = "guest check, mean per state:";
  for (const auto& [name, seconds] : phases) s += fmt::format(" {} {:.2f} s,", name, seconds);
  s.back() = '\n';
  return s;
}

}  // namespace powercut::product
