// The results of single-node power cuts (`powercut run --nodes N --node-cuts K`, docs/cluster.md,
// "Single-node cuts"; harness/product/faults/node_cuts.h), as RunOutcome carries them, as the
// run's `node-cut` row counts them and as the JSON report holds them (`run.node_cuts`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace powercut::product {

// One recording of the cluster in which one node lost its power once and started again.
struct NodeCut {
  uint64_t seed = 0;
  // The plan drawn from the seed: the node, after which ack (plus a delay) its power goes, and
  // for how long.
  uint32_t node = 0;
  uint64_t after_ack = 0;
  uint64_t delay_ms = 0;
  uint64_t down_ms = 0;
  // false: the workload ended before the planned instant (it acked fewer times): no cut was made,
  // and the run is not counted.
  bool fired = false;
  uint64_t acks_before_cut = 0;  // the workload's acks before the node was frozen
  double at_seconds = 0;         // the instant, after the workload's start
  double down_seconds = 0;       // the instant to the node's new start
  uint64_t point = 0;            // the trace's entries before the cut
  // The node's drive at the instant (cache model "on"), and the reality check of its image.
  uint64_t volatile_writes = 0;
  uint64_t kept = 0, dropped = 0, torn = 0;
  bool in_model = false;
  std::string state_id;  // the crash state (of the node's disk) its image equals
  std::string evidence;  // outside the model: what differs
  // The checker against the live cluster after the workload: every ack of the run must be in its
  // `have` lines.
  uint64_t acks = 0;
  std::vector<std::string> lost;     // acked and not in `have`
  std::vector<std::string> corrupt;  // acked and reported corrupt
  // The cluster did not answer the checker after one node's cut (its exit 1 or its timeout): a
  // finding of its own for a replicated system, counted apart from violations.
  std::string unavailable;
  std::string checker_stderr;  // its last lines
  double record_seconds = 0;   // the whole recording: boot or warm guest, workload, cut, checker
  std::string recording;       // the kept recording (the trace, the node's logs in output.txt)
  std::string error;           // the cut could not be made or judged: not counted

  bool violation() const { return !lost.empty() || !corrupt.empty(); }
};

struct NodeCutsResult {
  uint64_t requested = 0;
  std::vector<NodeCut> cuts;

  uint64_t Counted() const;      // cuts made and judged (no error, fired)
  uint64_t InModel() const;      // of those, the node's image inside the replay model
  uint64_t Violations() const;   // of those, an ack missing from the live cluster
  uint64_t Unavailable() const;  // of those, the cluster did not answer the checker
  uint64_t Errors() const;       // could not be made or judged
  uint64_t Uncut() const;        // the workload ended before the planned instant
  bool TesterBug() const { return InModel() < Counted(); }
  // "3 of 3 node cuts inside the model, 0 violating, 0 unavailable, 41.0 s per cut"
  std::string Summary() const;
};

// One line per cut and the summary, for stdout.
std::string NodeCutsText(const NodeCutsResult& result);
nlohmann::json NodeCutsToJson(const NodeCutsResult& result);
NodeCutsResult NodeCutsFromJson(const nlohmann::json& j);

}  // namespace powercut::product
