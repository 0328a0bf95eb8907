// One recording on a warm guest (WarmGuest::Record, warm_guest.h): the disks made and the
// recorder started on the host, the disks hot-plugged, the job sent and waited for (with a live
// power cut armed), the disks unplugged, the fresh-disk proof checked and the outputs written.
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>

#include "absl/synchronization/notification.h"
#include "base/hash.h"
#include "base/image_io.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/vm/warm/cut.h"
#include "harness/vm/warm/recording.h"
#include "harness/vm/warm/warm_guest.h"

namespace powercut::vm {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The agent hashes this much of every fresh disk (O_DIRECT and page cache) and the host compares
// it with base.img: the proof, per recording, that the guest sees no block of a previous disk.
constexpr uint64_t kHeadHashBytes = 1 << 20;

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
  j.node_cut_disk = spec.node_cut_disk;
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
    if (event == "node-cut") {
      // The guest's disk is switched to `error`: nothing of it is in flight. The drive loses
      // its cache now; the guest waits for the answer before it kills the node.
      absl::Status cut =
          ApplyNodeCut(spec, rec, fs::path(spec.output_dir) / "node-cut.img", &result->node_cut);
      if (!cut.ok()) result->node_cut.error = std::string(cut.message());
      (void)channel_->Send(cut.ok() ? fmt::format("job {} node-cut-done", job.id)
                                    : fmt::format("job {} node-cut-failed {}", job.id,
                                                  std::string(cut.message()).substr(0, 200)));
      return;
    }
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

absl::Status WarmGuest::ApplyNodeCut(const RunSpec& spec, Recorders& rec,
                                     const std::filesystem::path& snapshot, NodeCutRecord* cut) {
  if (cut->fired) return absl::FailedPreconditionError("a second node cut in one recording");
  const auto disk = static_cast<uint32_t>(spec.node_cut_disk);
  NbdServer* server = disk == 0                         ? rec.nbd.get()
                      : disk - 1 < rec.extra_nbd.size() ? rec.extra_nbd[disk - 1].get()
                                                        : nullptr;
  if (server == nullptr || rec.recorder == nullptr || spec.node_cut_disk < 0) {
    return absl::FailedPreconditionError("this recording has no node cut armed");
  }
  cut->fired = true;
  cut->disk = disk;
  cut->point = rec.recorder->entries();
  RETURN_IF_ERROR(rec.recorder->RecordMark(fmt::format("node-cut:{}", disk + 1)));
  harness::CacheModel model = spec.node_cut_model;
  if (model.atomic_unit == 0) {
    // The drive writes its physical sector atomically (as ApplyPowerCut's tearing).
    const harness::SectorFormat sector =
        disk == 0 ? spec.sector : spec.extra_disks[disk - 1].sector.value_or(spec.sector);
    model.atomic_unit = harness::GeometryOf(sector).physical_sector;
  }
  ASSIGN_OR_RETURN(cut->report, server->ApplyNodeCut(model, spec.node_cut_seed));
  RETURN_IF_ERROR(CopySparse(server->image_path(), snapshot.string()));
  cut->image = snapshot.string();
  return absl::OkStatus();
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

}  // namespace powercut::vm
