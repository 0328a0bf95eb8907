// The `cluster` preset (`powercut matrix --preset cluster`; docs/cluster.md, "The cluster
// preset"): 3-node clusters of the examples in workloads/cluster/ (etcd, NATS JetStream, Redis),
// each with the verdict per cache model that the system's own documentation promises and that the
// runs here measured (docs/results.md, "Clusters"). The examples are shell scripts run in the
// guest, found at run time (FindClusterExamples), so the preset's cells are custom cells
// (custom_cells.h) with a node command; their expected verdicts are compiled in here, the one
// place the docs' table is checked against (tests/cluster/preset_test.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/product/cell/cell_result.h"
#include "harness/product/matrix/custom_cells.h"

namespace powercut::product {

// One system x setting of the preset.
struct ClusterPresetEntry {
  std::string workload;     // the cell's name is <workload>/<setting>/<fs>: "etcd-cluster"
  std::string setting;      // "default", "always", ...
  std::string folder;       // the example's folder under the examples: "etcd"
  std::string node_args;    // appended to node.sh ("" or the setting under test)
  ExpectedVerdicts expect;  // per cache model (off, on, lying) and for a single node's cut
  std::string documented;   // what the system's documentation says (docs/cluster.md quotes it)
};

// Nodes of every preset cell, and acks per cell when `powercut matrix --count` is not given.
inline constexpr uint32_t kClusterPresetNodes = 3;
inline constexpr uint64_t kClusterPresetCount = 10;

// The preset's systems, in matrix order.
std::vector<ClusterPresetEntry> ClusterPresetEntries();

// The preset's cells as custom cells (a node command each) running the scripts of the examples
// folder `examples` (absolute) with `count` acks, on `fs`.
std::vector<CustomCell> ClusterPresetCells(const std::string& examples, uint64_t count,
                                           harness::FsKind fs);

// The examples folder (holding etcd/, nats/, redis/): $POWERCUT_CLUSTER_EXAMPLES when set, else
// where the layout of `self` (the running powercut, base/install_layout.h) puts it: installed
// <prefix>/share/powercut/cluster, build tree <build>/workloads/cluster (copied there by CMake),
// else `cluster/` beside the program. NotFound says where it looked and how to point at it.
absl::StatusOr<std::string> FindClusterExamples(const std::string& self);

}  // namespace powercut::product
