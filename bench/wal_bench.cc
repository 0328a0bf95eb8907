// The WAL through its API with barrier `none` (write(2) only): the software cost of the log on
// top of the page cache (framing, CRC, group-commit bookkeeping, segment switches), and the
// recovery scan of what it wrote (recovery/recovery.h), both in bytes per second.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/scratch_dir.h"
#include "recovery/recovery.h"
#include "wal/wal.h"

namespace powercut {
namespace {

// Under /var/tmp (or $POWERCUT_BENCH_TMPDIR); deleted (with its contents) at the end of main.
absl::StatusOr<ScratchDir>& Scratch() {
  static auto* dir = [] {
    const char* parent = std::getenv("POWERCUT_BENCH_TMPDIR");
    return new absl::StatusOr<ScratchDir>(
        ScratchDir::Create("pcbench", parent != nullptr && *parent != '\0' ? parent : "/var/tmp"));
  }();
  return *dir;
}

wal::WalOptions NoBarrier(uint64_t segment_bytes) {
  wal::WalOptions options;
  options.barrier = wal::Barrier::kNone;
  options.segment_bytes = segment_bytes;
  return options;
}

// Commit (Append + Sync) of one record per iteration, barrier none.
void BM_WalCommitNoBarrier(benchmark::State& state) {
  if (!Scratch().ok()) {
    state.SkipWithError(std::string(Scratch().status().message()).c_str());
    return;
  }
  const std::string dir = fmt::format("{}/commit-{}", Scratch()->path(), state.range(0));
  auto log = wal::Wal::Open(dir, NoBarrier(64ull << 20));
  if (!log.ok()) {
    state.SkipWithError(std::string(log.status().message()).c_str());
    return;
  }
  const std::vector<uint8_t> record(static_cast<size_t>(state.range(0)), 0x77);
  uint64_t n = 0;
  for (auto _ : state) {
    auto lsn = (*log)->Commit(record);
    if (!lsn.ok()) {
      state.SkipWithError(std::string(lsn.status().message()).c_str());
      break;
    }
    // As a database would after a checkpoint: lets the WAL recycle old segments.
    if (++n % 4096 == 0) (*log)->ReleaseUpTo(*lsn).IgnoreError();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
  (*log)->Close().IgnoreError();
  log->reset();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}
BENCHMARK(BM_WalCommitNoBarrier)->Arg(128)->Arg(4096)->Arg(65536)->UseRealTime();

// Recover() over a log of 4 KiB records already in the page cache (written once, then read back
// on every iteration). Bytes = record bytes on disk (header + payload).
void BM_RecoveryScan(benchmark::State& state) {
  if (!Scratch().ok()) {
    state.SkipWithError(std::string(Scratch().status().message()).c_str());
    return;
  }
  constexpr size_t kRecordBytes = 4096;
  constexpr uint64_t kLogBytes = 128ull << 20;
  const std::string dir = Scratch()->path() + "/scan";
  static bool written = false;
  if (!written) {
    auto log = wal::Wal::Open(dir, NoBarrier(32ull << 20));
    if (!log.ok()) {
      state.SkipWithError(std::string(log.status().message()).c_str());
      return;
    }
    const std::vector<uint8_t> record(kRecordBytes, 0x33);
    for (uint64_t i = 0; i < kLogBytes / (kRecordBytes + wal::kRecordHeaderSize); ++i) {
      if (!(*log)->Append(record).ok()) {
        state.SkipWithError("append failed while writing the log to scan");
        return;
      }
    }
    if (!(*log)->Close().ok()) {
      state.SkipWithError("close failed while writing the log to scan");
      return;
    }
    written = true;
  }
  recovery::RecoverOptions options;
  options.keep_payloads = state.range(0) == 1;
  // Arg 2: the streaming form (recovery::RecordVisitor), reading every payload without a copy.
  const bool visit = state.range(0) == 2;
  uint64_t records = 0;
  for (auto _ : state) {
    uint64_t sum = 0;
    auto result = visit ? recovery::Recover(dir, options,
                                            [&](wal::Lsn, absl::Span<const uint8_t> payload) {
                                              sum += payload.front() + payload.back();
                                              return absl::OkStatus();
                                            })
                        : recovery::Recover(dir, options);
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      break;
    }
    records = result->record_count;
    benchmark::DoNotOptimize(records);
    benchmark::DoNotOptimize(sum);
  }
  state.counters["records"] = static_cast<double>(records);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(records * (kRecordBytes + wal::kRecordHeaderSize)));
}
BENCHMARK(BM_RecoveryScan)
    ->ArgName("keep_payloads")
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)  // RecordVisitor: payloads streamed, not kept
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace powercut

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  delete &powercut::Scratch();  // removes the scratch directory
  return 0;
}
