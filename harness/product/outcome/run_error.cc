#include "harness/product/outcome/run_error.h"

#include <array>
#include <utility>

#include "fmt/format.h"

namespace powercut::product {
namespace {

constexpr std::array<std::pair<RunError, std::string_view>, 14> kRunErrorNames = {{
    {RunError::kVm, "vm"},
    {RunError::kTimeout, "timeout"},
    {RunError::kWorkloadExit, "workload-exit"},
    {RunError::kNoAcks, "no-acks"},
    {RunError::kAckFlood, "ack-flood"},
    {RunError::kMalformedAcks, "malformed-acks"},
    {RunError::kCheckerCrash, "checker-crash"},
    {RunError::kCheckerCannotStart, "checker-cannot-start"},
    {RunError::kCheckerProtocol, "checker-protocol"},
    {RunError::kCheck, "check"},
    {RunError::kUsage, "usage"},
    {RunError::kExpectedState, "expected-state"},
    {RunError::kFlakeyUnsupported, "flakey-unsupported"},
    {RunError::kUnavailable, "unavailable"},
}};

}  // namespace

std::string_view RunErrorName(RunError error) {
  for (const auto& [e, name] : kRunErrorNames) {
    if (e == error) return name;
  }
  return "?";
}

std::string RunErrorNames() {
  std::string out;
  for (const auto& [e, name] : kRunErrorNames) {
    out += fmt::format("{}{}", out.empty() ? "" : ", ", name);
  }
  return out;
}

absl::StatusOr<RunError> ParseRunError(std::string_view name) {
  for (const auto& [e, n] : kRunErrorNames) {
    if (n == name) return e;
  }
  return absl::InvalidArgumentError(
      fmt::format("error '{}': expected one of {}", std::string(name), RunErrorNames()));
}

}  // namespace powercut::product
