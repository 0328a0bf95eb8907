// Text, JSON and SVG renderings of `walbench commit` results.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/walbench/block_device.h"
#include "bench/walbench/commit_bench.h"
#include "bench/walbench/svg_plot.h"

namespace powercut::walbench {

// One row per (record size, threads, config) with medians and ratios.
std::string FormatCommitTable(const std::vector<CommitResult>& results);

// {"device": {...}, "options": {...}, "runs": [{engine, barrier, label, preallocate, pipelined,
//  threads, record_bytes, commits_per_sec, p50_us, p99_us, barriers_per_commit,
//  barriers_counted_by: "engine", device_flushes_per_commit, ratio_to_rocksdb, ratio_to_bare,
//  reps: [{commits_per_sec, p50_us, p99_us, barriers_per_commit, device_flushes_per_commit}]}]}
nlohmann::json CommitResultsToJson(const DeviceFacts& facts, const CommitBenchOptions& options,
                                   const std::vector<CommitResult>& results);

// One panel per record size: median commits/s against threads, one line per config.
std::vector<PlotPanel> CommitPlotPanels(const std::vector<CommitResult>& results);

}  // namespace powercut::walbench
