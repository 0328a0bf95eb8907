#include "bench/walbench/commit_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <thread>
#include <tuple>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "base/status_macros.h"

namespace powercut::walbench {
namespace {

using Clock = std::chrono::steady_clock;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// What one committing thread saw: completion times and latencies of its commits after the
// measurement began.
struct ThreadLog {
  std::vector<int64_t> end_ns;
  std::vector<int64_t> latency_ns;
  absl::Status status;
};

absl::StatusOr<CommitRun> RunOnce(const EngineConfig& config, int threads, uint32_t record_bytes,
                                  const CommitBenchOptions& options, const DeviceFacts& facts,
                                  BenchDir& dir) {
  ASSIGN_OR_RETURN(const std::string run_dir,
                   dir.NewRunDir(fmt::format("{}-t{}-b{}", config.engine, threads, record_bytes)));
  auto engine_or = OpenEngine(config, run_dir, threads);
  if (!engine_or.ok()) {
    dir.RemoveRunDir(run_dir).IgnoreError();
    return engine_or.status();
  }
  std::unique_ptr<CommitEngine> engine = std::move(*engine_or);

  std::atomic<int64_t> measure_from_ns{std::numeric_limits<int64_t>::max()};
  std::atomic<bool> stop{false};
  absl::Notification go;
  std::vector<ThreadLog> logs(static_cast<size_t>(threads));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      ThreadLog& log = logs[static_cast<size_t>(t)];
      std::vector<uint8_t> record(record_bytes);
      for (size_t i = 0; i < record.size(); ++i) {
        record[i] = static_cast<uint8_t>(i * 131 + static_cast<size_t>(t) * 7 + 1);
      }
      go.WaitForNotification();
      while (!stop.load(std::memory_order_relaxed)) {
        const int64_t start = NowNs();
        absl::Status status = engine->Commit(t, record);
        const int64_t end = NowNs();
        if (!status.ok()) {
          log.status = status;
          return;
        }
        if (start >= measure_from_ns.load(std::memory_order_relaxed)) {
          log.end_ns.push_back(end);
          log.latency_ns.push_back(end - start);
        }
      }
    });
  }
  go.Notify();
  // The main thread only keeps time here; the workers never wait on it.
  std::this_thread::sleep_for(std::chrono::duration<double>(options.warmup_seconds));
  std::optional<BlockStat> stat_before;
  if (facts.has_block_device) {
    if (auto s = ReadBlockStat(facts); s.ok()) stat_before = *s;
  }
  const uint64_t barriers_before = engine->BarrierCount();
  const int64_t from = NowNs();
  measure_from_ns.store(from);
  std::this_thread::sleep_for(std::chrono::duration<double>(options.seconds));
  const int64_t to = NowNs();
  const uint64_t barriers_after = engine->BarrierCount();
  std::optional<BlockStat> stat_after;
  if (stat_before.has_value()) {
    if (auto s = ReadBlockStat(facts); s.ok()) stat_after = *s;
  }
  stop.store(true);
  for (std::thread& worker : workers) worker.join();
  absl::Status close_status = engine->Close();
  engine.reset();
  absl::Status removed = dir.RemoveRunDir(run_dir);

  std::vector<int64_t> latencies;
  for (const ThreadLog& log : logs) {
    if (!log.status.ok()) {
      return absl::Status(log.status.code(),
                          fmt::format("engine {}, {} threads: {}", config.Label(), threads,
                                      std::string(log.status.message())));
    }
    for (size_t i = 0; i < log.end_ns.size(); ++i) {
      if (log.end_ns[i] <= to) latencies.push_back(log.latency_ns[i]);
    }
  }
  RETURN_IF_ERROR(close_status);
  RETURN_IF_ERROR(removed);

  CommitRun run;
  run.commits = latencies.size();
  run.seconds = static_cast<double>(to - from) / 1e9;
  run.commits_per_sec = run.seconds > 0 ? static_cast<double>(run.commits) / run.seconds : 0;
  if (run.commits > 0) {
    const double commits = static_cast<double>(run.commits);
    run.barriers_per_commit = static_cast<double>(barriers_after - barriers_before) / commits;
    if (stat_before && stat_after && stat_before->flush_ios && stat_after->flush_ios) {
      const uint64_t flushes = *stat_after->flush_ios - *stat_before->flush_ios;
      run.device_flushes_per_commit = static_cast<double>(flushes) / commits;
      if (flushes > 0 && stat_before->flush_ticks_ms && stat_after->flush_ticks_ms) {
        run.device_flush_ms =
            static_cast<double>(*stat_after->flush_ticks_ms - *stat_before->flush_ticks_ms) /
            static_cast<double>(flushes);
      }
    }
  }
  run.latency = SummarizeLatencies(std::move(latencies));
  return run;
}

bool BareTakesUnalignedWrites(wal::Barrier barrier) { return !wal::UsesDirectIo(barrier); }

}  // namespace

