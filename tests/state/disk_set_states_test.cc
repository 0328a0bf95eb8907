// Several disks on one clock: the two-disk trace as the real Recorder writes it (manifest,
// reader, layout). Each disk's own cache model and flush epochs and the crash images of a set are
// data-driven cases (testdata/disks).
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/trace/disk_layout.h"
#include "harness/trace/manifest.h"
#include "harness/trace/recorder.h"
#include "harness/trace/trace_reader.h"
#include "tests/harness_testing.h"

namespace powercut::harness {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TempDir;

constexpr uint32_t kSs = 512;
constexpr uint64_t kDiskBytes = 8 * kSs;

std::vector<uint8_t> Sector(char c) { return std::vector<uint8_t>(kSs, c); }

TEST(DiskLayout, PacksDisksAtMebibyteBoundaries) {
  DiskLayout one = DiskLayout::Packed({kDiskBytes});
  EXPECT_FALSE(one.several());
  EXPECT_EQ(one.count(), 1u);
  DiskLayout two = DiskLayout::Packed({kDiskBytes, 3 * kDiskBytes});
  ASSERT_EQ(two.count(), 2u);
  EXPECT_EQ(two.OffsetOf(1), DiskLayout::kAlignment);
  EXPECT_EQ(two.total_bytes(), DiskLayout::kAlignment + 3 * kDiskBytes);
  EXPECT_EQ(two.DiskAt(0), 0u);
  EXPECT_EQ(two.DiskAt(kDiskBytes), 2u);  // the gap after disk 1: no disk
  EXPECT_EQ(two.DiskAt(DiskLayout::kAlignment + 5), 1u);
  EXPECT_TRUE(two.Inside(1, DiskLayout::kAlignment, 3 * kDiskBytes));
  EXPECT_FALSE(two.Inside(0, kDiskBytes - kSs, 2 * kSs));
  EXPECT_FALSE(DiskLayout::FromExtents({{0, 100}, {50, 100}}).ok());
  EXPECT_FALSE(DiskLayout::FromExtents({{10, 100}, {200, 100}}).ok());
}

// A two-disk trace recorded by the real Recorder (disk 1 = index 0, disk 2 = index 1):
//   e0 W disk2 s0=D | e1 W disk1 s0=L | e2 FLUSH disk1 | e3 ack:1 | e4 W disk1 s1=n
//   e5 W disk2 s1=y | e6 FLUSH disk2 | e7 ack:2
// Disk 2's write e0 completed before disk 1's flush e2, which orders nothing on disk 2.
class TwoDisks : public ::testing::Test {
 protected:
  void SetUp() override {
    layout_ = DiskLayout::Packed({kDiskBytes, kDiskBytes});
    log_ = dir_.File("t.log");
    base_ = dir_.File("base.img");
    testing::MakeImage(base_, layout_.total_bytes());
    auto rec = Recorder::Create(
        {.log_path = log_, .sector_size = kSs, .base_image = base_, .disks = layout_});
    ASSERT_TRUE(rec.ok()) << rec.status();
    Recorder& r = **rec;
    ASSERT_TRUE(r.RecordDiskWrite(1, 0, Sector('D'), false).ok());
    ASSERT_TRUE(r.RecordDiskWrite(0, 0, Sector('L'), false).ok());
    ASSERT_TRUE(r.RecordDiskFlush(0).ok());
    ASSERT_TRUE(r.RecordAck("1").ok());
    ASSERT_TRUE(r.RecordDiskWrite(0, kSs, Sector('n'), false).ok());
    ASSERT_TRUE(r.RecordDiskWrite(1, kSs, Sector('y'), false).ok());
    ASSERT_TRUE(r.RecordDiskFlush(1).ok());
    ASSERT_TRUE(r.RecordAck("2").ok());
    // Out of range for disk 1 (8 sectors), and a disk the set does not have.
    EXPECT_FALSE(r.RecordDiskWrite(0, kDiskBytes, Sector('x'), false).ok());
    EXPECT_FALSE(r.RecordDiskFlush(2).ok());
    ASSERT_TRUE(r.Finish().ok());
    auto layout = LayoutBeside(log_);
    ASSERT_TRUE(layout.ok()) << layout.status();
    ASSERT_EQ(*layout, layout_);
    auto file = TraceFile::Open(log_, {.disks = *layout});
    ASSERT_TRUE(file.ok()) << file.status();
    file_ = *std::move(file);
  }

  TempDir dir_;
  DiskLayout layout_;
  std::string log_, base_;
  std::unique_ptr<TraceFile> file_;
};

TEST_F(TwoDisks, TheTraceSaysWhichDiskEachEntryWrote) {
  const Trace& t = file_->trace();
  EXPECT_EQ(t.disks, 2u);
  ASSERT_EQ(t.entries.size(), 8u);
  std::vector<uint32_t> disks;
  for (const TraceEntry& e : t.entries) disks.push_back(e.disk);
  EXPECT_THAT(disks, ElementsAre(1, 0, 0, 0, 0, 1, 1, 0));
  // A bare flush names its disk by the disk's first sector; disk 1's is 0, as the kernel writes.
  EXPECT_EQ(t.entries[2].header.sector, 0u);
  EXPECT_EQ(t.entries[6].header.sector, DiskLayout::kAlignment / kSs);
  auto m = ReadManifest(ManifestPathFor(log_));
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->disks.size(), 2u);
  EXPECT_EQ(m->disks[1].offset, DiskLayout::kAlignment);
  EXPECT_EQ(m->disks[1].bytes, kDiskBytes);
  // Read as one disk (no layout), the same log is a valid dm-log-writes log of the concatenation.
  auto flat = TraceFile::Open(log_);
  ASSERT_TRUE(flat.ok()) << flat.status();
  EXPECT_EQ(flat->get()->trace().disks, 1u);
  EXPECT_EQ(flat->get()->trace().hash, t.hash);
}

TEST(DiskSetTrace, AnEntryOutsideEveryDiskIsAnError) {
  TempDir dir;
  const std::string log = dir.File("gap.log");
  auto rec = Recorder::Create({.log_path = log, .sector_size = kSs});
  ASSERT_TRUE(rec.ok());
  ASSERT_TRUE((*rec)->RecordWrite(kDiskBytes, Sector('g'), false).ok());  // the gap after disk 1
  ASSERT_TRUE((*rec)->Finish().ok());
  auto file = TraceFile::Open(log, {.disks = DiskLayout::Packed({kDiskBytes, kDiskBytes})});
  ASSERT_FALSE(file.ok());
  EXPECT_THAT(std::string(file.status().message()), HasSubstr("no disk of the set of 2"));
}

}  // namespace
}  // namespace powercut::harness
