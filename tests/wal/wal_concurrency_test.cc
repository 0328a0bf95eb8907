// The WAL under 32 concurrent committers: dense, ordered, unique, durable LSNs; group commit
// shares barriers; async commits; fencing seen by every concurrent committer.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "base/tsan_mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/wal/wal_test_util.h"
#include "wal/testing/fault_injection_env.h"
#include "wal/wal.h"

namespace powercut::wal {
namespace {

using testing::Bytes;
using testing::Payload;
using testing::ScanLog;
using testing::TempDir;

constexpr int kThreads = 32;

struct Acked {
  Lsn lsn;
  int writer;
  int seq;
};

// Runs kThreads committers of `per_thread` commits each; returns every acknowledged commit.
std::vector<Acked> RunCommitters(Wal& wal, int per_thread) {
  absl::Mutex mu;
  std::vector<Acked> acked;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        auto lsn = wal.Commit(Bytes(Payload(t, i, 64 + (t * 13 + i) % 200)));
        ASSERT_TRUE(lsn.ok()) << lsn.status();
        // Durable when Commit returned.
        EXPECT_GE(wal.DurableLsn(), *lsn);
        MutexLock lock(&mu);
        acked.push_back({*lsn, t, i});
      }
    });
  }
  for (auto& th : threads) th.join();
  return acked;
}

class ConcurrentCommitTest : public ::testing::TestWithParam<Barrier> {};

TEST_P(ConcurrentCommitTest, EveryAckedLsnIsDenseUniqueAndReadBack) {
  TempDir dir;
  WalOptions options;
  options.barrier = GetParam();
  options.segment_bytes = 128 * 1024;  // rolls under contention too
  auto wal = Wal::Open(dir.File("wal"), options);
  ASSERT_TRUE(wal.ok()) << wal.status();
  constexpr int kPerThread = 40;
  std::vector<Acked> acked = RunCommitters(**wal, kPerThread);
  ASSERT_EQ(acked.size(), size_t{kThreads} * kPerThread);
  ASSERT_TRUE((*wal)->Close().ok());

  std::map<Lsn, Acked> by_lsn;
  for (const Acked& a : acked) EXPECT_TRUE(by_lsn.emplace(a.lsn, a).second) << "dup " << a.lsn;
  EXPECT_EQ(by_lsn.begin()->first, 1u);
  EXPECT_EQ(by_lsn.rbegin()->first, acked.size());  // unique + range => dense
  // Each writer's commits got increasing LSNs (its order is preserved).
  std::map<int, Lsn> last_of_writer;
  for (const auto& [lsn, a] : by_lsn) {
    EXPECT_LT(last_of_writer[a.writer], lsn);
    last_of_writer[a.writer] = lsn;
  }
  auto log = ScanLog(Env::Default(), dir.File("wal"));
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_EQ(log->records.size(), acked.size());
  for (const auto& r : log->records) {
    const Acked& a = by_lsn.at(r.lsn);
    EXPECT_EQ(r.payload, Payload(a.writer, a.seq, 64 + (a.writer * 13 + a.seq) % 200)) << r.lsn;
  }
}

INSTANTIATE_TEST_SUITE_P(AllBarriers, ConcurrentCommitTest, ::testing::ValuesIn(AllBarriers()),
                         [](const auto& param_info) {
                           return std::string(BarrierName(param_info.param));
                         });

TEST(GroupCommitTest, ThirtyTwoCommittersShareBarriers) {
  TempDir dir;
  FaultInjectionEnv env(Env::Default());
  WalOptions options;
  options.env = &env;
  auto wal = Wal::Open(dir.File("wal"), options);
  ASSERT_TRUE(wal.ok()) << wal.status();
  const CallCounts before = env.counts();
  constexpr int kPerThread = 30;
  std::vector<Acked> acked = RunCommitters(**wal, kPerThread);
  const CallCounts after = env.counts();
  const uint64_t commits = acked.size();
  const uint64_t barriers = after.fdatasyncs - before.fdatasyncs;
  const uint64_t writes = after.writes - before.writes;
  // One write per barrier (one segment), and far fewer barriers than commits.
  EXPECT_EQ(writes, barriers);
  EXPECT_LT(barriers, commits);
  ::testing::Test::RecordProperty("commits_per_barrier",
                                  std::to_string(double(commits) / double(barriers)));
  ASSERT_TRUE((*wal)->Close().ok());
}

TEST(GroupCommitTest, AsyncCommitsFromManyThreadsAllComplete) {
  TempDir dir;
  WalOptions options;
  auto wal = Wal::Open(dir.File("wal"), options);
  ASSERT_TRUE(wal.ok()) << wal.status();
  constexpr int kPerThread = 50;
  absl::Mutex mu;
  std::vector<Lsn> done;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        (*wal)->CommitAsync(Bytes(Payload(t, i)), [&](absl::StatusOr<Lsn> lsn) {
          ASSERT_TRUE(lsn.ok()) << lsn.status();
          EXPECT_GE((*wal)->DurableLsn(), *lsn);
          MutexLock lock(&mu);
          done.push_back(*lsn);
        });
      }
    });
  }
  for (auto& th : threads) th.join();
  {
    // A CommitAsync caller that finds no leader leads rounds until no callback is left waiting,
    // so once every caller has returned, every callback has run.
    MutexLock lock(&mu);
    ASSERT_EQ(done.size(), 8u * kPerThread);
  }
  std::sort(done.begin(), done.end());
  for (size_t i = 0; i < done.size(); ++i) EXPECT_EQ(done[i], i + 1);
  ASSERT_TRUE((*wal)->Close().ok());
}

TEST(GroupCommitTest, FailedBarrierFailsEveryConcurrentCommitter) {
  TempDir dir;
  FaultInjectionEnv env(Env::Default());
  WalOptions options;
  options.env = &env;
  auto wal = Wal::Open(dir.File("wal"), options);
  ASSERT_TRUE(wal.ok()) << wal.status();
  env.FailOp(FaultOp::kSync, 5, EIO);  // an early barrier: every thread still has commits to do
  std::atomic<Lsn> max_acked{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        auto lsn = (*wal)->Commit(Bytes(Payload(t, i)));
        if (!lsn.ok()) {
          EXPECT_TRUE(absl::IsDataLoss(lsn.status())) << lsn.status();
          ++failures;
          // Once fenced, every later call fails too.
          EXPECT_FALSE((*wal)->Commit(Bytes("after")).ok());
          return;
        }
        Lsn seen = max_acked.load();
        while (seen < *lsn && !max_acked.compare_exchange_weak(seen, *lsn)) {
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), kThreads);  // nobody finished all its commits after the fence
  EXPECT_TRUE(absl::IsDataLoss((*wal)->health()));
  // DurableLsn stopped at the last successful barrier and covers every ack.
  EXPECT_EQ((*wal)->DurableLsn(), max_acked.load());
  EXPECT_LT((*wal)->DurableLsn(), (*wal)->LastLsn());
}

}  // namespace
}  // namespace powercut::wal
