#include "harness/vm/warm/guest_pool.h"

#include <algorithm>
#include <utility>

#include "base/status_macros.h"
#include "fmt/format.h"

namespace powercut::vm {

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

std::unique_ptr<WarmGuest> GuestPool::TakeIdleGuest() {
  absl::MutexLock lock(&mu_);
  for (auto& slot : slots_) {
    if (!slot->busy && slot->guest != nullptr && slot->guest->usable()) {
      return std::move(slot->guest);
    }
  }
  return nullptr;
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
