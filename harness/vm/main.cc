// powercut-vm: the VM crash domain on its own (the `powercut` CLI wires the same library in).
//   powercut-vm kernel       fetch the guest kernel (or open --kernel PATH), print its version
//                            and what it lacks
//   powercut-vm initramfs    build the initramfs, print its path
//   powercut-vm boot         boot a guest, run `true` on a fresh ext4, power off; print timings
//   powercut-vm run ...      run a workload on a recorded disk (see --help)
//   powercut-vm check ...    boot a fresh guest on an image and run a checker
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <vector>

#include "CLI/CLI.hpp"
#include "base/main_guard.h"
#include "base/process.h"
#include "base/scratch_dir.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "harness/vm/guest/flakey_mode.h"
#include "harness/vm/machine/initramfs.h"
#include "harness/vm/machine/kernel.h"
#include "harness/vm/machine/qemu.h"
#include "harness/vm/warm/vm_run.h"

namespace {

using powercut::vm::AccelName;
using powercut::vm::BuildInitramfs;
using powercut::vm::DefaultGuestModules;
using powercut::vm::FetchKernel;

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "powercut-vm: %s\n", std::string(status.message()).c_str());
  return 1;
}

int Kernel(const std::string& path) {
  auto kernel = path.empty() ? FetchKernel() : powercut::vm::OpenUserKernel(path);
  if (!kernel.ok()) return Fail(kernel.status());
  fmt::print("kernel {} (package {} {})\n  {}\n  {}\n  version: {}\n  config: {}\n",
             kernel->release, kernel->package, kernel->package_version, kernel->vmlinuz,
             kernel->modules_dir, kernel->version, kernel->config.empty() ? "-" : kernel->config);
  auto missing = powercut::vm::MissingModules(*kernel, DefaultGuestModules());
  if (!missing.ok()) return Fail(missing.status());
  fmt::print("  lacks: {}\n", missing->empty() ? "nothing the guest uses"
                                               : fmt::format("{}", fmt::join(*missing, ", ")));
  return 0;
}

int Initramfs(const std::string& path) {
  auto kernel = path.empty() ? FetchKernel() : powercut::vm::OpenUserKernel(path);
  if (!kernel.ok()) return Fail(kernel.status());
  auto missing = powercut::vm::MissingModules(*kernel, DefaultGuestModules());
  if (!missing.ok()) return Fail(missing.status());
  std::vector<std::string> load;
  for (const std::string& m : DefaultGuestModules()) {
    if (std::find(missing->begin(), missing->end(), m) == missing->end()) load.push_back(m);
  }
  auto initramfs = BuildInitramfs(*kernel, load);
  if (!initramfs.ok()) return Fail(initramfs.status());
  fmt::print("initramfs {} ({} modules, {} bytes)\n", initramfs->path, initramfs->modules,
             initramfs->bytes);
  return 0;
}

void PrintRun(const powercut::vm::RunResult& r) {
  fmt::print("accel: {}\nboot to agent: {:.2f} s\nwall: {:.2f} s\n", AccelName(r.accel),
             r.boot_seconds, r.wall_seconds);
  if (r.power_cut) {
    fmt::print("power cut: yes (cache {}: {} candidate writes, {} kept, {} dropped, {} torn)\n",
               r.cut_report.model.Code(), r.cut_report.candidates, r.cut_report.kept,
               r.cut_report.dropped, r.cut_report.torn);
  } else {
    fmt::print("workload exit: {}\nguest disk cache: {}\n", r.guest.exit_code,
               r.guest.device_cache);
  }
  fmt::print("acks: {} received by the host\n", r.host_acks.size());
  if (!r.phases.empty()) {
    std::string phases;
    for (const auto& [name, seconds] : r.phases) {
      phases += fmt::format("{}{} {:.3f}", phases.empty() ? "" : ", ", name, seconds);
    }
    fmt::print("recording phases (s): {}\n", phases);
  }
  if (r.guest.checker_exit_code >= 0) {
    fmt::print("checker exit: {}, have {} ids, corrupt {}\n", r.guest.checker_exit_code,
               r.guest.have.size(), r.guest.corrupt.size());
  }
  if (!r.trace.empty()) {
    fmt::print("trace: {} ({} entries; nbd requests {}, flushes {})\nmanifest: {}\n", r.trace,
               r.trace_entries, r.nbd_requests, r.nbd_flushes, r.manifest);
  }
  if (!r.log_writes_trace.empty()) {
    fmt::print("dm-log-writes trace: {}\nmanifest: {}\n", r.log_writes_trace,
               r.log_writes_manifest);
  }
  fmt::print("base image: {}\nfinal image: {}\nack log: {}\nconsole: {}\nworkload output: {}\n",
             r.base_image, r.final_image, r.ack_log, r.console_log, r.workload_log);
}

