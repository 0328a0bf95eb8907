// The uncontended commit path allocates nothing once warm (buffers are reused between rounds).
// Counts operator new calls on the committing thread; skipped under sanitizers, which replace
// operator new themselves.
#include <cstdlib>
#include <new>
#include <string>

#include "gtest/gtest.h"
#include "tests/wal/wal_test_util.h"
#include "wal/wal.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define POWERCUT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define POWERCUT_SANITIZED 1
#endif
#endif

namespace {
thread_local bool counting = false;
thread_local long allocations = 0;
}  // namespace

#ifndef POWERCUT_SANITIZED
// The replacement pair below is malloc/free based on both sides; GCC cannot see that.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t size) {
  if (counting) ++allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#endif

namespace powercut::wal {
namespace {

using testing::Bytes;
using testing::TempDir;

class HotPathTest : public ::testing::TestWithParam<Barrier> {};

TEST_P(HotPathTest, UncontendedCommitAllocatesNothingOnceWarm) {
#ifdef POWERCUT_SANITIZED
  GTEST_SKIP() << "sanitizers replace operator new";
#endif
  TempDir dir;
  WalOptions options;
  options.barrier = GetParam();
  options.segment_bytes = 8 << 20;
  auto wal = Wal::Open(dir.File("wal"), options);
  ASSERT_TRUE(wal.ok()) << wal.status();
  const std::string record(4064, 'r');
  for (int i = 0; i < 50; ++i) ASSERT_TRUE((*wal)->Commit(Bytes(record)).ok());
  // The counter works: a heap allocation in the window is seen.
  counting = true;
  {
    std::string probe(1000, 'x');
    asm volatile("" : : "g"(probe.data()) : "memory");
  }
  counting = false;
  ASSERT_GE(allocations, 1);
  allocations = 0;

  counting = true;
  bool all_ok = true;
  for (int i = 0; i < 200; ++i) all_ok &= (*wal)->Commit(Bytes(record)).ok();
  counting = false;
  EXPECT_TRUE(all_ok);
  EXPECT_EQ(allocations, 0);
  ASSERT_TRUE((*wal)->Close().ok());
}

INSTANTIATE_TEST_SUITE_P(Barriers, HotPathTest,
                         ::testing::Values(Barrier::kFdatasync, Barrier::kRwfDsync,
                                           Barrier::kDirectDsync, Barrier::kNone),
                         [](const auto& param_info) {
                           return std::string(BarrierName(param_info.param));
                         });

}  // namespace
}  // namespace powercut::wal
