// A powercut report read for comparison (`powercut diff`, docs/nightly.md "What changed since
// last night"): any report the tester writes, reduced to what two nights are compared by. The
// matrix schema `powercut-matrix/1` (matrix, merge, fstest run) and the check schema
// `powercut-report/1` (run, check) are read here from their JSON alone, without the product's
// types, so that a report written by another build of powercut reads the same.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace powercut::diff {

// One row of a cell: a cache model (off, on, lying, per disk "1=on,2=lying") or a fault mode
// (live, error_writes, drop_writes).
struct ModelOutcome {
  std::string model;
  // The expected verdict (survives, loses, may-lose); "" when the report judged by the raw rule
  // (no expectation: any violation fails).
  std::string expect;
  // The verdict matched the expectation; for the raw rule, no violation and a complete check.
  bool as_expected = true;
  uint64_t violations = 0;  // the program's violating states
  bool complete = true;     // a violation was found or every planned state passed
  uint64_t states = 0;      // states judged
  uint64_t lost_acks_max = 0;
  // lost_acks_max is the worst the plan allows (every planned state judged); false: a lower
  // bound, printed "≥N" (docs/report.md, lost_acks_max_exact).
  bool lost_acks_exact = true;
  uint64_t fs_unrecoverable = 0;  // the file system's outcomes (docs/boot-recovery.md)
  uint64_t fs_repaired = 0;
  uint64_t could_not_check = 0;
  uint64_t unavailable = 0;  // the system did not come back (docs/cluster.md)

  // "pass", "FAIL" or "incomplete" (the tables' words).
  std::string_view Verdict() const;
  // "16", or "≥16" for a lower bound.
  std::string LostText() const;
};

// One cell (workload x setting x fs, or the one workload of a run).
struct CellOutcome {
  std::string name;
  bool ran = true;
  std::string error_kind;  // why it could not run (RunError's name), "" when it ran
  std::string error;       // the first line of the message
  // The report's verdict of the cell: "ok", "unexpected", "error"; "" when it judged none.
  std::string verdict;
  std::string unexpected;  // why the verdict is unexpected, as the report says it
  std::vector<ModelOutcome> models;
  double record_seconds = 0, check_seconds = 0;

  // Could not run, and not because it was expected to (verdict "error", or no verdict at all).
  bool CouldNotRunUnexpectedly() const;
  const ModelOutcome* Model(std::string_view model) const;  // nullptr when it has no such row
};

// Where a `powercut fstest` violation signature was seen.
struct SignatureScope {
  std::string fs;                   // the file system (the signature's last part)
  std::vector<std::string> caches;  // the cache models it violated under; empty: not said
};

struct ComparableReport {
  std::string path;    // as given, for messages
  std::string schema;  // "powercut-matrix/1" or "powercut-report/1"
  // "matrix", "merged matrix", "fstest", "merged fstest", "run", "check": what wrote it.
  std::string kind;
  // What decides which cells exist and how they are judged, one line each, nested fields by
  // their path ("preset" -> "headline", "fs" -> "ext4,xfs", "fstest.seq" -> "1",
  // "custom_cells[mydb].workload" -> "...", "check method" -> "guest mount"); values that differ
  // between two reports make them incomparable, and `powercut diff` lists them first. A report
  // of the whole plan has "shard" "whole plan" whether it ran unsharded or was merged.
  std::map<std::string, std::string> parameters;
  // The parameters that stand for an element of a list with its fields under them
  // ("custom_cells[mydb]", its value the element's JSON): a diff lists an element only one
  // report has as one line, not field by field.
  std::set<std::string> parameter_groups;
  // Matrix schema: the plan's cells and the parameters that decide them, as the report wrote
  // them (two reports of one plan have the same); 0 and "" for the check schema.
  size_t plan_cells = 0;
  std::string plan;
  bool merged = false;             // written by `powercut merge`
  std::vector<CellOutcome> cells;  // in the report's order
  // `powercut fstest` reports: the violation signatures (class | operations | file system).
  std::map<std::string, SignatureScope> signatures;
  // "fs|model" of every row judged (a cell that ran, one of its models): what a signature of
  // the other report could have been seen under here.
  std::set<std::string> judged;
  double seconds = 0;  // the whole run's wall-clock time

  const CellOutcome* Cell(std::string_view name) const;  // nullptr when it has no such cell
  // A merge of some shards only (`merge --allow-missing`): fewer cells than its plan. (One
  // shard's report holds part of the plan by design.)
  bool Partial() const { return merged && plan_cells > cells.size(); }
};

// The schemas this build reads, each at version 1.
inline constexpr std::string_view kMatrixSchema = "powercut-matrix/1";
inline constexpr std::string_view kCheckSchema = "powercut-report/1";

// Reads a report from its text; `path` names it in messages. Errors (InvalidArgument), each
// naming the file: not JSON or truncated (with the byte offset), not a powercut report (no
// "schema" naming one), a powercut report of an unknown schema or version, a report whose
// fields are missing or of the wrong type.
absl::StatusOr<ComparableReport> ReadReport(std::string_view text, std::string_view path);

}  // namespace powercut::diff
