// Cache models and crash states on a synthetic trace whose state sets are computed by hand.
#include <functional>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/state/cache_model.h"
#include "harness/state/crash_state.h"
#include "harness/state/materialize.h"
#include "harness/state/state_generator.h"
#include "harness/state/working_image.h"
#include "harness/trace/recorder.h"
#include "harness/trace/trace_reader.h"
#include "tests/harness_testing.h"

namespace powercut::harness {
namespace {

using ::testing::HasSubstr;
using testing::ReadAll;
using testing::TempDir;

constexpr uint32_t kSs = 512;

std::vector<uint8_t> Sector(char c, int n = 1) { return std::vector<uint8_t>(kSs * n, c); }

// The fixtures' common part: a trace recorded by the real Recorder on an 8-sector device in a
// temporary folder, opened and indexed, and optionally a working image over a zero base.
class RecordedTrace {
 protected:
  void Record(const std::function<void(Recorder&)>& record, bool with_image) {
    log_ = dir_.File("t.log");
    base_ = dir_.File("base.img");
    auto rec = Recorder::Create({log_, kSs, 8 * kSs});
    ASSERT_TRUE(rec.ok()) << rec.status();
    record(**rec);
    if (::testing::Test::HasFatalFailure()) return;
    ASSERT_TRUE((*rec)->Finish().ok());
    auto file = TraceFile::Open(log_);
    ASSERT_TRUE(file.ok()) << file.status();
    file_ = *std::move(file);
    index_ = std::make_unique<TraceIndex>(file_->trace());
    if (!with_image) return;
    testing::MakeImage(base_, 8 * kSs);
    auto image = WorkingImage::Create(dir_.File("work.img"), base_, file_.get(), kSs);
    ASSERT_TRUE(image.ok()) << image.status();
    image_ = *std::move(image);
  }

  TempDir dir_;
  std::string log_, base_;
  std::unique_ptr<TraceFile> file_;
  std::unique_ptr<TraceIndex> index_;
  std::unique_ptr<WorkingImage> image_;
};

// e0 W s0=a | e1 W s1=b | e2 FLUSH | e3 W s0=c | e4 ack:1 | e5 W s2..3=d,e | e6 FLUSH | e7 ack:2
class SyntheticTrace : public ::testing::Test, protected RecordedTrace {
 protected:
  void SetUp() override {
    Record([](Recorder& r) { RecordTrace(r); }, /*with_image=*/true);
  }

  static void RecordTrace(Recorder& r) {
    ASSERT_TRUE(r.RecordWrite(0, Sector('a'), false).ok());
    ASSERT_TRUE(r.RecordWrite(kSs, Sector('b'), false).ok());
    ASSERT_TRUE(r.RecordFlush().ok());
    ASSERT_TRUE(r.RecordWrite(0, Sector('c'), false).ok());
    ASSERT_TRUE(r.RecordAck("1").ok());
    std::vector<uint8_t> de = Sector('d');
    auto e = Sector('e');
    de.insert(de.end(), e.begin(), e.end());
    ASSERT_TRUE(r.RecordWrite(2 * kSs, de, false).ok());
    ASSERT_TRUE(r.RecordFlush().ok());
    ASSERT_TRUE(r.RecordAck("2").ok());
  }

  CacheModel Model(const char* name) {
    CacheModel m = *ParseCacheModel(name);
    m.atomic_unit = kSs;
    return m;
  }

  // The first byte of sectors 0..3 of the image, '.' for zero.
  std::string Signature(const std::string& path) {
    std::vector<uint8_t> img = ReadAll(path);
    std::string sig;
    for (int s = 0; s < 4; ++s) sig += img[s * kSs] ? static_cast<char>(img[s * kSs]) : '.';
    return sig;
  }

