#include "harness/product/progress.h"

#include <unistd.h>

#include <cstdio>

#include "fmt/format.h"

namespace powercut::product {

Progress::Progress(std::string what, uint64_t total, bool enabled)
    : what_(std::move(what)),
      total_(total),
      enabled_(enabled && ::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() {
  if (enabled_ && printed_) std::fputs("\n", stderr);
}

std::string Progress::Format(uint64_t done, uint64_t total, double elapsed) {
  double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
  std::string eta = "--:--";
  if (rate > 0 && total >= done) {
    auto left = static_cast<uint64_t>(static_cast<double>(total - done) / rate);
    eta = fmt::format("{:02}:{:02}", left / 60, left % 60);
  }
  return fmt::format("{}/{}, {:.2f}/s, ETA {}", done, total, rate, eta);
}

void Progress::Update(uint64_t done, const std::string& detail) {
  if (!enabled_) return;
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(stderr, "\r%s %s %s\033[K", what_.c_str(), Format(done, total_, elapsed).c_str(),
               detail.c_str());
  std::fflush(stderr);
  printed_ = true;
}

}  // namespace powercut::product
