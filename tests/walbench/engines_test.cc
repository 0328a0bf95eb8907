// The parts of walbench that touch files: the scratch directory, raw barrier files, the bare
// engine, the barrier-counting Env. Small and quick: they check behaviour, not speed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "base/temp_dir.h"
#include "bench/walbench/barrier_bench.h"
#include "bench/walbench/bench_dir.h"
#include "bench/walbench/cache_bench.h"
#include "bench/walbench/commit_engine.h"
#include "bench/walbench/counting_env.h"
#include "bench/walbench/raw_barrier.h"

namespace powercut::walbench {
namespace {

using powercut::testing::TempDir;

namespace fs = std::filesystem;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(BenchDirTest, CreatesInsideParentAndRemovesOnlyItsOwnTree) {
  TempDir scratch;
  const std::string users_file = scratch.path() + "/precious.txt";
  std::ofstream(users_file) << "keep me";
  std::string created;
  {
    auto dir = BenchDir::Create(scratch.path());
    ASSERT_TRUE(dir.ok()) << dir.status();
    created = (*dir)->path();
    EXPECT_EQ(fs::path(created).parent_path(), fs::path(scratch.path()));
    auto run = (*dir)->NewRunDir("x");
    ASSERT_TRUE(run.ok()) << run.status();
    std::ofstream(*run + "/data") << "bench data";
    // Anything outside the scratch directory is refused.
    EXPECT_FALSE((*dir)->RemoveRunDir(scratch.path()).ok());
    EXPECT_FALSE((*dir)->RemoveRunDir(users_file).ok());
    EXPECT_TRUE((*dir)->RemoveRunDir(*run).ok());
    EXPECT_FALSE(fs::exists(*run));
  }
  EXPECT_FALSE(fs::exists(created));
  EXPECT_EQ(ReadAll(users_file), "keep me");
}

TEST(BenchDirTest, BadParentsGetClearMessages) {
  auto missing = BenchDir::Create("/nonexistent/walbench-parent");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/walbench-parent"), std::string::npos);
  EXPECT_NE(missing.status().message().find("pass an existing directory"), std::string::npos);

  TempDir scratch;
  const std::string file = scratch.path() + "/file";
  std::ofstream(file) << "x";
  auto not_dir = BenchDir::Create(file);
  ASSERT_FALSE(not_dir.ok());
  EXPECT_NE(not_dir.status().message().find("not a directory"), std::string::npos);

  // /proc refuses mkdir even for root: the unwritable case.
  auto unwritable = BenchDir::Create("/proc");
  ASSERT_FALSE(unwritable.ok());
  EXPECT_NE(unwritable.status().message().find("writable"), std::string::npos);
}

TEST(RawBarrierFileTest, EveryModeWritesTheBytesAndCountsItsBarriers) {
  TempDir scratch;
  for (wal::Barrier barrier : wal::AllBarriers()) {
    SCOPED_TRACE(std::string(wal::BarrierName(barrier)));
    const std::string path = scratch.path() + "/" + std::string(wal::BarrierName(barrier));
    auto file = RawBarrierFile::Open(path, barrier);
    if (!file.ok() && wal::UsesDirectIo(barrier)) {
      GTEST_LOG_(INFO) << "O_DIRECT unsupported here: " << file.status();
      continue;
    }
    ASSERT_TRUE(file.ok()) << file.status();
    ASSERT_TRUE((*file)->Preallocate(8192).ok());
    AlignedBuffer buffer(4096);
    std::memset(buffer.data(), 'w', 4096);
    ASSERT_TRUE((*file)->WriteDurably(4096, absl::MakeConstSpan(buffer.data(), 4096)).ok());
    ASSERT_TRUE((*file)->WriteDurably(0, absl::MakeConstSpan(buffer.data(), 4096)).ok());
    const bool issues_barrier = barrier != wal::Barrier::kNone && barrier != wal::Barrier::kDirect;
    EXPECT_EQ((*file)->barrier_calls(), issues_barrier ? 2u : 0u);
    file->reset();
    EXPECT_EQ(ReadAll(path), std::string(8192, 'w'));
  }
}

TEST(BarrierBenchTest, ATinyMatrixRunsAndCleansUp) {
  TempDir scratch;
  auto dir = BenchDir::Create(scratch.path());
  ASSERT_TRUE(dir.ok()) << dir.status();
  auto facts = DescribeDeviceUnder((*dir)->path());
  ASSERT_TRUE(facts.ok());
  BarrierBenchOptions options;
  options.barriers = {wal::Barrier::kNone, wal::Barrier::kFdatasync};
  options.workloads = AllWorkloads();
  options.op_bytes = {512};
  options.seconds_per_cell = 5;
  options.max_ops_per_cell = 20;  // the cap, not the clock, ends each cell
  options.file_bytes = 1 << 20;
  auto cells = RunBarrierBench(options, *facts, **dir);
  ASSERT_TRUE(cells.ok()) << cells.status();
  ASSERT_EQ(cells->size(), 6u);
  for (const BarrierCell& cell : *cells) {
    EXPECT_TRUE(cell.error.empty()) << cell.error;
    EXPECT_EQ(cell.ops, 20u);
    EXPECT_GT(cell.ops_per_sec, 0);
    EXPECT_FALSE(cell.findings.empty());
    EXPECT_DOUBLE_EQ(cell.barrier_calls_per_op,
                     cell.barrier == wal::Barrier::kFdatasync ? 1.0 : 0.0);
  }
  // Only the scratch directory is left, and it is empty.
  EXPECT_TRUE(fs::is_empty((*dir)->path()));
}

TEST(BareEngineTest, GroupCommitMakesEveryRecordDurableWithFewerBarriers) {
  TempDir scratch;
  constexpr int kThreads = 8;
  constexpr int kCommitsPerThread = 50;
  EngineConfig config{"bare", wal::Barrier::kFdatasync, true, false};
  auto engine = OpenEngine(config, scratch.path(), kThreads);
  ASSERT_TRUE(engine.ok()) << engine.status();
  std::vector<std::thread> threads;
  std::vector<absl::Status> statuses(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<uint8_t> record(100, static_cast<uint8_t>('a' + t));
      for (int i = 0; i < kCommitsPerThread; ++i) {
        absl::Status s = (*engine)->Commit(t, record);
        if (!s.ok()) {
          statuses[static_cast<size_t>(t)] = s;
          return;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const absl::Status& s : statuses) EXPECT_TRUE(s.ok()) << s;
  const uint64_t barriers = (*engine)->BarrierCount();
  EXPECT_GE(barriers, 1u);
  EXPECT_LE(barriers, static_cast<uint64_t>(kThreads * kCommitsPerThread));
  ASSERT_TRUE((*engine)->Close().ok());
  engine->reset();
  // Every thread's 50 records of 100 bytes are in the file, contiguous from offset 0.
  const std::string data = ReadAll(scratch.path() + "/bare.dat");
  ASSERT_GE(data.size(), static_cast<size_t>(kThreads * kCommitsPerThread * 100));
  for (int t = 0; t < kThreads; ++t) {
    const size_t n = static_cast<size_t>(
        std::count(data.begin(), data.begin() + kThreads * kCommitsPerThread * 100, 'a' + t));
    EXPECT_EQ(n, static_cast<size_t>(kCommitsPerThread * 100)) << "thread " << t;
  }
}

TEST(BareEngineTest, RefusesDirectModesWithAReason) {
  TempDir scratch;
  auto engine = OpenEngine({"bare", wal::Barrier::kDirectDsync, true, false}, scratch.path(), 1);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("direct_dsync"), std::string::npos);
}

TEST(OpenEngineTest, UnknownEngineIsAnError) {
  TempDir scratch;
  auto engine = OpenEngine({"leveldb", wal::Barrier::kFdatasync, true, false}, scratch.path(), 1);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("leveldb"), std::string::npos);
}

TEST(CacheWorkloadsTest, MeasureBothWorkloadsAndLeaveNothingBehind) {
  TempDir scratch;
  auto dir = BenchDir::Create(scratch.path());
  ASSERT_TRUE(dir.ok()) << dir.status();
  auto facts = DescribeDeviceUnder((*dir)->path());
  ASSERT_TRUE(facts.ok());
  CacheWorkloadOptions options;
  options.seq_write_bytes = 1 << 20;
  options.commit_seconds = 0.05;
  auto result = RunCacheWorkloads(options, *facts, **dir);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_GT(result->seq_write_mb_per_sec, 0);
  EXPECT_GT(result->commits_per_sec, 0);
  EXPECT_GT(result->commit_p50_us, 0);
  EXPECT_FALSE(result->write_cache.empty());
  EXPECT_TRUE(fs::is_empty((*dir)->path()));
}

TEST(CountingEnvTest, CountsSyncsDsyncWritesAndDirSyncs) {
  TempDir scratch;
  CountingEnv env(wal::Env::Default());
  wal::OpenOptions plain;
  plain.create = true;
  auto file = env.Open(scratch.path() + "/a", plain);
  ASSERT_TRUE(file.ok()) << file.status();
  const std::vector<uint8_t> bytes(512, 1);
  ASSERT_TRUE((*file)->Write(0, bytes).ok());
  EXPECT_EQ(env.barriers(), 0u);
  ASSERT_TRUE((*file)->Sync(wal::SyncKind::kFdatasync).ok());
  ASSERT_TRUE((*file)->Write(512, bytes, /*dsync=*/true).ok());
  ASSERT_TRUE((*file)->WriteAndFdatasyncLinked(1024, bytes).ok());
  EXPECT_EQ(env.barriers(), 3u);
  ASSERT_TRUE((*file)->Close().ok());

  wal::OpenOptions dsync = plain;
  dsync.dsync = true;
  auto dsync_file = env.Open(scratch.path() + "/b", dsync);
  ASSERT_TRUE(dsync_file.ok()) << dsync_file.status();
  ASSERT_TRUE((*dsync_file)->Write(0, bytes).ok());
  EXPECT_EQ(env.barriers(), 4u);
  ASSERT_TRUE((*dsync_file)->Close().ok());
  ASSERT_TRUE(env.SyncDir(scratch.path()).ok());
  EXPECT_EQ(env.barriers(), 5u);
}

}  // namespace
}  // namespace powercut::walbench
