#include "harness/vm/warm/guest_judge.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string_view>
#include <thread>

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

// powercut's own workload programs serve crash states resident (workloads/main.cc starts with
// base/check_server.h's ServeChecksIfAsked); any other checker is exec'd per state.
bool ServesResident(const std::string& checker) {
  std::vector<std::string> words;
  if (!harness::PlainCommandWords(checker, &words) || words.empty()) return false;
  const std::string program = words[0].substr(words[0].rfind('/') + 1);
  return program == "powercut-workload" || program == "powercut-workload-clients";
}

harness::ImageCheckResult FromGuest(const GuestResult& g) {
  harness::ImageCheckResult out;
  out.method = kGuestCheckMethod;
  out.kernel = g.kernel;
  for (const GuestResult::FsStep& s : g.fs_steps) {
    out.fs.steps.push_back({.name = s.name,
                            .exit_code = s.exit_code,
                            .changed = s.changed,
                            .detail = s.detail,
                            .disk = s.disk});
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

// Where a disk's bytes are served from: the worker's image (at the disk's offset in a set's
// concatenated image), or the copy the host's boot checks ran on.
struct Served {
  int fd = -1;
  uint64_t offset = 0;
};

class GuestStateJudge : public harness::StateJudge {
 public:
  GuestStateJudge(GuestCheckPool* pool, GuestCheckSpec spec, int worker)
      : pool_(pool), spec_(std::move(spec)), worker_(worker) {}

  ~GuestStateJudge() override {
    Release(false);
    for (Copy& c : copies_) {
      if (c.fd >= 0) ::close(c.fd);
    }
  }

  absl::StatusOr<harness::ImageCheckResult> Check(int image_fd, uint64_t image_bytes) override {
    return Judge(image_fd,
                 {{.offset = 0, .bytes = image_bytes, .fs = spec_.fs, .sector = spec_.sector}});
  }

  absl::StatusOr<harness::ImageCheckResult> CheckSet(
      int image_fd, const std::vector<harness::SetDisk>& disks) override {
    if (disks.empty()) return absl::InvalidArgumentError("a set of no disks");
    return Judge(image_fd, disks);
  }

 private:
  // The scratch copy a disk's boot checks run on (made at the first state that needs it).
  struct Copy {
    std::string path;
    int fd = -1;
  };

  absl::StatusOr<harness::ImageCheckResult> Judge(int image_fd,
                                                  const std::vector<harness::SetDisk>& disks) {
    host_checks_.assign(disks.size(), {});
    host_checks_seconds_ = -1;
    std::vector<Served> served;
    for (const harness::SetDisk& d : disks) served.push_back({image_fd, d.offset});
    bool guest_boot_checks = spec_.boot_checks;
    if (spec_.boot_checks && NeedsBootChecks(disks)) {
      // The boot checks are userspace programs: run here on a copy, they cost the host a few
      // milliseconds instead of a program start inside the emulated CPU, and the guest then
      // starts from the mount (docs/run.md, "Where the time goes").
      const auto start = std::chrono::steady_clock::now();
      ASSIGN_OR_RETURN(bool passed, CheckedCopies(image_fd, disks, &served));
      host_checks_seconds_ =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (passed) {
        guest_boot_checks = false;
      } else {
        // A check gave up: the guest walks every disk's whole boot path itself, on the untouched
        // state.
        host_checks_.assign(disks.size(), {});
        served.clear();
        for (const harness::SetDisk& d : disks) served.push_back({image_fd, d.offset});
      }
    }
    absl::Status last;
    for (int attempt = 0; attempt < 2; ++attempt) {
      absl::StatusOr<harness::ImageCheckResult> r = Attempt(disks, served, guest_boot_checks);
      if (r.ok()) {
        pool_->CountState();
        if (spec_.phases != nullptr) spec_.phases->Add(phases_);
        MergeHostChecks(disks.size() > 1, &*r);
        // Back to the pool after each state, its disks attached: the next state of this worker
        // takes it back (or a worker of another cell, whose server is pointed at its own image),
        // and no worker holds a guest while it materializes or waits.
        Release(false);
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

  static bool NeedsBootChecks(const std::vector<harness::SetDisk>& disks) {
    for (const harness::SetDisk& d : disks) {
      if (!harness::FileSystemOf(d.fs).boot_steps.empty()) return true;
    }
    return false;
  }

  // The guest already has disks of these sizes and sectors attached (a state of the same cell).
  bool DisksFit(const std::vector<harness::SetDisk>& disks) const {
    if (disks_.size() != disks.size()) return false;
    for (size_t i = 0; i < disks.size(); ++i) {
      if (disks_[i]->image_bytes != disks[i].bytes || disks_[i]->sector != disks[i].sector) {
        return false;
      }
    }
    return true;
  }

  absl::Status Connect(const std::vector<harness::SetDisk>& disks,
                       const std::vector<Served>& served) {
    std::vector<harness::FsKind> fs;
    for (const harness::SetDisk& d : disks) fs.push_back(d.fs);
    const GuestConfig need = CheckGuestConfig(pool_->env(), spec_.checker, fs);
    ASSIGN_OR_RETURN(GuestCheckPool::Leased leased, pool_->Lease(need));
    guest_ = std::move(leased.guest);
    disks_ = std::move(leased.disks);
    if (DisksFit(disks)) return absl::OkStatus();  // the guest's disks, now serving this worker
    for (std::unique_ptr<StateDisk>& disk : disks_) {
      RETURN_IF_ERROR(guest_->DetachDisk(disk->serial));  // other sizes: disks of their own
    }
    disks_.clear();
    for (size_t i = 0; i < disks.size(); ++i) {
      auto disk = std::make_unique<StateDisk>();
      ASSIGN_OR_RETURN(disk->dir, ScratchDir::Create("powercut-judge"));
      ASSIGN_OR_RETURN(disk->server,
                       StateServer::Start({.socket_path = disk->dir.path() + "/state.sock",
                                           .image_fd = served[i].fd,
                                           .image_bytes = disks[i].bytes,
                                           .image_offset = served[i].offset}));
      ASSIGN_OR_RETURN(disk->serial,
                       guest_->AttachDisk({.nbd_socket = disk->server->socket_path(),
                                           .image_file = "",
                                           .geometry = harness::GeometryOf(disks[i].sector)}));
      disk->image_bytes = disks[i].bytes;
      disk->sector = disks[i].sector;
      disks_.push_back(std::move(disk));
    }
    return absl::OkStatus();
  }

  // Each disk with boot checks copied onto this judge's scratch image of it and checked there;
  // `served` points at the copies. False: a check gave up.
  absl::StatusOr<bool> CheckedCopies(int image_fd, const std::vector<harness::SetDisk>& disks,
                                     std::vector<Served>* served) {
    if (copies_.size() < disks.size()) {
      if (scratch_.path().empty()) {
        ASSIGN_OR_RETURN(scratch_, ScratchDir::Create("powercut-judge-fsck"));
      }
      copies_.resize(disks.size());
    }
    for (size_t i = 0; i < disks.size(); ++i) {
      const harness::FileSystem& fs = harness::FileSystemOf(disks[i].fs);
      if (fs.boot_steps.empty()) continue;
      Copy& copy = copies_[i];
      if (copy.fd < 0) {
        copy.path = fmt::format("{}/disk{}.img", scratch_.path(), i + 1);
        copy.fd = ::open(copy.path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (copy.fd < 0) {
          return absl::InternalError(
              fmt::format("cannot create {}: {}", copy.path, std::strerror(errno)));
        }
      }
      // A judge outlives its cell's image size when the guest is reused: size it for each state.
      if (::ftruncate(copy.fd, static_cast<off_t>(disks[i].bytes)) != 0) {
        return absl::InternalError(
            fmt::format("cannot size {}: {}", copy.path, std::strerror(errno)));
      }
      RETURN_IF_ERROR(CopyRangeOnto(image_fd, disks[i].offset, copy.fd, 0, disks[i].bytes,
                                    "the crash state", copy.path));
      ASSIGN_OR_RETURN(host_checks_[i],
                       harness::RunBootChecks(fs, copy.path, spec_.checker_timeout_s));
      if (!host_checks_[i].passed) return false;
      (*served)[i] = {copy.fd, 0};
    }
    return true;
  }

  // The host's boot checks come first in each disk's boot path, as a booting machine runs them.
  void MergeHostChecks(bool set, harness::ImageCheckResult* r) const {
    const bool any = std::any_of(host_checks_.begin(), host_checks_.end(),
                                 [](const harness::BootChecks& c) { return !c.steps.empty(); });
    if (!any) return;
    std::vector<harness::FsStepResult> steps;
    for (size_t i = 0; i < host_checks_.size(); ++i) {
      const std::string label = set ? fmt::format("disk {}", i + 1) : "";
      for (harness::FsStepResult step : host_checks_[i].steps) {
        step.disk = label;
        steps.push_back(std::move(step));
      }
      r->fs.repaired = r->fs.repaired || host_checks_[i].repaired;
      // Then the guest's steps of this disk.
      for (const harness::FsStepResult& step : r->fs.steps) {
        if (step.disk == label) steps.push_back(step);
      }
    }
    r->fs.steps = std::move(steps);
  }

  absl::StatusOr<harness::ImageCheckResult> Attempt(const std::vector<harness::SetDisk>& disks,
                                                    const std::vector<Served>& served,
                                                    bool boot_checks) {
    if (guest_ == nullptr || !guest_->usable() || !DisksFit(disks)) {
      Release(guest_ != nullptr && !guest_->usable());
      RETURN_IF_ERROR(Connect(disks, served));
    }
    GuestJob job;
    for (size_t i = 0; i < disks.size(); ++i) {
      StateServer& server = *disks_[i]->server;
      RETURN_IF_ERROR(server.UseImage(served[i].fd, disks[i].bytes, served[i].offset));
      if (const uint64_t late = server.refused_writes(); late > 0) {
        return absl::InternalError(fmt::format(
            "{} write(s) reached state disk {} after the previous state was released: a file "
            "system outlived its unmount in the guest",
            late, i + 1));
      }
      server.ServeState(++disks_[i]->generation);
      const std::string token = StateServer::TokenFor(disks_[i]->generation);
      if (i == 0) {
        job.disk_serial = disks_[i]->serial;
        job.state_token = token;
      } else {
        job.extra_disks.push_back(
            {.disk_serial = disks_[i]->serial, .fs = disks[i].fs, .state_token = token});
      }
    }
    job.mode = GuestJob::Mode::kCheck;
    job.fs = disks[0].fs;
    job.command = spec_.checker;
    job.mount_options = spec_.mount_options;
    job.checker_timeout_s = spec_.checker_timeout_s;
    job.fstest_promises = spec_.fstest_promises;
    job.boot_checks = boot_checks;
    job.resident_checker = ServesResident(spec_.checker);
    const auto timeout =
        std::chrono::seconds(static_cast<int64_t>(spec_.checker_timeout_s)) + kJobMargin;
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<GuestResult> r = guest_->RunAgentJob(job, timeout);
    const double round_trip =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (std::unique_ptr<StateDisk>& disk : disks_) disk->server->Seal();
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
    if (!disks_[0]->geometry_checked) {
      RETURN_IF_ERROR(CheckGuestGeometry(*r, harness::GeometryOf(disks[0].sector)));
      disks_[0]->geometry_checked = true;
    }
    for (std::unique_ptr<StateDisk>& disk : disks_) RETURN_IF_ERROR(disk->server->status());
    kernel_ = r->kernel;
    return FromGuest(*r);
  }

  // Gives the guest back with its state disks still attached (`discard`: kills it).
  void Release(bool discard) {
    if (guest_ != nullptr) {
      if (discard) {
        guest_->Shutdown();
        disks_.clear();
      }
      pool_->Return(std::move(guest_), std::move(disks_));
    }
    disks_.clear();
  }

  GuestCheckPool* const pool_;
  const GuestCheckSpec spec_;
  const int worker_;
  std::unique_ptr<WarmGuest> guest_;
  std::vector<std::unique_ptr<StateDisk>> disks_;  // attached to guest_, one per disk of the state
  std::string kernel_;
  // The state's steps: the host's boot checks, then the last attempt's (GuestResult::phases).
  std::vector<std::pair<std::string, double>> phases_;
  // The scratch copies the boot checks ran on (one per disk, made at the first state that needs
  // it) and their outcome per disk.
  ScratchDir scratch_;
  std::vector<Copy> copies_;
  std::vector<harness::BootChecks> host_checks_;
  double host_checks_seconds_ = -1;  // -1: none ran for this state
};

}  // namespace

GuestCheckPool::~GuestCheckPool() {
  if (prewarm_.joinable()) prewarm_.join();  // its guest comes back to idle_, then goes
  powercut::MutexLock lock(&mu_);
  idle_.clear();
}

harness::StateJudgeFactory GuestCheckPool::Factory(const GuestCheckSpec& spec) {
  return [this, spec](int worker) -> absl::StatusOr<std::unique_ptr<harness::StateJudge>> {
    return std::unique_ptr<harness::StateJudge>(new GuestStateJudge(this, spec, worker));
  };
}

StateDisk::~StateDisk() = default;

GuestConfig CheckGuestConfig(const VmEnvironment& env, const std::string& checker,
                             const std::vector<harness::FsKind>& fs) {
  GuestConfig c;
  c.Add({.keep_paths = KeepPathsFor(env.agent, {}, {checker})});
  for (const harness::FsKind f : fs) c.Add({.modules = GuestModulesFor(f, false, false)});
  return c;
}

GuestCheckPool::GuestCheckPool(const VmEnvironment& env, int max_guests)
    : env_(env),
      max_guests_(max_guests > 0
                      ? max_guests
                      : std::max(1, static_cast<int>(std::thread::hardware_concurrency()))) {}

absl::StatusOr<GuestCheckPool::Leased> GuestCheckPool::Lease(const GuestConfig& need) {
  GuestConfig config = need;
  Leased evicted;  // an idle guest that does not cover `need`, dropped to make room (unlocked)
  {
    powercut::MutexLock lock(&mu_);
    for (;;) {
      for (auto it = idle_.begin(); it != idle_.end(); ++it) {
        if (it->guest->usable() && it->guest->config().Covers(need)) {
          Leased leased = std::move(*it);
          idle_.erase(it);
          ++leased_;
          return leased;
        }
      }
      if (leased_ + idle_.size() < static_cast<size_t>(max_guests_)) break;
      if (!idle_.empty()) {
        evicted = std::move(idle_.front());
        idle_.erase(idle_.begin());
        config.Add(evicted.guest->config());
        break;
      }
      // Every guest judges a state: wait for one to come back (a state takes seconds at most,
      // bounded by the checker's timeout).
      ++waiting_;
      powercut::Wait(&returned_, &mu_);
      --waiting_;
    }
    // None covers it: the new guest also loads what the idle ones had, so it serves them too.
    for (const Leased& l : idle_) config.Add(l.guest->config());
    ++boots_;
    ++leased_;
  }
  evicted.disks.clear();  // its disks' servers stop, then it is shut down
  evicted.guest.reset();
  WarmGuest::Options o;
  o.config = config;
  absl::StatusOr<std::unique_ptr<WarmGuest>> guest = WarmGuest::Boot(env_, o);
  if (!guest.ok()) {
    powercut::MutexLock lock(&mu_);
    --leased_;
    returned_.SignalAll();
    return guest.status();
  }
  return Leased{.guest = *std::move(guest), .disks = {}};
}

void GuestCheckPool::Return(std::unique_ptr<WarmGuest> guest,
                            std::vector<std::unique_ptr<StateDisk>> disks) {
  if (guest == nullptr) return;
  const bool usable = guest->usable();
  if (!usable) {
    disks.clear();  // killed: its servers stop, then it goes, outside the lock
    guest.reset();
  }
  powercut::MutexLock lock(&mu_);
  --leased_;
  returned_.SignalAll();
  if (usable) idle_.push_back({.guest = std::move(guest), .disks = std::move(disks)});
}

void GuestCheckPool::Grow(std::unique_ptr<WarmGuest> guest) { AdoptAndGrow(std::move(guest), 1); }

void GuestCheckPool::Prewarm(const GuestConfig& config) {
  powercut::MutexLock lock(&mu_);
  if (prewarm_.joinable() || boots_ > 0 || !idle_.empty() || leased_ > 0) return;
  prewarm_ = std::thread([this, config] {
    absl::StatusOr<Leased> leased = Lease(config);
    if (leased.ok()) Return(std::move(leased->guest), std::move(leased->disks));
  });
}

void GuestCheckPool::Adopt(std::unique_ptr<WarmGuest> guest) { AdoptAndGrow(std::move(guest), 0); }

void GuestCheckPool::AdoptAndGrow(std::unique_ptr<WarmGuest> guest, int more_guests) {
  bool fits = guest != nullptr && guest->usable();
  if (fits) {
    const VmEnvironment& e = guest->env();
    fits = e.kernel.vmlinuz == env_.kernel.vmlinuz && e.initramfs.hash == env_.initramfs.hash &&
           e.boot_image == env_.boot_image && e.agent == env_.agent && e.accel == env_.accel &&
           guest->config().memory_mib == 0 && guest->config().cpus == 0;
  }
  // One step under the lock: a judge woken by the larger cap must find the adopted guest idle,
  // not boot another in its place.
  powercut::MutexLock lock(&mu_);
  max_guests_ += more_guests;
  if (fits) {
    ++adopted_;
    idle_.push_back({.guest = std::move(guest), .disks = {}});
  }
  returned_.SignalAll();  // a judge waiting at the cap takes it, or boots one
  // A guest that does not fit is shut down by its destructor, after the lock.
}

uint64_t GuestCheckPool::waiting() const {
  powercut::MutexLock lock(&mu_);
  return waiting_;
}

uint64_t GuestCheckPool::adopted() const {
  powercut::MutexLock lock(&mu_);
  return adopted_;
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
