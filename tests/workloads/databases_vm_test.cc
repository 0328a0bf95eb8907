// Controls against false alarms for the database workloads (issue 14, item 4): the safe setting of
// each database (PostgreSQL synchronous_commit=on, Redis appendfsync always, LMDB default, SQLite
// WAL FULL), one seed each, real servers in the real guest on ext4, must lose no acked commit
// under cache off and on, and `powercut matrix` must call every cell as its documentation
// expects (exit 0). Few commits and states keep it near five minutes under TCG; the full table is
// `powercut matrix --preset databases` (docs/results.md, "Databases").
#include <set>
#include <string>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/product/test_util.h"

namespace powercut::workloads {
namespace {

using powercut::product::testing::ReadFile;
using powercut::product::testing::RunCommand;
using powercut::product::testing::TempDir;

TEST(DatabaseControls, SafeSettingsLoseNothingUnderCacheOffAndOn) {
  TempDir dir;
  auto r = RunCommand(fmt::format(
      "{} matrix --workloads postgres,redis,lmdb,sqlite-wal --barriers sync-on,always,default,full "
      "--fs ext4 --cache off,on --count 3 --states 4 --json {} --quiet",
      POWERCUT_BIN, dir.File("m.json")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = nlohmann::json::parse(ReadFile(dir.File("m.json")));
  ASSERT_EQ(j["cells"].size(), 4u) << r.output;
  std::set<std::string> workloads;
  for (const auto& c : j["cells"]) {
    const std::string name = c["cell"];
    workloads.insert(c["workload"].get<std::string>());
    ASSERT_NE(c["status"], "error") << c.dump(2);
    EXPECT_EQ(c["acks"], 3) << name;
    EXPECT_EQ(c["unexpected"].get<std::string>(), "") << name;
    std::set<std::string> models;
    for (const auto& m : c["results"]) {
      models.insert(m["cache"].get<std::string>());
      EXPECT_GT(m["states"].get<int>(), 0) << name;
      EXPECT_EQ(m["could_not_check"], 0) << name << " " << m.dump(2);
      EXPECT_EQ(m["violations"], 0)
          << name << " under cache " << m["cache"] << ": " << m["summary"];
    }
    EXPECT_EQ(models, (std::set<std::string>{"off", "on"})) << name;
  }
  EXPECT_EQ(workloads, (std::set<std::string>{"postgres", "redis", "lmdb", "sqlite-wal"}));
}

}  // namespace
}  // namespace powercut::workloads
