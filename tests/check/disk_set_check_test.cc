// The engine on a set of two raw disks recorded on one clock: the three control programs
// (log on disk 1, data on disk 2) as hand-made traces, judged under every cache model by a shell
// checker that reads both disks (POWERCUT_DEV, POWERCUT_DEV_2).
#include "harness/check/disk_set_check.h"

#include <functional>

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/check/engine.h"
#include "harness/check/report.h"
#include "harness/trace/disk_layout.h"
#include "harness/trace/recorder.h"
#include "tests/harness_testing.h"

namespace powercut::harness {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

constexpr uint32_t kSs = 512;
constexpr uint64_t kDiskBytes = 16 * kSs;
constexpr int kCommits = 3;

// Commit k is whole when disk 1's sector k starts with L and disk 2's sector k with D. One `od`
// a disk prints sectors 1-3 a line each (`cut -c4`: the first byte, L, D or the 0 of a NUL), so
// $1-$3 are disk 1's and $4-$6 disk 2's: 7 processes a state where reading each sector alone took
// 19 (this file's tests judge hundreds of states each; docs/results.md, "CI time").
constexpr char kChecker[] =
    "set -- $(od -An -v -c -w512 -j512 -N1536 \"$POWERCUT_DEV\" | cut -c4) "
    "$(od -An -v -c -w512 -j512 -N1536 \"$POWERCUT_DEV_2\" | cut -c4); "
    "[ \"$1\" = L ] && [ \"$4\" = D ] && echo \"have 1\"; "
    "[ \"$2\" = L ] && [ \"$5\" = D ] && echo \"have 2\"; "
    "[ \"$3\" = L ] && [ \"$6\" = D ] && echo \"have 3\"; true";

std::vector<uint8_t> Sector(char c) { return std::vector<uint8_t>(kSs, c); }

// How one commit reaches the disks.
enum class Program {
  kCorrect,      // log on disk 1 + flush, data on disk 2 + flush, then the ack
  kDirectData,   // log on disk 1 + flush, data on disk 2 with no flush there (O_DIRECT), ack
  kNeverSynced,  // log on disk 1 + flush, ack; the data reaches disk 2 only after every ack
};

class DiskSetCheck : public ::testing::Test {
 protected:
  std::string Record(Program program) {
    std::string log = dir_.File("trace.log");
    const std::string base = dir_.File("base.img");
    DiskLayout layout = DiskLayout::Packed({kDiskBytes, kDiskBytes});
    testing::MakeImage(base, layout.total_bytes());
    auto rec = Recorder::Create(
        {.log_path = log, .sector_size = kSs, .base_image = base, .disks = layout});
    EXPECT_TRUE(rec.ok()) << rec.status();
    Recorder& r = **rec;
    for (int k = 1; k <= kCommits; ++k) {
      EXPECT_TRUE(r.RecordDiskWrite(0, k * kSs, Sector('L'), false).ok());
      EXPECT_TRUE(r.RecordDiskFlush(0).ok());
      if (program != Program::kNeverSynced) {
        EXPECT_TRUE(r.RecordDiskWrite(1, k * kSs, Sector('D'), false).ok());
      }
      if (program == Program::kCorrect) {
        EXPECT_TRUE(r.RecordDiskFlush(1).ok());
      }
      EXPECT_TRUE(r.RecordAck(std::to_string(k)).ok());
    }
    if (program == Program::kNeverSynced) {  // the page cache's writeback, long after the acks
      for (int k = 1; k <= kCommits; ++k) {
        EXPECT_TRUE(r.RecordDiskWrite(1, k * kSs, Sector('D'), false).ok());
      }
    }
    EXPECT_TRUE(r.Finish().ok());
    return log;
  }

  CheckReport Check(const std::string& trace, const char* per_disk = nullptr) {
    CheckOptions o;
    o.trace_path = trace;
    o.checker = kChecker;
    o.workers = 2;
    o.exhaustive = true;
    o.work_dir = dir_.File("work");
    o.points.every_entry = true;
    for (const char* name : {"off", "on", "lying"}) o.models.push_back(*ParseCacheModel(name));
    if (per_disk != nullptr) {
      EXPECT_TRUE(ApplyCachePerDisk(per_disk, 2, &o.models).ok());
    }
    auto report = RunCheck(o);
    EXPECT_TRUE(report.ok()) << report.status();
    return report.ok() ? *report : CheckReport{};
  }

  static std::map<std::string, uint64_t> Violations(const CheckReport& r) {
    std::map<std::string, uint64_t> v;
    for (const ModelResult& m : r.results) v[m.model.Name()] = m.violations;
    return v;
  }