  std::set<std::string> Images(uint64_t point, const CacheModel& model,
                               const StateOptions& options = {}) {
    std::vector<CrashState> states;
    PointView view = index_->View(point, model);
    StatesAtPoint(*index_, view, model, options, 1, &states);
    std::set<std::string> images;
    for (const CrashState& s : states) {
      EXPECT_TRUE(image_->Materialize(s, view).ok());
      images.insert(Signature(image_->path()));
    }
    return images;
  }
};

TEST_F(SyntheticTrace, VolatileSetsPerModel) {
  EXPECT_TRUE(index_->View(5, Model("off")).volatile_entries.empty());
  EXPECT_EQ(index_->View(5, Model("on")).volatile_entries, (std::vector<uint64_t>{3}));
  EXPECT_EQ(index_->View(5, Model("lying")).volatile_entries, (std::vector<uint64_t>{0, 1, 3}));
  EXPECT_EQ(index_->View(5, Model("ly1e")).volatile_entries, (std::vector<uint64_t>{3}));
  EXPECT_EQ(index_->View(5, Model("off")).inflight, 5u);
  EXPECT_TRUE(index_->View(7, Model("on")).volatile_entries.empty());
  EXPECT_EQ(index_->AcksBefore(5), 1u);
  EXPECT_EQ(index_->AcksBefore(4), 0u);
}

TEST_F(SyntheticTrace, HandComputedStateSetsAfterTheFirstAck) {
  // Point 5: crash right after ack:1; e5 (2 units) is in flight and may be torn.
  EXPECT_EQ(Images(5, Model("off")), (std::set<std::string>{"cb..", "cbd.", "cb.e"}));
  EXPECT_EQ(Images(5, Model("on")), (std::set<std::string>{"ab..", "cb..", "cbd.", "cb.e"}));
  EXPECT_EQ(Images(5, Model("lying")), (std::set<std::string>{"cb..", "c...", "ab..", "a...",
                                                              ".b..", "....", "cbd.", "cb.e"}));
}

// `powercut fstest`: a crash right after a persistence point returned holds nothing of the write
// after it (the next operation's), but the volatile writes before it are still torn under on.
TEST_F(SyntheticTrace, WithoutTheInFlightTearOnlyTheWritesBeforeTheCutAreTorn) {
  StateOptions options;
  options.torn_inflight = false;
  EXPECT_EQ(Images(5, Model("off"), options), (std::set<std::string>{"cb.."}));
  EXPECT_EQ(Images(5, Model("on"), options), (std::set<std::string>{"ab..", "cb.."}));
  EXPECT_EQ(Images(5, Model("lying"), options),
            (std::set<std::string>{"cb..", "c...", "ab..", "a...", ".b..", "...."}));
}

TEST_F(SyntheticTrace, OffIsASubsetOfOnAtFlushPointsAndOnOfLying) {
  const uint64_t n = file_->trace().entries.size();
  for (uint64_t p = 1; p <= n; ++p) {
    auto off = Images(p, Model("off"));
    auto on = Images(p, Model("on"));
    auto lying = Images(p, Model("lying"));
    if (file_->trace().entries[p - 1].is_flush()) {
      EXPECT_TRUE(std::includes(on.begin(), on.end(), off.begin(), off.end())) << "point " << p;
    }
    EXPECT_TRUE(std::includes(lying.begin(), lying.end(), on.begin(), on.end())) << "point " << p;
  }
  EXPECT_EQ(Images(7, Model("off")), (std::set<std::string>{"cbde"}));
  EXPECT_EQ(Images(7, Model("on")), (std::set<std::string>{"cbde"}));
}

TEST_F(SyntheticTrace, StateIdsRoundTripAndRebuildTheSameImage) {
  std::vector<CrashState> states;
  for (const char* name : {"off", "on", "lying"}) {
    CacheModel m = Model(name);
    for (uint64_t p = 1; p <= 8; ++p) StatesAtPoint(*index_, index_->View(p, m), m, {}, 9, &states);
  }
  ASSERT_GT(states.size(), 20u);
  int i = 0;
  for (const CrashState& s : states) {
    std::string id = EncodeStateId(file_->trace().ShortHash(), s);
    auto parsed = DecodeStateId(id);
    ASSERT_TRUE(parsed.ok()) << id << ": " << parsed.status();
    EXPECT_EQ(EncodeStateId(parsed->trace_hash8, parsed->state), id);
    ASSERT_TRUE(image_->Materialize(s, index_->View(s.point, s.model)).ok());
    std::string out = dir_.File("m.img");
    ASSERT_TRUE(MaterializeState(log_, base_, id, out).ok()) << id;
    EXPECT_EQ(ReadAll(out), ReadAll(image_->path())) << id;
    if (++i > 40) break;
  }
}

TEST_F(SyntheticTrace, EqualImagesHaveEqualHashes) {
  CacheModel off = Model("off");
  CrashState s;
  s.model = off;
  s.point = 4;  // after e3 (s0=c)
  ASSERT_TRUE(image_->Materialize(s, index_->View(4, off)).ok());
  Hash128 at4 = image_->content_hash();
  s.point = 5;  // the ack mark changes no block
  ASSERT_TRUE(image_->Materialize(s, index_->View(5, off)).ok());
  EXPECT_EQ(image_->content_hash(), at4);
  s.point = 6;
  ASSERT_TRUE(image_->Materialize(s, index_->View(6, off)).ok());
  EXPECT_FALSE(image_->content_hash() == at4);
  s.point = 0;  // back to the base image: the empty delta
  ASSERT_TRUE(image_->Materialize(s, index_->View(0, off)).ok());
  EXPECT_EQ(image_->content_hash(), Hash128{});
}

TEST_F(SyntheticTrace, RejectsIdsOfOtherTracesAndImpossibleTears) {
  std::string out = dir_.File("x.img");
  EXPECT_THAT(
      std::string(MaterializeState(log_, base_, "pc1_00000000_off_a512_p3_kA", out).message()),
      HasSubstr("was made from trace"));
  std::string id = "pc1_" + file_->trace().ShortHash() + "_off_a512_p3_kA_t0.M1";
  EXPECT_THAT(std::string(MaterializeState(log_, base_, id, out).message()),
              HasSubstr("neither the in-flight write"));
  EXPECT_FALSE(DecodeStateId("pc1_zz").ok());
  EXPECT_FALSE(DecodeStateId("pc1_12345678_off_a999_p3_kA").ok());
  EXPECT_FALSE(DecodeStateId("pc1_12345678_weird_a512_p3_kA").ok());
}

TEST(SubsetSpec, Membership) {
  EXPECT_TRUE((SubsetSpec{SubsetSpec::kAllBut, 2}.Contains(1, 4)));
  EXPECT_FALSE((SubsetSpec{SubsetSpec::kAllBut, 2}.Contains(2, 4)));
  EXPECT_TRUE((SubsetSpec{SubsetSpec::kLast, 1}.Contains(3, 4)));
  EXPECT_FALSE((SubsetSpec{SubsetSpec::kLast, 1}.Contains(2, 4)));
  EXPECT_TRUE((SubsetSpec{SubsetSpec::kMask, 5}.Contains(2, 4)));
  EXPECT_FALSE((SubsetSpec{SubsetSpec::kFirst, 2}.Contains(2, 4)));
  int in = 0;
  for (uint64_t i = 0; i < 1000; ++i) in += SubsetSpec{SubsetSpec::kRandom, 77}.Contains(i, 1000);
  EXPECT_GT(in, 400);
  EXPECT_LT(in, 600);
}

// Six writes to sectors 0..5 ('a'..'f'), no FLUSH, then ack:1: under cache on all six are
// volatile at the ack point, more than K = 2, so the states are the extremes and the
// all-but-one subsets (no samples, no tears in this test).
class AllButOne : public ::testing::Test, protected RecordedTrace {
 protected:
  void SetUp() override {
    Record(
        [](Recorder& r) {
          for (int s = 0; s < 6; ++s) {
            ASSERT_TRUE(r.RecordWrite(s * kSs, Sector(static_cast<char>('a' + s)), false).ok());
          }
          ASSERT_TRUE(r.RecordAck("1").ok());
        },
        /*with_image=*/true);
  }

