// f2fs end to end (issue 25: adding a file system is one row of harness/fs/file_system.cc and
// its guest module): `powercut run --fs f2fs` records an appending xlog with fdatasync on a disk
// made by mkfs.f2fs in a guest that loaded f2fs.ko, and judges its crash states in a guest by the
// recording kernel (this host's kernel may have no f2fs). The verdicts are the measured ones
// (docs/results.md, "f2fs"): fdatasync keeps every ack with the cache off and on (the mount's
// roll-forward recovery finds what fsync wrote after the last checkpoint) and loses them when the
// drive lies about flushes.
#include <string>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/product/test_util.h"

namespace powercut::product {
namespace {

using testing::ReadFile;
using testing::RunCommand;
using testing::TempDir;

TEST(F2fsVmTest, FdatasyncSurvivesOffAndOnAndLosesUnderLying) {
  TempDir dir;
  const std::string json = dir.path() + "/run.json";
  const std::string checker = fmt::format("{} xlog check", WORKLOAD_BIN);
  auto r = RunCommand(fmt::format(
      "{} run --quiet --workload '{} xlog run --barrier fdatasync --append --count 3' "
      "--checker '{}' --fs f2fs --cache off,on,lying --points acks --states 2 --check-in guest "
      "--keep {}/rec --json {}",
      POWERCUT_BIN, WORKLOAD_BIN, checker, dir.path(), json));
  ASSERT_EQ(r.exit_code, 1) << "the lying drive loses acked blocks:\n" << r.output;
  const nlohmann::json report = nlohmann::json::parse(ReadFile(json));
  EXPECT_EQ(report.at("run").at("fs"), "f2fs");
  EXPECT_EQ(report.at("parameters").at("check_method"), "guest mount");
  const nlohmann::json manifest =
      nlohmann::json::parse(ReadFile(dir.path() + "/rec/trace.log.manifest.json"));
  EXPECT_EQ(manifest.at("fs"), "f2fs");
  EXPECT_EQ(manifest.value("fs_block_size", 0), 4096) << manifest.dump(2);
  EXPECT_NE(manifest.value("mkfs", "").find("mkfs.f2fs"), std::string::npos) << manifest.dump(2);
  int models = 0;
  for (const auto& m : report.at("results")) {
    ++models;
    const std::string cache = m.at("cache");
    EXPECT_GT(m.at("states").get<int>(), 0) << cache;
    EXPECT_EQ(m.value("could_not_check", 0), 0) << cache;
    EXPECT_EQ(m.value("fs_unrecoverable", 0), 0) << cache;
    if (cache == "lying") {
      EXPECT_GT(m.at("violations").get<int>(), 0);
    } else {
      EXPECT_EQ(m.at("violations").get<int>(), 0) << cache;
    }
  }
  EXPECT_EQ(models, 3);
}

}  // namespace
}  // namespace powercut::product
