// Progress lines on stderr for long work (matrix cells, VM runs): one line rewritten in place
// with done/total, rate and ETA. Silent when stderr is not a terminal or when disabled (--quiet),
// so logs and CI output stay clean.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace powercut::product {

class Progress {
 public:
  // `enabled` && isatty(2).
  Progress(std::string what, uint64_t total, bool enabled);
  ~Progress();  // ends the line

  // `done` of `total` finished; `detail` is appended (e.g. the cell now running).
  void Update(uint64_t done, const std::string& detail);
  bool enabled() const { return enabled_; }

  // "done/total, x.x/s, ETA mm:ss" (exposed for tests).
  static std::string Format(uint64_t done, uint64_t total, double elapsed_seconds);

 private:
  std::string what_;
  uint64_t total_;
  bool enabled_;
  bool printed_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace powercut::product
