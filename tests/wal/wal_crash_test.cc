// Crash after every file-system call of a small multi-threaded workload (FaultInjectionEnv crash
// point k = 1, 2, ... until the workload completes), then a simulated power cut, then
// recovery::Recover: every commit acknowledged before the crash must come back, byte for byte.
#include <cerrno>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "base/tsan_mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "recovery/open_and_recover.h"
#include "recovery/recovery.h"
#include "tests/wal/wal_test_util.h"
#include "wal/testing/fault_injection_env.h"
#include "wal/wal.h"

namespace powercut::wal {
namespace {

using testing::Bytes;
using testing::Payload;
using testing::TempDir;

constexpr int kThreads = 3;
constexpr int kPerThread = 6;

// Runs the workload against a fresh log in `dir`; returns the acknowledged commits.
std::map<Lsn, std::string> RunWorkload(const std::string& dir, Env* env, Barrier barrier) {
  std::map<Lsn, std::string> acked;
  WalOptions options;
  options.env = env;
  options.barrier = barrier;
  options.segment_bytes = 16 * 1024;  // 3 x 6 x ~1.2 KiB records: the log rolls once or twice
  auto wal = Wal::Open(dir, options);
  if (!wal.ok()) return acked;
  absl::Mutex mu;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const std::string payload = Payload(t, i, 1200);
        auto lsn = (*wal)->Commit(Bytes(payload));
        if (!lsn.ok()) {
          EXPECT_TRUE(absl::IsDataLoss(lsn.status())) << lsn.status();
          return;
        }
        MutexLock lock(&mu);
        acked.emplace(*lsn, payload);
      }
    });
  }
  for (auto& th : threads) th.join();
  (void)(*wal)->Close();
  return acked;
}

class CrashEveryCallTest : public ::testing::TestWithParam<Barrier> {};

TEST_P(CrashEveryCallTest, EveryAcknowledgedCommitIsRecovered) {
  const PowerCutMode modes[] = {PowerCutMode::kDropUnsynced, PowerCutMode::kKeepPrefix,
                                PowerCutMode::kTornPrefix};
  uint64_t crash_points = 0, acked_total = 0, recovered_total = 0;
  for (uint64_t k = 1;; ++k) {
    ASSERT_LT(k, 2000u) << "the workload never completed";
    TempDir dir;
    const std::string wal_dir = dir.File("wal");
    FaultInjectionEnv env(Env::Default());
    env.SetCrashAfter(k);
    const std::map<Lsn, std::string> acked = RunWorkload(wal_dir, &env, GetParam());
    const bool crashed = env.crashed();
    ASSERT_TRUE(env.SimulatePowerCut(modes[k % 3], /*seed=*/k).ok());

    if (!*Env::Default()->Exists(wal_dir)) {
      EXPECT_TRUE(acked.empty());
      continue;
    }
    recovery::RecoverOptions ro;
    auto result = recovery::Recover(wal_dir, ro);
    ASSERT_TRUE(result.ok()) << "crash point " << k << ": " << result.status();
    std::map<Lsn, std::string> found;
    for (const auto& r : result->records) found.emplace(r.lsn, r.payload);
    for (const auto& [lsn, payload] : acked) {
      auto it = found.find(lsn);
      ASSERT_NE(it, found.end()) << "crash point " << k << ": acknowledged LSN " << lsn << " lost; "
                                 << result->Summary();
      EXPECT_EQ(it->second, payload) << "crash point " << k << ", LSN " << lsn;
    }
    // Recovered LSNs are dense from 1 (nothing before the crash was released).
    Lsn expect = 1;
    for (const auto& [lsn, payload] : found) EXPECT_EQ(lsn, expect++) << "crash point " << k;

    // The way back: the recovered log reopens and takes new commits after what survived.
    {
      WalOptions options;
      options.barrier = GetParam();
      options.segment_bytes = 16 * 1024;
      auto wal = recovery::OpenAndRecover(wal_dir, options);
      ASSERT_TRUE(wal.ok()) << "crash point " << k << ": " << wal.status();
      auto lsn = (*wal)->Commit(Bytes("after the crash"));
      ASSERT_TRUE(lsn.ok()) << lsn.status();
      EXPECT_EQ(*lsn, found.size() + 1);
      ASSERT_TRUE((*wal)->Close().ok());
    }
    ++crash_points;
    acked_total += acked.size();
    recovered_total += found.size();
    if (!crashed) break;  // the workload finished before reaching call k: every point was tried
  }
  EXPECT_GT(crash_points, 20u);
  EXPECT_EQ(acked_total > 0, true);
  EXPECT_GE(recovered_total, acked_total);
  std::printf("[ %s ] %lu crash points, %lu acknowledged commits, %lu recovered records\n",
              std::string(BarrierName(GetParam())).c_str(),
              static_cast<unsigned long>(crash_points), static_cast<unsigned long>(acked_total),
              static_cast<unsigned long>(recovered_total));
}

std::vector<Barrier> DurableBarriers() {
  std::vector<Barrier> out;
  for (Barrier b : AllBarriers()) {
    if (IsDurableWithVolatileCache(b)) out.push_back(b);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(DurableBarriers, CrashEveryCallTest,
                         ::testing::ValuesIn(DurableBarriers()), [](const auto& param_info) {
                           return std::string(BarrierName(param_info.param));
                         });

// The modes that are not barriers lose acknowledged commits when the (modelled) volatile cache
// is lost: the test file system must show it, as the VM tester will.
class NotABarrierTest : public ::testing::TestWithParam<Barrier> {};

TEST_P(NotABarrierTest, AcknowledgedCommitsAreLostOnPowerCut) {
  TempDir dir;
  FaultInjectionEnv env(Env::Default());
  WalOptions options;
  options.env = &env;
  options.barrier = GetParam();
  auto wal = Wal::Open(dir.File("wal"), options);
  ASSERT_TRUE(wal.ok()) << wal.status();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE((*wal)->Commit(Bytes(Payload(0, i))).ok());
  EXPECT_EQ((*wal)->DurableLsn(), 10u);  // acknowledged...
  wal->reset();
  ASSERT_TRUE(env.SimulatePowerCut(PowerCutMode::kDropUnsynced, 1).ok());
  auto result = recovery::Recover(dir.File("wal"), recovery::RecoverOptions{});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->records.empty());  // ...and gone
}

INSTANTIATE_TEST_SUITE_P(NotBarriers, NotABarrierTest,
                         ::testing::Values(Barrier::kNone, Barrier::kDirect,
                                           Barrier::kSyncFileRange),
                         [](const auto& param_info) {
                           return std::string(BarrierName(param_info.param));
                         });

}  // namespace
}  // namespace powercut::wal