absl::StatusOr<std::vector<EngineConfig>> MakeEngineConfigs(
    const std::vector<std::string>& engines, const std::vector<wal::Barrier>& barriers,
    const std::vector<bool>& wal_preallocate) {
  std::vector<EngineConfig> configs;
  for (const std::string& engine : engines) {
    if (engine == "wal") {
      for (wal::Barrier barrier : barriers) {
        for (bool preallocate : wal_preallocate) {
          configs.push_back({"wal", barrier, preallocate, false});
        }
      }
    } else if (engine == "rocksdb") {
      configs.push_back({"rocksdb", wal::Barrier::kFdatasync, true, false});
      configs.push_back({"rocksdb", wal::Barrier::kFdatasync, true, true});
    } else if (engine == "bare") {
      bool any = false;
      for (wal::Barrier barrier : barriers) {
        if (!BareTakesUnalignedWrites(barrier)) continue;
        configs.push_back({"bare", barrier, true, false});
        any = true;
      }
      if (!any) configs.push_back({"bare", wal::Barrier::kFdatasync, true, false});
    } else {
      return absl::InvalidArgumentError(
          fmt::format("--engines: unknown engine '{}'; expected wal, rocksdb or bare", engine));
    }
  }
  if (configs.empty()) return absl::InvalidArgumentError("--engines: no engine selected");
  return configs;
}

void ComputeMediansAndRatios(std::vector<CommitResult>& results) {
  // Group by (threads, record_bytes).
  std::map<std::pair<int, uint32_t>, std::vector<CommitResult*>> groups;
  for (CommitResult& result : results) {
    groups[{result.threads, result.record_bytes}].push_back(&result);
  }
  for (auto& [key, members] : groups) {
    size_t reps = 0;
    for (CommitResult* r : members) reps = std::max(reps, r->reps.size());
    for (CommitResult* r : members) {
      std::vector<double> rate, p50, p99, barriers, flushes, flush_ms, to_rocksdb, to_bare;
      for (size_t i = 0; i < r->reps.size(); ++i) {
        const CommitRun& run = r->reps[i];
        rate.push_back(run.commits_per_sec);
        p50.push_back(run.latency.p50_us);
        p99.push_back(run.latency.p99_us);
        barriers.push_back(run.barriers_per_commit);
        if (run.device_flushes_per_commit) flushes.push_back(*run.device_flushes_per_commit);
        if (run.device_flush_ms) flush_ms.push_back(*run.device_flush_ms);
        // The neighbours in time: the other configs' runs of the same rep.
        double best_rocksdb = 0;
        double bare_same = 0, bare_fdatasync = 0;
        for (const CommitResult* other : members) {
          if (i >= other->reps.size()) continue;
          const double other_rate = other->reps[i].commits_per_sec;
          if (other->config.engine == "rocksdb") best_rocksdb = std::max(best_rocksdb, other_rate);
          if (other->config.engine == "bare") {
            if (other->config.barrier == r->config.barrier) bare_same = other_rate;
            if (other->config.barrier == wal::Barrier::kFdatasync) bare_fdatasync = other_rate;
          }
        }
        const double bare = bare_same > 0 ? bare_same : bare_fdatasync;
        if (best_rocksdb > 0) to_rocksdb.push_back(run.commits_per_sec / best_rocksdb);
        if (bare > 0) to_bare.push_back(run.commits_per_sec / bare);
      }
      r->commits_per_sec = Median(rate);
      r->p50_us = Median(p50);
      r->p99_us = Median(p99);
      r->barriers_per_commit = Median(barriers);
      r->device_flushes_per_commit =
          flushes.empty() ? std::nullopt : std::optional<double>(Median(flushes));
      r->device_flush_ms =
          flush_ms.empty() ? std::nullopt : std::optional<double>(Median(flush_ms));
      r->ratio_to_rocksdb =
          to_rocksdb.empty() ? std::nullopt : std::optional<double>(Median(to_rocksdb));
      r->ratio_to_bare = to_bare.empty() ? std::nullopt : std::optional<double>(Median(to_bare));
    }
  }
}

absl::StatusOr<std::vector<CommitResult>> RunCommitBench(const CommitBenchOptions& options,
                                                         const DeviceFacts& facts, BenchDir& dir) {
  std::vector<CommitResult> results;
  for (uint32_t bytes : options.record_bytes) {
    for (int threads : options.threads) {
      const size_t first = results.size();
      for (const EngineConfig& config : options.configs) {
        CommitResult result;
        result.config = config;
        result.threads = threads;
        result.record_bytes = bytes;
        results.push_back(std::move(result));
      }
      const size_t n = options.configs.size();
      for (int rep = 0; rep < options.reps; ++rep) {
        // Each rep starts at the next config (A/B/C, B/C/A, ...), so that no config always runs
        // first, right after the previous group's cleanup.
        for (size_t k = 0; k < n; ++k) {
          const size_t c = (k + static_cast<size_t>(rep)) % n;
          ASSIGN_OR_RETURN(CommitRun run,
                           RunOnce(options.configs[c], threads, bytes, options, facts, dir));
          fmt::print(stderr,
                     "  {:>5} B {:>3} threads rep {}  {:<26} {:>9.0f} commits/s  {:.2f} "
                     "barriers/commit\n",
                     bytes, threads, rep + 1, options.configs[c].Label(), run.commits_per_sec,
                     run.barriers_per_commit);
          results[first + c].reps.push_back(run);
        }
      }
    }
  }
  ComputeMediansAndRatios(results);
  return results;
}

}  // namespace powercut::walbench
