#include "harness/vm/warm/guest_judge.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string_view>

#include "base/image_io.h"
#include "base/scratch_dir.h"
#include "base/status_macros.h"
#include "base/tsan_mutex.h"
#include "fmt/format.h"
#include "harness/check/boot_recovery.h"
#include "harness/check/checker.h"
#include "harness/vm/devices/state_server.h"
#include "harness/vm/machine/guest_config.h"
#include "harness/vm/machine/run_folder.h"

namespace powercut::vm {
namespace {

// Beyond the checker's own timeout (enforced by the agent): the boot path, the mount, the
// unmount; a job past both is a hung guest.
constexpr std::chrono::seconds kJobMargin{120};

harness::ImageCheckResult FromGuest(const GuestResult& g) {
  harness::ImageCheckResult out;
  out.method = kGuestCheckMethod;
  out.kernel = g.kernel;
  for (const GuestResult::FsStep& s : g.fs_steps) {
    out.fs.steps.push_back(
        {.name = s.name, .exit_code = s.exit_code, .changed = s.changed, .detail = s.detail});
  }
  out.fs.repaired = g.fs_repaired;
  out.fs.unrecoverable = g.fs_unrecoverable;
  if (out.fs.unrecoverable) {
    out.checker.exit_code = -1;
    out.checker.setup_error = "file system unrecoverable: " + out.fs.Describe();
    return out;
  }
  // The same parsing as a checker run on this host (harness/check/checker.cc).
  harness::CheckerOutput& c = out.checker;
  const bool killed = g.checker_timed_out || g.checker_signal != 0;
  std::string_view text = g.checker_stdout;
  uint64_t line_number = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    if (nl == std::string_view::npos) {
      if (!killed) harness::ParseCheckerLine(text, ++line_number, &c);
      break;
    }
    harness::ParseCheckerLine(text.substr(0, nl), ++line_number, &c);
    text.remove_prefix(nl + 1);
  }
  c.timed_out = g.checker_timed_out;
  c.signal = g.checker_timed_out ? 9 : g.checker_signal;
  c.exit_code = killed ? -1 : g.checker_exit_code;
  c.stderr_tail = g.checker_stderr_tail;
  return out;
}

class GuestStateJudge : public harness::StateJudge {
 public:
  GuestStateJudge(GuestCheckPool* pool, GuestCheckSpec spec, int worker)
      : pool_(pool), spec_(std::move(spec)), worker_(worker) {}

  ~GuestStateJudge() override {
    Release(false);
    if (checked_fd_ >= 0) ::close(checked_fd_);
  }

  absl::StatusOr<harness::ImageCheckResult> Check(int image_fd, uint64_t image_bytes) override {
    host_checks_ = {};
    host_checks_seconds_ = -1;
    int served_fd = image_fd;
    bool guest_boot_checks = spec_.boot_checks;
    if (spec_.boot_checks && !harness::FileSystemOf(spec_.fs).boot_steps.empty()) {
      // The boot checks are userspace programs: run here on a copy, they cost the host a few
      // milliseconds instead of a program start inside the emulated CPU, and the guest then
      // starts from the mount (docs/run.md, "Where the time goes").
      const auto start = std::chrono::steady_clock::now();
      ASSIGN_OR_RETURN(host_checks_, CheckedCopy(image_fd, image_bytes));
      host_checks_seconds_ =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (host_checks_.passed) {
        served_fd = checked_fd_;
        guest_boot_checks = false;
      } else {
        host_checks_ = {};  // a check gave up: the guest walks the whole boot path itself
      }
    }
    absl::Status last;
    for (int attempt = 0; attempt < 2; ++attempt) {
      absl::StatusOr<harness::ImageCheckResult> r =
          Attempt(served_fd, image_bytes, guest_boot_checks);
      if (r.ok()) {
        pool_->CountState();
        if (spec_.phases != nullptr) spec_.phases->Add(phases_);
        MergeHostChecks(&*r);
        return r;
      }
      last = r.status();
      Release(true);  // a fresh guest for the retry
    }
    harness::ImageCheckResult out;
    out.method = kGuestCheckMethod;
    out.kernel = kernel_;
    out.checker.exit_code = -1;
    out.checker.protocol_error = fmt::format(
        "could not check this state in a guest (tried twice, each on a fresh guest): {}",
        std::string(last.message()).substr(0, 2000));
    return out;
  }