std::string DefaultFsName() { return powercut::harness::FsName(powercut::harness::DefaultFs()); }

// The flags of `run` and `check` that are parsed into the specs after the command line.
struct RunFlags {
  std::string recorder = "nbd", cut = "none", cache = "on", fs_name = DefaultFsName(),
              sector = "512e", flakey;
  uint64_t disk_mib = 0, seed = 1;
  int timeout_s = 300;
};
struct CheckFlags {
  std::string fs_name = DefaultFsName(), sector = "512e";
};

CLI::App* AddRunCommand(CLI::App& app, powercut::vm::RunSpec* spec, RunFlags* f) {
  auto* run = app.add_subcommand("run", "run a workload in a guest on a recorded disk");
  run->add_option("--fs", f->fs_name, powercut::harness::FsNames())->capture_default_str();
  run->add_option("--sector", f->sector,
                  "the disk's sectors: 512n, 512e (512-byte logical, 4,096-byte physical) or 4kn")
      ->capture_default_str();
  run->add_option("--recorder", f->recorder, "nbd, dm-log-writes or none")->capture_default_str();
  run->add_option("--out", spec->output_dir, "output folder")->required();
  run->add_option("--cut", f->cut, "none, random, after-acks=N or after=DURATION")
      ->capture_default_str();
  run->add_option("--cache", f->cache,
                  "cache model of the cut disk: off, on, lying or a code such as ly16e, ly65536b")
      ->capture_default_str();
  run->add_option("--seed", f->seed, "seed of the cut")->capture_default_str();
  run->add_option("--flakey", f->flakey, "dm-flakey: drop_writes or error_writes");
  run->add_option("--flakey-after-acks", spec->flakey_after_acks,
                  "switch the dm-flakey table after this many acks");
  run->add_option("--checker", spec->checker, "checker command (dm-flakey runs)");
  run->add_option("--mount-options", spec->mount_options);
  run->add_flag("--also-log-writes", spec->also_log_writes,
                "with --recorder nbd: also record with dm-log-writes in the guest");
  run->add_option("--disk-mib", f->disk_mib, "disk size (default: the file system's)");
  run->add_option("--timeout", f->timeout_s, "seconds before a hung guest is killed")
      ->capture_default_str();
  run->add_option("command", spec->command, "the workload, one command string")->required();
  return run;
}

CLI::App* AddCheckCommand(CLI::App& app, powercut::vm::CheckSpec* cspec, CheckFlags* f) {
  auto* check = app.add_subcommand("check", "boot a fresh guest on an image and run a checker");
  check->add_option("--fs", f->fs_name, powercut::harness::FsNames())->capture_default_str();
  check->add_option("--sector", f->sector, "the disk's sectors: 512n, 512e or 4kn")
      ->capture_default_str();
  check->add_option("--image", cspec->image)->required()->check(CLI::ExistingFile);
  check->add_option("--in-place", cspec->copy_image,
                    "false: check the image itself (journal "
                    "replay changes it)");
  check->add_option("checker", cspec->checker, "the checker, one command string")->required();
  return check;
}

// The recorder, the cut and its cache model, the failing disk's mode, the timeout and the disk
// size of `run`.
absl::Status CompleteRunSpec(const RunFlags& f, powercut::vm::RunSpec* spec) {
  spec->timeout = std::chrono::seconds(f.timeout_s);
  spec->disk_bytes = f.disk_mib << 20;
  if (f.recorder == "nbd") {
    spec->recording = powercut::vm::Recording::kNbd;
  } else if (f.recorder == "dm-log-writes") {
    spec->recording = powercut::vm::Recording::kLogWrites;
  } else if (f.recorder == "none") {
    spec->recording = powercut::vm::Recording::kNone;
  } else {
    return absl::InvalidArgumentError(
        fmt::format("--recorder '{}': expected nbd, dm-log-writes or none", f.recorder));
  }
  auto c = powercut::vm::ParseCut(f.cut);
  if (!c.ok()) return c.status();
  spec->cut = *c;
  spec->cut.seed = f.seed;
  auto model = powercut::harness::ParseCacheModel(f.cache);
  if (!model.ok()) return model.status();
  spec->cut.model = *model;
  if (!f.flakey.empty()) {
    auto flakey = powercut::vm::ParseFlakeyMode(f.flakey, "--flakey");
    if (!flakey.ok()) return flakey.status();
    spec->flakey = *flakey;
  }
  return absl::OkStatus();
}

