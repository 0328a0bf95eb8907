#include "harness/product/matrix/merge.h"

#include <algorithm>
#include <set>

#include "fmt/format.h"

namespace powercut::product {

absl::StatusOr<MatrixReport> MergeReports(const std::vector<MatrixReport>& shards,
                                          bool allow_missing) {
  if (shards.empty()) return absl::InvalidArgumentError("merge: no reports given");
  MatrixReport out;
  out.parameters = shards.front().parameters;
  out.plan_cells = shards.front().plan_cells;
  out.shard = "merged";
  std::set<std::string> seen_shards;
  std::set<size_t> seen_cells;
  for (size_t i = 0; i < shards.size(); ++i) {
    const MatrixReport& s = shards[i];
    if (s.parameters != out.parameters) {
      return absl::InvalidArgumentError(fmt::format(
          "merge: report {} was run with other parameters ({} vs {}): merge only shards of one "
          "matrix command",
          i + 1, s.parameters.dump(), out.parameters.dump()));
    }
    if (s.plan_cells != out.plan_cells) {
      return absl::InvalidArgumentError(
          fmt::format("merge: report {} has a plan of {} cells, report 1 of {}", i + 1,
                      s.plan_cells, out.plan_cells));
    }
    if (s.shard != "merged" && !seen_shards.insert(s.shard).second) {
      return absl::InvalidArgumentError(
          fmt::format("merge: shard {} given twice (report {})", s.shard, i + 1));
    }
    for (const CellResult& c : s.cells) {
      if (!seen_cells.insert(c.index).second) {
        return absl::InvalidArgumentError(
            fmt::format("merge: cell {} (#{}) is in more than one report", c.name, c.index));
      }
      out.cells.push_back(c);
    }
    out.seconds += s.seconds;
    out.check_guests_booted += s.check_guests_booted;
    out.check_guests_adopted += s.check_guests_adopted;
  }
  std::sort(out.cells.begin(), out.cells.end(),
            [](const CellResult& a, const CellResult& b) { return a.index < b.index; });
  if (!allow_missing && out.cells.size() != out.plan_cells) {
    return absl::InvalidArgumentError(fmt::format(
        "merge: the reports hold {} of the plan's {} cells: a shard is missing (pass every "
        "shard's JSON, or --allow-missing)",
        out.cells.size(), out.plan_cells));
  }
  return out;
}

}  // namespace powercut::product
