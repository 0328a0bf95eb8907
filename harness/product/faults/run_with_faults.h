// Where a run's mode is chosen (docs/live-cuts.md): the options' fault modes decide between a run
// on a failing disk (RunOptions::flakey, harness/product/faults/flakey.h) and the replay of one
// recording (RunWorkload, harness/product/run/run.h), with RunOptions::live_cuts live power cuts
// on top of a replay that ran (harness/product/faults/live_cuts.h). `powercut run` and the
// matrix's cells run through it; the run/ room itself knows nothing of the fault modes.
#pragma once

#include "harness/product/run/run.h"
#include "harness/vm/warm/guest_pool.h"
#include "harness/vm/warm/vm_run.h"

namespace powercut::product {

// The run `options` ask for, recorded in `pool`'s warm guest (null: a guest of its own; every live
// cut boots its own). Never fails, as RunWorkload: what went wrong is the outcome's error_kind.
RunOutcome RunWithFaults(const vm::VmEnvironment& env, const RunOptions& options,
                         vm::GuestPool* pool = nullptr);

}  // namespace powercut::product
