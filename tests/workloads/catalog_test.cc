// The catalog's two-disk entries: the databases with their log on the second disk carry the
// verdicts their documentation promises and the flag that puts the log there.
#include "workloads/catalog.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace powercut::workloads {
namespace {

using ::testing::Contains;

const WorkloadConfig* Find(const std::vector<WorkloadConfig>& catalog, const std::string& name) {
  for (const WorkloadConfig& c : catalog) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

TEST(Catalog, TheDatabasesWithTheirLogOnTheSecondDiskRecordTwoDisks) {
  const std::vector<WorkloadConfig> catalog = Catalog();
  for (const std::string name :
       {"rocksdb-waldisk-sync", "postgres-waldisk-sync-on", "etcd-waldisk-default"}) {
    SCOPED_TRACE(name);
    const WorkloadConfig* c = Find(catalog, name);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->disks, 2u);
    EXPECT_THAT(c->run_args, Contains("--wal-disk"));
    EXPECT_EQ(c->cache_off, Expectation::kSurvives);
    EXPECT_EQ(c->cache_on, Expectation::kSurvives);
    EXPECT_EQ(c->cache_lying, Expectation::kLoses);
    EXPECT_EQ(c->process_crash, Expectation::kSurvives);
  }
  EXPECT_EQ(Find(catalog, "postgres-waldisk-sync-on")->workload, "postgres");
  EXPECT_THAT(Find(catalog, "postgres-waldisk-sync-on")->documented,
              ::testing::HasSubstr("wal-internals"));
  EXPECT_EQ(Find(catalog, "etcd-waldisk-default")->workload, "etcd");
  EXPECT_THAT(Find(catalog, "etcd-waldisk-default")->documented, ::testing::HasSubstr("--wal-dir"));
}

// Only the two-disk entries ask for a second disk: every other configuration runs on one.
TEST(Catalog, OnlyTwoDiskEntriesAskForTheSecondDisk) {
  for (const WorkloadConfig& c : Catalog()) {
    const bool wal_disk =
        std::find(c.run_args.begin(), c.run_args.end(), "--wal-disk") != c.run_args.end();
    EXPECT_EQ(c.disks, wal_disk || c.workload == "twodisk" ? 2u : 1u) << c.name;
  }
}

}  // namespace
}  // namespace powercut::workloads