  TempDir dir_;
};

TEST_F(DiskSetCheck, ACorrectTwoDiskProgramPassesOffAndOn) {
  CheckReport r = Check(Record(Program::kCorrect));
  auto v = Violations(r);
  EXPECT_EQ(v["off"], 0u);
  EXPECT_EQ(v["on"], 0u);
  EXPECT_GT(v["lying"], 0u);
  ASSERT_EQ(r.disks.size(), 2u);
  EXPECT_EQ(r.disks[0].flushes, 3u);
  EXPECT_EQ(r.disks[1].flushes, 3u);
  EXPECT_EQ(r.disks[1].writes, 3u);
  EXPECT_EQ(r.fs, "raw,raw");
}

TEST_F(DiskSetCheck, UnflushedDataOnTheSecondDiskLosesUnderOnOnly) {
  CheckReport r = Check(Record(Program::kDirectData));
  auto v = Violations(r);
  EXPECT_EQ(v["off"], 0u);
  EXPECT_GT(v["on"], 0u);
  EXPECT_GT(v["lying"], 0u);
  const ModelResult& on = r.results[1];
  ASSERT_TRUE(on.first_violation);
  // The verdict says which disk's writes were dropped: disk 2's.
  ASSERT_EQ(on.first_violation->dropped_per_disk.size(), 2u);
  EXPECT_TRUE(on.first_violation->dropped_per_disk[0].empty());
  ASSERT_FALSE(on.first_violation->dropped_per_disk[1].empty());
  // Disk 2's dropped writes by entry: "disk 2: 1 [5]".
  EXPECT_THAT(on.first_violation->Describe(),
              HasSubstr(fmt::format("dropped per disk: disk 1: 0, disk 2: {} [{}",
                                    on.first_violation->dropped_per_disk[1].size(),
                                    on.first_violation->dropped_per_disk[1][0])));
  const nlohmann::json j = ReportToJson(r);
  EXPECT_EQ(j["disks"].size(), 2u);
  EXPECT_FALSE(j.contains("nodes"));
  const nlohmann::json& first = j["results"][1]["first_violation"];
  EXPECT_EQ(first["dropped_per_disk"][0], 0);
  EXPECT_EQ(first["dropped_entries_per_disk"][1][0], on.first_violation->dropped_per_disk[1][0]);
  EXPECT_THAT(DisksText(r.disks, r.set_member), HasSubstr("disk 2 (raw, 8192 bytes): 3 writes"));
}

TEST_F(DiskSetCheck, AClustersDisksAreNamedByNodeInTextAndJson) {
  // The same set as a cluster's two nodes (`--nodes 2`: node K's disk is disk K).
  CheckOptions o;
  o.trace_path = Record(Program::kDirectData);
  o.checker = kChecker;
  o.workers = 2;
  o.work_dir = dir_.File("work");
  o.models = {*ParseCacheModel("on")};
  o.set_member = SetMember::kNode;
  auto r = RunCheck(o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->results[0].first_violation);
  const Verdict& v = *r->results[0].first_violation;
  const std::string text = v.Describe();
  EXPECT_THAT(text, HasSubstr("every node cut at once after entry"));
  EXPECT_THAT(text, HasSubstr("dropped per node: node 1: 0, node 2: "));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("disk 2")));
  const nlohmann::json j = ReportToJson(*r);
  EXPECT_FALSE(j.contains("disks"));
  ASSERT_EQ(j["nodes"].size(), 2u);
  EXPECT_EQ(j["nodes"][1]["node"], 2);
  EXPECT_EQ(j["nodes"][1]["writes"], 3);
  const nlohmann::json& first = j["results"][0]["first_violation"];
  EXPECT_EQ(first["dropped_per_node"][1], v.dropped_per_disk[1].size());
  EXPECT_EQ(first["dropped_entries_per_node"][1], v.dropped_per_disk[1]);
  EXPECT_FALSE(first.contains("dropped_per_disk"));
  const std::string table = ReportSummaryTable(*r);
  EXPECT_THAT(table, HasSubstr("node 1 (raw, 8192 bytes): 3 writes, 3 flushes, 0 FUA"));
  EXPECT_THAT(ReportToJunit(*r), HasSubstr("dropped per node"));
  // The summaries read back, log and all.
  r->disks[1].log = "/kept/node-2.log";
  r->disks[1].log_bytes = 12;
  auto back =
      DiskSummariesFromJson(DiskSummariesToJson(r->disks, SetMember::kNode), SetMember::kNode);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[1].log, "/kept/node-2.log");
  EXPECT_EQ((*back)[1].log_bytes, 12u);
  EXPECT_EQ((*back)[0].writes, 3u);
  EXPECT_FALSE(DiskSummariesFromJson(j["nodes"], SetMember::kDisk).ok());  // no "disk" keys
}

TEST_F(DiskSetCheck, DataNeverSyncedOnTheSecondDiskLosesUnderEveryModel) {
  auto v = Violations(Check(Record(Program::kNeverSynced)));
  EXPECT_GT(v["off"], 0u);
  EXPECT_GT(v["on"], 0u);
  EXPECT_GT(v["lying"], 0u);
}

TEST_F(DiskSetCheck, AnHonestLogDiskDoesNotSaveALyingDataDisk) {
  // The drive that lies is often only one of them: disk 2 lying under each --cache model of
  // disk 1. Every model with a lying data disk loses acks of the correct program.
  CheckReport r = Check(Record(Program::kCorrect), "2=lying");
  auto v = Violations(r);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_GT(v["1=off,2=lying"], 0u);
  EXPECT_GT(v["1=on,2=lying"], 0u);
  EXPECT_GT(v["lying"], 0u);
  // Naming both disks gives one model; an honest pair passes.
  CheckReport honest = Check(Record(Program::kCorrect), "1=on,2=off");
  ASSERT_EQ(honest.results.size(), 1u);
  EXPECT_EQ(Violations(honest)["1=on,2=off"], 0u);
}

TEST(DiskVariable, NamesEachDiskAsTheProtocolSays) {
  EXPECT_EQ(DiskVariable(0, false), "POWERCUT_DIR");
  EXPECT_EQ(DiskVariable(1, false), "POWERCUT_DIR_2");
  EXPECT_EQ(DiskVariable(2, true), "POWERCUT_DEV_3");
}

}  // namespace
}  // namespace powercut::harness
