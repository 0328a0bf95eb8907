// Bad input, per cell, through the real VM: a `powercut matrix --cells` file with a workload that
// exits non-zero, one that never acks, one that floods 100,000 acks, one that prints malformed ack
// lines, one that hangs past its timeout, a checker that crashes, and one good cell. The matrix
// runs as two shards (`--shard 1/2`, `--shard 2/2`, as a nightly batch job would) merged with
// `powercut merge`: every cell must be reported with its own failure kind while the others still
// run, each as its expectation says (exit 0), and the merged report must hold exactly the cells
// of both shards. About 70 s of VM time under TCG (seven boots, one of them waiting out the hang's
// 10 s timeout: it counts from the job's start in a booted guest, whose setup takes under 1 s).
#include <fstream>
#include <map>

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/product/test_util.h"

namespace powercut::product {
namespace {

using ::testing::HasSubstr;
using testing::ReadFile;
using testing::RunCommand;
using testing::TempDir;

nlohmann::json Cells() {
  std::string xlog = fmt::format("{} xlog run --barrier fdatasync --count 3", WORKLOAD_BIN);
  auto cell = [](const std::string& name, const std::string& workload, const std::string& checker,
                 nlohmann::json expect) {
    return nlohmann::json{
        {"name", name}, {"workload", workload}, {"checker", checker}, {"expect", expect}};
  };
  nlohmann::json cells = nlohmann::json::array();
  cells.push_back(cell("exits", "echo 'workload says: giving up' >&2; exit 3", "true",
                       {{"error", "workload-exit"}}));
  cells.push_back(cell("silent", "echo working", "true", {{"error", "no-acks"}}));
  cells.push_back(cell("floods", "seq 1 100000 | sed 's/^/ack /' >&$POWERCUT_ACK_FD", "true",
                       {{"error", "ack-flood"}}));
  cells.back()["max_acks"] = 1000;
  cells.push_back(cell("garbles", "printf 'ack 1\\nhello\\nack bad id!\\n' >&$POWERCUT_ACK_FD",
                       "true", {{"error", "malformed-acks"}}));
  cells.push_back(cell("hangs", "echo hanging; sleep 600", "true", {{"error", "timeout"}}));
  cells.back()["timeout"] = 10;
  cells.push_back(cell("checker-crashes", xlog, "kill -SEGV $$", {{"error", "checker-crash"}}));
  cells.push_back(cell("good", xlog, fmt::format("{} xlog check", WORKLOAD_BIN),
                       {{"off", "survives"}, {"on", "survives"}}));
  return {{"cells", cells}};
}

TEST(BadCellsInVm, EachIsReportedAsSuchAcrossTwoShardsAndMerges) {
  TempDir dir;
  { std::ofstream(dir.File("cells.json")) << Cells().dump(2); }
  std::string matrix =
      fmt::format("{} matrix --cells {} --cache off,on --points acks --states 8 --no-torn --quiet",
                  POWERCUT_BIN, dir.File("cells.json"));
  nlohmann::json shard_cells = nlohmann::json::array();
  for (int k : {1, 2}) {
    std::string json = dir.File(fmt::format("shard{}.json", k));
    auto r = RunCommand(fmt::format("{} --shard {}/2 --json {}", matrix, k, json));
    EXPECT_EQ(r.exit_code, 0) << r.output;  // every cell as expected
    nlohmann::json j = nlohmann::json::parse(ReadFile(json), nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.output;
    EXPECT_EQ(j["shard"], fmt::format("{}/2", k));
    EXPECT_EQ(j["plan_cells"], 7);
    for (const auto& c : j["cells"]) shard_cells.push_back(c);
  }
  ASSERT_EQ(shard_cells.size(), 7u);  // the shards partition the plan

  auto merged_run = RunCommand(fmt::format("{} merge {} {} --out {} --junit {}", POWERCUT_BIN,
                                           dir.File("shard1.json"), dir.File("shard2.json"),
                                           dir.File("all.json"), dir.File("all.xml")));
  EXPECT_EQ(merged_run.exit_code, 0) << merged_run.output;
  nlohmann::json merged = nlohmann::json::parse(ReadFile(dir.File("all.json")), nullptr, false);
  ASSERT_FALSE(merged.is_discarded()) << merged_run.output;
  EXPECT_EQ(merged["shard"], "merged");
  // The merged cells are exactly the shards' cells, in plan order.
  std::sort(shard_cells.begin(), shard_cells.end(),
            [](const auto& a, const auto& b) { return a["index"] < b["index"]; });
  EXPECT_EQ(merged["cells"], shard_cells);

  std::map<std::string, nlohmann::json> by_name;
  for (const auto& c : merged["cells"]) by_name[c["workload"].get<std::string>()] = c;
  const std::map<std::string, std::string> kinds = {
      {"exits", "workload-exit"},    {"silent", "no-acks"}, {"floods", "ack-flood"},
      {"garbles", "malformed-acks"}, {"hangs", "timeout"},  {"checker-crashes", "checker-crash"}};
  for (const auto& [name, kind] : kinds) {
    ASSERT_EQ(by_name.count(name), 1u) << name;
    const nlohmann::json& c = by_name[name];
    EXPECT_EQ(c["status"], "error") << c.dump(2);
    EXPECT_EQ(c["error_kind"], kind) << c.dump(2);
    EXPECT_EQ(c["verdict"], "ok") << c.dump(2);
  }
  // What each report says, so a user can act on it.
  EXPECT_THAT(by_name["exits"]["error"].get<std::string>(),
              HasSubstr("workload says: giving up"));  // the workload's own output
  EXPECT_THAT(by_name["floods"]["error"].get<std::string>(), HasSubstr("100000 acks"));
  EXPECT_THAT(by_name["garbles"]["error"].get<std::string>(), HasSubstr("2 malformed line(s)"));
  EXPECT_THAT(by_name["checker-crashes"]["error"].get<std::string>(), HasSubstr("exit -11"));
  const nlohmann::json& good = by_name["good"];
  EXPECT_EQ(good["status"], "pass") << good.dump(2);
  EXPECT_EQ(good["verdict"], "ok");
  EXPECT_EQ(good["acks"], 3);
  ASSERT_EQ(good["results"].size(), 2u);
  for (const auto& m : good["results"]) {
    EXPECT_GT(m["states"].get<int>(), 0);
    EXPECT_EQ(m["violations"], 0);
  }
  EXPECT_THAT(ReadFile(dir.File("all.xml")), HasSubstr("failures=\"0\" errors=\"0\""));
}

}  // namespace
}  // namespace powercut::product
