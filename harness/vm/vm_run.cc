#include "harness/vm/vm_run.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/synchronization/notification.h"
#include "base/process.h"
#include "base/scratch_dir.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/trace/manifest.h"
#include "harness/trace/recorder.h"
#include "harness/trace/trace_reader.h"
#include "harness/vm/ack_channel.h"
#include "harness/vm/disk_image.h"

namespace powercut::vm {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr char kAgentName[] = "powercut-vm-agent";

// Folders the guest covers with tmpfs (guest/init.sh).
constexpr const char* kCoveredFolders[] = {"/tmp", "/run", "/var/tmp", "/mnt"};

// The covered folder `path` lies strictly inside ("" if none).
std::string CoveredFolderOf(const fs::path& path) {
  for (const char* covered : kCoveredFolders) {
    const std::string prefix = std::string(covered) + "/";
    if (path.string().rfind(prefix, 0) == 0 && path.string().size() > prefix.size()) {
      return covered;
    }
  }
  return "";
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::Status WriteAll(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return absl::UnavailableError(fmt::format("cannot write {}", path));
  return absl::OkStatus();
}

// A private folder for sockets, job and result, under /tmp: unix socket paths are limited to 107
// bytes.
using RunFolder = ScratchDir;

std::vector<std::string> GuestModulesFor(harness::FsKind fs, bool log_writes, bool flakey) {
  std::vector<std::string> modules;
  if (!harness::FileSystemOf(fs).raw()) modules.push_back(harness::FsName(fs));
  if (log_writes || flakey) modules.push_back("dm-mod");
  if (log_writes) modules.push_back("dm-log-writes");
  if (flakey) modules.push_back("dm-flakey");
  return modules;
}

// The folders to keep visible: the caller's, the agent's folder and what the commands name.
std::vector<std::string> KeepPathsFor(const std::string& agent, std::vector<std::string> keep,
                                      const std::vector<std::string>& commands) {
  std::vector<std::string> named = commands;
  named.push_back(agent);
  for (std::string& k : CommandKeepPaths(named)) keep.push_back(std::move(k));
  std::sort(keep.begin(), keep.end());
  keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
  return keep;
}

absl::Status ValidateKeepPaths(const std::vector<std::string>& paths) {
  for (const auto& p : paths) {
    if (p.empty() || p[0] != '/' || p.find_first_of(" ,\t\n") != std::string::npos ||
        !fs::is_directory(p)) {
      return absl::InvalidArgumentError(fmt::format(
          "keep path '{}': must be an existing absolute folder without spaces or commas", p));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateCommand(const std::string& command, const char* what) {
  if (command.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("no {} command: give it as one command string (run with /bin/sh -c)", what));
  }
  return absl::OkStatus();
}

// The disk of `geometry` as the agent saw it; a guest that saw other sector sizes would make
// every later judgement about atomic units wrong, so it is an error.
absl::Status CheckGuestGeometry(const GuestResult& r, const harness::DiskGeometry& geometry) {
  if (r.logical_block_size == 0 && r.physical_block_size == 0) return absl::OkStatus();
  if (r.logical_block_size != geometry.logical_sector ||
      r.physical_block_size != geometry.physical_sector) {
    return absl::InternalError(fmt::format(
        "the guest saw {}-byte logical and {}-byte physical sectors on the disk under test, "
        "not the {} and {} asked for (does this qemu support virtio-blk logical_block_size and "
        "physical_block_size?)",
        r.logical_block_size, r.physical_block_size, geometry.logical_sector,
        geometry.physical_sector));
  }
  return absl::OkStatus();
}

// Reads result.json; a missing one means the guest died before the agent finished.
absl::StatusOr<GuestResult> ReadGuestResult(const RunFolder& run, const Qemu& qemu) {
  std::string text = ReadAll(run / "result.json");
  if (text.empty()) {
    return absl::InternalError(fmt::format(
        "guest: the agent wrote no result (the guest failed before or during the job); last "
        "console lines:\n{}",
        qemu.ConsoleTail()));
  }
  return GuestResultFromJson(text);
}

absl::Status GuestStepError(const GuestResult& r, const Qemu& qemu) {
  return absl::FailedPreconditionError(
      fmt::format("guest step {} failed: {}\nlast console lines:\n{}", r.failed_step, r.error,
                  qemu.ConsoleTail()));
}

}  // namespace

absl::StatusOr<CutSpec> ParseCut(const std::string& text) {
  CutSpec cut;
  if (text.empty() || text == "none") return cut;
  if (text == "random") {
    cut.when = CutSpec::When::kRandom;
    return cut;
  }
  auto bad = [&] {
    return absl::InvalidArgumentError(fmt::format(
        "--cut '{}': expected random, after-acks=N or after=DURATION (e.g. 1.5s, 300ms)", text));
  };
  if (text.rfind("after-acks=", 0) == 0) {
    std::string n = text.substr(11);
    if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos) return bad();
    cut.when = CutSpec::When::kAfterAcks;
    cut.after_acks = std::stoull(n);
    if (cut.after_acks == 0) return bad();
    return cut;
  }
  if (text.rfind("after=", 0) == 0) {
    std::string d = text.substr(6);
    double scale;
    if (d.size() > 2 && d.substr(d.size() - 2) == "ms") {
      scale = 1;
      d.resize(d.size() - 2);
    } else if (d.size() > 1 && d.back() == 's') {
      scale = 1000;
      d.pop_back();
    } else {
      return bad();
    }
    char* end = nullptr;
    double v = std::strtod(d.c_str(), &end);
    if (d.empty() || end == nullptr || *end != '\0' || v < 0) return bad();
    cut.when = CutSpec::When::kAfter;
    cut.after = std::chrono::milliseconds(static_cast<int64_t>(v * scale));
    return cut;
  }
  return bad();
}

absl::StatusOr<VmEnvironment> PrepareVm(const std::string& agent_hint) {
  VmEnvironment env;
  ASSIGN_OR_RETURN(env.kernel, FetchKernel());
  ASSIGN_OR_RETURN(env.initramfs, BuildInitramfs(env.kernel, DefaultGuestModules()));
  std::vector<std::string> candidates;
  if (const char* e = std::getenv("POWERCUT_VM_AGENT"); e != nullptr && *e != '\0') {
    candidates.push_back(e);
  }
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back((self.parent_path() / kAgentName).string());
  if (!agent_hint.empty()) candidates.push_back(agent_hint);
  for (const auto& c : candidates) {
    if (access(c.c_str(), X_OK) == 0) {
      env.agent = fs::absolute(c).lexically_normal().string();
      break;
    }
  }
  if (env.agent.empty()) {
    return absl::NotFoundError(fmt::format(
        "guest agent: {} not found (looked next to this program and in POWERCUT_VM_AGENT); build "
        "the target powercut-vm-agent",
        kAgentName));
  }
  env.accel = ChooseAccel();
  return env;
}

std::vector<std::string> CommandKeepPaths(const std::vector<std::string>& commands) {
  // A path starts with '/' at the start of a word or after = : , ( and similar; it ends at
  // whitespace, a quote or a shell metacharacter.
  constexpr char kBefore[] = " \t\n'\"=:,;(|&<>`";
  constexpr char kEnd[] = " \t\n'\"`:,;()|&<>$*?[]{}";
  std::vector<std::string> keep;
  auto add = [&](const fs::path& path) {
    const std::string covered = CoveredFolderOf(path);
    if (covered.empty()) return;
    std::error_code ec;
    fs::path dir = path;
    while (!dir.empty() && dir != covered && !fs::is_directory(dir, ec)) dir = dir.parent_path();
    if (dir.empty() || dir == covered || CoveredFolderOf(dir).empty()) return;
    keep.push_back(dir.string());
  };
  for (const std::string& command : commands) {
    size_t i = 0;
    while ((i = command.find('/', i)) != std::string::npos) {
      const bool starts_word = i == 0 || std::strchr(kBefore, command[i - 1]) != nullptr;
      size_t end = command.find_first_of(kEnd, i);
      if (end == std::string::npos) end = command.size();
      if (starts_word) {
        const fs::path path = fs::path(command.substr(i, end - i)).lexically_normal();
        add(path);
        // A symbolic link may lead into another covered folder.
        std::error_code ec;
        const fs::path real = fs::weakly_canonical(path, ec);
        if (!ec && real != path) add(real);
      }
      i = std::max(end, i + 1);
    }
  }
  // Sorted, each once, none inside another (its binding would be hidden by the outer one's).
  std::sort(keep.begin(), keep.end());
  keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
  std::vector<std::string> out;
  for (const std::string& k : keep) {
    if (!out.empty() && k.rfind(out.back() + "/", 0) == 0) continue;
    out.push_back(k);
  }
  return out;
}

absl::StatusOr<RunResult> RunInVm(const VmEnvironment& env, const RunSpec& spec) {
  RETURN_IF_ERROR(ValidateCommand(spec.command, "workload"));
  RETURN_IF_ERROR(ValidateKeepPaths(spec.keep_paths));
  if (spec.output_dir.empty()) {
    return absl::InvalidArgumentError("no output folder for the trace and images");
  }
  if (!spec.flakey.empty() && spec.flakey != "drop_writes" && spec.flakey != "error_writes") {
    return absl::InvalidArgumentError(
        fmt::format("dm-flakey mode '{}': expected drop_writes or error_writes", spec.flakey));
  }
  const bool log_writes = spec.recording == Recording::kLogWrites || spec.also_log_writes;
  if (spec.also_log_writes && spec.recording != Recording::kNbd) {
    return absl::InvalidArgumentError("also_log_writes needs the NBD recording");
  }
  if (!spec.flakey.empty() && log_writes) {
    return absl::InvalidArgumentError("dm-flakey and dm-log-writes cannot be combined in one run");
  }
  std::error_code ec;
  fs::create_directories(spec.output_dir, ec);
  const std::string out = fs::absolute(spec.output_dir).lexically_normal().string();
  ASSIGN_OR_RETURN(RunFolder run, RunFolder::Create("powercut-vm", "/tmp"));

  RunResult result;
  result.accel = env.accel;
  result.base_image = out + "/base.img";
  result.final_image = out + "/final.img";
  result.ack_log = out + "/acks.jsonl";
  result.console_log = out + "/console.log";
  const std::string disk = out + "/disk.img";
  const harness::FileSystem& file_system = harness::FileSystemOf(spec.fs);
  const harness::DiskGeometry geometry = harness::GeometryOf(spec.sector);
  result.geometry = geometry;
  const uint64_t bytes = spec.disk_bytes != 0 ? spec.disk_bytes : file_system.default_image_bytes;
  if (bytes < file_system.min_image_bytes || bytes % 4096 != 0) {
    return absl::InvalidArgumentError(
        fmt::format("disk size {} bytes: {} needs at least {} bytes, in whole 4 KiB blocks", bytes,
                    file_system.name, file_system.min_image_bytes));
  }
  RETURN_IF_ERROR(CreateSparseImage(disk, bytes));
  ASSIGN_OR_RETURN(result.mkfs_command, MakeFileSystem(spec.fs, geometry, disk));
  ASSIGN_OR_RETURN(result.fs_block_size, FileSystemBlockSize(spec.fs, disk));
  RETURN_IF_ERROR(CopySparse(disk, result.base_image));
  std::filesystem::remove(result.console_log, ec);

  // The recorder and the disks.
  std::unique_ptr<harness::Recorder> recorder;
  std::unique_ptr<NbdServer> nbd;
  QemuOptions q;
  q.kernel = env.kernel.vmlinuz;
  q.initramfs = env.initramfs.path;
  q.agent = env.agent;
  q.run_dir = run.path();
  q.console_log = result.console_log;
  q.ack_socket = run / "ack.sock";
  q.accel = env.accel;
  if (spec.memory_mib > 0) q.memory_mib = spec.memory_mib;
  if (spec.cpus > 0) q.cpus = spec.cpus;
  q.keep_paths = KeepPathsFor(env.agent, spec.keep_paths, {spec.command, spec.checker});
  q.guest_modules = GuestModulesFor(spec.fs, log_writes, !spec.flakey.empty());
  GuestJob job;
  job.mode = GuestJob::Mode::kWorkload;
  job.fs = spec.fs;
  job.command = spec.command;
  job.checker = spec.checker;
  job.mount_options = spec.mount_options;
  job.flakey = spec.flakey;
  job.flakey_after_acks = spec.flakey_after_acks;
  const std::string log_disk = out + "/log-writes.img";
  if (spec.recording == Recording::kNbd) {
    result.trace = out + "/trace.log";
    harness::Recorder::Options ro;
    ro.log_path = result.trace;
    ro.sector_size = geometry.logical_sector;
    ro.device_bytes = bytes;
    ro.base_image = result.base_image;
    ASSIGN_OR_RETURN(recorder, harness::Recorder::Create(ro));
    NbdServer::Options no;
    no.socket_path = run / "nbd.sock";
    no.image_path = disk;
    no.recorder = recorder.get();
    no.atomic_unit = geometry.physical_sector;  // the live cut tears at the physical sector
    ASSIGN_OR_RETURN(nbd, NbdServer::Start(no));
    q.disks.push_back({.nbd_socket = no.socket_path,
                       .image_file = "",
                       .cache = spec.disk_cache,
                       .geometry = geometry});
  } else {
    q.disks.push_back(
        {.nbd_socket = "", .image_file = disk, .cache = spec.disk_cache, .geometry = geometry});
  }
  if (log_writes) {
    // The log holds a copy of every write plus one block per entry.
    RETURN_IF_ERROR(CreateSparseImage(log_disk, bytes * 2 + (64ull << 20)));
    // dm-log-writes writes its log in the data disk's logical sectors: same geometry.
    q.disks.push_back({.nbd_socket = "", .image_file = log_disk, .geometry = geometry});
    job.log_writes_serial = "powercut1";
  }
  RETURN_IF_ERROR(WriteAll(run / "job.json", GuestJobToJson(job)));

  // The cut moment. after=D: D after the workload started. random: after the N-th ack, at the
  // K-th write completion (NBD: the server fires it, see NbdServer::ArmCut), or, without the NBD
  // server, a delay after the N-th ack. The main thread waits `cut_delay` after `cut_trigger`.
  std::mt19937_64 rng(spec.cut.seed);
  std::chrono::milliseconds cut_delay{-1};
  uint64_t trigger_ack = 0;  // 0: the trigger is the workload start
  uint64_t cut_writes = 0;   // random with NBD: the K-th write completion after the trigger ack
  if (spec.cut.when == CutSpec::When::kAfter) cut_delay = spec.cut.after;
  if (spec.cut.when == CutSpec::When::kRandom) {
    trigger_ack = 1 + rng() % std::max<uint64_t>(1, spec.cut.random_max_acks);
    const uint64_t k = 1 + rng() % std::max<uint64_t>(1, spec.cut.random_max_writes);
    const auto delay = std::chrono::milliseconds(static_cast<int64_t>(
        rng() % static_cast<uint64_t>(std::max<int64_t>(1, spec.cut.random_window.count()))));
    if (nbd != nullptr) {
      cut_writes = k;
    } else {
      cut_delay = delay;
    }
  }
  std::atomic<Qemu*> qemu_for_cut{nullptr};
  std::atomic<bool> cut_fired{false};
  absl::Notification cut_trigger;
  std::atomic<int64_t> agent_start_ms{-1};
  const Clock::time_point t0 = Clock::now();

  AckChannel::Options ao;
  ao.socket_path = q.ack_socket;
  ao.ack_log_path = result.ack_log;
  ao.recorder = recorder.get();
  ao.on_ack = [&](uint64_t acks) {
    if (spec.cut.when == CutSpec::When::kAfterAcks && acks == spec.cut.after_acks &&
        !cut_fired.exchange(true)) {
      if (Qemu* qm = qemu_for_cut.load()) qm->SignalKill();
    }
    if (trigger_ack != 0 && acks == trigger_ack && !cut_trigger.HasBeenNotified()) {
      if (cut_writes != 0) {
        // Fired on the server's thread right after the K-th write completed, before its reply.
        nbd->ArmCut(cut_writes, [&] {
          if (!cut_fired.exchange(true)) {
            if (Qemu* qm = qemu_for_cut.load()) qm->SignalKill();
          }
        });
      }
      cut_trigger.Notify();
    }
  };
  ao.on_event = [&](const std::string& event) {
    if (event == "workload-start" && trigger_ack == 0 && !cut_trigger.HasBeenNotified()) {
      cut_trigger.Notify();
    }
    if (event == "agent-start") {
      agent_start_ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
    }
  };
  ASSIGN_OR_RETURN(std::unique_ptr<AckChannel> acks, AckChannel::Start(ao));

  ASSIGN_OR_RETURN(std::unique_ptr<Qemu> qemu, Qemu::Start(q));
  qemu_for_cut = qemu.get();
  const Clock::time_point deadline = Clock::now() + spec.timeout;
  auto remaining = [&] {
    return std::max(std::chrono::milliseconds(0),
                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
  };
  if (cut_delay.count() >= 0) {
    // Wait for the trigger (or the guest to end), then for the delay.
    bool ended = false;
    while (!cut_trigger.WaitForNotificationWithTimeout(absl::Milliseconds(200))) {
      if (qemu->Poll(std::chrono::milliseconds(0)).has_value() || remaining().count() == 0) {
        ended = true;
        break;
      }
    }
    if (!ended && !qemu->Poll(cut_delay).has_value() && !cut_fired.exchange(true)) {
      qemu->Kill();  // the power cut
    }
  }
  absl::StatusOr<int> exit_code = qemu->WaitForExit(remaining());
  result.wall_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  // The guest wrote these into the private folder; keep them with the outputs.
  result.workload_log = out + "/workload.log";
  for (const char* name : {"workload.log", "checker.log"}) {
    fs::copy_file(run / name, out + "/" + name, fs::copy_options::overwrite_existing, ec);
  }
  if (agent_start_ms >= 0) result.boot_seconds = static_cast<double>(agent_start_ms) / 1000.0;
  acks->Stop();
  result.host_acks = acks->acks();
  if (nbd != nullptr) {
    nbd->Stop();
    result.nbd_requests = nbd->requests();
    result.nbd_flushes = nbd->flushes();
    RETURN_IF_ERROR(nbd->status());
  }
  result.power_cut = cut_fired.load();
  if (!result.power_cut && !exit_code.ok()) return exit_code.status();  // hung guest

  if (result.power_cut) {
    if (nbd != nullptr) {
      ASSIGN_OR_RETURN(result.cut_report, nbd->ApplyPowerCut(spec.cut.model, spec.cut.seed));
    }
  } else {
    ASSIGN_OR_RETURN(result.guest, ReadGuestResult(run, *qemu));
    if (!result.guest.ok) return GuestStepError(result.guest, *qemu);
    RETURN_IF_ERROR(CheckGuestGeometry(result.guest, geometry));
  }
  // What both manifests say about the disk and its file system (docs/trace.md).
  auto describe_disk = [&](harness::TraceManifest& m) {
    m.logical_sector = geometry.logical_sector;
    m.physical_sector = geometry.physical_sector;
    m.fs = file_system.raw() ? "" : file_system.name;
    m.mkfs_command = result.mkfs_command;
    m.fs_block_size = result.fs_block_size;
  };
  if (recorder != nullptr) {
    RETURN_IF_ERROR(recorder->Finish());
    result.trace_entries = recorder->entries();
    result.manifest = harness::ManifestPathFor(result.trace);
    // The recorder names the base image by the path it hashed; the output folder must stay
    // movable, so name it relative to the manifest's folder (as for dm-log-writes below).
    ASSIGN_OR_RETURN(harness::TraceManifest m, harness::ReadManifest(result.manifest));
    m.base_image = fs::path(result.base_image)
                       .lexically_relative(fs::path(result.manifest).parent_path())
                       .string();
    describe_disk(m);
    RETURN_IF_ERROR(harness::WriteManifest(result.manifest, m));
  }
  if (log_writes && !result.power_cut) {
    // Keep only the used part of the log device: that is the trace.
    ASSIGN_OR_RETURN(uint64_t used, LogWritesUsedBytes(log_disk));
    fs::resize_file(log_disk, used, ec);
    std::string trace = out + (spec.also_log_writes ? "/log-writes.log" : "/trace.log");
    fs::rename(log_disk, trace, ec);
    if (ec) return absl::InternalError(fmt::format("cannot move {} to {}", log_disk, trace));
    ASSIGN_OR_RETURN(auto file,
                     harness::TraceFile::Open(trace, {.device_bytes = bytes, .name = trace}));
    ASSIGN_OR_RETURN(
        harness::TraceManifest m,
        harness::MakeManifest(result.base_image, file->trace().sector_size,
                              harness::OrderSemantics::kFlushEpoch, file->trace().entries.size()));
    m.base_image = "base.img";
    describe_disk(m);
    std::string manifest = harness::ManifestPathFor(trace);
    RETURN_IF_ERROR(harness::WriteManifest(manifest, m));
    if (spec.also_log_writes) {
      result.log_writes_trace = trace;
      result.log_writes_manifest = manifest;
    } else {
      result.trace = trace;
      result.manifest = manifest;
      result.trace_entries = file->trace().entries.size();
    }
  } else {
    fs::remove(log_disk, ec);
  }
  fs::rename(disk, result.final_image, ec);
  if (ec) return absl::InternalError(fmt::format("cannot move {} to {}", disk, result.final_image));
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
  ASSIGN_OR_RETURN(RunFolder run, RunFolder::Create("powercut-vm", "/tmp"));
  QemuOptions q;
  q.kernel = env.kernel.vmlinuz;
  q.initramfs = env.initramfs.path;
  q.agent = env.agent;
  q.run_dir = run.path();
  q.console_log = run / "console.log";
  q.accel = env.accel;
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
  ASSIGN_OR_RETURN(GuestResult r, ReadGuestResult(run, *qemu));
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
