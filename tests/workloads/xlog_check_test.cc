// CheckXlog on crafted files: what the checker says for every shape a crash can leave.
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "base/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "workloads/xlog_format.h"
#include "workloads/xlog_workload.h"

namespace powercut::workloads {
namespace {

using powercut::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr uint64_t kNonce = 0x1234;

using Block = std::vector<uint8_t>;

Block Header(XlogVariant variant, uint64_t count) {
  Block b(kXlogBlockSize);
  EncodeXlogHeader({variant, kNonce, count}, b.data());
  return b;
}
Block Data(uint64_t seq) {
  Block b(kXlogBlockSize);
  EncodeXlogBlock(kNonce, seq, b.data());
  return b;
}
Block Zero() { return Block(kXlogBlockSize, 0); }
// The first `sectors` sectors from `front`, the rest from `back` (a write torn at 512 bytes).
Block Torn(const Block& front, const Block& back, size_t sectors) {
  Block b = back;
  std::memcpy(b.data(), front.data(), sectors * kXlogSectorSize);
  return b;
}

std::vector<std::string> Range(uint64_t first, uint64_t last) {
  std::vector<std::string> ids;
  for (uint64_t i = first; i <= last; ++i) ids.push_back(std::to_string(i));
  return ids;
}

class XlogCheckTest : public ::testing::Test {
 protected:
  void WriteFile(const std::vector<Block>& blocks) {
    std::ofstream out(dir_.path() + "/" + kXlogFileName, std::ios::binary | std::ios::trunc);
    for (const Block& b : blocks) out.write(reinterpret_cast<const char*>(b.data()), b.size());
  }
  absl::StatusOr<CheckResult> Check() { return CheckXlog(Target{dir_.path(), ""}); }

  TempDir dir_;
};

TEST_F(XlogCheckTest, MissingFileMeansNothingCommitted) {
  auto result = Check();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(result->have, IsEmpty());
  EXPECT_THAT(result->corrupt, IsEmpty());
}

TEST_F(XlogCheckTest, DamagedHeaderCannotOpen) {
  Block header = Header(XlogVariant::kOverwrite, 10);
  header[100] ^= 1;
  WriteFile({header, Data(3)});
  auto result = Check();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("header block is damaged"));
}

TEST_F(XlogCheckTest, OverwriteIntactBlockHasEverySeqUpToIt) {
  WriteFile({Header(XlogVariant::kOverwrite, 10), Data(7)});
  auto result = Check();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->have, Range(1, 7));
  EXPECT_THAT(result->corrupt, IsEmpty());
}

TEST_F(XlogCheckTest, OverwriteZeroBlockHasNothing) {
  WriteFile({Header(XlogVariant::kOverwrite, 10), Zero()});
  auto result = Check();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(result->have, IsEmpty());
  EXPECT_THAT(result->corrupt, IsEmpty());
}

TEST_F(XlogCheckTest, OverwriteTornBetweenTwoSeqsKeepsOlderButIsCorrupt) {
  WriteFile({Header(XlogVariant::kOverwrite, 10), Torn(Data(8), Data(7), 3)});
  auto result = Check();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->have, Range(1, 7));
  EXPECT_THAT(result->corrupt, ElementsAre("8"));
}

TEST_F(XlogCheckTest, OverwriteTornFirstWriteIsCorruptWithNothingHad) {
  WriteFile({Header(XlogVariant::kOverwrite, 10), Torn(Data(1), Zero(), 5)});
  auto result = Check();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(result->have, IsEmpty());
  EXPECT_THAT(result->corrupt, ElementsAre("1"));
}

