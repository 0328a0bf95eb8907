#include "harness/product/faults/node_cuts.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <sstream>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "base/image_io.h"
#include "base/scratch_dir.h"
#include "fmt/format.h"
#include "harness/check/checker.h"
#include "harness/cluster/cluster.h"
#include "harness/cluster/node_cut.h"
#include "harness/product/faults/cut_model_match.h"
#include "harness/vm/warm/vm_run.h"

namespace powercut::product {
namespace {

using Clock = std::chrono::steady_clock;

// The plan of cut `seed`: the node, the ack (never the last one, so that the workload still runs
// after the cut whenever it acks at least twice), a delay after it (short: a fast workload acks
// many times in 100 ms), and the drive's own seed.
struct Plan {
  uint32_t node = 1;
  uint64_t after_ack = 1;
  uint64_t delay_ms = 0;
  uint64_t drive_seed = 0;
};
Plan PlanOf(uint64_t seed, uint32_t nodes, uint64_t recorded_acks) {
  std::mt19937_64 rng(seed ^ 0x6e6f64652d637574ULL);  // "node-cut": apart from the live cuts'
  Plan p;
  p.node = 1 + static_cast<uint32_t>(rng() % nodes);
  p.after_ack = 1 + rng() % std::max<uint64_t>(1, recorded_acks > 1 ? recorded_acks - 1 : 1);
  p.delay_ms = rng() % 100;
  p.drive_seed = rng();
  return p;
}

// The checker's verdict on the live cluster: every ack of the run must be there.
void JudgeLiveCluster(const cluster::NodeCutOutcome& outcome, const std::vector<std::string>& acks,
                      NodeCut& cut) {
  harness::CheckerOutput out;
  std::istringstream lines(outcome.checker_stdout);
  std::string line;
  uint64_t number = 0;
  while (std::getline(lines, line)) harness::ParseCheckerLine(line, ++number, &out);
  cut.checker_stderr = outcome.checker_stderr;
  if (outcome.checker_timed_out || outcome.checker_exit == 1 || !out.unavailable.empty()) {
    cut.unavailable =
        !out.unavailable.empty() ? out.unavailable
        : outcome.checker_timed_out
            ? "the checker did not finish within its timeout after the cut (no quorum answered?)"
            : "the checker exited with status 1 after the cut (no quorum answered?)";
    return;
  }
  if (outcome.checker_exit != 0) {
    cut.error = fmt::format("the checker exited with status {} on the live cluster: {}",
                            outcome.checker_exit, outcome.checker_stderr);
    return;
  }
  if (!out.protocol_error.empty()) {
    cut.error = "the checker's output is not the protocol: " + out.protocol_error;
    return;
  }
  for (const std::string& id : acks) {
    if (out.corrupt.contains(id)) {
      cut.corrupt.push_back(id);
    } else if (!out.have.contains(id)) {
      cut.lost.push_back(id);
    }
  }
}

NodeCut OneNodeCut(const vm::VmEnvironment& env, const RunOptions& o, uint64_t seed,
                   uint64_t recorded_acks) {
  NodeCut cut;
  cut.seed = seed;
  const Plan plan = PlanOf(seed, o.cluster.nodes, recorded_acks);
  cut.node = plan.node;
  cut.after_ack = plan.after_ack;
  cut.delay_ms = plan.delay_ms;
  cut.down_ms = o.node_down_ms;
  auto scratch = ScratchDir::Create("powercut-nodecut", "/var/tmp");
  if (!scratch.ok()) {
    cut.error = std::string(scratch.status().message());
    return cut;
  }
  cluster::ClusterSpec spec = o.cluster;
  spec.node_cut = cluster::NodeCutPlan{.node = plan.node,
                                       .after_ack = plan.after_ack,
                                       .delay_ms = plan.delay_ms,
                                       .down_ms = o.node_down_ms,
                                       .checker = o.cluster.checker};
  vm::RunSpec rs = RecordingSpec(o, scratch->File("rec"));
  rs.recording = vm::Recording::kNbd;
  rs.command = cluster::WrapForCluster(spec, o.cluster_launcher).workload;
  rs.node_cut_disk = static_cast<int32_t>(plan.node - 1);
  rs.node_cut_seed = plan.drive_seed;
  rs.node_cut_model = {.mode = harness::CacheMode::kOn, .atomic_unit = o.atomic_unit};
  const Clock::time_point t0 = Clock::now();
  auto run = vm::RunInVm(env, rs);
  cut.record_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!run.ok()) {
    cut.error =
        fmt::format("the VM could not run the cut: {}", std::string(run.status().message()));
    return cut;
  }
  cluster::NodeCutOutcome outcome;
  absl::StatusOr<std::string> output = ReadWholeFile(run->workload_output);
  const absl::Status parsed =
      output.ok() ? cluster::ParseNodeCutSection(*output, &outcome) : output.status();
  if (run->guest.exit_code != 0 || !parsed.ok()) {
    cut.error = fmt::format(
        "the workload exited with status {}{}; its log: {}", run->guest.exit_code,
        parsed.ok() ? "" : fmt::format(" ({})", std::string(parsed.message())), run->workload_log);
    cut.recording = scratch->Release() + "/rec";
    return cut;
  }
  cut.fired = outcome.fired && run->node_cut.fired;
  cut.acks_before_cut = outcome.acks_before;
  cut.at_seconds = outcome.at_seconds;
  cut.down_seconds = outcome.down_seconds;
  if (!outcome.error.empty() || !run->node_cut.error.empty()) {
    cut.error = "the node cut could not be made: " +
                (outcome.error.empty() ? run->node_cut.error : outcome.error);
    return cut;
  }
  if (!cut.fired) return cut;
  const vm::PowerCutReport& report = run->node_cut.report;
  cut.point = run->node_cut.point;
  cut.kept = report.kept;
  cut.dropped = report.dropped;
  cut.torn = report.torn;
  auto match =
      MatchNodeCutToModel(run->trace, cut.point, plan.node - 1, run->node_cut.image, report);
  if (!match.ok()) {
    cut.error =
        fmt::format("the reality check could not run: {}", std::string(match.status().message()));
    return cut;
  }
  cut.in_model = match->in_model;
  cut.state_id = match->state_id;
  cut.evidence = match->evidence;
  cut.volatile_writes = match->volatile_writes;
  cut.acks = run->host_acks.size();
  JudgeLiveCluster(outcome, run->host_acks, cut);
  if (!cut.in_model || cut.violation() || !cut.unavailable.empty()) {
    cut.recording = scratch->Release() + "/rec";  // the evidence: trace, images, nodes' logs
  }
  return cut;
}

}  // namespace

NodeCutsResult RunNodeCuts(const vm::VmEnvironment& env, const RunOptions& o, uint64_t count,
                           uint64_t recorded_acks) {
  NodeCutsResult result;
  result.requested = count;
  for (uint64_t i = 1; i <= count; ++i) {
    result.cuts.push_back(OneNodeCut(env, o, o.seed + i, recorded_acks));
  }
  return result;
}

}  // namespace powercut::product
