#include "harness/product/run/replay_choice.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "base/status_macros.h"
#include "fmt/format.h"

namespace powercut::product {

harness::StateOptions StatesPerPoint::Options() const {
  harness::StateOptions s;
  if (count == kExhaustive) {
    s.max_exhaustive = 16;
    return s;
  }
  s.samples = count;
  s.max_exhaustive = static_cast<uint32_t>(std::floor(std::log2(static_cast<double>(count))));
  s.max_all_but_one = std::min<uint32_t>(count, 64);
  s.max_torn_writes = std::min<uint32_t>(count, 4);
  s.torn_samples = count >= 8 ? 2 : 1;
  return s;
}

std::string StatesPerPoint::Name() const {
  return count == kExhaustive ? "exhaustive" : std::to_string(count);
}

absl::StatusOr<StatesPerPoint> ParseStates(std::string_view text) {
  if (text == "exhaustive") return StatesPerPoint{.count = StatesPerPoint::kExhaustive};
  uint32_t n = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || n == 0 ||
      text.size() > 9) {
    return absl::InvalidArgumentError(
        fmt::format("--states {}: expected exhaustive or a positive number of states per point",
                    std::string(text)));
  }
  return StatesPerPoint{.count = n};
}

absl::StatusOr<ReplayChoice> ParseReplayChoice(std::string_view cache, std::string_view window,
                                               std::string_view points, std::string_view states) {
  ReplayChoice r;
  if (cache.empty()) {
    // The default models; the window is still checked, as it is with a list.
    RETURN_IF_ERROR(harness::ParseCacheModels("lying", window).status());
  } else {
    ASSIGN_OR_RETURN(r.models, harness::ParseCacheModels(cache, window));
  }
  ASSIGN_OR_RETURN(r.points, harness::ParsePointSelection(points));
  ASSIGN_OR_RETURN(r.states, ParseStates(states));
  return r;
}

}  // namespace powercut::product
