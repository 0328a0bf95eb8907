#include "base/duration_flag.h"

#include <string>

#include "absl/strings/ascii.h"
#include "fmt/format.h"

namespace powercut {

absl::StatusOr<absl::Duration> ParseDurationFlag(std::string_view flag, std::string_view text,
                                                 DurationFlagRules rules) {
  std::string spelled(text);
  // absl reads a bare "0" as zero but any other bare number as an error: seconds, where allowed.
  const bool bare = !spelled.empty() && absl::ascii_isdigit(spelled.back());
  if (bare && rules.bare_seconds) spelled += "s";
  absl::Duration d;
  const bool parsed = !(bare && !rules.bare_seconds) && absl::ParseDuration(spelled, &d);
  if (!parsed || d == absl::InfiniteDuration() || d < absl::ZeroDuration() ||
      (d == absl::ZeroDuration() && !rules.allow_zero)) {
    return absl::InvalidArgumentError(
        fmt::format("{} '{}': expected a {} duration such as 30s, 1.5s, 500ms or 2m{}", flag,
                    std::string(text), rules.allow_zero ? "non-negative" : "positive",
                    rules.bare_seconds ? " (a bare number is seconds)" : ""));
  }
  return d;
}

}  // namespace powercut
