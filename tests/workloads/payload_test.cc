#include "workloads/payload.h"

#include <string>

#include "gtest/gtest.h"

namespace powercut::workloads {
namespace {

TEST(WorkloadPayloadTest, RoundTripsItsId) {
  for (size_t filler : {size_t{0}, size_t{1}, size_t{7}, size_t{100}, size_t{4000}}) {
    const std::string payload = MakePayload("txn:42", filler);
    EXPECT_EQ(PayloadId(payload), "txn:42");
    EXPECT_TRUE(VerifyPayload("txn:42", payload));
    EXPECT_FALSE(VerifyPayload("txn:43", payload));
  }
}

TEST(WorkloadPayloadTest, IsDeterministic) {
  EXPECT_EQ(MakePayload("17", 64), MakePayload("17", 64));
  EXPECT_NE(MakePayload("17", 64), MakePayload("18", 64));
  EXPECT_EQ(FillerSize(3, 17, 100), FillerSize(3, 17, 100));
}

TEST(WorkloadPayloadTest, DetectsEveryByteFlipAndTruncation) {
  const std::string payload = MakePayload("123", 50);
  for (size_t i = 0; i < payload.size(); ++i) {
    std::string damaged = payload;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x01);
    EXPECT_FALSE(VerifyPayload("123", damaged)) << "flip at " << i;
  }
  for (size_t n = 0; n < payload.size(); ++n) {
    EXPECT_FALSE(PayloadId(payload.substr(0, n)).has_value()) << "prefix of " << n;
  }
  EXPECT_FALSE(PayloadId(payload + "x").has_value());
  EXPECT_FALSE(PayloadId(std::string(payload.size(), '\0')).has_value());
}

TEST(WorkloadPayloadTest, FillerSizeStaysInRange) {
  for (uint64_t id = 1; id < 500; ++id) {
    const size_t size = FillerSize(9, id, 100);
    EXPECT_GE(size, 50u);
    EXPECT_LE(size, 150u);
  }
  EXPECT_EQ(FillerSize(9, 1, 0), 0u);
}

}  // namespace
}  // namespace powercut::workloads
