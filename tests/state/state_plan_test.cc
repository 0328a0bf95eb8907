// The check order (harness/state/state_plan.h): the states that can lose the most come first,
// the plan holds exactly the generated states, and a working image walked in that order (points
// going backwards) holds the same bytes as one built for each state from the base.
#include "harness/state/state_plan.h"

#include <algorithm>
#include <functional>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/state/working_image.h"
#include "harness/trace/recorder.h"
#include "harness/trace/trace_reader.h"
#include "tests/harness_testing.h"

namespace powercut::harness {
namespace {

using testing::ReadAll;
using testing::TempDir;

constexpr uint32_t kSs = 512;
constexpr uint64_t kSectors = 16;

std::vector<uint8_t> Sector(char c) { return std::vector<uint8_t>(kSs, c); }

class StatePlanTest : public ::testing::Test {
 protected:
  void Record(const std::function<void(Recorder&)>& record) {
    log_ = dir_.File("t.log");
    base_ = dir_.File("base.img");
    auto rec = Recorder::Create({log_, kSs, kSectors * kSs});
    ASSERT_TRUE(rec.ok()) << rec.status();
    record(**rec);
    ASSERT_TRUE((*rec)->Finish().ok());
    auto file = TraceFile::Open(log_);
    ASSERT_TRUE(file.ok()) << file.status();
    file_ = *std::move(file);
    index_ = std::make_unique<TraceIndex>(file_->trace());
    testing::MakeImage(base_, kSectors * kSs);
  }

  // A log that acks each of `commits` one-sector appends without any barrier:
  // W s0, ack:1, W s1, ack:2, ...
  void RecordUnsyncedLog(int commits) {
    Record([commits](Recorder& r) {
      for (int i = 0; i < commits; ++i) {
        ASSERT_TRUE(r.RecordWrite(i * kSs, Sector(static_cast<char>('a' + i)), false).ok());
        ASSERT_TRUE(r.RecordAck(std::to_string(i + 1)).ok());
      }
    });
  }

  static CacheModel Model(const char* name) {
    CacheModel m = *ParseCacheModel(name);
    m.atomic_unit = kSs;
    return m;
  }

  std::vector<uint64_t> AckPoints() const {
    PointSelection acks;
    acks.flushes = false;
    return SelectPoints(*index_, acks, 1, false);
  }

  // Every state of the plan, in check order.
  std::vector<CrashState> Plan(const CacheModel& model, const std::vector<uint64_t>& points,
                               const StateOptions& options = {}) {
    StatePlan plan(*index_, model, options, 1, points);
    std::vector<CrashState> states;
    while (plan.Next(5, &states)) {
    }
    EXPECT_EQ(states.size(), plan.size());
    return states;
  }

