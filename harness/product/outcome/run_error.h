// Why a run could not run (RunOutcome::error_kind, CellResult::error_kind, and what a --cells
// cell may expect: "expect": {"error": NAME}). Each kind names a cause the user can act on
// (docs/run.md, "What cannot be tested"); RunErrorName is the one spelling, in reports and tables,
// and ParseRunError the one reader, where a --cells file or a report is read.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace powercut::product {

enum class RunError {
  kVm,                  // the VM could not run it (boot, disk, agent)
  kTimeout,             // the recording passed --timeout
  kWorkloadExit,        // the workload exited non-zero
  kNoAcks,              // the workload acknowledged nothing
  kAckFlood,            // more acks than --max-acks
  kMalformedAcks,       // ack lines that are not the protocol
  kCheckerCrash,        // the checker was killed by a signal on every crash state
  kCheckerCannotStart,  // exit 126/127: not found or not executable
  kCheckerProtocol,     // its stdout was not `have`/`corrupt` lines
  kCheck,               // the engine could not check the trace
  kUsage,               // the options cannot run (caught before a guest boots)
  kExpectedState,       // fstest: the expected states could not be computed
  kFlakeyUnsupported,   // the guest kernel has no dm-flakey
  kUnavailable,         // the system did not come back on any crash state (a cluster, no quorum)
};

// "vm", "timeout", "workload-exit", "no-acks", "ack-flood", "malformed-acks", "checker-crash",
// "checker-cannot-start", "checker-protocol", "check", "usage", "expected-state",
// "flakey-unsupported", "unavailable".
std::string_view RunErrorName(RunError error);
// "" for none (a cell that ran).
inline std::string_view RunErrorName(std::optional<RunError> error) {
  return error ? RunErrorName(*error) : std::string_view();
}
// Every name, comma-separated, in the enum's order (help texts and errors).
std::string RunErrorNames();
// The inverse of RunErrorName; anything else is an error that lists the valid names.
absl::StatusOr<RunError> ParseRunError(std::string_view name);

}  // namespace powercut::product
