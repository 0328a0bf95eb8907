// `powercut matrix --jobs N` runs cells_in_flight = N + 1 cells at once
// (harness/product/matrix/matrix.h): the report keeps the plan's order whatever order the cells
// finish in, and cells really overlap.
#include <atomic>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/product/matrix/matrix.h"

namespace powercut::product {
namespace {

TEST(MatrixJobs, CellsOverlapAndTheReportKeepsThePlanOrder) {
  MatrixOptions o;
  o.workloads = {"xlog"};
  o.workload_binary = "/bin/powercut-workload";
  o.progress = false;
  o.cells_in_flight = 3;
  absl::Mutex mu;
  int running = 0, most = 0, started = 0;
  std::atomic<int> calls{0};
  auto r = RunMatrix(o, [&](const MatrixCell& c, const RunOptions&) {
    ++calls;
    {
      absl::MutexLock lock(&mu);
      most = std::max(most, ++running);
      ++started;
      // The first cell waits (bounded) until a second one has started beside it: with cells in
      // flight they overlap; run one by one the wait would time out and `most` stay 1.
      mu.AwaitWithTimeout(absl::Condition(
                              +[](int* n) { return *n >= 2; }, &started),
                          absl::Seconds(10));
      --running;
    }
    RunOutcome out;
    out.error_kind = product::RunError::kVm;
    out.error = "fake: " + c.Name();  // carries the cell's name into its result
    return out;
  });
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->cells.size(), static_cast<size_t>(calls.load()));
  EXPECT_GE(most, 2);
  EXPECT_LE(most, 3);
  for (size_t i = 0; i < r->cells.size(); ++i) {
    EXPECT_EQ(r->cells[i].index, i);
    EXPECT_EQ(r->cells[i].error, "fake: " + r->cells[i].name);
  }
}

}  // namespace
}  // namespace powercut::product
