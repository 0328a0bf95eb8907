#include "harness/product/faults/run_with_faults.h"

#include "harness/product/faults/flakey.h"
#include "harness/product/faults/live_cuts.h"
#include "harness/product/faults/node_cuts.h"

namespace powercut::product {

RunOutcome RunWithFaults(const vm::VmEnvironment& env, const RunOptions& o, vm::GuestPool* pool) {
  if (o.flakey.mode) return RunFlakey(env, o, pool);  // instead of the replay
  RunOutcome out = RunWorkload(env, o, pool);
  if (out.ran && o.live_cuts > 0) {
    out.live_cuts = RunLiveCuts(env, o, o.live_cuts, out.recorded_acks);
  }
  if (out.ran && o.node_cuts > 0) {
    out.node_cuts = RunNodeCuts(env, o, o.node_cuts, out.recorded_acks);
  }
  return out;
}

}  // namespace powercut::product
