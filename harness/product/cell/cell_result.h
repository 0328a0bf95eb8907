// One matrix cell (workload x setting x fs) after it ran: per cache model the headline numbers,
// or why the cell could not run; and its JSON form in a `powercut-matrix/1` report
// (docs/run.md). Round-trips through JSON, so merged shards render like a single run.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/expected_verdict.h"
#include "harness/fs/file_system.h"
#include "harness/product/cell/model_kind.h"
#include "harness/product/outcome/timeline.h"
#include "harness/product/run/run.h"
#include "nlohmann/json.hpp"

namespace powercut::product {

// How much of a failed checker's stderr a cell keeps (the engine keeps 2 KiB per state).
inline constexpr size_t kCheckerStderrBytes = 2048;

struct CellModel {
  std::string cache;  // the row's name: off / on / lying, per disk "1=on,2=lying", or a fault mode
  // What the row is, for its expectation (CellExpect::For); none for a set whose disks have
  // different models.
  std::optional<ModelKind> kind;
  uint64_t points = 0;
  uint64_t states = 0;
  uint64_t checked = 0;
  uint64_t violations = 0;        // the program's
  uint64_t fs_unrecoverable = 0;  // the file system's: its own tools could not bring it back
  uint64_t fs_repaired = 0;       // it came back only after repairs (a note)
  uint64_t torn_unacked = 0;      // states with a torn never-acked record (not violations)
  uint64_t lost_acks_max = 0;
  std::string first_violation;  // state id, "" when none
  std::string worst_violation;  // state id of the state losing lost_acks_max acks, "" when none
  std::string summary;          // the first violation, described
  // The checker's `why` for the first violation's lost ids ("2: missing A/foo: ..."; "" when it
  // gave none): `powercut fstest`'s failure class is its first word after the id.
  std::string why;
  std::string rebuild;  // the command that rebuilds the first violating state ("" when none)
  // The command that reproduces it by judging it again (a cluster's starts every node on its crash
  // image: harness::Verdict::repro); "" when the run has none.
  std::string repro;
  uint64_t could_not_check = 0;  // states whose checker output was not the protocol
  std::string fs_summary;        // the first fs-unrecoverable state, described ("" when none)
  // "e2fsck -fy exit 1 (repaired); mount ok": the first repaired state's steps ("" when none).
  std::string fs_repair_steps;
  std::string first_fs_unrecoverable;  // state id
  std::string first_fs_repaired;       // state id
  // States whose checker failed on a mounted image (a database server that could not recover
  // it; violations all), the first of them and the last kCheckerStderrBytes of its stderr (the
  // server's log, for the built-in databases).
  uint64_t checker_failures = 0;
  std::string first_checker_failure;  // state id
  std::string checker_stderr;
  // States on which the system did not come back to answer the checker (a cluster without a
  // quorum: harness::Verdict::unavailable), the system's own outcome and never a violation; the
  // first of them, described, and the last kCheckerStderrBytes of its checker's stderr (a
  // cluster's: each node's last log lines).
  uint64_t unavailable = 0;
  std::string first_unavailable;  // state id
  std::string unavailable_summary;
  std::string unavailable_stderr;
  // The engine's coverage (docs/report.md): the plan, and why the check ended before it did
  // ("", "first_violation", "budget"). `states` is the states judged.
  uint64_t states_planned = 0;
  std::string stopped;

  // A violation was found, or every planned state passed (harness::ModelResult::complete()).
  bool complete() const { return violations > 0 || states >= states_planned; }
  // lost_acks_max is the worst the plan allows: every planned state was judged
  // (harness::ModelResult::lost_acks_exact()); else a lower bound.
  bool lost_acks_exact() const { return states >= states_planned; }
};

// A verdict per row kind; a kind not named is expected to survive.
using ExpectedVerdicts = std::map<ModelKind, ExpectedVerdict>;
// {"off": "survives", "lying": "loses", ...} (ModelKindName, ExpectedVerdictName).
nlohmann::json ExpectedVerdictsToJson(const ExpectedVerdicts& verdicts);
// The inverse of ExpectedVerdictsToJson: an object whose keys are model names and whose values
// are verdict names. A key or verdict not in the vocabulary is an error naming it and listing
// the valid ones, never a default.
absl::StatusOr<ExpectedVerdicts> ExpectedVerdictsFromJson(const nlohmann::json& j);

// What a cell is expected to do. Built-in cells take it from the workload catalog
// (`powercut-workload list --json`, docs/workloads.md "Expected verdicts"); custom cells from
// their --cells file. Without an expectation a cache model is expected to survive, which is the
// raw "no violation" rule (`powercut matrix --no-expect`).
struct CellExpect {
  ExpectedVerdicts models;
  std::optional<RunError> error;  // set: the cell is expected not to run, for this reason
  // The verdicts where a file system differs from `models`; ForFs folds them in.
  std::map<harness::FsKind, ExpectedVerdicts> by_fs;

