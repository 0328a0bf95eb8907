// `powercut fstest repro`: the shortest workload text and the fewest dropped writes that still
// violate (docs/fstest.md, "Reproducers").
//
// 1. The workload (by id, searched in the generated space or the --workloads files, or a file) is
//    recorded and judged under the one cache model, as `fstest run` does; the class of its first
//    violation (missing, old-content, ...) is what must keep showing.
// 2. Delta debugging (product::DeltaDebug) over its operations: a candidate is the workload with
//    some operations left out, in order; one the model file system refuses, or without a
//    persistence point that promises something, does not count; every other one is recorded and
//    judged anew. The result is 1-minimal: leaving out any one more operation loses the violation
//    (or makes the workload invalid).
// 3. The minimal workload's recording is kept, and its first violating state is shrunk by
//    `powercut repro` (the fewest dropped and torn writes), judged in the same guests.
// The bundle holds workload.fst (minimal), original.fst, the recording and the state reproducer
// (state/), and README.md with the commands that re-run each.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/fstest/workload.h"
#include "harness/product/fstest/fstest_run.h"
#include "harness/product/repro/repro.h"
#include "nlohmann/json.hpp"

namespace powercut::product {

struct FsTestReproOptions {
  std::string workload;  // an id (fst-...) or a workload file
  // Where an id is looked for: the generator's space (`--seq`, `--persist`) or `--workloads`.
  FsTestOptions source;
  harness::FsKind fs = harness::DefaultFs();
  harness::CacheModel model{.mode = harness::CacheMode::kOn};  // the one model (`--cache`)
  std::string mkfs_options, mount_options, kernel;
  std::string bundle;  // the reproducer's folder (required)
  bool shrink = true;  // shrink the workload and the state
  std::string powercut = "powercut";
  std::string exec_binary;  // powercut-fstest-exec
  std::string agent_hint;
  int timeout_s = 600;
};

struct FsTestReproResult {
  fstest::Workload original;
  fstest::Workload minimal;
  bool violates = false;
  std::string failure_class;  // of the original's first violation
  std::string verdict;        // the original's first violation, described
  struct Try {
    std::string text;
    bool violates = false;
  };
  std::vector<Try> tries;  // every workload candidate recorded while shrinking
  ReproResult state;       // the minimal workload's state, shrunk
  std::string note;
};

// Finds a workload by id (or reads the file), as `fstest run` would have generated or read it.
absl::StatusOr<fstest::Workload> FindFsTestWorkload(const std::string& id_or_file,
                                                    const FsTestOptions& source);

absl::StatusOr<FsTestReproResult> ReproFsTest(const FsTestReproOptions& options);

nlohmann::json FsTestReproToJson(const FsTestReproResult& result);

}  // namespace powercut::product