int Boot(const powercut::vm::VmEnvironment& env, powercut::vm::RunSpec spec) {
  auto folder = powercut::ScratchDir::Create("powercut-boot", "/tmp");
  if (!folder.ok()) return Fail(folder.status());
  spec.output_dir = folder->path();
  spec.command = "true";
  spec.recording = powercut::vm::Recording::kNone;
  auto r = powercut::vm::RunInVm(env, spec);
  if (!r.ok()) return Fail(r.status());
  fmt::print("boot to agent: {:.2f} s (guest uptime {:.2f} s), whole run {:.2f} s, accel {}\n",
             r->boot_seconds, r->guest.ready_seconds, r->wall_seconds, AccelName(r->accel));
  return 0;
}

int Run(const powercut::vm::VmEnvironment& env, const RunFlags& flags, powercut::vm::RunSpec spec) {
  if (absl::Status s = CompleteRunSpec(flags, &spec); !s.ok()) return Fail(s);
  auto r = powercut::vm::RunInVm(env, spec);
  if (!r.ok()) return Fail(r.status());
  PrintRun(*r);
  if (!r->power_cut) {
    fmt::print("disk: {} ({}-byte logical, {}-byte physical sectors as the guest saw them)\n",
               powercut::harness::SectorFormatName(spec.sector), r->guest.logical_block_size,
               r->guest.physical_block_size);
  }
  if (!r->mkfs_command.empty()) {
    fmt::print("mkfs: {} ({}-byte blocks)\n", r->mkfs_command, r->fs_block_size);
  }
  return r->power_cut || r->guest.exit_code == 0 ? 0 : 3;
}

int Check(const powercut::vm::VmEnvironment& env, const powercut::vm::CheckSpec& cspec) {
  auto r = powercut::vm::CheckInVm(env, cspec);
  if (!r.ok()) return Fail(r.status());
  if (!r->ok) {
    fmt::print("check: step {} failed: {}\n", r->failed_step, r->error);
    return 4;
  }
  for (const auto& id : r->have) fmt::print("have {}\n", id);
  for (const auto& id : r->corrupt) fmt::print("corrupt {}\n", id);
  fmt::print("checker exit: {}\n", r->checker_exit_code);
  return r->checker_exit_code == 0 ? 0 : 5;
}

}  // namespace

static int Main(int argc, char** argv) {
  powercut::InstallInterruptHandlers();
  CLI::App app{"powercut-vm: the VM crash domain of powercut"};
  app.require_subcommand(1);
  app.fallthrough();  // --kernel may follow the subcommand
  std::string kernel_path;
  app.add_option("--kernel", kernel_path,
                 "the guest kernel and its modules: a linux-image .deb, a folder with "
                 "boot/vmlinuz-<release> and lib/modules/<release>, or a lib/modules/<release> "
                 "folder of `make modules_install` (default: Debian's linux-image-amd64)");
  auto* kernel = app.add_subcommand("kernel", "fetch the guest kernel and print its version");
  auto* initramfs = app.add_subcommand("initramfs", "build the guest initramfs");
  auto* boot = app.add_subcommand("boot", "boot a guest with a trivial workload; print timings");
  powercut::vm::RunSpec spec;
  RunFlags run_flags;
  auto* run = AddRunCommand(app, &spec, &run_flags);
  powercut::vm::CheckSpec cspec;
  CheckFlags check_flags;
  auto* check = AddCheckCommand(app, &cspec, &check_flags);

  CLI11_PARSE(app, argc, argv);
  if (kernel->parsed()) return Kernel(kernel_path);
  // Flags are checked before anything boots.
  if (run->parsed() || check->parsed()) {
    auto kind =
        powercut::harness::ParseFsKind(run->parsed() ? run_flags.fs_name : check_flags.fs_name);
    if (!kind.ok()) return Fail(kind.status());
    auto format =
        powercut::harness::ParseSectorFormat(run->parsed() ? run_flags.sector : check_flags.sector);
    if (!format.ok()) return Fail(format.status());
    spec.fs = cspec.fs = *kind;
    spec.sector = cspec.sector = *format;
  }
  if (initramfs->parsed()) return Initramfs(kernel_path);

  auto env = powercut::vm::PrepareVm("", kernel_path);
  if (!env.ok()) return Fail(env.status());
  fmt::print("kernel {}, initramfs {}, accel {}, boot {}\n", powercut::vm::KernelName(env->kernel),
             env->initramfs.path, AccelName(env->accel), env->boot);
  if (boot->parsed()) return Boot(*env, spec);
  if (run->parsed()) return Run(*env, run_flags, spec);
  if (check->parsed()) return Check(*env, cspec);
  return 2;
}

int main(int argc, char** argv) {
  return powercut::RunMainGuarded("powercut-vm", 2, [&] { return Main(argc, argv); });
}
