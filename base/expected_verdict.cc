#include "base/expected_verdict.h"

#include <string>

#include "fmt/format.h"

namespace powercut {

std::string_view ExpectedVerdictName(ExpectedVerdict verdict) {
  switch (verdict) {
    case ExpectedVerdict::kSurvives:
      return "survives";
    case ExpectedVerdict::kLoses:
      return "loses";
    case ExpectedVerdict::kMayLose:
      return "may-lose";
  }
  return "?";
}

absl::StatusOr<ExpectedVerdict> ParseExpectedVerdict(std::string_view name) {
  for (ExpectedVerdict v :
       {ExpectedVerdict::kSurvives, ExpectedVerdict::kLoses, ExpectedVerdict::kMayLose}) {
    if (name == ExpectedVerdictName(v)) return v;
  }
  return absl::InvalidArgumentError(fmt::format("\"{}\" is not an expected verdict: {}",
                                                std::string(name), kExpectedVerdictChoices));
}

bool VerdictMatches(ExpectedVerdict expected, uint64_t violations) {
  switch (expected) {
    case ExpectedVerdict::kLoses:
      return violations > 0;
    case ExpectedVerdict::kMayLose:
      return true;
    case ExpectedVerdict::kSurvives:
      return violations == 0;
  }
  return false;
}

}  // namespace powercut
