// Several disks on one clock: the two-disk trace as the real Recorder writes it (manifest,
// reader, layout). Each disk's own cache model and flush epochs and the crash images of a set are
// data-driven cases (testdata/disks); what needs the Recorder's own log (each disk's torn-write
// unit through a state id and its rebuilt image) stays here.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/state/cache_model.h"
#include "harness/state/crash_state.h"
#include "harness/state/materialize.h"
#include "harness/state/state_generator.h"
#include "harness/trace/disk_layout.h"
#include "harness/trace/manifest.h"
#include "harness/trace/recorder.h"
#include "harness/trace/trace_reader.h"
#include "tests/harness_testing.h"

namespace powercut::harness {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::ReadAll;
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

// Each disk tears at its own physical sector (`--sector 512n,512e`): one 8 KiB write per disk,
// unflushed, torn keeping only its first unit. On disk 1 (512 B units) that is 512 bytes; on
// disk 2 (4 KiB units) 4 KiB. The state id names both units and rebuilds the same image.
TEST(DiskSetTrace, EachDiskTearsAtItsOwnUnit) {
  TempDir dir;
  const DiskLayout layout = DiskLayout::Packed({32 * kSs, 32 * kSs});
  const std::string log = dir.File("t.log");
  const std::string base = dir.File("base.img");
  testing::MakeImage(base, layout.total_bytes());
  auto rec =
      Recorder::Create({.log_path = log, .sector_size = kSs, .base_image = base, .disks = layout});
  ASSERT_TRUE(rec.ok()) << rec.status();
  const std::vector<uint8_t> data(8192, 'w');
  ASSERT_TRUE((*rec)->RecordDiskWrite(0, 0, data, false).ok());
  ASSERT_TRUE((*rec)->RecordDiskWrite(1, 0, data, false).ok());
  ASSERT_TRUE((*rec)->RecordAck("1").ok());
  ASSERT_TRUE((*rec)->Finish().ok());
  auto file = TraceFile::Open(log, {.disks = layout});
  ASSERT_TRUE(file.ok()) << file.status();
  CacheModel on = *ParseCacheModel("on");
  on.atomic_unit = 512;
  on.disk_units = {512, 4096};
  EXPECT_EQ(AtomicUnits(file->get()->trace().entries[0], kSs, on.UnitOf(0)), 16u);
  EXPECT_EQ(AtomicUnits(file->get()->trace().entries[1], kSs, on.UnitOf(1)), 2u);
  for (uint64_t torn : {0, 1}) {
    CrashState s{.point = 3,
                 .model = on,
                 .kept = {SubsetSpec::kAll, 0},
                 .torn_entry = torn,
                 .torn_units = {SubsetSpec::kMask, 1}};
    const std::string id = EncodeStateId((*file)->trace().ShortHash(), s);
    EXPECT_THAT(id, HasSubstr("_a512.4096_"));
    auto parsed = DecodeStateId(id);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->state.model.disk_units, on.disk_units);
    const std::string out = dir.File("torn" + std::to_string(torn) + ".img");
    ASSERT_TRUE(MaterializeState(log, "", id, out).ok()) << id;
    const std::vector<uint8_t> img = ReadAll(out);
    const uint64_t at = layout.OffsetOf(static_cast<uint32_t>(torn));
    const uint64_t kept_bytes = torn == 0 ? 512 : 4096;
    EXPECT_EQ(img[at + kept_bytes - 1], 'w') << id;
    EXPECT_EQ(img[at + kept_bytes], 0) << id;
    EXPECT_EQ(img[layout.OffsetOf(static_cast<uint32_t>(1 - torn)) + 8191], 'w') << id;
  }
  EXPECT_FALSE(DecodeStateId("pc1_00000000_on_a512.1024_p3_kA").ok());
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
