// The WAL engine: powercut's own log (wal/wal.h), one Commit per record, group-committed by the
// WAL. Barriers are counted by a CountingEnv under the WAL. Like a database that checkpoints, the
// engine releases durable segments now and then (ReleaseUpTo), so that with recycle_segments the
// WAL reuses old segments instead of creating and zero-filling new ones during the run.
#include <fmt/format.h>

#include <atomic>
#include <memory>
#include <string>

#include "tools/walbench/commit_engine.h"
#include "tools/walbench/counting_env.h"
#include "wal/status_macros.h"
#include "wal/wal.h"

namespace powercut::walbench {
namespace {

// Thread 0 releases durable segments after this many of its commits.
constexpr uint64_t kReleaseEvery = 1024;

class WalEngine : public CommitEngine {
 public:
  WalEngine(std::unique_ptr<CountingEnv> env, std::unique_ptr<wal::Wal> log)
      : env_(std::move(env)), log_(std::move(log)) {}

  ~WalEngine() override {
    if (log_ != nullptr) log_->Close().IgnoreError();
  }

  absl::Status Commit(int thread, absl::Span<const uint8_t> record) override {
    auto lsn = log_->Commit(record);
    if (!lsn.ok()) return lsn.status();
    if (thread == 0 && ++thread0_commits_ % kReleaseEvery == 0) {
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
  uint64_t thread0_commits_ = 0;  // touched by thread 0 only
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
  return std::unique_ptr<CommitEngine>(new WalEngine(std::move(env), std::move(log)));
}

}  // namespace powercut::walbench
