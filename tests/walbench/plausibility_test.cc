#include "bench/walbench/plausibility.h"

#include <gtest/gtest.h>

namespace powercut::walbench {
namespace {

PlausibilityInput WriteBackDisk(wal::Barrier barrier, double ops_per_sec, double flushes_per_op) {
  PlausibilityInput in;
  in.has_device = true;
  in.write_cache = WriteCache::kWriteBack;
  in.fua = false;
  in.rotational = false;
  in.barrier = barrier;
  in.ops_per_sec = ops_per_sec;
  in.flushes_per_op = flushes_per_op;
  return in;
}

TEST(AssessBarrierTest, AFlushPerOpOnWriteBackIsPlausible) {
  auto findings = AssessBarrier(WriteBackDisk(wal::Barrier::kFdatasync, 5000, 1.0));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].verdict, Verdict::kPlausible);
}

TEST(AssessBarrierTest, ADurableModeWithoutFlushesIsNotABarrier) {
  auto findings = AssessBarrier(WriteBackDisk(wal::Barrier::kFdatasync, 14000, 0.0));
  ASSERT_FALSE(findings.empty());
  EXPECT_EQ(findings[0].verdict, Verdict::kNotABarrier);
  EXPECT_NE(findings[0].text.find("NOT a barrier"), std::string::npos);
}

TEST(AssessBarrierTest, FuaMayExplainMissingFlushesForDsyncWrites) {
  PlausibilityInput in = WriteBackDisk(wal::Barrier::kDirectDsync, 9000, 0.0);
  in.fua = true;
  auto findings = AssessBarrier(in);
  ASSERT_FALSE(findings.empty());
  EXPECT_EQ(findings[0].verdict, Verdict::kUnknown);
  // fdatasync always flushes: FUA does not excuse it.
  in.barrier = wal::Barrier::kFdatasync;
  EXPECT_EQ(AssessBarrier(in)[0].verdict, Verdict::kNotABarrier);
}

TEST(AssessBarrierTest, NonBarriersAreLabelledByDesign) {
  for (wal::Barrier b :
       {wal::Barrier::kNone, wal::Barrier::kDirect, wal::Barrier::kSyncFileRange}) {
    auto findings = AssessBarrier(WriteBackDisk(b, 14000, 0.0));
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].verdict, Verdict::kNotDurableByDesign) << wal::BarrierName(b);
  }
}

TEST(AssessBarrierTest, RotationalRewriteFasterThanOnePerRevolutionIsFlagged) {
  PlausibilityInput in = WriteBackDisk(wal::Barrier::kFsync, 351, 1.0);  // the 2001 xlog rate
  in.rotational = true;
  in.same_block_rewrite = true;
  auto findings = AssessBarrier(in);
  ASSERT_FALSE(findings.empty());
  EXPECT_EQ(findings[0].verdict, Verdict::kFasterThanMedia);
  // At or below one rewrite per revolution of a 7,200 rpm disk: possible.
  in.ops_per_sec = MaxRewritesPerSecond(kMaxRpm);
  EXPECT_EQ(AssessBarrier(in)[0].verdict, Verdict::kPlausible);
  // Appends are not judged by the revolution rule.
  in.ops_per_sec = 351;
  in.same_block_rewrite = false;
  EXPECT_EQ(AssessBarrier(in)[0].verdict, Verdict::kPlausible);
  // Nor are non-rotational devices.
  in.same_block_rewrite = true;
  in.rotational = false;
  EXPECT_EQ(AssessBarrier(in)[0].verdict, Verdict::kPlausible);
}

TEST(AssessBarrierTest, NoDeviceCannotBeJudged) {
  PlausibilityInput in;
  in.has_device = false;
  in.barrier = wal::Barrier::kFdatasync;
  auto findings = AssessBarrier(in);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].verdict, Verdict::kNoDevice);
}

TEST(AssessBarrierTest, WriteThroughNeedsNoFlush) {
  PlausibilityInput in = WriteBackDisk(wal::Barrier::kFdatasync, 3000, 0.0);
  in.write_cache = WriteCache::kWriteThrough;
  auto findings = AssessBarrier(in);
  ASSERT_FALSE(findings.empty());
  EXPECT_EQ(findings[0].verdict, Verdict::kPlausible);
  EXPECT_NE(findings[0].text.find("write through"), std::string::npos);
}

TEST(AssessBarrierTest, MissingFlushCountersAreUnknown) {
  PlausibilityInput in = WriteBackDisk(wal::Barrier::kFdatasync, 3000, 0.0);
  in.flushes_per_op.reset();
  EXPECT_EQ(AssessBarrier(in)[0].verdict, Verdict::kUnknown);
}

}  // namespace
}  // namespace powercut::walbench
