// The comparison of two reports (report_diff.h).
#include "harness/diff/report_diff.h"

#include <algorithm>
#include <map>
#include <set>

#include "fmt/format.h"

namespace powercut::diff {
namespace {

ReportDiff::Side SideOf(const ComparableReport& r) {
  ReportDiff::Side side{.path = r.path,
                        .schema = r.schema,
                        .kind = r.kind,
                        .cells = r.cells.size(),
                        .seconds = r.seconds};
  for (const CellOutcome& c : r.cells) {
    side.record_seconds += c.record_seconds;
    side.check_seconds += c.check_seconds;
  }
  return side;
}

std::vector<ParameterChange> ParameterChanges(const ComparableReport& base,
                                              const ComparableReport& next) {
  std::set<std::string> names;
  for (const auto& [name, value] : base.parameters) names.insert(name);
  for (const auto& [name, value] : next.parameters) names.insert(name);
  // A group (a custom cell) only one report has is one line; in both, its fields tell.
  std::vector<std::string> one_sided_groups;
  for (const std::string& name : names) {
    if ((base.parameter_groups.contains(name) || next.parameter_groups.contains(name)) &&
        base.parameters.contains(name) != next.parameters.contains(name)) {
      one_sided_groups.push_back(name + ".");
    }
  }
  std::vector<ParameterChange> changes;
  for (const std::string& name : names) {
    const bool group = base.parameter_groups.contains(name) || next.parameter_groups.contains(name);
    const bool in_one_sided_group =
        std::any_of(one_sided_groups.begin(), one_sided_groups.end(),
                    [&](const std::string& prefix) { return name.starts_with(prefix); });
    if (in_one_sided_group ||
        (group && base.parameters.contains(name) && next.parameters.contains(name))) {
      continue;
    }
    auto b = base.parameters.find(name);
    auto n = next.parameters.find(name);
    const std::string bv = b == base.parameters.end() ? "" : b->second;
    const std::string nv = n == next.parameters.end() ? "" : n->second;
    if (bv != nv) changes.push_back({name, bv, nv});
  }
  return changes;
}

// "as expected (survives)", "UNEXPECTED (expected survives)"; a row judged by the raw rule
// claims no expectation: "raw rule: no violation", "raw rule: FAIL".
std::string ExpectationText(const ModelOutcome& m) {
  if (m.expect.empty()) return m.as_expected ? "raw rule: no violation" : "raw rule: FAIL";
  return m.as_expected ? fmt::format("as expected ({})", m.expect)
                       : fmt::format("UNEXPECTED (expected {})", m.expect);
}

// The file system's outcomes of a row: "none", "unrecoverable in 2 states, repaired in 1".
std::string FsText(const ModelOutcome& m) {
  std::string text;
  if (m.fs_unrecoverable > 0) text = fmt::format("unrecoverable in {} states", m.fs_unrecoverable);
  if (m.fs_repaired > 0) {
    text += fmt::format("{}repaired in {} states", text.empty() ? "" : ", ", m.fs_repaired);
  }
  return text.empty() ? "none" : text;
}

std::string CouldNotRunText(const CellOutcome& c) {
  return fmt::format("could not run ({}){}{}", c.error_kind.empty() ? "?" : c.error_kind,
                     c.error.empty() ? "" : ": ", c.error);
}

// "ran", or "ran: unexpected: ..." when the report says the cell came out unexpected (nothing
// to compare it with after a night it could not run, but worth reading).
std::string RanText(const CellOutcome& c) {
  if (c.verdict != "unexpected") return "ran";
  return c.unexpected.empty() ? "ran: unexpected"
                              : fmt::format("ran: unexpected: {}", c.unexpected);
}

// The changes of one row present in both reports.
void DiffModel(const std::string& cell, const ModelOutcome& b, const ModelOutcome& n,
               std::vector<Change>& out) {
  auto add = [&](ChangeAspect aspect, std::string base, std::string next, bool regression) {
    out.push_back({cell, b.model, aspect, std::move(base), std::move(next), regression});
  };
  // Without an expectation on either side (the raw rule: any violation fails) the verdict is
  // the expectation: its change carries the regression, and no expectation is claimed. With one
  // on one side only (`--no-expect` one night, not the other) the two "as expected" answer
  // different questions: only a verdict that got worse than pass is a regression, and the
  // expectation changes only where the answer did.
  const bool raw_rule = b.expect.empty() && n.expect.empty();
  const bool one_sided = b.expect.empty() != n.expect.empty();
  const bool regression =
      one_sided ? b.Verdict() == "pass" && n.Verdict() != "pass" : b.as_expected && !n.as_expected;
  const bool expectation_changed = one_sided
                                       ? b.as_expected != n.as_expected
                                       : b.as_expected != n.as_expected || b.expect != n.expect;
  if (!raw_rule && expectation_changed) {
    add(ChangeAspect::kExpectation, ExpectationText(b), ExpectationText(n),
        regression && !one_sided);
  }
  if (b.Verdict() != n.Verdict() || ((raw_rule || one_sided) && regression)) {
    add(ChangeAspect::kVerdict, std::string(b.Verdict()), std::string(n.Verdict()),
        (raw_rule || one_sided) && regression);
  }
  if (b.lost_acks_max != n.lost_acks_max || b.lost_acks_exact != n.lost_acks_exact) {
    add(ChangeAspect::kLostAcks, b.LostText(), n.LostText(), false);
  }
  // Counts alone differ between any two recordings (each has its own crash states): only a
  // file-system outcome that appears or goes is a change.
  if ((b.fs_unrecoverable > 0) != (n.fs_unrecoverable > 0) ||
      (b.fs_repaired > 0) != (n.fs_repaired > 0)) {
    add(ChangeAspect::kFsOutcome, FsText(b), FsText(n), false);
  }
  // Likewise the system's own outcome: a cluster that stops (or starts) coming back on some
  // states is worth reading, and, like the file system's, not the program's regression.
  if ((b.unavailable > 0) != (n.unavailable > 0)) {
    auto text = [](const ModelOutcome& m) {
      return m.unavailable == 0 ? std::string("came back on every state")
                                : fmt::format("did not come back in {} states", m.unavailable);
    };
    add(ChangeAspect::kUnavailable, text(b), text(n), false);
  }
  if ((b.could_not_check > 0) != (n.could_not_check > 0)) {
    auto text = [](const ModelOutcome& m) {
      return m.could_not_check == 0
                 ? std::string("every state checked")
                 : fmt::format("{} states could not be checked", m.could_not_check);
    };
    add(ChangeAspect::kCouldNotRun, text(b), text(n), n.could_not_check > 0);
  }
}

// The changes of one cell present in both reports.
void DiffCell(const CellOutcome& b, const CellOutcome& n, std::vector<Change>& out) {
  const size_t first = out.size();
  if (b.ran && n.ran) {
    for (const ModelOutcome& nm : n.models) {
      if (const ModelOutcome* bm = b.Model(nm.model)) {
        DiffModel(n.name, *bm, nm, out);
      } else {
        out.push_back({n.name, nm.model, ChangeAspect::kModelAdded, "",
                       fmt::format("{} {}", nm.Verdict(), nm.LostText()), false});
      }
    }
    for (const ModelOutcome& bm : b.models) {
      if (n.Model(bm.model) == nullptr) {
        out.push_back({n.name, bm.model, ChangeAspect::kModelRemoved,
                       fmt::format("{} {}", bm.Verdict(), bm.LostText()), "", false});
      }
    }
  } else if (b.ran != n.ran || b.error_kind != n.error_kind) {
    out.push_back({n.name, "", ChangeAspect::kCouldNotRun, b.ran ? RanText(b) : CouldNotRunText(b),
                   n.ran ? RanText(n) : CouldNotRunText(n),
                   n.CouldNotRunUnexpectedly() && (b.ran || !b.CouldNotRunUnexpectedly())});
  }
  // A cell verdict no row explains (an expected error that did not come, a live cut outside
  // the model): the cell's own change.
  bool explained = false;
  for (size_t i = first; i < out.size(); ++i) {
    explained = explained || out[i].regression || out[i].aspect == ChangeAspect::kExpectation ||
                out[i].aspect == ChangeAspect::kCouldNotRun;
  }
  if (!explained && !b.verdict.empty() && !n.verdict.empty() && b.verdict != n.verdict) {
    auto text = [](const CellOutcome& c) {
      return c.unexpected.empty() ? c.verdict : fmt::format("{}: {}", c.verdict, c.unexpected);
    };
    out.push_back({n.name, "", ChangeAspect::kCellVerdict, text(b), text(n), b.verdict == "ok"});
  }
}

}  // namespace

std::string_view ChangeAspectName(ChangeAspect aspect) {
  switch (aspect) {
    case ChangeAspect::kExpectation:
      return "expectation";
    case ChangeAspect::kVerdict:
      return "verdict";
    case ChangeAspect::kCouldNotRun:
      return "could not run";
    case ChangeAspect::kCellVerdict:
      return "cell verdict";
    case ChangeAspect::kLostAcks:
      return "acks lost";
    case ChangeAspect::kFsOutcome:
      return "file system";
    case ChangeAspect::kUnavailable:
      return "unavailable";
    case ChangeAspect::kModelAdded:
      return "model added";
    case ChangeAspect::kModelRemoved:
      return "model removed";
    case ChangeAspect::kMissing:
      return "missing";
  }
  return "?";
}

size_t ReportDiff::Regressions() const {
  size_t count = signatures_new.size();
  for (const Change& c : changes) count += c.regression;
  return count;
}

std::vector<std::string> ReportDiff::RegressionNames() const {
  std::vector<std::string> names;
  for (const Change& c : changes) {
    if (!c.regression) continue;
    std::string name = c.model.empty() ? c.cell : fmt::format("{} cache {}", c.cell, c.model);
    if (names.empty() || names.back() != name) names.push_back(std::move(name));
  }
  for (const std::string& s : signatures_new) names.push_back("signature " + s);
  return names;
}

ReportDiff DiffReports(const ComparableReport& base, const ComparableReport& next) {
  ReportDiff diff{.base = SideOf(base), .next = SideOf(next)};
  diff.incomparable = ParameterChanges(base, next);
  std::map<std::string, const CellOutcome*> base_cells;
  for (const CellOutcome& c : base.cells) base_cells[c.name] = &c;
  std::set<std::string> next_names;
  for (const CellOutcome& n : next.cells) {
    next_names.insert(n.name);
    auto b = base_cells.find(n.name);
    if (b == base_cells.end()) {
      diff.cells_added.push_back(n.name);
      continue;
    }
    ++diff.cells_compared;
    DiffCell(*b->second, n, diff.changes);
  }
  // The new report holds part of the same plan the base ran (a merge with a shard missing,
  // `merge --allow-missing`): the cells it lacks were not removed from the plan, they did not
  // report, and the night checked less than the last.
  const bool missing_shards = next.Partial() && !next.plan.empty() && next.plan == base.plan &&
                              next.plan_cells == base.plan_cells;
  for (const CellOutcome& b : base.cells) {
    if (next_names.contains(b.name)) continue;
    if (!missing_shards) {
      diff.cells_removed.push_back(b.name);
      continue;
    }
    ++diff.cells_missing;
    diff.changes.push_back(
        {b.name, "", ChangeAspect::kMissing, b.ran ? "ran" : CouldNotRunText(b),
         fmt::format("not in the report ({} of the plan's {} cells: a shard missing?)",
                     next.cells.size(), next.plan_cells),
         true});
  }
  for (const auto& [s, scope] : next.signatures) {
    if (base.signatures.contains(s)) continue;
    // Seen only where the base did not look (a file system or cache model added tonight):
    // listed, like an added cell, not a regression.
    const bool judged_in_base =
        scope.caches.empty() || std::any_of(scope.caches.begin(), scope.caches.end(),
                                            [&, &scope = scope](const std::string& cache) {
                                              return base.judged.contains(scope.fs + "|" + cache);
                                            });
    (judged_in_base ? diff.signatures_new : diff.signatures_new_elsewhere).push_back(s);
  }
  for (const auto& [s, scope] : base.signatures) {
    if (!next.signatures.contains(s)) diff.signatures_gone.push_back(s);
  }
  return diff;
}

}  // namespace powercut::diff
