#include "harness/product/run/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "fmt/format.h"

namespace powercut::product {
namespace {

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

Progress::Progress(std::string what, uint64_t total, bool enabled,
                   std::chrono::milliseconds log_interval)
    : what_(std::move(what)),
      total_(total),
      enabled_(enabled),
      terminal_(::isatty(STDERR_FILENO) == 1),
      log_interval_(log_interval),
      start_(std::chrono::steady_clock::now()),
      states_start_(start_),
      last_draw_(start_) {}

Progress::~Progress() {
  absl::MutexLock lock(&mu_);
  if (enabled_ && terminal_ && printed_) std::fputs("\n", stderr);
}

std::string Progress::Format(uint64_t done, uint64_t total, double elapsed) {
  double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
  std::string eta = "--:--";
  if (rate > 0 && total >= done) {
    auto left = static_cast<uint64_t>(std::llround(static_cast<double>(total - done) / rate));
    eta = fmt::format("{:02}:{:02}", left / 60, left % 60);
  }
  return fmt::format("{}/{}, {:.2f}/s, ETA {}", done, total, rate, eta);
}

std::string Progress::Line(const std::string& what, uint64_t done, uint64_t total, double elapsed,
                           const std::string& detail, uint64_t states_done, uint64_t states_total,
                           double states_elapsed) {
  std::string line = what;
  if (total > 0) line += " " + Format(done, total, elapsed);
  if (!detail.empty()) line += " " + detail;
  if (states_total > 0) {
    line += (total > 0 || !detail.empty() ? "; states " : " states ") +
            Format(states_done, states_total, states_elapsed);
  }
  return line;
}

void Progress::Update(uint64_t done, const std::string& detail) {
  if (!enabled_) return;
  absl::MutexLock lock(&mu_);
  done_ = done;
  detail_ = detail;
  states_done_ = states_total_ = 0;
  states_start_ = std::chrono::steady_clock::now();
  if (terminal_ || states_start_ - last_draw_ >= log_interval_) DrawLocked(states_start_);
}

void Progress::UpdateStates(uint64_t done, uint64_t total) {
  if (!enabled_) return;
  absl::MutexLock lock(&mu_);
  auto now = std::chrono::steady_clock::now();
  if (states_total_ == 0) states_start_ = now;  // the check begins (the VM run is over)
  states_done_ = done;
  states_total_ = total;
  auto interval = terminal_ ? std::chrono::milliseconds(200) : log_interval_;
  if (now - last_draw_ < interval && (done < total || !terminal_)) return;
  DrawLocked(now);
}

void Progress::DrawLocked(std::chrono::steady_clock::time_point now) {
  std::string line = Line(what_, done_, total_, Seconds(now - start_), detail_, states_done_,
                          states_total_, Seconds(now - states_start_));
  if (terminal_) {
    std::fprintf(stderr, "\r%s\033[K", line.c_str());
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
  printed_ = true;
  last_draw_ = now;
}

}  // namespace powercut::product
