#include "bench/walbench/commit_engine.h"

#include <fmt/format.h>

namespace powercut::walbench {

std::string EngineConfig::Label() const {
  if (engine == "rocksdb") return pipelined ? "rocksdb/pipelined" : "rocksdb";
  std::string label = fmt::format("{}/{}", engine, wal::BarrierName(barrier));
  if (engine == "wal" && !preallocate) label += "/noprealloc";
  if (engine == "wal" && wal_segment_bytes > 0) {
    label += fmt::format("/seg{}M", wal_segment_bytes >> 20);
  }
  if (engine == "wal" && wal_release_every > 0) label += fmt::format("/rel{}", wal_release_every);
  return label;
}

std::vector<std::string> AvailableEngines() {
  std::vector<std::string> engines;
  engines.emplace_back("wal");
#if POWERCUT_WALBENCH_HAVE_ROCKSDB
  engines.emplace_back("rocksdb");
#endif
  engines.emplace_back("bare");
  return engines;
}

absl::StatusOr<std::unique_ptr<CommitEngine>> OpenEngine(const EngineConfig& config,
                                                         const std::string& dir, int threads) {
  if (config.engine == "bare") return OpenBareEngine(config, dir, threads);
  if (config.engine == "rocksdb") {
#if POWERCUT_WALBENCH_HAVE_ROCKSDB
    return OpenRocksDbEngine(config, dir);
#else
    return absl::UnimplementedError(
        "engine rocksdb: this walbench was built without RocksDB (librocksdb-dev was not found "
        "when CMake ran); install it (tools/install-deps.sh), re-run cmake and rebuild, or leave "
        "rocksdb out of --engines");
#endif
  }
  if (config.engine == "wal") {
    return OpenWalEngine(config, dir);
  }
  return absl::InvalidArgumentError(
      fmt::format("unknown engine '{}'; expected wal, rocksdb or bare", config.engine));
}

}  // namespace powercut::walbench