 private:
  absl::Status Connect(int image_fd, uint64_t image_bytes) {
    const GuestConfig need = [&] {
      GuestConfig c;
      c.Add({.modules = GuestModulesFor(spec_.fs, false, false),
             .keep_paths = KeepPathsFor(pool_->env().agent, {}, {spec_.checker})});
      return c;
    }();
    ASSIGN_OR_RETURN(GuestCheckPool::Leased leased, pool_->Lease(need));
    guest_ = std::move(leased.guest);
    disk_ = std::move(leased.disk);
    if (disk_ != nullptr && disk_->image_bytes == image_bytes && disk_->sector == spec_.sector &&
        disk_->server->UseImage(image_fd, image_bytes).ok()) {
      return absl::OkStatus();  // the guest's disk, now serving this worker's image
    }
    if (disk_ != nullptr) {
      RETURN_IF_ERROR(guest_->DetachDisk(disk_->serial));  // another size: a disk of its own
      disk_.reset();
    }
    auto disk = std::make_unique<StateDisk>();
    ASSIGN_OR_RETURN(disk->dir, ScratchDir::Create("powercut-judge"));
    ASSIGN_OR_RETURN(disk->server,
                     StateServer::Start({.socket_path = disk->dir.path() + "/state.sock",
                                         .image_fd = image_fd,
                                         .image_bytes = image_bytes}));
    ASSIGN_OR_RETURN(disk->serial,
                     guest_->AttachDisk({.nbd_socket = disk->server->socket_path(),
                                         .image_file = "",
                                         .geometry = harness::GeometryOf(spec_.sector)}));
    disk->image_bytes = image_bytes;
    disk->sector = spec_.sector;
    disk_ = std::move(disk);
    return absl::OkStatus();
  }

