// `powercut merge`: combines the JSON reports of the shards of one matrix into the report the
// unsharded run would have written (cells in plan order). Rejects reports whose parameters or
// plan differ, two reports of the same shard, and a cell present twice; reports missing shards
// (cells of the plan that no report has) in the error, unless `allow_missing`.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "harness/product/matrix/matrix.h"

namespace powercut::product {

absl::StatusOr<MatrixReport> MergeReports(const std::vector<MatrixReport>& shards,
                                          bool allow_missing = false);

}  // namespace powercut::product
