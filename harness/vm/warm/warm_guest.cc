// A warm guest's life: its boot, the disks plugged into it and out of it over QMP, and one agent
// job on the disks attached (warm_guest.h). One recording on it is warm_guest_recording.cc.
#include "harness/vm/warm/warm_guest.h"

#include <algorithm>
#include <string>

#include "absl/synchronization/notification.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace powercut::vm {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr std::chrono::seconds kQmpTimeout{30};

}  // namespace

std::chrono::milliseconds WarmGuest::Until(Clock::time_point t) {
  return std::max(std::chrono::milliseconds(0),
                  std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()));
}

std::string WarmGuest::Job::Serial(size_t i) const {
  if (i == 0) return fmt::format("powercut-{}", id);
  return log_writes ? fmt::format("powercut-{}-log", id)
                    : fmt::format("powercut-{}-d{}", id, i + 1);
}

std::string WarmGuest::Job::Device(size_t i) const { return fmt::format("pcdev{}-{}", id, i); }

std::string WarmGuest::Job::Node(size_t i) const { return fmt::format("pcnode{}-{}", id, i); }

GuestConfig GuestConfigFor(const VmEnvironment& env, const RunSpec& spec) {
  const bool log_writes = spec.recording == Recording::kLogWrites || spec.also_log_writes;
  GuestConfig c;
  c.Add({.modules = GuestModulesFor(spec.fs, log_writes, spec.flakey.has_value()),
         .keep_paths = KeepPathsFor(env.agent, spec.keep_paths, {spec.command, spec.checker}),
         .memory_mib = spec.memory_mib,
         .cpus = spec.cpus});
  for (const RunSpec::ExtraDisk& d : spec.extra_disks) {
    c.Add({.modules = GuestModulesFor(d.fs, false, false)});
  }
  // A node cut switches its disk's dm table (linear and error are dm-mod's own targets).
  if (spec.node_cut_disk >= 0) c.Add({.modules = {"dm-mod"}});
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
  // The agent's own folder always: a guest whose host root hides it (a build under /tmp, which the
  // guest replaces with its own tmpfs unless kept) never starts its agent.
  q.keep_paths = KeepPathsFor(env_.agent, options_.config.keep_paths, {});
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
  // The job and its result travel inline on the agent's port (GuestJobToLine): no file in the
  // run folder, whose 9p round trips cost a TCG guest more than the line does.
  // Shared with the channel's callback, which may still hold them until EndJob returned. The
  // result line comes before job-done on the channel's thread, and the notification orders it
  // before this thread reads it.
  auto done = std::make_shared<absl::Notification>();
  auto result_line = std::make_shared<std::string>();
  AckChannel::Options sink;
  sink.on_event = [done, result_line](const std::string& event) {
    if (done->HasBeenNotified()) return;
    if (event.rfind(kJobResultEvent, 0) == 0) {
      *result_line = event.substr(std::char_traits<char>::length(kJobResultEvent));
    } else if (event.rfind("job-done", 0) == 0) {
      done->Notify();
    }
  };
  RETURN_IF_ERROR(channel_->BeginJob(id, sink));
  absl::Status sent = channel_->Send(fmt::format("job {} inline {}", id, GuestJobToLine(job)));
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
  if (result_line->empty()) {
    Discard();
    return absl::InternalError(
        fmt::format("guest: the agent ended job {} without its result; last console lines:\n{}", id,
                    qemu_->ConsoleTail()));
  }
  absl::StatusOr<GuestResult> r = GuestResultFromJson(*result_line);
  if (!r.ok()) Discard();
  return r;
}

}  // namespace powercut::vm
