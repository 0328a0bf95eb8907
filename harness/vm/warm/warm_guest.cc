#include "harness/vm/warm_guest.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>

#include "absl/synchronization/notification.h"
#include "base/hash.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/vm/cut.h"
#include "harness/vm/recording.h"

namespace powercut::vm {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

// The agent hashes this much of every fresh disk (O_DIRECT and page cache) and the host compares
// it with base.img: the proof, per recording, that the guest sees no block of a previous disk.
constexpr uint64_t kHeadHashBytes = 1 << 20;
constexpr std::chrono::seconds kQmpTimeout{30};

std::chrono::milliseconds Until(Clock::time_point t) {
  return std::max(std::chrono::milliseconds(0),
                  std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()));
}

int64_t NowNs() { return Clock::now().time_since_epoch().count(); }

// XXH3-128 of the first `bytes` of a host image.
absl::StatusOr<std::string> HashImageHead(const std::string& path, uint64_t bytes) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buf(bytes);
  in.read(buf.data(), static_cast<std::streamsize>(bytes));
  if (static_cast<uint64_t>(in.gcount()) != bytes) {
    return absl::InternalError(fmt::format("cannot read the first {} bytes of {}", bytes, path));
  }
  return HashBytes({reinterpret_cast<const uint8_t*>(buf.data()), buf.size()}).Hex();
}

}  // namespace

// Appends the time since the previous mark to a recording's phases (RunResult::phases).
class WarmGuest::PhaseClock {
 public:
  explicit PhaseClock(std::vector<std::pair<std::string, double>>* phases) : phases_(phases) {}
  void Mark(const std::string& phase) { MarkAt(phase, NowNs()); }
  // A phase that ended at `ns` (steady clock), e.g. an event the agent sent; ignored when the
  // event never came (a cut, a failed step).
  void MarkAt(const std::string& phase, int64_t ns) {
    if (ns < last_ns_) return;
    phases_->emplace_back(phase, static_cast<double>(ns - last_ns_) / 1e9);
    last_ns_ = ns;
  }

 private:
  std::vector<std::pair<std::string, double>>* phases_;
  int64_t last_ns_ = NowNs();
};

// What the callbacks of one job share with the thread waiting for it.
struct WarmGuest::JobState {
  std::atomic<bool> cut_fired{false};
  std::atomic<int64_t> trigger_ns{-1};  // when the cut's trigger happened (steady clock)
  absl::Notification done;              // `job <id> event job-done`
  std::atomic<int64_t> workload_start_ns{-1}, workload_exit_ns{-1};
  std::atomic<int64_t> done_ns{-1};  // when job-done arrived
};

struct WarmGuest::Job {
  uint64_t id = 0;
  uint64_t bytes = 0;  // the disk under test's size
  std::vector<GuestDisk> disks;
  // disks[1] is dm-log-writes' log; otherwise disks[1..] are disks 2..N of a set.
  bool log_writes = false;
  std::string Serial(size_t i) const {
    if (i == 0) return fmt::format("powercut-{}", id);
    return log_writes ? fmt::format("powercut-{}-log", id)
                      : fmt::format("powercut-{}-d{}", id, i + 1);
  }
  std::string Device(size_t i) const { return fmt::format("pcdev{}-{}", id, i); }
  std::string Node(size_t i) const { return fmt::format("pcnode{}-{}", id, i); }
};

GuestConfig GuestConfigFor(const VmEnvironment& env, const RunSpec& spec) {
  const bool log_writes = spec.recording == Recording::kLogWrites || spec.also_log_writes;
  GuestConfig c;
  c.Add({.modules = GuestModulesFor(spec.fs, log_writes, !spec.flakey.empty()),
         .keep_paths = KeepPathsFor(env.agent, spec.keep_paths, {spec.command, spec.checker}),
         .memory_mib = spec.memory_mib,
         .cpus = spec.cpus});
  for (const RunSpec::ExtraDisk& d : spec.extra_disks) {
    c.Add({.modules = GuestModulesFor(d.fs, false, false)});
  }
  return c;
}

