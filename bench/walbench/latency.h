// Latency percentiles and medians over repetitions.
//
// Percentiles use the nearest-rank definition (the smallest sample with at least p% of the
// samples at or below it), so every reported latency is one that was actually measured.
#pragma once

#include <cstdint>
#include <vector>

namespace powercut::walbench {

struct LatencySummary {
  uint64_t count = 0;
  double mean_us = 0;
  double p50_us = 0;
  double p99_us = 0;
  double p999_us = 0;
  double max_us = 0;
};

// Summarizes latencies given in nanoseconds. An empty input gives all zeros.
LatencySummary SummarizeLatencies(std::vector<int64_t> latencies_ns);

// The nearest-rank percentile (0 < p <= 100) of sorted samples; 0 for an empty input.
int64_t NearestRankPercentile(const std::vector<int64_t>& sorted, double p);

// The median; the mean of the two middle values for an even count; 0 for an empty input.
double Median(std::vector<double> values);

}  // namespace powercut::walbench
