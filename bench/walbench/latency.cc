#include "bench/walbench/latency.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace powercut::walbench {

int64_t NearestRankPercentile(const std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  // The epsilon keeps 99.9% of 1000 at rank 999 despite binary floating point.
  const double rank = std::ceil(p / 100.0 * static_cast<double>(sorted.size()) - 1e-9);
  size_t index = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  index = std::min(index, sorted.size() - 1);
  return sorted[index];
}

LatencySummary SummarizeLatencies(std::vector<int64_t> latencies_ns) {
  LatencySummary summary;
  if (latencies_ns.empty()) return summary;
  std::sort(latencies_ns.begin(), latencies_ns.end());
  summary.count = latencies_ns.size();
  const double sum = std::accumulate(latencies_ns.begin(), latencies_ns.end(), 0.0);
  summary.mean_us = sum / static_cast<double>(latencies_ns.size()) / 1000.0;
  summary.p50_us = static_cast<double>(NearestRankPercentile(latencies_ns, 50)) / 1000.0;
  summary.p99_us = static_cast<double>(NearestRankPercentile(latencies_ns, 99)) / 1000.0;
  summary.p999_us = static_cast<double>(NearestRankPercentile(latencies_ns, 99.9)) / 1000.0;
  summary.max_us = static_cast<double>(latencies_ns.back()) / 1000.0;
  return summary;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  if (values.size() % 2 == 1) return values[mid];
  return (values[mid - 1] + values[mid]) / 2.0;
}

}  // namespace powercut::walbench