  // The state copied onto this judge's scratch image and the boot checks run on it.
  absl::StatusOr<harness::BootChecks> CheckedCopy(int image_fd, uint64_t image_bytes) {
    if (checked_fd_ < 0) {
      ASSIGN_OR_RETURN(scratch_, ScratchDir::Create("powercut-judge-fsck"));
      checked_path_ = scratch_.path() + "/state.img";
      checked_fd_ = ::open(checked_path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (checked_fd_ < 0) {
        return absl::InternalError(
            fmt::format("cannot create {}: {}", checked_path_, std::strerror(errno)));
      }
    }
    // A judge outlives its cell's image size when the guest is reused: size it for each state.
    if (::ftruncate(checked_fd_, static_cast<off_t>(image_bytes)) != 0) {
      return absl::InternalError(
          fmt::format("cannot size {}: {}", checked_path_, std::strerror(errno)));
    }
    RETURN_IF_ERROR(CopyOnto(image_fd, checked_fd_, image_bytes, "the crash state", checked_path_));
    return harness::RunBootChecks(harness::FileSystemOf(spec_.fs), checked_path_,
                                  spec_.checker_timeout_s);
  }

  // The host's boot checks come first in the state's boot path, as a booting machine runs them.
  void MergeHostChecks(harness::ImageCheckResult* r) const {
    if (host_checks_.steps.empty()) return;
    std::vector<harness::FsStepResult> steps = host_checks_.steps;
    steps.insert(steps.end(), r->fs.steps.begin(), r->fs.steps.end());
    r->fs.steps = std::move(steps);
    r->fs.repaired = r->fs.repaired || host_checks_.repaired;
  }

  absl::StatusOr<harness::ImageCheckResult> Attempt(int image_fd, uint64_t image_bytes,
                                                    bool boot_checks) {
    if (guest_ == nullptr || !guest_->usable()) {
      Release(true);
      RETURN_IF_ERROR(Connect(image_fd, image_bytes));
    }
    StateServer& server = *disk_->server;
    RETURN_IF_ERROR(server.UseImage(image_fd, image_bytes));
    if (const uint64_t late = server.refused_writes(); late > 0) {
      return absl::InternalError(fmt::format(
          "{} write(s) reached the state disk after the previous state was released: a file "
          "system outlived its unmount in the guest",
          late));
    }
    server.ServeState(++disk_->generation);
    GuestJob job;
    job.mode = GuestJob::Mode::kCheck;
    job.fs = spec_.fs;
    job.disk_serial = disk_->serial;
    job.command = spec_.checker;
    job.mount_options = spec_.mount_options;
    job.state_token = StateServer::TokenFor(disk_->generation);
    job.checker_timeout_s = spec_.checker_timeout_s;
    job.fstest_promises = spec_.fstest_promises;
    job.boot_checks = boot_checks;
    const auto timeout =
        std::chrono::seconds(static_cast<int64_t>(spec_.checker_timeout_s)) + kJobMargin;
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<GuestResult> r = guest_->RunAgentJob(job, timeout);
    const double round_trip =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    server.Seal();
    if (!r.ok()) return r.status();
    // The host's share: the job file and `job <id>` line out, the agent reading the job over
    // 9p, the result file back and its parsing: what the guest's own steps do not cover.
    phases_.clear();
    if (host_checks_seconds_ >= 0) phases_.emplace_back("host-fsck", host_checks_seconds_);
    phases_.insert(phases_.end(), r->phases.begin(), r->phases.end());
    double in_guest = 0;
    for (const auto& p : r->phases) in_guest += p.second;
    phases_.emplace_back("exchange", std::max(0.0, round_trip - in_guest));
    if (!r->ok) {
      return absl::InternalError(
          fmt::format("the agent's step {} failed in the guest: {}", r->failed_step, r->error));
    }
    if (!disk_->geometry_checked) {
      RETURN_IF_ERROR(CheckGuestGeometry(*r, harness::GeometryOf(spec_.sector)));
      disk_->geometry_checked = true;
    }
    RETURN_IF_ERROR(server.status());
    kernel_ = r->kernel;
    return FromGuest(*r);
  }

  // Gives the guest back with its state disk still attached (`discard`: kills it).
  void Release(bool discard) {
    if (guest_ != nullptr) {
      if (discard) {
        guest_->Shutdown();
        disk_.reset();
      }
      pool_->Return(std::move(guest_), std::move(disk_));
    }
    disk_.reset();
  }

  GuestCheckPool* const pool_;
  const GuestCheckSpec spec_;
  const int worker_;
  std::unique_ptr<WarmGuest> guest_;
  std::unique_ptr<StateDisk> disk_;  // attached to guest_
  std::string kernel_;
  // The state's steps: the host's boot checks, then the last attempt's (GuestResult::phases).
  std::vector<std::pair<std::string, double>> phases_;
  // The scratch copy the boot checks ran on (created at the first state) and their outcome.
  ScratchDir scratch_;
  std::string checked_path_;
  int checked_fd_ = -1;
  harness::BootChecks host_checks_;
  double host_checks_seconds_ = -1;  // -1: none ran for this state
};

}  // namespace

GuestCheckPool::~GuestCheckPool() {
  powercut::MutexLock lock(&mu_);
  idle_.clear();
}

harness::StateJudgeFactory GuestCheckPool::Factory(const GuestCheckSpec& spec) {
  return [this, spec](int worker) -> absl::StatusOr<std::unique_ptr<harness::StateJudge>> {
    return std::unique_ptr<harness::StateJudge>(new GuestStateJudge(this, spec, worker));
  };
}

StateDisk::~StateDisk() = default;

absl::StatusOr<GuestCheckPool::Leased> GuestCheckPool::Lease(const GuestConfig& need) {
  GuestConfig config = need;
  {
    powercut::MutexLock lock(&mu_);
    for (auto it = idle_.begin(); it != idle_.end(); ++it) {
      if (it->guest->usable() && it->guest->config().Covers(need)) {
        Leased leased = std::move(*it);
        idle_.erase(it);
        return leased;
      }
    }
    // None covers it: the new guest also loads what the idle ones had, so it serves them too.
    for (const Leased& l : idle_) config.Add(l.guest->config());
    ++boots_;
  }
  WarmGuest::Options o;
  o.config = config;
  ASSIGN_OR_RETURN(std::unique_ptr<WarmGuest> guest, WarmGuest::Boot(env_, o));
  return Leased{.guest = std::move(guest), .disk = nullptr};
}

void GuestCheckPool::Return(std::unique_ptr<WarmGuest> guest, std::unique_ptr<StateDisk> disk) {
  if (guest == nullptr || !guest->usable()) return;
  powercut::MutexLock lock(&mu_);
  idle_.push_back({.guest = std::move(guest), .disk = std::move(disk)});
}

uint64_t GuestCheckPool::boots() const {
  powercut::MutexLock lock(&mu_);
  return boots_;
}

uint64_t GuestCheckPool::states() const {
  powercut::MutexLock lock(&mu_);
  return states_;
}

void GuestCheckPool::CountState() {
  powercut::MutexLock lock(&mu_);
  ++states_;
}

void GuestCheckPhases::Add(const std::vector<std::pair<std::string, double>>& phases) {
  powercut::MutexLock lock(&mu_);
  ++states_;
  for (const auto& phase : phases) {
    auto it = std::find_if(totals_.begin(), totals_.end(),
                           [&](const auto& total) { return total.first == phase.first; });
    if (it == totals_.end()) {
      totals_.push_back(phase);
    } else {
      it->second += phase.second;
    }
  }
}

std::vector<std::pair<std::string, double>> GuestCheckPhases::Mean() const {
  powercut::MutexLock lock(&mu_);
  std::vector<std::pair<std::string, double>> out = totals_;
  for (auto& p : out) p.second /= static_cast<double>(std::max<uint64_t>(states_, 1));
  return out;
}

}  // namespace powercut::vm
