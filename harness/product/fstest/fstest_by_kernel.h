// Kernels side by side in one report (docs/fstest.md, "Kernels side by side"): for every workload
// and file system (profile) of a `powercut fstest run --kernel A,B,...` report, its verdict under
// each cache model on each kernel, the rows whose verdicts differ between kernels first (a
// regression or a fix), then the rows that fail on every kernel, then the rest. Read from the
// cells alone, so a merged report of shards shows the same.
#pragma once

#include <string>

#include "harness/product/matrix/matrix.h"
#include "nlohmann/json.hpp"

namespace powercut::product {

// {"kernels": [{"label", "recorded_by"}], "rows": [{"workload", "fs", "shape", "differs",
// "fails", "verdicts": {label: {cache: word}}}], "differing": N, "failing_everywhere": N,
// "passing_everywhere": N}. A word is "pass", "FAIL" (violating states), "fs-unrecoverable" or
// "not run" (the cell could not run, or the kernel has no such cell: a shard's report).
nlohmann::json CompareKernels(const MatrixReport& report);

// The comparison as text for stdout: the rows that differ and those that fail everywhere, one a
// line, then how many pass on every kernel (the JSON and HTML list every row).
std::string KernelComparisonText(const nlohmann::json& comparison);
// The same as an HTML section with every row.
std::string KernelComparisonHtml(const nlohmann::json& comparison);

}  // namespace powercut::product
