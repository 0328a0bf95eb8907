// Live power cuts as a mode of `powercut run` and `matrix` (`--live-cuts N`, docs/live-cuts.md):
// besides the replay of one recording, N recordings that are cut for real: qemu is SIGKILLed at a
// write completion after a seeded ack (vm::CutSpec::When::kRandom with the NBD recorder), and the
// drive's volatile cache (cache model "on") is applied to what the server had received. Each cut
// image is
//   1. matched against the replay model: the cut's own trace ends at the cut, so the crash point
//      is its last entry; the image must equal, byte for byte, the crash state of the model that
//      keeps, drops and tears exactly the writes the drive did (MatchCutToModel). A cut outside
//      the model is a tester bug (the recorder, the model or the materializer is wrong);
//   2. recovered and checked like a replayed state (boot recovery, checker, oracle): its own
//      verdict, with the acks before the cut and the acked ids it lost.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/product/faults/cut_model_match.h"
#include "harness/product/outcome/fault_results.h"
#include "harness/product/run/run.h"
#include "harness/state/state_generator.h"
#include "harness/vm/devices/nbd_server.h"
#include "harness/vm/warm/vm_run.h"

namespace powercut::product {

// `count` cuts with seeds options.seed + 1 .. options.seed + count; `recorded_acks` (the replay
// recording's acks) bounds the ack each seed cuts after. Every cut boots a guest of its own (the
// cut kills it). Never fails: a cut that cannot run carries its error.
LiveCutsResult RunLiveCuts(const vm::VmEnvironment& env, const RunOptions& options, uint64_t count,
                           uint64_t recorded_acks);

}  // namespace powercut::product
