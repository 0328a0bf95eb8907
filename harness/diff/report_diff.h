// What changed between two reports (`powercut diff BASE NEW`, docs/nightly.md "What changed since
// last night"): the parameters that make them incomparable, the cells added and removed, and per
// cell and model what a reader of a nightly job wants to know — verdict changes, expectation
// changes, cells that could not run, acks lost (a lower bound told apart from an exact count),
// the file system's outcomes — plus the new and gone violation signatures of `powercut fstest`,
// and the timing as one summary. A regression is what got worse against the expectation: a model
// (or a cell) that was as expected and is not, a cell that newly could not run, a cell of the
// same plan missing from a report that holds only part of it (a merge with a shard missing), a
// new violation signature under a file system and cache model both reports judged.
#pragma once

#include <string>
#include <vector>

#include "harness/diff/report_reader.h"

namespace powercut::diff {

// One parameter whose values differ ("" = not given in that report).
struct ParameterChange {
  std::string name, base, next;
};

// What a change is about.
enum class ChangeAspect {
  kExpectation,   // as expected <-> unexpected
  kVerdict,       // pass / FAIL / incomplete
  kCouldNotRun,   // the cell ran <-> could not run (or why it could not run changed)
  kCellVerdict,   // the cell's own verdict, when no row explains it (an expected error)
  kLostAcks,      // the most acknowledged commits lost in one state
  kFsOutcome,     // file system unrecoverable / repaired in some states, or in none
  kUnavailable,   // the system did not come back (unavailable) in some states, or in none
  kModelAdded,    // a row only the new report has
  kModelRemoved,  // a row only the base report has
  kMissing        // a cell of the same plan the new report does not hold (a shard missing)
};

// "expectation", "verdict", "could not run", "cell verdict", "acks lost", "file system",
// "unavailable", "model added", "model removed", "missing": the JSON's and the tables' spelling.
std::string_view ChangeAspectName(ChangeAspect aspect);

// One change of one cell's row (or of the cell itself: `model` empty).
struct Change {
  std::string cell, model;
  ChangeAspect aspect;
  std::string base, next;  // what it was and what it is, in the tables' words
  bool regression = false;
};

struct ReportDiff {
  // The two reports' descriptions: path, schema, kind, cells.
  struct Side {
    std::string path, schema, kind;
    size_t cells = 0;
    double seconds = 0, record_seconds = 0, check_seconds = 0;
  };
  Side base, next;
  std::vector<ParameterChange> incomparable;
  // Removed: the base's cells the new report does not hold, but for the missing ones (a
  // kMissing change each, a regression).
  std::vector<std::string> cells_added, cells_removed;
  size_t cells_compared = 0, cells_missing = 0;
  std::vector<Change> changes;  // cell by cell in the new report's order, then missing ones
  // New signatures seen under a file system and cache model the base judged too (regressions),
  // new ones seen only under one the base did not judge (listed: nothing to compare them with),
  // and gone ones.
  std::vector<std::string> signatures_new, signatures_new_elsewhere, signatures_gone;

  // The regressions' count: changes marked so, plus every new signature in signatures_new.
  size_t Regressions() const;
  // 0 no regression, 1 some regression (bad input, exit 2, is the reader's).
  int ExitCode() const { return Regressions() > 0 ? 1 : 0; }
  // "<cell> cache <model>" (or "<cell>") of each regressing change, then "signature <s>" of
  // each new one in signatures_new.
  std::vector<std::string> RegressionNames() const;
};

ReportDiff DiffReports(const ComparableReport& base, const ComparableReport& next);

}  // namespace powercut::diff