  // The expected verdict of a row of that kind: survives when not given, or for no kind.
  ExpectedVerdict For(std::optional<ModelKind> kind) const;
  CellExpect ForFs(harness::FsKind fs) const;  // `models` with by_fs[fs] applied
  // The reports' form, {"models": {...}, "error": "..."}; by_fs is folded in before reporting.
  nlohmann::json ToJson() const;
  // Reads ToJson's form back; an unknown model or verdict is an error (ExpectedVerdictsFromJson).
  static absl::StatusOr<CellExpect> FromJson(const nlohmann::json& j);
  bool empty() const { return models.empty() && !error; }
};

// `--expect off=survives,on=survives,lying=loses` of `powercut run`: a verdict (survives, loses,
// may-lose) for every row kind in `checked` (the run's cache models and fault modes) and none
// other. An unknown model or verdict is a usage error that lists the valid ones.
absl::StatusOr<CellExpect> ParseExpect(const std::string& text,
                                       const std::vector<ModelKind>& checked);

// A model's states for the tables: "N", or "NofM*" / "NofM~" when it stopped at its first
// violation / when the budget ran out (harness::StatesText, the legend in harness::StatesLegend).
std::string CellStatesText(const CellModel& model);
// A model's largest loss for the tables: "16", or "≥16" when it is a lower bound
// (harness::LostText).
std::string CellLostText(const CellModel& model);

// A `powercut fstest` cell's workload (harness/product/fstest/fstest_run.h): its stable id, where
// it came from, its text without comments and its shape (paths abstracted to their roles, the
// signature's middle part).
struct FsTestCell {
  std::string id;
  std::string source;
  std::string description;
  std::string text;
  std::string shape;
  // The cell's profile and kernel (harness/product/fstest_profiles.h, fstest_kernels.h): the
  // profile's name ("default", "fast_commit") and the kernel's label ("default", a release or the
  // user's label).
  std::string profile = "default";
  std::string kernel;
};

// A cell's verdict against its expectation (CellResult::Verdict).
enum class CellVerdict {
  kOk,          // every model, or the expected error, as expected
  kUnexpected,  // some model (or the error) not as expected
  kError,       // could not run, and no error was expected; or the tester's own bug
};

// "ok", "unexpected", "error": the reports' spelling (JSON "verdict", the HTML's data-verdict).
std::string_view CellVerdictName(CellVerdict verdict);

struct CellResult {
  size_t index = 0;  // position in the unsharded plan
  std::string name;  // "<workload>/<setting>/<fs>"
  std::string workload, setting, fs;
  std::string workload_command, checker_command;
  bool ran = false;
  std::optional<RunError> error_kind;  // set when !ran
  std::string error;
  uint64_t trace_entries = 0;
  uint64_t acks = 0;
  double record_seconds = 0, check_seconds = 0;
  // Of record_seconds: the guest boot it waited for (0 in a warm guest) and the workload's run.
  double boot_seconds = 0, workload_seconds = 0;
  // Of record_seconds: where the recording's time went, phase by phase (RunOutcome).
  std::vector<std::pair<std::string, double>> record_phases;
  // Of check_seconds, `--check-in guest`: each step's mean seconds per state (RunOutcome).
  std::vector<std::pair<std::string, double>> check_phases;
  std::string kernel;  // the guest kernel that recorded the cell (vm::KernelName; "" if none)
  std::vector<CellModel> models;
  // How and by which kernel (uname -r) its crash states were judged (harness::CheckReport).
  std::string check_method, check_kernel;
  // Several disks (a cluster's nodes: `set_member` kNode): each one's writes, flushes, FUA writes
  // and kept log (harness::CheckReport::disks); empty for one disk. JSON `disks` or `nodes`.
  std::vector<harness::DiskSummary> disks;
  harness::SetMember set_member = harness::SetMember::kDisk;
  std::optional<Timeline> timeline;
  std::vector<std::string> notes;

