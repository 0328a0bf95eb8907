#include "bench/walbench/commit_report.h"

#include <fmt/format.h>

#include <map>

namespace powercut::walbench {
namespace {

std::string OptionalRatio(const std::optional<double>& value) {
  return value ? fmt::format("{:.2f}x", *value) : std::string("-");
}

nlohmann::json OptionalJson(const std::optional<double>& value) {
  if (!value) return nullptr;
  return *value;
}

}  // namespace

std::string FormatCommitTable(const std::vector<CommitResult>& results) {
  std::string out =
      fmt::format("{:>6} {:>7}  {:<26} {:>10} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8}\n", "bytes",
                  "threads", "engine", "commits/s", "p50_us", "p99_us", "sync/cmt", "flush/cmt",
                  "flush_ms", "/rocksdb", "/bare");
  for (const CommitResult& r : results) {
    const std::string flushes = r.device_flushes_per_commit
                                    ? fmt::format("{:.3f}", *r.device_flushes_per_commit)
                                    : std::string("-");
    const std::string flush_ms =
        r.device_flush_ms ? fmt::format("{:.2f}", *r.device_flush_ms) : std::string("-");
    out += fmt::format(
        "{:>6} {:>7}  {:<26} {:>10.0f} {:>9.1f} {:>9.1f} {:>9.3f} {:>9} {:>8} {:>8} {:>8}\n",
        r.record_bytes, r.threads, r.config.Label(), r.commits_per_sec, r.p50_us, r.p99_us,
        r.barriers_per_commit, flushes, flush_ms, OptionalRatio(r.ratio_to_rocksdb),
        OptionalRatio(r.ratio_to_bare));
  }
  out +=
      "sync/cmt: barrier syscalls per commit counted inside the engine; flush/cmt: device flushes "
      "per commit from /sys/block/<disk>/stat (includes other I/O on the disk); flush_ms: mean "
      "time of one device flush in the window.\n"
      "/rocksdb, /bare: median over reps of the ratio to the best RocksDB config / the bare loop "
      "in the same rep.\n";
  return out;
}

nlohmann::json CommitResultsToJson(const DeviceFacts& facts, const CommitBenchOptions& options,
                                   const std::vector<CommitResult>& results) {
  nlohmann::json j;
  nlohmann::json device;
  device["path"] = facts.path;
  device["fs_type"] = facts.fs_type;
  device["has_block_device"] = facts.has_block_device;
  if (facts.has_block_device) {
    device["disk"] = facts.disk;
    device["write_cache"] = std::string(WriteCacheName(facts.write_cache));
  }
  j["device"] = device;
  j["options"] = {{"threads", options.threads},
                  {"record_bytes", options.record_bytes},
                  {"seconds", options.seconds},
                  {"warmup_seconds", options.warmup_seconds},
                  {"reps", options.reps}};
  j["runs"] = nlohmann::json::array();
  for (const CommitResult& r : results) {
    nlohmann::json run;
    run["engine"] = r.config.engine;
    run["barrier"] = std::string(wal::BarrierName(r.config.barrier));
    run["label"] = r.config.Label();
    if (r.config.engine == "wal") {
      run["preallocate"] = r.config.preallocate;
      if (r.config.wal_segment_bytes > 0) run["segment_bytes"] = r.config.wal_segment_bytes;
      if (r.config.wal_release_every > 0) run["release_every"] = r.config.wal_release_every;
    }
    if (r.config.engine == "rocksdb") run["pipelined"] = r.config.pipelined;
    run["threads"] = r.threads;
    run["record_bytes"] = r.record_bytes;
    run["commits_per_sec"] = r.commits_per_sec;
    run["p50_us"] = r.p50_us;
    run["p99_us"] = r.p99_us;
    run["barriers_per_commit"] = r.barriers_per_commit;
    run["barriers_counted_by"] = "engine";
    run["device_flushes_per_commit"] = OptionalJson(r.device_flushes_per_commit);
    run["device_flush_ms"] = OptionalJson(r.device_flush_ms);
    run["ratio_to_rocksdb"] = OptionalJson(r.ratio_to_rocksdb);
    run["ratio_to_bare"] = OptionalJson(r.ratio_to_bare);
    nlohmann::json reps = nlohmann::json::array();
    for (const CommitRun& rep : r.reps) {
      reps.push_back({{"commits", rep.commits},
                      {"seconds", rep.seconds},
                      {"commits_per_sec", rep.commits_per_sec},
                      {"p50_us", rep.latency.p50_us},
                      {"p99_us", rep.latency.p99_us},
                      {"max_us", rep.latency.max_us},
                      {"barriers_per_commit", rep.barriers_per_commit},
                      {"device_flushes_per_commit", OptionalJson(rep.device_flushes_per_commit)},
                      {"device_flush_ms", OptionalJson(rep.device_flush_ms)}});
    }
    run["reps"] = std::move(reps);
    j["runs"].push_back(std::move(run));
  }
  return j;
}

std::vector<PlotPanel> CommitPlotPanels(const std::vector<CommitResult>& results) {
  // record size -> label -> points, keeping the first-seen order of labels.
  std::map<uint32_t, std::vector<PlotSeries>> by_size;
  for (const CommitResult& r : results) {
    std::vector<PlotSeries>& series = by_size[r.record_bytes];
    const std::string label = r.config.Label();
    auto it = std::find_if(series.begin(), series.end(),
                           [&](const PlotSeries& s) { return s.name == label; });
    if (it == series.end()) {
      series.push_back({label, {}});
      it = series.end() - 1;
    }
    it->points.emplace_back(r.threads, r.commits_per_sec);
  }
  std::vector<PlotPanel> panels;
  for (auto& [bytes, series] : by_size) {
    for (PlotSeries& s : series) std::sort(s.points.begin(), s.points.end());
    PlotPanel panel;
    panel.title = fmt::format("durable commits/s, {} B records (median)", bytes);
    panel.x_label = "committing threads";
    panel.y_label = "commits/s";
    panel.log2_x = true;
    panel.series = std::move(series);
    panels.push_back(std::move(panel));
  }
  return panels;
}

}  // namespace powercut::walbench
