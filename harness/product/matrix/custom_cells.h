// Custom matrix cells (`powercut matrix --cells FILE.json`): any workload and checker command,
// each with its own expectation, file system and limits, run in the same matrix (and the same
// shards) as the built-in cells. A cell may expect not to run at all ("expect": {"error":
// "timeout"}): that is how a CI job pins down that bad input is reported as such (docs/run.md).
//
//   {"cells": [{"name": "hangs", "workload": "sleep 600", "checker": "true",
//               "timeout": 30, "expect": {"error": "timeout"}},
//              {"name": "mine", "workload": "...", "checker": "...", "fs": "xfs",
//               "expect": {"off": "survives", "on": "survives", "lying": "loses"}},
//              {"name": "etcd3", "nodes": 3, "node": "sh etcd/node.sh", "workload": "...",
//               "checker": "...", "expect": {"off": "survives", "lying": "loses"}}]}
//
// A cell with "nodes" is a cluster (docs/cluster.md): "node" is its node command, and the workload
// and checker are the cluster's clients, run as `powercut run --nodes N --node CMD` runs them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/fs/file_system.h"
#include "harness/product/cell/cell_result.h"
#include "nlohmann/json.hpp"

namespace powercut::product {

struct CustomCell {
  std::string name;      // [A-Za-z0-9_.-], unique; the cell is "<name>/custom/<fs>"
  std::string workload;  // command, run in the guest
  std::string checker;   // command, run on each crash image
  // A cluster of `nodes` nodes (2..7) running `node_command` each (docs/cluster.md); 0: none.
  uint32_t nodes = 0;
  std::string node_command;
  harness::FsKind fs = harness::DefaultFs();  // "fs" in the file: parsed once, when it is read
  CellExpect expect;                          // empty: every cache model is expected to survive
  int timeout_s = 0;                          // the VM run; 0: the matrix's --timeout
  uint64_t max_acks = 0;                      // more acks are a flood; 0: the matrix's --max-acks
  double checker_timeout_s = 0;               // 0: the matrix's
  // The middle of the cell's name ("" = "custom"); `powercut fstest` names its cells
  // "<workload id>/fstest/<fs>". Not read from --cells files.
  std::string setting;
  // Appended to the cell's name after the file system: `powercut fstest`'s profile and kernel
  // axes (":fast_commit", "@6.12.118+deb12-amd64"; fstest_profiles.h, fstest_kernels.h). Not
  // read from --cells files.
  std::string variant;
};

// Either {"cells": [...]} or a bare array. `source` names the file in errors.
absl::StatusOr<std::vector<CustomCell>> ParseCustomCells(const nlohmann::json& j,
                                                         const std::string& source);
absl::StatusOr<std::vector<CustomCell>> LoadCustomCells(const std::string& path);
nlohmann::json CustomCellToJson(const CustomCell& cell);

}  // namespace powercut::product
