// `powercut repro`: turns one violating crash state into a self-contained reproducer and shrinks
// it.
//
// The bundle folder holds trace.log, trace.log.manifest.json (pointing at base.img beside it),
// base.img (a sparse copy), state.txt (the original and the minimal state ids), repro.json (the
// verdicts and the shrinking steps) and README.md with the one-line command that rebuilds the
// minimal image and re-checks it. It needs nothing else but the powercut binary and the checker.
// A cluster's bundle (ReproOptions::cluster) also holds cluster.sh, the same by hand: each node's
// crash image rebuilt, taken through its file system's boot path and mounted, and every node
// started on it with the checker by `powercut-cluster --mode check`; and logs/<state id>/, the
// nodes' logs of the original and the minimal state.
//
// Shrinking is delta debugging (ddmin) over the state's dropped writes and its torn write: the
// smallest set (1-minimal: removing any one element makes the violation disappear) of writes
// that, left off the media (or torn), still makes the checker's verdict a violation. Every
// candidate is a real crash state of the same point and cache model (a kept-set bit mask), so its
// id rebuilds it anywhere. States with more than 64 volatile writes are bundled but not shrunk.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/check/state_judge.h"
#include "harness/cluster/cluster.h"
#include "harness/fs/file_system.h"
#include "nlohmann/json.hpp"

namespace powercut::product {

struct ReproOptions {
  std::string state_id;
  std::string trace;
  std::string base;    // "" = the trace's manifest
  std::string bundle;  // output folder ("" with recheck only)
  std::string checker;
  harness::FsKind fs = harness::FsKind::kRaw;
  bool ordered = false;
  bool latest_ack_only = false;  // the oracle's latest-ack rule (`powercut fstest repro`)
  bool fsck = false;
  bool shrink = true;
  double checker_timeout_s = 60;
  std::string powercut = "powercut";
  // `--kernel PATH`: the kernel a check in a guest boots (vm::PrepareVm); host checks ignore it.
  std::string kernel;
  // Set (`--check-in guest`, file systems): states are judged by this judge (a guest), not by a
  // host loop mount.
  harness::StateJudgeFactory judges;
  // A cluster's state (`--nodes N --node CMD`, docs/cluster.md): `cluster.nodes` > 0, its node
  // command and checker timeout set, and `checker` the user's own. Each candidate is then judged
  // with every node started on its own disk's crash image by the launcher at `launcher`
  // (`powercut-cluster --mode check`, harness/cluster/launcher.h), as `powercut run --nodes`
  // judged it. The trace must hold one disk a node.
  cluster::ClusterSpec cluster;
  std::string launcher;
  // A cluster's: the nodes' logs of the original and the minimal state are kept in
  // `keep_logs`/<state id>/node-K.log (a bundle keeps them in its logs/ too); "": only in a bundle.
  std::string keep_logs;
};

struct ReproStep {
  std::string state_id;
  size_t dropped = 0;  // writes left off (the torn write counts as one)
  bool violates = false;
};

struct ReproResult {
  std::string state_id;
  bool violates = false;
  std::string verdict;  // Verdict::Describe() of the original state
  std::string minimal_state_id;
  std::string minimal_verdict;
  std::vector<uint64_t> dropped;          // entries, original state
  std::vector<uint64_t> minimal_dropped;  // entries, minimal state
  std::optional<uint64_t> torn, minimal_torn;
  std::vector<ReproStep> steps;  // every candidate checked while shrinking
  std::string note;
  // A cluster's: where the nodes' logs of the original and the minimal state were kept
  // (ReproOptions::keep_logs/<id>; empty when not asked for).
  std::vector<std::string> node_logs;
};

// Materializes and checks the state (and its shrinking candidates); writes the bundle when
// options.bundle is set. A state that does not violate is reported (violates = false), not
// shrunk.
absl::StatusOr<ReproResult> Repro(const ReproOptions& options);

nlohmann::json ReproToJson(const ReproResult& result);

// The generic ddmin: `fails(subset)` says whether a subset of `elements` still shows the failure
// (`elements` itself must). Returns a 1-minimal failing subset. Exposed for tests.
std::vector<size_t> DeltaDebug(const std::vector<size_t>& elements,
                               const std::function<bool(const std::vector<size_t>&)>& fails);

}  // namespace powercut::product