TEST_F(XlogCheckTest, OverwriteGarbageCannotBeRead) {
  WriteFile({Header(XlogVariant::kOverwrite, 10), Block(kXlogBlockSize, 0xab)});
  EXPECT_EQ(Check().status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(XlogCheckTest, OverwriteBlockOfAnotherRunIsNotHad) {
  Block foreign(kXlogBlockSize);
  EncodeXlogBlock(kNonce + 1, 5, foreign.data());
  WriteFile({Header(XlogVariant::kOverwrite, 10), foreign});
  EXPECT_EQ(Check().status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(XlogCheckTest, AppendTornTailIsNotAViolation) {
  WriteFile({Header(XlogVariant::kAppend, 10), Data(1), Data(2), Data(3), Torn(Data(4), Zero(), 2),
             Zero()});
  auto result = Check();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->have, Range(1, 3));
  EXPECT_THAT(result->corrupt, IsEmpty());
}

TEST_F(XlogCheckTest, AppendPartialLastBlockIsATornTail) {
  WriteFile({Header(XlogVariant::kAppend, 10), Data(1), Data(2)});
  {
    Block half = Data(3);
    std::ofstream out(dir_.path() + "/" + kXlogFileName, std::ios::binary | std::ios::app);
    out.write(reinterpret_cast<const char*>(half.data()), 1000);
  }
  auto result = Check();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->have, Range(1, 2));
  EXPECT_THAT(result->corrupt, IsEmpty());
}

TEST_F(XlogCheckTest, AppendHoleBeforeAnIntactBlockIsCorrupt) {
  WriteFile({Header(XlogVariant::kAppend, 10), Data(1), Zero(), Torn(Data(3), Zero(), 4), Data(4)});
  auto result = Check();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(result->have, ElementsAre("1", "4"));
  EXPECT_THAT(result->corrupt, ElementsAre("2", "3"));
}

TEST_F(XlogCheckTest, AppendBlockInTheWrongPlaceIsNotHad) {
  WriteFile({Header(XlogVariant::kAppend, 10), Data(1), Data(3), Data(3)});
  auto result = Check();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(result->have, ElementsAre("1", "3"));
  EXPECT_THAT(result->corrupt, ElementsAre("2"));
}

TEST_F(XlogCheckTest, AppendScansOnlyThePlannedCount) {
  WriteFile({Header(XlogVariant::kAppend, 2), Data(1), Data(2), Data(3)});
  auto result = Check();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->have, Range(1, 2));
}

TEST_F(XlogCheckTest, RawDeviceWithoutHeaderWasNeverSetUp) {
  const std::string dev = dir_.path() + "/dev.img";
  {
    std::ofstream out(dev, std::ios::binary);
    Block junk(3 * kXlogBlockSize, 0x5a);
    out.write(reinterpret_cast<const char*>(junk.data()), junk.size());
  }
  auto result = CheckXlog(Target{"", dev});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(result->have, IsEmpty());
}

TEST(XlogFormatTest, ScanTellsEveryTearPoint) {
  const Block older = Data(10);
  const Block newer = Data(11);
  for (size_t sectors = 1; sectors < kXlogSectorsPerBlock; ++sectors) {
    XlogBlockScan scan = ScanXlogBlock(Torn(newer, older, sectors).data(), kNonce);
    EXPECT_EQ(scan.state, XlogBlockState::kTorn) << sectors;
    EXPECT_EQ(scan.seq, 11u);
    EXPECT_EQ(scan.oldest_seq, 10u);
    EXPECT_EQ(scan.valid_sectors, kXlogSectorsPerBlock);
  }
  EXPECT_EQ(ScanXlogBlock(newer.data(), kNonce).state, XlogBlockState::kIntact);
  EXPECT_EQ(ScanXlogBlock(Zero().data(), kNonce).state, XlogBlockState::kZero);
  Block flipped = newer;
  flipped[4000] ^= 0x80;
  XlogBlockScan scan = ScanXlogBlock(flipped.data(), kNonce);
  EXPECT_EQ(scan.state, XlogBlockState::kTorn);
  EXPECT_EQ(scan.valid_sectors, kXlogSectorsPerBlock - 1);
}

TEST(XlogFormatTest, HeaderRoundTrips) {
  Block b = Header(XlogVariant::kAppend, 2000);
  auto header = DecodeXlogHeader(b.data());
  ASSERT_TRUE(header.has_value());
  EXPECT_EQ(header->variant, XlogVariant::kAppend);
  EXPECT_EQ(header->nonce, kNonce);
  EXPECT_EQ(header->count, 2000u);
  EXPECT_FALSE(DecodeXlogHeader(Zero().data()).has_value());
}

}  // namespace
}  // namespace powercut::workloads
