#include "workloads/wal_workload.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/tsan_mutex.h"
#include "wal/wal.h"
#include "workloads/payload.h"
#include "workloads/workload.h"

namespace powercut::workloads {
namespace {

std::string LogDir(const std::string& dir) { return fmt::format("{}/{}", dir, kWalDirName); }

absl::Span<const uint8_t> Bytes(const std::string& s) {
  return absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

}  // namespace

absl::Status RunWal(const std::string& dir, const WalWorkloadOptions& options, AckChannel& acks) {
  if (options.count == 0) return absl::InvalidArgumentError("--count must be at least 1");
  if (options.threads < 1) return absl::InvalidArgumentError("--threads must be at least 1");
  const std::string log_dir = LogDir(dir);
  if (::access(log_dir.c_str(), F_OK) == 0) {
    return absl::InvalidArgumentError(fmt::format(
        "{} already exists: the wal workload needs a fresh POWERCUT_DIR (remove it)", log_dir));
  }
  wal::WalOptions wal_options;
  wal_options.barrier = options.barrier;
  wal_options.segment_bytes = options.segment_bytes;
  wal_options.max_batch_wait = absl::Microseconds(static_cast<int64_t>(options.max_batch_wait_us));
  wal_options.create_if_missing = true;
  absl::StatusOr<std::unique_ptr<wal::Wal>> opened = wal::Wal::Open(log_dir, wal_options);
  if (!opened.ok()) {
    return absl::Status(
        opened.status().code() == absl::StatusCode::kInvalidArgument
            ? absl::StatusCode::kInvalidArgument
            : absl::StatusCode::kInternal,
        fmt::format("opening the WAL in {}: {}", log_dir, std::string(opened.status().message())));
  }
  std::unique_ptr<wal::Wal> log = std::move(opened).value();

  std::atomic<uint64_t> next_id{1};
  std::atomic<bool> stop{false};
  absl::Mutex mu;
  absl::Status first_error;  // guarded by mu
  auto fail = [&](absl::Status status) {
    stop = true;
    MutexLock lock(&mu);
    if (first_error.ok()) first_error = std::move(status);
  };
  auto committer = [&] {
    while (!stop.load()) {
      const uint64_t id = next_id.fetch_add(1);
      if (id > options.count) return;
      const std::string id_text = std::to_string(id);
      const std::string payload =
          MakePayload(id_text, FillerSize(options.seed, id, options.value_size));
      absl::StatusOr<wal::Lsn> lsn = log->Commit(Bytes(payload));
      if (!lsn.ok()) {
        fail(absl::DataLossError(fmt::format(
            "WAL Commit of id {} in {} ({}): {}; stopped, no "
            "further acks",
            id, log_dir, wal::BarrierName(options.barrier), std::string(lsn.status().message()))));
        return;
      }
      absl::Status acked = acks.Ack(id_text);
      if (!acked.ok()) {
        fail(acked);
        return;
      }
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(options.threads));
  for (int t = 0; t < options.threads; ++t) threads.emplace_back(committer);
  for (std::thread& t : threads) t.join();

  absl::Status closed = log->Close();
  MutexLock lock(&mu);
  if (first_error.ok() && !closed.ok()) {
    first_error = absl::DataLossError(
        fmt::format("WAL Close in {}: {}", log_dir, std::string(closed.message())));
  }
  return first_error;
}

absl::StatusOr<CheckResult> CheckWal(const std::string& dir, recovery::Mode mode) {
  CheckResult result;
  const std::string log_dir = LogDir(dir);
  if (::access(log_dir.c_str(), F_OK) != 0) {
    result.notes.push_back(fmt::format("{} does not exist: nothing was committed", log_dir));
    return result;
  }
  recovery::RecoverOptions recover_options;
  recover_options.mode = mode;
  absl::StatusOr<recovery::RecoveryResult> recovered = recovery::Recover(log_dir, recover_options);
  if (!recovered.ok()) {
    return absl::DataLossError(fmt::format("WAL recovery ({}) of {} failed: {}",
                                           recovery::ModeName(mode), log_dir,
                                           std::string(recovered.status().message())));
  }
  result.notes.push_back(recovered->Summary());
  for (const recovery::RecoveredRecord& record : recovered->records) {
    std::optional<std::string> id = PayloadId(record.payload);
    if (id.has_value()) {
      result.have.push_back(*id);
      continue;
    }
    // The record passed the WAL's CRC but its payload is not ours: name the id it claims.
    const std::string claimed = record.payload.substr(0, record.payload.find('|'));
    if (IsValidAckId(claimed)) result.corrupt.push_back(claimed);
    result.notes.push_back(fmt::format("record LSN {}: payload does not verify (claims id '{}')",
                                       record.lsn,
                                       IsValidAckId(claimed) ? claimed : std::string("?")));
  }
  return result;
}

namespace {

class WalWorkload final : public DirectoryWorkload {
 public:
  WorkloadHelp help() const override {
    return {"wal", "the project's WAL, T committers, group commit",
            "commit and ack --count records", "run recovery, print have per record"};
  }
  void AddOptions(CLI::App& run, CLI::App& check) override {
    AddBarrierOption(run, barrier_);
    AddCountOption(run, options_.count, "records to commit");
    AddThreadsOption(run, options_.threads, "committers");
    AddPayloadOptions(run, options_.value_size, options_.seed, "payload");
    run.add_option("--segment-bytes", options_.segment_bytes, "segment size in bytes")
        ->capture_default_str();
    run.add_option("--max-batch-wait-us", options_.max_batch_wait_us,
                   "how long a group-commit leader waits for more committers")
        ->capture_default_str();
    check
        .add_option("--mode", mode_,
                    "recovery mode: tolerate-torn-tail, point-in-time, absolute, salvage")
        ->capture_default_str();
  }
  // One configuration per barrier; segments are preallocated, so every record write overwrites
  // zeros.
  std::vector<WorkloadConfig> CatalogEntries() const override {
    std::vector<WorkloadConfig> entries;
    for (wal::Barrier barrier : wal::AllBarriers()) {
      const std::string name(wal::BarrierName(barrier));
      WorkloadConfig c{.name = "wal-" + name,
                       .workload = "wal",
                       .setting = name,
                       .run_args = {"--barrier", name, "--threads", "4"}};
      ExpectBarrierVerdicts(barrier, /*extends_file=*/false, c);
      // A failing disk (error_writes): a barrier that reports the writeback error makes the WAL
      // fence; write(2) alone never sees it; O_DIRECT and sync_file_range see the error of
      // their own writes, not necessarily of everything acked with them.
      if (barrier == wal::Barrier::kNone) c.error_writes = Expectation::kLoses;
      if (barrier == wal::Barrier::kDirect || barrier == wal::Barrier::kSyncFileRange) {
        c.error_writes = Expectation::kMayLose;
      }
      entries.push_back(c);
    }
    return entries;
  }

 protected:
  absl::Status RunIn(const std::string& dir, AckChannel& acks) override {
    absl::StatusOr<wal::Barrier> barrier = wal::ParseBarrier(barrier_);
    if (!barrier.ok()) return barrier.status();
    options_.barrier = *barrier;
    return RunWal(dir, options_, acks);
  }
  absl::StatusOr<CheckResult> CheckIn(const std::string& dir) override {
    absl::StatusOr<recovery::Mode> mode = recovery::ParseMode(mode_);
    if (!mode.ok()) return absl::InvalidArgumentError(std::string(mode.status().message()));
    return CheckWal(dir, *mode);
  }

 private:
  WalWorkloadOptions options_;
  std::string barrier_ = "fdatasync";
  std::string mode_ = "tolerate-torn-tail";
};

}  // namespace

std::unique_ptr<Workload> MakeWalWorkload() { return std::make_unique<WalWorkload>(); }

}  // namespace powercut::workloads
