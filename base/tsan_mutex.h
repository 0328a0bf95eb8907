// absl::Mutex helpers that ThreadSanitizer can see through.
//
// Debian's Abseil is a prebuilt library compiled without -fsanitize=thread, so under TSan the
// happens-before edges of absl::Mutex::Lock/Unlock and CondVar::Wait are invisible and every
// access guarded by an absl::Mutex is reported as a race. These helpers add explicit
// __tsan_acquire/__tsan_release annotations around the library calls (no-ops in other builds).
//
// Use MutexLock (instead of absl::MutexLock), Lock/Unlock and Wait/WaitWithTimeout. Do not use
// absl::Condition / Mutex::Await on data that TSan should check: a Condition runs on whichever
// thread unlocks the mutex, after that thread's release annotation, which TSan then misreports.
#pragma once

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#if defined(__SANITIZE_THREAD__)
#define POWERCUT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define POWERCUT_TSAN 1
#endif
#endif

#ifdef POWERCUT_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace powercut {

inline void TsanAcquire([[maybe_unused]] absl::Mutex* mu) {
#ifdef POWERCUT_TSAN
  __tsan_acquire(mu);
#endif
}

inline void TsanRelease([[maybe_unused]] absl::Mutex* mu) {
#ifdef POWERCUT_TSAN
  __tsan_release(mu);
#endif
}

inline void Lock(absl::Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) {
  mu->Lock();
  TsanAcquire(mu);
}

inline void Unlock(absl::Mutex* mu) ABSL_UNLOCK_FUNCTION(mu) {
  TsanRelease(mu);
  mu->Unlock();
}

// cv->Wait(mu): releases mu while waiting, holds it again on return.
inline void Wait(absl::CondVar* cv, absl::Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
  TsanRelease(mu);
  cv->Wait(mu);
  TsanAcquire(mu);
}

// Like Wait, up to `timeout`; true when it timed out.
inline bool WaitWithTimeout(absl::CondVar* cv, absl::Mutex* mu, absl::Duration timeout)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
  TsanRelease(mu);
  const bool timed_out = cv->WaitWithTimeout(mu, timeout);
  TsanAcquire(mu);
  return timed_out;
}

// absl::MutexLock with the annotations above.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(absl::Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { Lock(mu_); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { Unlock(mu_); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  absl::Mutex* const mu_;
};

}  // namespace powercut