absl::StatusOr<std::unique_ptr<WarmGuest>> WarmGuest::Boot(const VmEnvironment& env,
                                                           const Options& options) {
  ASSIGN_OR_RETURN(RunFolder run, CreateRunFolder());
  std::unique_ptr<WarmGuest> guest(new WarmGuest(env, options, std::move(run)));
  RETURN_IF_ERROR(guest->Start());
  return guest;
}

WarmGuest::~WarmGuest() { Shutdown(); }

std::string WarmGuest::HintLine(const std::string& console) const {
  std::string hint = BootFailureHint(env_, console);
  return hint.empty() ? "" : hint + "\n";
}

absl::Status WarmGuest::Start() {
  const Clock::time_point t0 = Clock::now();
  // Shared with the channel, whose idle sink keeps the callback after Start returned.
  auto ready = std::make_shared<absl::Notification>();
  AckChannel::Options channel;
  channel.socket_path = run_ / "ack.sock";
  channel.on_event = [ready](const std::string& event) {
    if (event.rfind("agent-start", 0) == 0 && !ready->HasBeenNotified()) ready->Notify();
  };
  ASSIGN_OR_RETURN(channel_, AckChannel::Start(channel));
  ASSIGN_OR_RETURN(QmpListener listener, QmpListener::Listen(run_ / "qmp.sock"));
  QemuOptions q = QemuOptionsFor(env_, run_.path());
  q.ack_socket = channel.socket_path;
  q.qmp_socket = listener.socket_path();
  q.serve = true;
  q.keep_paths = options_.config.keep_paths;
  q.guest_modules = options_.config.modules;
  // The size the run asked for (lost when recordings moved to warm guests; the guest sizing VM
  // test, tests/workloads/databases_vm_test.cc, saw nproc 1 and MemTotal 723 MB).
  if (options_.config.memory_mib != 0) q.memory_mib = options_.config.memory_mib;
  if (options_.config.cpus != 0) q.cpus = options_.config.cpus;
  ASSIGN_OR_RETURN(qemu_, Qemu::Start(q));
  absl::StatusOr<std::unique_ptr<QmpClient>> qmp = QmpClient::Accept(listener, kQmpTimeout);
  if (!qmp.ok()) {
    qemu_->Kill();
    return absl::UnavailableError(fmt::format("qemu start: {}; last console lines:\n{}",
                                              std::string(qmp.status().message()),
                                              qemu_->ConsoleTail()));
  }
  qmp_ = std::move(*qmp);
  const Clock::time_point deadline = t0 + options_.boot_timeout;
  while (!ready->WaitForNotificationWithTimeout(absl::Milliseconds(100))) {
    if (std::optional<int> code = qemu_->Poll(std::chrono::milliseconds(0))) {
      const std::string tail = qemu_->ConsoleTail();
      return absl::InternalError(
          fmt::format("{}the guest ended (qemu exit {}) before its agent started; last console "
                      "lines:\n{}",
                      HintLine(tail), *code, tail));
    }
    if (Clock::now() >= deadline) {
      qemu_->Kill();
      const std::string tail = qemu_->ConsoleTail();
      return absl::DeadlineExceededError(fmt::format(
          "{}the guest did not boot within {} s and was killed; last console lines:\n{}",
          HintLine(tail), options_.boot_timeout.count(), tail));
    }
  }
  boot_seconds_ = std::chrono::duration<double>(Clock::now() - t0).count();
  usable_ = true;
  return absl::OkStatus();
}

void WarmGuest::Discard() {
  usable_ = false;
  if (qemu_ != nullptr) qemu_->Kill();
}

void WarmGuest::Shutdown() {
  // Nothing in the guest needs a clean power-off (its disks were detached and it has no state of
  // its own), so the guest is killed: no wait for the kernel to shut down.
  Discard();
  if (channel_ != nullptr) channel_->Stop();
  qmp_.reset();
}

