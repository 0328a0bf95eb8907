// Seconds per step of a guest job, in order (GuestResult::phases): the agent's part of the
// "where the time goes" table (docs/run.md).
#pragma once

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace powercut::vm::guest {

class StepClock {
 public:
  explicit StepClock(std::vector<std::pair<std::string, double>>* phases) : phases_(phases) {}
  // The time since the previous mark is `name`'s.
  void Mark(const std::string& name) { phases_->emplace_back(name, Lap()); }
  // The time since the previous mark, of which `second_seconds` were `second`'s.
  void Split(const std::string& first, const std::string& second, double second_seconds) {
    const double lap = Lap();
    phases_->emplace_back(first, std::max(0.0, lap - second_seconds));
    phases_->emplace_back(second, second_seconds);
  }

 private:
  double Lap() {
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    return s;
  }
  std::vector<std::pair<std::string, double>>* phases_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace powercut::vm::guest