  CellExpect expect;
  // false: no expectation at all (`powercut run` without --expect): the numbers are reported and
  // nothing is judged against them (AsExpected is true, Unexpected empty, JSON "expect": null).
  bool judged = true;
  // `powercut matrix --no-expect`: judged by the raw rule, any violation fails. No expectation
  // is claimed then: Unexpected() names only what failed and the tables say FAIL, not
  // UNEXPECTED (MismatchWord).
  bool raw_rule = false;
  std::string recording;  // where its recording was kept for the rebuild commands ("": nowhere)
  // The fault modes' details (docs/live-cuts.md); their verdicts are also rows of `models`
  // (AppendFaultModels), so every table, JUnit and HTML report shows them.
  std::optional<LiveCutsResult> live_cuts;
  std::optional<NodeCutsResult> node_cuts;  // a cluster's single-node cuts: the `node-cut` row
  std::optional<FlakeyResult> flakey;
  // `powercut fstest` cells: the workload; empty for every other cell.
  std::optional<FsTestCell> fstest;

  bool failed() const;  // ran and some model has violations
  // Did the model's verdict match the cell's expectation? An incomplete pass (the budget ran out
  // before a violation was found) matches only may-lose: it neither shows survival nor a loss.
  bool AsExpected(const CellModel& model) const;
  // kOk (every model, or the expected error, as expected), kUnexpected, or kError (could not
  // run, and no error was expected; or a live cut outside the replay model).
  CellVerdict Verdict() const;
  // Why the verdict is unexpected, e.g. "cache on: expected survives, got 3 violating states";
  // "" when it is not.
  std::string Unexpected() const;
  // What the tables print before Unexpected(): "UNEXPECTED", or "FAIL" under the raw rule.
  std::string_view MismatchWord() const { return raw_rule ? "FAIL" : "UNEXPECTED"; }
};

// Fills the run part of `cell` from a RunOutcome.
void FillCell(const RunOutcome& outcome, CellResult* cell);

// The fault modes as rows of cell->models (harness/product/cell/fault_cells.cc): cache "live" (one
// state per live cut, violating when the oracle fails it) and cache "error_writes" or
// "drop_writes" (one state: the final image of the flakey run). Expectations name them by the
// same ModelKind (CellExpect::models).
void AppendFaultModels(CellResult* cell);
// The HTML report's section for a cell's live cuts (one row per seed) and failing disk ("" when
// it has neither).
std::string FaultDetailsHtml(const CellResult& cell);

// The exit status of `powercut run`: without an expectation (cell.judged false) the outcome's
// own (0 pass, 1 violations, 2 could not run or check); with --expect, 0 when every cache model
// matched it, 1 when one did not, 2 when it could not run or some state could not be checked.
int RunExitCode(const RunOutcome& outcome, const CellResult& cell);

// One line: the median of each recording phase (CellResult::record_phases) over the cells, and of
// the overhead beyond the workload's own run; "" when no cell has phases.
std::string RecordPhasesSummary(const std::vector<CellResult>& cells);

nlohmann::json CellToJson(const CellResult& cell);
// The guest a run asked for and its (first) disk's size ({memory_mib, cpus, disk_bytes}; 0 = the
// default), as the run and matrix reports record them.
nlohmann::json GuestSizeToJson(const GuestSize& guest, uint64_t disk_bytes);
// Phases (record_phases, RunOutcome::check_phases) as an array of [name, seconds], in order.
nlohmann::json PhasesToJson(const std::vector<std::pair<std::string, double>>& phases);
absl::StatusOr<CellResult> CellFromJson(const nlohmann::json& j);

}  // namespace powercut::product
