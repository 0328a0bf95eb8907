// What a program is expected to do under one crash model (docs/workloads.md, "Expected verdicts"):
// the one vocabulary of the workload catalog (workloads/catalog.h), the matrix's expectations
// (harness/product/cell/cell_result.h) and `powercut run --expect`. Both workloads/ and harness/
// use it, so it lives at the bottom of the tree.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace powercut {

enum class ExpectedVerdict {
  kSurvives,  // no acked commit lost: no state violates
  kLoses,     // some crash state loses acked commits
  kMayLose,   // depends on timing the tester may or may not hit (e.g. only the last ack)
};

// For help texts and errors.
inline constexpr std::string_view kExpectedVerdictChoices = "survives, loses or may-lose";

// "survives", "loses", "may-lose": the one spelling every report and list prints.
std::string_view ExpectedVerdictName(ExpectedVerdict verdict);
// The inverse of ExpectedVerdictName; anything else is an error that lists the valid names.
absl::StatusOr<ExpectedVerdict> ParseExpectedVerdict(std::string_view name);

// Whether `violations` agrees with `expected`: survives = none, loses = some, may-lose = any.
bool VerdictMatches(ExpectedVerdict expected, uint64_t violations);

}  // namespace powercut
