// `powercut fstest run`: testing a file system rather than a program (docs/fstest.md). Each
// workload of the language (harness/fstest/) is a matrix cell "<workload id>/fstest/<fs>": recorded
// once in a warm guest by powercut-fstest-exec, which takes the expected state in the guest right
// after every persistence point; the promises in force at each point are made from those states
// (harness/fstest/promises.h); every crash state at a persistence point, under every cache model,
// is judged in the guest by the recording kernel, by the agent itself (harness/fstest/judge.h),
// with the oracle's latest-ack rule. Everything else is the matrix's: shards, `powercut merge`,
// recordings of failing cells, JSON/JUnit/HTML, the exit status from each cell's expectation.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/fstest/generator.h"
#include "harness/fstest/workload.h"
#include "harness/product/fstest/fstest_kernels.h"
#include "harness/product/fstest/fstest_profiles.h"
#include "harness/product/matrix/matrix.h"
#include "nlohmann/json.hpp"

namespace powercut::product {

// The checker a file-system test cell reports: the judge is the guest agent itself.
inline constexpr char kFsTestJudge[] = "powercut-vm-agent (the fstest judge, in the guest)";

struct FsTestOptions {
  // The generated space (harness/fstest/generator.h), all of it or a seeded sample ...
  fstest::GeneratorOptions generator;
  uint64_t sample = 0;  // 0: every workload of the space
  uint64_t sample_seed = 1;
  // ... or the user's workload files instead (`--workloads DIR|FILE`).
  std::string workloads;
  // Violations under cache off or on make the run exit 1 (each cell expects to survive there);
  // without it every model may lose, and the run exits 0 when every cell ran.
  bool expect_clean = false;
  std::string exec_binary;  // powercut-fstest-exec (absolute)
  // fs, cache, window, points, states, shard, kernel, recordings, guest, timeouts, mkfs and mount
  // options, jobs, progress: the matrix's (its preset, workloads and custom cells are set here).
  MatrixOptions matrix;
  // The profile axis (`--profiles`): every workload on each profile, whose options come before
  // matrix.mkfs_options and matrix.mount_options; empty: the default profile of each of
  // matrix.fs (then matrix.fs is set from the profiles).
  std::vector<const FsTestProfile*> profiles;
  // The kernel axis (`--kernel LIST`): every workload on each kernel, in order; empty:
  // matrix.kernel alone. With one kernel the cells are named as without the axis.
  std::vector<FsTestKernel> kernels;
};

// The workloads of a run, parsed and validated (every one refused before any guest boots).
absl::StatusOr<std::vector<fstest::Workload>> PlanFsTest(const FsTestOptions& options);

// The matrix the workloads make: one custom cell per kernel, workload and profile, kernel by
// kernel (so that one kernel's guests are done before the next one's boot), named
// "<workload id>/fstest/<fs>[:<profile>][@<kernel>]" (ProfileVariant, KernelVariant), each
// expecting what `expect_clean` and its profile say (ProfileExpect).
absl::StatusOr<MatrixOptions> FsTestMatrix(const FsTestOptions& options,
                                           const std::vector<fstest::Workload>& workloads);

// The cell runner of one kernel: the CLI's VmCellRunner on it, with checks in guests; tests pass
// a fake. Called when the kernel's first cell of the shard starts; the runner is dropped (its
// guests shut down) after its last.
using KernelCellRunner = std::function<CellRunner(const FsTestKernel& kernel)>;

// Plans, runs the shard's cells (each cell's expected state becomes the guest judge's promises,
// with the latest-ack oracle and a boot path that mounts first; its profile's options and its
// kernel's runner) and fills each cell's `fstest` (id, text, shape, source, profile, kernel);
// writes `workload.fst` into every kept recording, so the folder is a reproducer.
absl::StatusOr<MatrixReport> RunFsTest(const FsTestOptions& options,
                                       const KernelCellRunner& runner_for);
// The same runner for every kernel (tests).
absl::StatusOr<MatrixReport> RunFsTest(const FsTestOptions& options, const CellRunner& inner);

// The promises (JSON, for vm::GuestJob::fstest_promises) from the expected states
// powercut-fstest-exec wrote to `output` ($POWERCUT_OUTPUT: one JSON line per persistence point):
// each must name its point and show what the workload did (fstest::PromisesAtPoints).
absl::StatusOr<std::string> FsTestPromises(const fstest::Workload& workload,
                                           const std::string& output);

// The failure class of a `why` ("2: missing A/foo: ..." -> "missing").
std::string FailureClassOf(const std::string& why);

// Whether a matrix report is a file-system test's (its parameters say how it was generated).
bool IsFsTestReport(const MatrixReport& report);

// The profile of a report's cell (its file system's default when the report names none).
const FsTestProfile& CellProfile(const CellResult& cell);

// Per file system (profile), kernel (when several ran) and cache model: workloads, crash states,
// violating workloads and failure classes; violations grouped by signature (class + operation
// shape + file system and profile), each with the kernels it was seen on, the workload's text,
// its first violating state, the rebuild command and the repro command; with several kernels,
// every workload's verdicts per kernel, those that differ first (fstest_by_kernel.h).
nlohmann::json FsTestSummary(const MatrixReport& report);
// The same as text, for stdout.
std::string FsTestTable(const MatrixReport& report);
// The report's JSON (MatrixToJson) with the summary under "fstest_summary" for a file-system test.
nlohmann::json ReportJson(const MatrixReport& report);
// The HTML report, with the signatures first for a file-system test.
std::string ReportHtml(const MatrixReport& report, const std::string& title);

}  // namespace powercut::product
