// ParseDurationFlag: the one reading of a duration given on the command line (`--budget`,
// `--flakey-for`, `--cut after=`), so every flag takes the same spellings.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace powercut {

struct DurationFlagRules {
  bool bare_seconds = false;  // "90" means 90 s (else a unit is required)
  bool allow_zero = false;    // "0s" is accepted (else the duration must be positive)
};

// absl::ParseDuration's syntax ("1.5s", "300ms", "2m", "1h30m"); finite, positive unless the
// rules allow zero. The error names `flag` and shows examples.
absl::StatusOr<absl::Duration> ParseDurationFlag(std::string_view flag, std::string_view text,
                                                 DurationFlagRules rules = {});

}  // namespace powercut