absl::Status WarmGuest::Attach(const Job& job) {
  for (size_t i = 0; i < job.disks.size(); ++i) {
    const GuestDisk& d = job.disks[i];
    json node = {{"driver", "raw"}, {"node-name", job.Node(i)}};
    if (!d.nbd_socket.empty()) {
      node["file"] = {{"driver", "nbd"}, {"server", {{"type", "unix"}, {"path", d.nbd_socket}}}};
    } else {
      node["file"] = {{"driver", "file"}, {"filename", d.image_file}};
      // kDefault: cache=unsafe (the host's durability of a scratch image does not matter; the
      // guest still sees a volatile write cache, which dm-log-writes needs to see FLUSH/FUA).
      node["cache"] = {{"no-flush", d.cache == DiskCache::kDefault}};
    }
    RETURN_IF_ERROR(qmp_->Execute("blockdev-add", node, kQmpTimeout).status());
    json device = {{"driver", "virtio-blk-pci"},
                   {"id", job.Device(i)},
                   {"drive", job.Node(i)},
                   {"serial", job.Serial(i)},
                   {"logical_block_size", d.geometry.logical_sector},
                   {"physical_block_size", d.geometry.physical_sector},
                   // write back: the guest sees a volatile cache and sends FLUSH (the recorder
                   // needs them); write through only when asked (walbench cache).
                   {"write-cache", d.cache == DiskCache::kWriteThrough ? "off" : "on"}};
    RETURN_IF_ERROR(qmp_->Execute("device_add", device, kQmpTimeout).status());
  }
  return absl::OkStatus();
}

