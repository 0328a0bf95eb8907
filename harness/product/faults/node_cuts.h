// Single-node power cuts as a mode of `powercut run --nodes N` (`--node-cuts K [--node-down D]`,
// docs/cluster.md, "Single-node cuts"): besides the replay of one recording, K recordings of the
// cluster in each of which one node, drawn from the seed, loses its power once while the workload
// runs and the other nodes serve on: its process tree is frozen and killed, its drive keeps what
// cache model "on" allows at that instant (vm::NbdServer::ApplyNodeCut), and after D it starts
// again on that image. After the workload the user's checker runs against the live cluster:
// every ack of the run must be in its `have` lines. Each cut's disk image is also matched against
// the replay model (MatchNodeCutToModel): one outside is a tester bug.
#pragma once

#include <cstdint>

#include "harness/product/outcome/node_cut_results.h"
#include "harness/product/run/run.h"
#include "harness/vm/machine/vm_environment.h"

namespace powercut::product {

// `count` cuts with seeds options.seed + 1 .. + count; `recorded_acks` (the replay recording's)
// bounds the ack each cut comes after. Never fails: a cut that cannot run carries its error.
NodeCutsResult RunNodeCuts(const vm::VmEnvironment& env, const RunOptions& options, uint64_t count,
                           uint64_t recorded_acks);

}  // namespace powercut::product
