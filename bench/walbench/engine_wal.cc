// The WAL engine: powercut's own log (wal/wal.h), one Commit per record, group-committed by the
// WAL. Barriers are counted by a CountingEnv under the WAL. Like a database that checkpoints, the
// engine releases durable segments now and then (ReleaseUpTo), so that with recycle_segments the
// WAL reuses old segments instead of creating and zero-filling new ones during the run.
// (Wal::Open itself returns only once the first spare segment is prepared.)
#include <fmt/format.h>

#include <atomic>
#include <memory>
#include <string>

#include "base/status_macros.h"
#include "bench/walbench/commit_engine.h"
#include "bench/walbench/counting_env.h"
#include "wal/wal.h"

namespace powercut::walbench {
namespace {

// The engine releases durable segments after this many commits (of all threads). Often enough
// that, from the second switch on, the WAL's preparer always finds a released segment to recycle
// instead of zero-filling a new one (64 MiB of writes competing with the commits); ReleaseUpTo is
// one lock and a max.
constexpr uint64_t kDefaultReleaseEvery = 64;

class WalEngine : public CommitEngine {
 public:
  WalEngine(std::unique_ptr<CountingEnv> env, std::unique_ptr<wal::Wal> log, uint64_t release_every)
      : env_(std::move(env)), log_(std::move(log)), release_every_(release_every) {}

  ~WalEngine() override {
    if (log_ != nullptr) log_->Close().IgnoreError();
  }

  absl::Status Commit(int /*thread*/, absl::Span<const uint8_t> record) override {
    auto lsn = log_->Commit(record);
    if (!lsn.ok()) return lsn.status();
    if (commits_.fetch_add(1, std::memory_order_relaxed) % release_every_ == release_every_ - 1) {
      RETURN_IF_ERROR(log_->ReleaseUpTo(log_->DurableLsn()));
    }
    return absl::OkStatus();
  }

  uint64_t BarrierCount() const override { return env_->barriers(); }

  absl::Status Close() override {
    absl::Status status = log_->Close();
    log_.reset();
    return status;
  }

 private:
  const std::unique_ptr<CountingEnv> env_;
  std::unique_ptr<wal::Wal> log_;
  const uint64_t release_every_;
  std::atomic<uint64_t> commits_{0};
};

}  // namespace

absl::StatusOr<std::unique_ptr<CommitEngine>> OpenWalEngine(const EngineConfig& config,
                                                            const std::string& dir) {
  auto env = std::make_unique<CountingEnv>(wal::Env::Default());
  wal::WalOptions options;
  options.barrier = config.barrier;
  options.env = env.get();
  options.preallocate = config.preallocate;
  if (config.wal_segment_bytes > 0) options.segment_bytes = config.wal_segment_bytes;
  ASSIGN_OR_RETURN(std::unique_ptr<wal::Wal> log, wal::Wal::Open(dir + "/wal", options));
  return std::unique_ptr<CommitEngine>(new WalEngine(
      std::move(env), std::move(log),
      config.wal_release_every > 0 ? config.wal_release_every : kDefaultReleaseEvery));
}

}  // namespace powercut::walbench
