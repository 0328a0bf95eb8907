// The fault-mode flags `powercut run` and `powercut matrix` share (docs/live-cuts.md):
// --live-cuts N, --flakey MODE, --flakey-after-acks N, --flakey-for DURATION, --flakey-disk K;
// and a cluster's single-node cuts (docs/cluster.md): --node-cuts K, --node-down DURATION.
#pragma once

#include <cstdint>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "harness/product/run/run.h"

namespace powercut::cli {

struct FaultArgs {
  uint64_t live_cuts = 0;
  std::string flakey, flakey_for;
  int64_t flakey_after_acks = -1;  // -1: not given
  int64_t flakey_disk = -1;        // -1: not given (disk 1)
};

void AddFaultOptions(CLI::App* command, FaultArgs* args);

// --node-cuts and --node-down, into `cuts` and `down_ms`; `what` ends --node-cuts' help (which
// cells or run the cuts apply to).
void AddNodeCutOptions(CLI::App* command, const std::string& what, uint64_t* cuts,
                       uint64_t* down_ms);

// Checks the flags and fills `live_cuts` and `flakey` (after_acks defaults to `default_after`).
absl::Status ApplyFaultArgs(const FaultArgs& args, int64_t default_after, uint64_t* live_cuts,
                            product::RunOptions::Flakey* flakey);

}  // namespace powercut::cli