  // Images (first byte of sectors 0..5, '.' for zero) of the states at the ack point.
  std::vector<std::string> Images(const StateOptions& options) {
    CacheModel model = *ParseCacheModel("on");
    model.atomic_unit = kSs;
    PointView view = index_->View(7, model);
    EXPECT_EQ(view.volatile_entries.size(), 6u);
    std::vector<CrashState> states;
    StatesAtPoint(*index_, view, model, options, 1, &states);
    std::vector<std::string> images;
    for (const CrashState& s : states) {
      EXPECT_TRUE(image_->Materialize(s, view).ok());
      std::vector<uint8_t> img = ReadAll(image_->path());
      std::string sig;
      for (int i = 0; i < 6; ++i) sig += img[i * kSs] ? static_cast<char>(img[i * kSs]) : '.';
      images.push_back(sig);
    }
    return images;
  }
};

TEST_F(AllButOne, EveryVolatileWriteByDefault) {
  StateOptions o;
  o.max_exhaustive = 2;
  o.samples = 0;
  o.torn = false;
  EXPECT_EQ(o.max_all_but_one, 0u);  // the default: no cap
  EXPECT_EQ(Images(o), (std::vector<std::string>{"abcdef", "......", ".bcdef", "a.cdef", "ab.def",
                                                 "abc.ef", "abcd.f", "abcde."}));
}

TEST_F(AllButOne, CappedToTheWritesNearestTheCut) {
  StateOptions o;
  o.max_exhaustive = 2;
  o.samples = 0;
  o.torn = false;
  o.max_all_but_one = 2;
  EXPECT_EQ(Images(o), (std::vector<std::string>{"abcdef", "......", "abcd.f", "abcde."}));
  o.max_all_but_one = 6;  // a cap at or above the volatile count changes nothing
  EXPECT_EQ(Images(o).size(), 8u);
}

// A flush-epoch log as dm-log-writes writes it (docs/trace.md): plain writes just before the
// FLUSH entry of the flush that logged them, FUA writes and marks when they happened.
//   e0 W s0 | e1 FLUSH | e2 FUA s1 | e3 ack:1 | e4 FUA s2 | e5 FLUSH | e6 FUA s3 | e7 W s4 |
//   e8 FLUSH | e9 FUA s5 | e10 ack:2 [| e11 dm-log-writes-end]
class FlushEpochPoints : public ::testing::TestWithParam<bool>, protected RecordedTrace {
 protected:
  void SetUp() override {
    Record([](Recorder& r) { RecordTrace(r, GetParam()); }, /*with_image=*/false);
  }