  TempDir dir_;
  std::string log_, base_;
  std::unique_ptr<TraceFile> file_;
  std::unique_ptr<TraceIndex> index_;
};

// The rule: under every model the first state checked is the latest crash point with
// every volatile write dropped; under off nothing is volatile, so it is the latest point's image.
TEST_F(StatePlanTest, TheFirstStateIsTheLatestPointWithEveryVolatileWriteDropped) {
  RecordUnsyncedLog(6);
  const std::vector<uint64_t> points = AckPoints();
  ASSERT_EQ(points.size(), 6u);
  for (const char* name : {"off", "on", "lying", "ly4e", "ly2048b"}) {
    const CacheModel model = Model(name);
    const std::vector<CrashState> states = Plan(model, points);
    ASSERT_FALSE(states.empty()) << name;
    EXPECT_EQ(StatePlan(*index_, model, {}, 1, points).head(), 1u) << name;
    const CrashState& first = states.front();
    EXPECT_EQ(first.point, points.back()) << name;
    EXPECT_FALSE(first.torn_entry.has_value()) << name;
    const PointView view = index_->View(first.point, model);
    EXPECT_EQ(first.kept.kind, view.volatile_entries.empty() ? SubsetSpec::kAll : SubsetSpec::kNone)
        << name;
    // No state of the plan drops more volatile writes at the latest point, nor can lose more.
    const uint64_t most = StatePlan::ExposedAcks(*index_, view, first);
    for (const CrashState& s : states) {
      EXPECT_LE(StatePlan::ExposedAcks(*index_, index_->View(s.point, model), s), most) << name;
    }
  }
  // Lying over 4 entries at the last ack: the 4 last appends are dropped, the 4 last acks exposed.
  const CacheModel ly4 = Model("ly4e");
  const CrashState first = Plan(ly4, points).front();
  const PointView view = index_->View(first.point, ly4);
  EXPECT_EQ(view.volatile_entries.size(), 4u);
  EXPECT_EQ(StatePlan::ExposedAcks(*index_, view, first), 4u);
}

// Pass 0 (each point's state dropping everything): the latest point's first, then decreasing
// order of what it can lose, the later point first among equals; then every other state, the
// latest point first and a point's states by what they can lose. The head, judged whatever it
// finds, is the latest point's state and the one that can lose more than it.
TEST_F(StatePlanTest, StatesComeInDecreasingOrderOfTheAcksTheyCanLose) {
  // e0 W, e1 ack:1, e2 W, e3 ack:2, e4 W, e5 W, e6 ack:3. Under lying over 2 entries the
  // last ack point (7) can lose only ack 3 (e4 and e5 are dropped), while point 4 (after ack 2)
  // drops e0 and e2 and can lose acks 1 and 2: 7 comes first (the latest), then 4, then 2, and
  // both 7 and 4 are the head.
  Record([](Recorder& r) {
    ASSERT_TRUE(r.RecordWrite(0, Sector('a'), false).ok());
    ASSERT_TRUE(r.RecordAck("1").ok());
    ASSERT_TRUE(r.RecordWrite(kSs, Sector('b'), false).ok());
    ASSERT_TRUE(r.RecordAck("2").ok());
    ASSERT_TRUE(r.RecordWrite(2 * kSs, Sector('c'), false).ok());
    ASSERT_TRUE(r.RecordWrite(3 * kSs, Sector('d'), false).ok());
    ASSERT_TRUE(r.RecordAck("3").ok());
  });
  const CacheModel model = Model("ly2e");
  const std::vector<uint64_t> points = AckPoints();
  ASSERT_EQ(points, (std::vector<uint64_t>{2, 4, 7}));
  const std::vector<CrashState> states = Plan(model, points);
  ASSERT_GE(states.size(), 3u);
  std::vector<uint64_t> worst_points, exposed;
  for (size_t i = 0; i < 3; ++i) {
    const PointView view = index_->View(states[i].point, model);
    EXPECT_TRUE(StatePlan::DropsEverything(states[i], view)) << i;
    worst_points.push_back(states[i].point);
    exposed.push_back(StatePlan::ExposedAcks(*index_, view, states[i]));
  }
  EXPECT_EQ(worst_points, (std::vector<uint64_t>{7, 4, 2}));
  EXPECT_EQ(exposed, (std::vector<uint64_t>{1, 2, 1}));
  EXPECT_EQ(StatePlan(*index_, model, {}, 1, points).head(), 2u);
  // Where the latest point can lose the most, it alone is the head.
  EXPECT_EQ(StatePlan(*index_, Model("on"), {}, 1, points).head(), 1u);
  // The rest: the points backwards, and within a point nonincreasing in what a state can lose.
  uint64_t last_point = UINT64_MAX, last_exposed = UINT64_MAX;
  for (size_t i = 3; i < states.size(); ++i) {
    const PointView view = index_->View(states[i].point, model);
    EXPECT_FALSE(StatePlan::DropsEverything(states[i], view)) << i;
    const uint64_t e = StatePlan::ExposedAcks(*index_, view, states[i]);
    ASSERT_LE(states[i].point, last_point) << i;
    if (states[i].point == last_point) {
      EXPECT_LE(e, last_exposed) << i;
    }
    last_point = states[i].point;
    last_exposed = e;
  }
}

// A torn write before the cut exposes the acks after it; a torn in-flight write (after the cut)
// and a state that keeps every volatile write expose none.
TEST_F(StatePlanTest, ExposedAcksCountsTheAcksAfterTheEarliestWriteTakenAway) {
  RecordUnsyncedLog(4);  // W0 a1 W2 a3 W4 a5 W6 a7
  const CacheModel model = Model("on");
  const PointView view = index_->View(8, model);
  ASSERT_EQ(view.volatile_entries, (std::vector<uint64_t>{0, 2, 4, 6}));
  CrashState s{.point = 8, .model = model, .kept = {SubsetSpec::kNone, 0}};
  EXPECT_EQ(StatePlan::ExposedAcks(*index_, view, s), 4u);
  s.kept = {SubsetSpec::kAll, 0};
  EXPECT_EQ(StatePlan::ExposedAcks(*index_, view, s), 0u);
  s.kept = {SubsetSpec::kAllBut, 2};  // drops e4: acks 3 and 4 follow it
  EXPECT_EQ(StatePlan::ExposedAcks(*index_, view, s), 2u);
  s.kept = {SubsetSpec::kMask, 0b1011};  // drops e4 only
  EXPECT_EQ(StatePlan::ExposedAcks(*index_, view, s), 2u);
  s.kept = {SubsetSpec::kFirst, 1};  // keeps e0, tears e2
  s.torn_entry = 2;
  EXPECT_EQ(StatePlan::ExposedAcks(*index_, view, s), 3u);
  const PointView at2 = index_->View(2, model);
  CrashState inflight{.point = 2, .model = model, .kept = {SubsetSpec::kAll, 0}, .torn_entry = 2};
  EXPECT_EQ(StatePlan::ExposedAcks(*index_, at2, inflight), 0u);
}

// The order changes nothing but the order: the plan holds each generated state exactly once.
TEST_F(StatePlanTest, ThePlanHoldsExactlyTheGeneratedStates) {
  RecordUnsyncedLog(12);
  std::vector<uint64_t> points;
  for (uint64_t p = 1; p <= file_->trace().entries.size(); ++p) points.push_back(p);
  StateOptions few;
  few.max_exhaustive = 3;
  few.samples = 4;
  for (const char* name : {"off", "on", "lying", "ly5e"}) {
    const CacheModel model = Model(name);
    std::multiset<std::string> generated, planned;
    for (uint64_t p : points) {
      std::vector<CrashState> states;
      StatesAtPoint(*index_, index_->View(p, model), model, few, 1, &states);
      for (const CrashState& s : states) generated.insert(EncodeStateId("00000000", s));
    }
    for (const CrashState& s : Plan(model, points, few)) {
      planned.insert(EncodeStateId("00000000", s));
    }
    EXPECT_EQ(planned, generated) << name;
    EXPECT_EQ(std::set<std::string>(planned.begin(), planned.end()).size(), planned.size()) << name;
  }
}

// Pass 0 walks the points backwards once per distinct value of what a state can lose, at most
// kExposureTiers times. Under cache on, flush epochs of 1, 2, ..., 10 acked commits: the ack
// point after the k-th commit of an epoch can lose k acks, so every value from 1 to 10 appears,
// each at points in several epochs.
TEST_F(StatePlanTest, PassZeroWalksThePointsAtMostKExposureTiersTimes) {
  Record([](Recorder& r) {
    int id = 0;
    for (int epoch = 1; epoch <= 10; ++epoch) {
      for (int k = 0; k < epoch; ++k) {
        ASSERT_TRUE(r.RecordWrite((id % kSectors) * kSs, Sector('a'), false).ok());
        ASSERT_TRUE(r.RecordAck(std::to_string(++id)).ok());
      }
      ASSERT_TRUE(r.RecordFlush().ok());
    }
  });
  const std::vector<uint64_t> points = AckPoints();
  ASSERT_EQ(points.size(), 55u);
  const CacheModel model = Model("on");
  StateOptions options;
  options.torn = false;
  const std::vector<CrashState> states = Plan(model, points, options);
  size_t walks = 1;
  std::vector<uint64_t> exposed;
  for (size_t i = 0; i < points.size(); ++i) {
    const PointView view = index_->View(states[i].point, model);
    ASSERT_TRUE(StatePlan::DropsEverything(states[i], view)) << i;
    exposed.push_back(StatePlan::ExposedAcks(*index_, view, states[i]));
    if (i > 0 && states[i].point > states[i - 1].point) ++walks;
  }
  // 10 values, uncapped 9 walks (value 10's only point sits just after value 9's first: they
  // share one); capped, values 3, 2 and 1 share the last walk: 7.
  EXPECT_LE(walks, StatePlan::kExposureTiers);
  EXPECT_EQ(walks, 7u);
  // The 7 largest values (10 down to 4) in order; 3, 2 and 1 share the last walk.
  EXPECT_EQ(exposed.front(), 10u);
  for (size_t i = 1; i < exposed.size(); ++i) {
    if (exposed[i - 1] >= 4) {
      EXPECT_LE(exposed[i], exposed[i - 1]) << i;
    }
  }
  EXPECT_EQ(std::count(exposed.begin(), exposed.end(), 4u), 7);
}

// A working image walked in plan order (backwards across points) holds, state by state, the bytes
// and content hash of an image built from the base for that state alone.
TEST_F(StatePlanTest, AnImageWalkedInPlanOrderMatchesOneBuiltFromTheBase) {
  Record([](Recorder& r) {
    for (int i = 0; i < 6; ++i) {
      // Overwrites, a two-sector write, a discard and a flush: every kind of rewind.
      ASSERT_TRUE(r.RecordWrite((i % 3) * kSs, Sector(static_cast<char>('a' + i)), false).ok());
      if (i == 2) {
        std::vector<uint8_t> two = Sector('x');
        auto y = Sector('y');
        two.insert(two.end(), y.begin(), y.end());
        ASSERT_TRUE(r.RecordWrite(4 * kSs, two, false).ok());
      }
      if (i == 3) {
        ASSERT_TRUE(r.RecordDiscard(4 * kSs, kSs).ok());
      }
      if (i == 4) {
        ASSERT_TRUE(r.RecordFlush().ok());
      }
      ASSERT_TRUE(r.RecordAck(std::to_string(i + 1)).ok());
    }
  });
  std::vector<uint64_t> points;
  for (uint64_t p = 1; p <= file_->trace().entries.size(); ++p) points.push_back(p);
  auto walked = WorkingImage::Create(dir_.File("walked.img"), base_, file_.get(), kSs);
  ASSERT_TRUE(walked.ok()) << walked.status();
  for (const char* name : {"on", "ly3e", "off"}) {
    const CacheModel model = Model(name);
    for (const CrashState& s : Plan(model, points)) {
      const PointView view = index_->View(s.point, model);
      ASSERT_TRUE((*walked)->Materialize(s, view).ok());
      auto fresh = WorkingImage::Create(dir_.File("fresh.img"), base_, file_.get(), kSs);
      ASSERT_TRUE(fresh.ok()) << fresh.status();
      ASSERT_TRUE((*fresh)->Materialize(s, view).ok());
      const std::string id = EncodeStateId("00000000", s);
      ASSERT_EQ(ReadAll((*walked)->path()), ReadAll((*fresh)->path())) << name << " " << id;
      ASSERT_EQ((*walked)->content_hash(), (*fresh)->content_hash()) << name << " " << id;
    }
  }
}

}  // namespace
}  // namespace powercut::harness