absl::Status WarmGuest::Detach(const Job& job) {
  // ACPI hot-unplug: device_del asks the guest to eject; DEVICE_DELETED says it did.
  for (size_t i = 0; i < job.disks.size(); ++i) {
    RETURN_IF_ERROR(qmp_->Execute("device_del", {{"id", job.Device(i)}}, kQmpTimeout).status());
  }
  for (size_t i = 0; i < job.disks.size(); ++i) {
    absl::Status s =
        qmp_->WaitForEvent("DEVICE_DELETED", "device", job.Device(i), options_.release_timeout);
    if (!s.ok()) {
      return absl::DeadlineExceededError(
          fmt::format("the guest did not release disk {} within {} ms of device_del ({})",
                      job.Serial(i), options_.release_timeout.count(), std::string(s.message())));
    }
  }
  for (size_t i = 0; i < job.disks.size(); ++i) {
    RETURN_IF_ERROR(
        qmp_->Execute("blockdev-del", {{"node-name", job.Node(i)}}, kQmpTimeout).status());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> WarmGuest::AttachDisk(const GuestDisk& disk) {
  if (!usable_) return absl::FailedPreconditionError("this guest was killed; boot a new one");
  Job job;
  job.id = ++jobs_;
  job.disks = {disk};
  if (absl::Status s = Attach(job); !s.ok()) {
    Discard();
    return absl::InternalError(
        fmt::format("attaching a disk to the guest failed: {}; the guest was killed",
                    std::string(s.message())));
  }
  attached_.push_back({job.id, disk});
  return job.Serial(0);
}

absl::Status WarmGuest::DetachDisk(const std::string& serial) {
  Job job;
  auto it = std::find_if(attached_.begin(), attached_.end(), [&](const AttachedDisk& a) {
    job.id = a.job_id;
    return job.Serial(0) == serial;
  });
  if (it == attached_.end()) return absl::OkStatus();
  job.disks = {it->disk};
  attached_.erase(it);
  if (!usable_) return absl::OkStatus();
  absl::Status s = Detach(job);
  if (!s.ok()) Discard();
  return s;
}

absl::StatusOr<GuestResult> WarmGuest::RunAgentJob(GuestJob job, std::chrono::seconds timeout) {
  if (!usable_) return absl::FailedPreconditionError("this guest was killed; boot a new one");
  job.job_id = ++jobs_;
  const uint64_t id = job.job_id;
  const std::string job_file = run_ / JobFileName("job", id, "json");
  const std::string result_file = JobFileName("result", id, "json");
  RETURN_IF_ERROR(WriteAll(job_file, GuestJobToJson(job)));
  // Shared with the channel's callback, which may still hold it until EndJob returned.
  auto done = std::make_shared<absl::Notification>();
  AckChannel::Options sink;
  sink.on_event = [done](const std::string& event) {
    if (event.rfind("job-done", 0) == 0 && !done->HasBeenNotified()) done->Notify();
  };
  RETURN_IF_ERROR(channel_->BeginJob(id, sink));
  absl::Status sent = channel_->Send(fmt::format("job {}", id));
  const Clock::time_point deadline = Clock::now() + timeout;
  bool exited = !sent.ok();
  while (!exited && !done->HasBeenNotified() && Clock::now() < deadline) {
    if (qemu_->Poll(std::chrono::milliseconds(0)).has_value()) {
      exited = true;
      break;
    }
    done->WaitForNotificationWithTimeout(
        absl::FromChrono(std::min(Until(deadline), std::chrono::milliseconds(100))));
  }
  channel_->EndJob();
  std::error_code ec;
  fs::remove(job_file, ec);
  if (!done->HasBeenNotified()) {
    const std::string tail = qemu_->ConsoleTail();
    Discard();
    if (exited) {
      return absl::UnavailableError(
          fmt::format("the guest died during job {}; last console lines:\n{}", id, tail));
    }
    return absl::DeadlineExceededError(fmt::format(
        "job {} did not finish within {} s; the guest was killed; last console lines:\n{}", id,
        timeout.count(), tail));
  }
  absl::StatusOr<GuestResult> r = ReadGuestResult(run_, result_file, *qemu_);
  fs::remove(run_ / result_file, ec);
  if (!r.ok()) Discard();
  return r;
}

GuestJob WarmGuest::JobFor(const RunSpec& spec, const Job& job) {
  GuestJob j;
  j.mode = GuestJob::Mode::kWorkload;
  j.job_id = job.id;
  j.fs = spec.fs;
  j.disk_serial = job.Serial(0);
  if (job.log_writes) j.log_writes_serial = job.Serial(1);
  for (size_t i = 0; i < spec.extra_disks.size(); ++i) {
    j.extra_disks.push_back({.disk_serial = job.Serial(i + 1), .fs = spec.extra_disks[i].fs});
  }
  j.command = spec.command;
  j.checker = spec.checker;
  j.mount_options = spec.mount_options;
  j.flakey = spec.flakey;
  j.flakey_after_acks = spec.flakey_after_acks;
  j.flakey_heal_ms = spec.flakey_for.count();
  j.flakey_disk = spec.flakey_disk;
  j.sync_acks = spec.sync_acks;
  j.head_hash_bytes = std::min(kHeadHashBytes, job.bytes);
  return j;
}

absl::StatusOr<RunResult> WarmGuest::Record(const RunSpec& spec, BaseImageCache* bases) {
  RETURN_IF_ERROR(ValidateRunSpec(spec));
  if (!usable_) {
    return absl::FailedPreconditionError("this guest was killed; boot a new one (GuestPool does)");
  }
  RunResult result;
  result.accel = env_.accel;
  PhaseClock clock(&result.phases);
  ASSIGN_OR_RETURN(RecordingDisks disks, PrepareDisks(spec, &result, bases));
  clock.Mark("disk");
  Job job;
  job.id = ++jobs_;
  job.bytes = disks.bytes;
  JobState state;  // before the recorders: the NBD server's cut callback uses it until Stop()
  ASSIGN_OR_RETURN(Recorders rec,
                   StartRecorder(spec, disks, run_ / fmt::format("nbd-{}.sock", job.id), &result));
  job.disks = GuestDisksFor(spec, disks, rec);
  job.log_writes = !disks.log_disk.empty();
  const GuestJob guest_job = JobFor(spec, job);
  RETURN_IF_ERROR(WriteAll(run_ / JobFileName("job", job.id, "json"), GuestJobToJson(guest_job)));
  clock.Mark("recorder");
  if (absl::Status s = Attach(job); !s.ok()) {
    Discard();
    return absl::InternalError(
        fmt::format("attaching the disk to the guest failed: {}; the guest was killed",
                    std::string(s.message())));
  }
  clock.Mark("attach");
  const Clock::time_point t0 = Clock::now();
  absl::Status ran = RunJob(spec, job, rec, &state, &result, &clock);
  result.wall_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  CollectLogs(job, disks.out);
  if (rec.nbd != nullptr) {
    rec.nbd->Stop();
    result.nbd_requests = rec.nbd->requests();
    result.nbd_flushes = rec.nbd->flushes();
  }
  for (auto& extra : rec.extra_nbd) {
    extra->Stop();
    result.nbd_requests += extra->requests();
    result.nbd_flushes += extra->flushes();
  }
  RETURN_IF_ERROR(ran);
  if (rec.nbd != nullptr) RETURN_IF_ERROR(rec.nbd->status());
  for (auto& extra : rec.extra_nbd) RETURN_IF_ERROR(extra->status());
  if (result.power_cut && rec.nbd != nullptr) {
    harness::CacheModel model = spec.cut.model;
    model.disk_modes.clear();
    model.mode = spec.cut.model.ModeOf(0);
    ASSIGN_OR_RETURN(result.cut_report, rec.nbd->ApplyPowerCut(model, spec.cut.seed));
    // Every disk loses power at once, each under its own model.
    for (size_t i = 0; i < rec.extra_nbd.size(); ++i) {
      model.mode = spec.cut.model.ModeOf(static_cast<uint32_t>(i + 1));
      ASSIGN_OR_RETURN(PowerCutReport extra,
                       rec.extra_nbd[i]->ApplyPowerCut(model, spec.cut.seed + i + 1,
                                                       /*may_tear=*/false));
      result.extra_cut_reports.push_back(std::move(extra));
    }
  }
  RETURN_IF_ERROR(WriteRecordingOutputs(spec, disks, rec.recorder.get(), &result));
  clock.Mark("outputs");
  return result;
}

void WarmGuest::CollectLogs(const Job& job, const std::string& out) {
  // The guest wrote these into the shared folder; keep them with the outputs.
  std::error_code ec;
  for (const char* stem : {"workload", "checker"}) {
    fs::copy_file(run_ / JobFileName(stem, job.id, "log"), fmt::format("{}/{}.log", out, stem),
                  fs::copy_options::overwrite_existing, ec);
  }
  fs::copy_file(run_ / "console.log", out + "/console.log", fs::copy_options::overwrite_existing,
                ec);
  // The workload's $POWERCUT_OUTPUT, when it wrote one (moved: it can be large, and the run
  // folder is shared with the next job).
  const fs::path output = run_ / JobFileName("output", job.id, "txt");
  if (fs::exists(output, ec)) {
    fs::rename(output, out + "/output.txt", ec);
    if (ec) fs::copy_file(output, out + "/output.txt", fs::copy_options::overwrite_existing, ec);
  }
}

absl::Status WarmGuest::RunJob(const RunSpec& spec, const Job& job, Recorders& rec, JobState* state,
                               RunResult* result, PhaseClock* clock) {
  const CutPlan plan = PlanCut(spec.cut, rec.nbd != nullptr);
  auto cut_now = [this, state] {
    if (!state->cut_fired.exchange(true)) qemu_->SignalKill();
  };
  AckChannel::Options sink;
  sink.ack_log_path = result->ack_log;
  sink.recorder = rec.recorder.get();
  sink.confirm_acks = spec.sync_acks;
  sink.on_ack = [&, state](uint64_t acks) {
    if (spec.cut.when == CutSpec::When::kAfterAcks && acks == spec.cut.after_acks) cut_now();
    if (plan.trigger_ack != 0 && acks == plan.trigger_ack && state->trigger_ns < 0) {
      // Fired on the server's thread right after the K-th write completed, before its reply.
      if (plan.nbd_writes != 0) rec.nbd->ArmCut(plan.nbd_writes, cut_now);
      state->trigger_ns = NowNs();
    }
  };
  sink.on_event = [&, state](const std::string& event) {
    if (event == "workload-start") {
      state->workload_start_ns = NowNs();
      if (plan.trigger_ack == 0 && state->trigger_ns < 0) state->trigger_ns.store(NowNs());
    }
    if (event.rfind("workload-exit", 0) == 0) state->workload_exit_ns = NowNs();
    if (event.rfind("job-done", 0) == 0 && !state->done.HasBeenNotified()) {
      state->done_ns = NowNs();
      state->done.Notify();
    }
  };
  RETURN_IF_ERROR(channel_->BeginJob(job.id, sink));
  absl::Status sent = channel_->Send(fmt::format("job {}", job.id));
  const JobEnd end = sent.ok() ? WaitForJob(spec, plan, state) : JobEnd::kExited;
  if (end == JobEnd::kExited) channel_->WaitForPeerClose(std::chrono::seconds(5));
  result->host_acks = channel_->acks();
  channel_->EndJob();
  if (state->workload_start_ns >= 0) {
    const int64_t exit_ns = state->workload_exit_ns >= 0 ? state->workload_exit_ns.load() : NowNs();
    result->workload_seconds = static_cast<double>(exit_ns - state->workload_start_ns) / 1e9;
  }
  result->power_cut = state->cut_fired.load();
  if (result->power_cut) {
    usable_ = false;  // qemu was killed: the pool boots another guest
    return absl::OkStatus();
  }
  if (end == JobEnd::kTimedOut) {
    std::string tail = qemu_->ConsoleTail();
    Discard();
    return absl::DeadlineExceededError(fmt::format(
        "the recording did not finish within {} s; the guest was killed (a new one takes the "
        "next recording); last console lines:\n{}",
        spec.timeout.count(), tail));
  }
  if (end == JobEnd::kExited) {
    usable_ = false;
    return absl::InternalError(fmt::format(
        "the guest died during the recording{}; last console lines:\n{}",
        sent.ok() ? "" : fmt::format(" ({})", std::string(sent.message())), qemu_->ConsoleTail()));
  }
  clock->MarkAt("guest-setup", state->workload_start_ns);
  clock->MarkAt("workload", state->workload_exit_ns);
  clock->MarkAt("guest-teardown", state->done_ns);
  return FinishJob(job, result, clock);
}

WarmGuest::JobEnd WarmGuest::WaitForJob(const RunSpec& spec, const CutPlan& plan, JobState* state) {
  const Clock::time_point deadline = Clock::now() + spec.timeout;
  for (;;) {
    if (state->done.HasBeenNotified()) return JobEnd::kDone;
    if (qemu_->Poll(std::chrono::milliseconds(0)).has_value()) return JobEnd::kExited;
    std::chrono::milliseconds wait = std::min(Until(deadline), std::chrono::milliseconds(100));
    if (plan.delay.count() >= 0 && state->trigger_ns >= 0) {
      // A timed cut: `delay` after its trigger (the workload's start or an ack).
      const auto cut_at = Clock::time_point(Clock::duration(state->trigger_ns.load())) + plan.delay;
      if (Clock::now() >= cut_at) {
        if (!state->cut_fired.exchange(true)) qemu_->Kill();
        return JobEnd::kExited;
      }
      wait = std::min(wait, Until(cut_at));
    }
    if (Clock::now() >= deadline) return JobEnd::kTimedOut;
    state->done.WaitForNotificationWithTimeout(absl::FromChrono(wait));
  }
}

absl::Status WarmGuest::FinishJob(const Job& job, RunResult* result, PhaseClock* clock) {
  absl::StatusOr<GuestResult> guest =
      ReadGuestResult(run_, JobFileName("result", job.id, "json"), *qemu_);
  if (!guest.ok()) {
    Discard();
    return guest.status();
  }
  result->guest = std::move(*guest);
  if (!result->guest.ok) {
    // The agent stopped half-way (a mount, an unmount, a dm device, a disk it could not
    // release): the guest's state is unknown, so it is not used again.
    absl::Status step = GuestStepError(result->guest, *qemu_);
    Discard();
    return absl::Status(
        step.code(), fmt::format("{}\n(the guest was killed; a new one takes the next recording)",
                                 std::string(step.message())));
  }
  if (absl::Status s = Detach(job); !s.ok()) {
    Discard();
    return absl::FailedPreconditionError(fmt::format(
        "{}; the guest was killed (a new one takes the next recording)", std::string(s.message())));
  }
  clock->Mark("detach");
  ASSIGN_OR_RETURN(std::string host,
                   HashImageHead(result->base_image, std::min(kHeadHashBytes, job.bytes)));
  clock->Mark("proof");
  const GuestResult& g = result->guest;
  if (g.head_hash_direct != host || g.head_hash_cached != host) {
    Discard();
    return absl::InternalError(fmt::format(
        "the guest read a disk whose first {} bytes differ from base.img (O_DIRECT {}, page "
        "cache {}, host {}): it may see blocks of an earlier disk; the guest was killed",
        std::min(kHeadHashBytes, job.bytes), g.head_hash_direct, g.head_hash_cached, host));
  }
  return CheckGuestGeometry(g, result->geometry);
}

namespace {

// `preload` without the modules the kernel lacks: a recording that needs one fails on its own
// (RequireModules), the others still run.
GuestConfig LoadableOnly(const VmEnvironment& env, GuestConfig preload) {
  std::erase_if(preload.modules, [&](const std::string& m) {
    return std::find(env.missing_modules.begin(), env.missing_modules.end(), m) !=
           env.missing_modules.end();
  });
  return preload;
}

}  // namespace

GuestPool::GuestPool(const VmEnvironment& env, GuestConfig preload,
                     std::chrono::milliseconds release_timeout, int guests)
    : env_(env),
      preload_(LoadableOnly(env, std::move(preload))),
      release_timeout_(release_timeout) {
  for (int i = 0; i < std::max(guests, 1); ++i) slots_.push_back(std::make_unique<Slot>());
}

GuestPool::~GuestPool() { Shutdown(); }

void GuestPool::Shutdown() {
  absl::MutexLock lock(&mu_);
  for (auto& slot : slots_) slot->guest.reset();
}

uint64_t GuestPool::boots() const {
  absl::MutexLock lock(&mu_);
  return boots_;
}

uint64_t GuestPool::boot_failures() const {
  absl::MutexLock lock(&mu_);
  return boot_failures_;
}

absl::StatusOr<RunResult> GuestPool::Record(const RunSpec& spec) {
  RETURN_IF_ERROR(ValidateRunSpec(spec));  // before any guest boots
  const GuestConfig need = GuestConfigFor(env_, spec);
  RETURN_IF_ERROR(RequireModules(env_, need.modules,
                                 fmt::format("a recording on {}", harness::FsName(spec.fs))));
  Slot* slot = nullptr;
  {
    // A free slot, preferring a warm guest that covers the recording.
    absl::MutexLock lock(&mu_);
    auto free = [this] {
      mu_.AssertHeld();
      return std::any_of(slots_.begin(), slots_.end(), [](const auto& s) { return !s->busy; });
    };
    mu_.Await(absl::Condition(&free));
    for (auto& s : slots_) {
      if (s->busy) continue;
      const bool warm =
          s->guest != nullptr && s->guest->usable() && s->guest->config().Covers(need);
      if (slot == nullptr || warm) slot = s.get();
      if (warm) break;
    }
    slot->busy = true;
  }
  std::unique_ptr<WarmGuest>& guest = slot->guest;
  if (guest != nullptr && (!guest->usable() || !guest->config().Covers(need))) guest.reset();
  bool booted = false;
  std::string first_boot_failure;
  absl::StatusOr<RunResult> r = absl::UnknownError("not recorded");
  if (guest == nullptr) {
    WarmGuest::Options o;
    o.config = preload_;
    o.config.Add(need);
    // A short per-recording timeout (a test of a hang) must not fail the boot before it.
    o.boot_timeout = std::max(spec.timeout, std::chrono::seconds(300));
    o.release_timeout = release_timeout_;
    absl::StatusOr<std::unique_ptr<WarmGuest>> boot = WarmGuest::Boot(env_, o);
    if (!boot.ok()) {
      // One more boot: under TCG on a loaded host a boot can fail for the host's reasons (a
      // timer check that missed its ticks, measured at load 11-17); a kernel that cannot boot
      // fails the second time too, and the error then says both.
      first_boot_failure = std::string(boot.status().message());
      boot = WarmGuest::Boot(env_, o);
      if (!boot.ok()) {
        boot = absl::Status(boot.status().code(),
                            fmt::format("the guest failed to boot twice; the first time: {}\nthe "
                                        "second time: {}",
                                        first_boot_failure, std::string(boot.status().message())));
      }
    }
    if (boot.ok()) {
      guest = std::move(*boot);
      booted = true;
    } else {
      r = boot.status();
    }
  }
  if (guest != nullptr) {
    r = guest->Record(spec, &slot->bases);
    if (r.ok()) {
      r->boot_seconds = booted ? guest->boot_seconds() : 0;
      r->reused_guest = !booted;
      r->boot_failure = first_boot_failure;
    }
    if (!guest->usable()) guest.reset();
  }
  absl::MutexLock lock(&mu_);
  boots_ += booted ? 1 : 0;
  boot_failures_ += first_boot_failure.empty() ? 0 : 1;
  slot->busy = false;
  return r;
}

}  // namespace powercut::vm