  static void RecordTrace(Recorder& r, bool clean_end) {
    ASSERT_TRUE(r.RecordWrite(0, Sector('a'), false).ok());
    ASSERT_TRUE(r.RecordFlush().ok());
    ASSERT_TRUE(r.RecordWrite(1 * kSs, Sector('b'), true).ok());
    ASSERT_TRUE(r.RecordAck("1").ok());
    ASSERT_TRUE(r.RecordWrite(2 * kSs, Sector('c'), true).ok());
    ASSERT_TRUE(r.RecordFlush().ok());
    ASSERT_TRUE(r.RecordWrite(3 * kSs, Sector('d'), true).ok());
    ASSERT_TRUE(r.RecordWrite(4 * kSs, Sector('e'), false).ok());
    ASSERT_TRUE(r.RecordFlush().ok());
    ASSERT_TRUE(r.RecordWrite(5 * kSs, Sector('f'), true).ok());
    ASSERT_TRUE(r.RecordAck("2").ok());
    if (clean_end) {
      ASSERT_TRUE(r.RecordMark("dm-log-writes-end").ok());
    }
  }
};

TEST_P(FlushEpochPoints, CacheOffUsesFlushesAndOnlyTheFuaWritesNoPlainWriteFollows) {
  const bool clean_end = GetParam();
  std::vector<bool> exact = ExactForCacheOff(file_->trace());
  ASSERT_EQ(exact.size(), clean_end ? 12u : 11u);
  EXPECT_TRUE(exact[2]);   // e3 ack, e4 FUA, then e5 FLUSH: nothing plain in between
  EXPECT_TRUE(exact[4]);   // e5 FLUSH right after
  EXPECT_FALSE(exact[6]);  // e7, a plain write logged before e8 FLUSH: it may have completed first
  // e9: no FLUSH after it; exact only if the log ends with the teardown mark, which the kernel
  // writes after logging every write still unflushed.
  EXPECT_EQ(exact[9], clean_end);

  ExactPointCounts counts;
  PointSelection defaults;  // ack,flush
  std::vector<uint64_t> points = SelectPoints(*index_, defaults, 1, true, &counts);
  // Points are entry counts: after e1, e2, e4, e5, e8 (and e9 with a clean end).
  std::vector<uint64_t> expected = {2, 3, 5, 6, 9};
  if (clean_end) expected.push_back(10);
  EXPECT_EQ(points, expected);
  EXPECT_EQ(counts.after_flush, 3u);
  EXPECT_EQ(counts.after_fua, clean_end ? 3u : 2u);
  EXPECT_EQ(counts.fua_skipped, clean_end ? 1u : 2u);
  EXPECT_EQ(counts.other_skipped, 2u);  // the two ack points

  // Every entry as a point: the same kept set (plain writes, marks: skipped).
  PointSelection every = *ParsePointSelection("entry");
  EXPECT_EQ(SelectPoints(*index_, every, 1, true, &counts), expected);
  EXPECT_EQ(counts.other_skipped,
            file_->trace().entries.size() - expected.size() - counts.fua_skipped);
  // Completion order (no filtering): every selected point.
  EXPECT_EQ(SelectPoints(*index_, defaults, 1, false).size(), 5u);  // 3 flushes + 2 acks
}

INSTANTIATE_TEST_SUITE_P(End, FlushEpochPoints, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? std::string("TeardownMark") : std::string("CutLog");
                         });

TEST(PointSelection, Parses) {
  auto p = ParsePointSelection("entry,sample:5");
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->every_entry);
  EXPECT_FALSE(p->acks);
  EXPECT_EQ(p->sample, 5u);
  EXPECT_FALSE(ParsePointSelection("sometimes").ok());
  CacheModel m;
  EXPECT_TRUE(ParseWindow("64KiB", &m).ok());
  EXPECT_EQ(m.window, 65536u);
  EXPECT_TRUE(m.window_in_bytes);
  EXPECT_FALSE(ParseWindow("lots", &m).ok());
}

}  // namespace
}  // namespace powercut::harness
