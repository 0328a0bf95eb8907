// Progress lines on stderr for long work (matrix cells, the crash states of one check): done/total,
// rate and ETA for the cells and for the states of the cell being checked. On a terminal, one line
// rewritten in place; where stderr is not a terminal (CI logs, a file), a whole line every 30 s, so
// a long check is never a silent wait and a log stays short. Off with --quiet. Thread-safe: the
// engine reports states from its worker threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace powercut::product {

class Progress {
 public:
  // Draws only when `enabled`: in place on a terminal, else every `log_interval`.
  Progress(std::string what, uint64_t total, bool enabled,
           std::chrono::milliseconds log_interval = std::chrono::seconds(30));
  ~Progress();  // ends the line

  // `done` of `total` finished; `detail` is appended (e.g. the cell now running). Starts a new
  // count of states.
  void Update(uint64_t done, const std::string& detail);
  // `done` of `total` crash states of the current item judged (the engine's on_state_checked).
  // Redraws at most 5 times a second, and at the last state.
  void UpdateStates(uint64_t done, uint64_t total);
  bool enabled() const { return enabled_; }

  // "done/total, x.xx/s, ETA mm:ss" (exposed for tests); ETA "--:--" before the first is done.
  static std::string Format(uint64_t done, uint64_t total, double elapsed_seconds);
  // The whole line: "<what> <items> <detail>; states <states>" (items left out when `total` is 0,
  // as for one `powercut run`; states left out while states_total is 0).
  static std::string Line(const std::string& what, uint64_t done, uint64_t total, double elapsed,
                          const std::string& detail, uint64_t states_done, uint64_t states_total,
                          double states_elapsed);

 private:
  void DrawLocked(std::chrono::steady_clock::time_point now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string what_;
  const uint64_t total_;
  const bool enabled_;
  const bool terminal_;  // stderr is a terminal: redraw in place
  const std::chrono::milliseconds log_interval_;
  const std::chrono::steady_clock::time_point start_;
  absl::Mutex mu_;
  bool printed_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t done_ ABSL_GUARDED_BY(mu_) = 0;
  std::string detail_ ABSL_GUARDED_BY(mu_);
  uint64_t states_done_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t states_total_ ABSL_GUARDED_BY(mu_) = 0;
  std::chrono::steady_clock::time_point states_start_ ABSL_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point last_draw_ ABSL_GUARDED_BY(mu_);
};

}  // namespace powercut::product
