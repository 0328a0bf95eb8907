// The controls (issue 10, item 6), at the defaults (512e disk, atomic unit = the physical sector,
// torn writes on, the boot's recovery before every checker), in the real VM, under cache off and
// on (the lying model is ~95% of the states and asserts nothing here; docs/results.md has it):
// `powercut matrix --preset controls` on ext4
// and xfs must exit 0 (every cell as the catalog expects), and from its JSON, independently of the
// catalog: the known-good programs lose nothing under cache off and on; the known-bad ones lose
// acked commits where physics says. Seeds 2..5 re-check the same recordings (`powercut run
// --trace --seed N`: the seed draws the sampled and torn crash states; recording again per seed
// would cost a VM boot per cell), each where its draw differs from seed 1's: where `powercut state
// list` prints the same states for both seeds, the re-check would judge seed 1's states again
// (at the defaults, 23 of the 28 cells' plans do not depend on the seed: docs/results.md, "CI
// time"). The matrix judges in guests (the default: the recording kernel); the re-checks vary
// which states are drawn, not who judges them, so where this process may loop-mount
// (MayLoopMount: root) they are judged on the host (a `run --trace` judged in guests boots its two
// checking guests: ~6.5 s against ~1 s under TCG). Under `--sector 512n` the six black-box
// programs keep their verdicts and the file-system outcome shows the repairs of ext4's torn
// superblock.
//
// $POWERCUT_CONTROLS_REPORT_DIR, when set, receives a copy of every JSON report (docs/results.md
// was written from them).
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/product/run/replay_choice.h"
#include "harness/product/run/run.h"
#include "nlohmann/json.hpp"
#include "tests/product/test_util.h"

namespace powercut::product {
namespace {

using testing::ReadFile;
using testing::RunCommand;
using testing::TempDir;

enum class Physics { kSurvives, kLosesOffAndOn, kLosesOn };

// What the barrier's documented semantics say under cache off and on (ext4, xfs).
Physics Expected(const std::string& workload, const std::string& setting) {
  if (workload == "xlog-append" &&
      (setting == "none" || setting == "ackfirst" || setting == "sync_file_range")) {
    return Physics::kLosesOffAndOn;  // no barrier, ack before sync, no metadata commit
  }
  if (workload == "xlog" && setting == "direct") return Physics::kLosesOn;  // no cache flush
  return Physics::kSurvives;
}

void SaveReport(const std::string& path, const std::string& name) {
  const char* dir = std::getenv("POWERCUT_CONTROLS_REPORT_DIR");
  if (dir == nullptr || *dir == '\0') return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::filesystem::copy_file(path, std::string(dir) + "/" + name,
                             std::filesystem::copy_options::overwrite_existing, ec);
}

// Checks one cell's results (off and on) against physics; returns the sum of fs_repaired.
uint64_t ExpectPhysics(const std::string& cell, const std::string& workload,
                       const std::string& setting, const nlohmann::json& results) {
  const Physics physics = Expected(workload, setting);
  std::set<std::string> seen;
  uint64_t repaired = 0;
  for (const auto& m : results) {
    const std::string cache = m["cache"];
    const int violations = m["violations"];
    EXPECT_EQ(m["fs_unrecoverable"], 0) << cell << " " << m.dump(2);
    EXPECT_EQ(m["could_not_check"], 0) << cell << " " << m.dump(2);
    EXPECT_GT(m["states"].get<int>(), 0) << cell;
    repaired += m["fs_repaired"].get<uint64_t>();
    if (cache != "off" && cache != "on") continue;
    seen.insert(cache);
    const bool loses =
        physics == Physics::kLosesOffAndOn || (physics == Physics::kLosesOn && cache == "on");
    if (loses) {
      EXPECT_GT(violations, 0) << cell << " must lose acked commits under cache " << cache;
    } else {
      EXPECT_EQ(violations, 0) << cell << " must lose nothing under cache " << cache << ": "
                               << m["summary"];
    }
  }
  EXPECT_EQ(seen, (std::set<std::string>{"off", "on"})) << cell;
  return repaired;
}

// The crash states a re-check of `trace` with `seed` would judge, as `powercut state list` prints
// them for the matrix's points and states per point (`parameters`: the matrix report's), one id a
// line; the models off and on. Equal lists for two seeds: the same states, judged alike. (`state
// list` lists an all-but-one state for every volatile write where `run` caps them; no seed draws
// those, so equal lists still mean equal plans.)
std::string PlannedStates(const std::string& trace, const nlohmann::json& parameters, int seed) {
  const auto states = ParseStates(parameters["states"].get<std::string>());
  EXPECT_TRUE(states.ok()) << states.status();
  const harness::StateOptions options = states.ok() ? states->Options() : harness::StateOptions{};
  auto list = RunCommand(fmt::format(
      "{} state list --trace {} --cache off,on --points {} --max-exhaustive {} --samples {} "
      "--seed {} {}",
      POWERCUT_BIN, trace, parameters["points"].get<std::string>(), options.max_exhaustive,
      options.samples, seed, parameters["torn"].get<bool>() ? "" : "--no-torn"));
  EXPECT_EQ(list.exit_code, 0) << list.output;
  EXPECT_NE(list.output, "") << trace;
  return list.output;
}

TEST(Controls, Ext4AndXfsAtTheDefaultsAcrossFiveSeeds) {
  TempDir dir;
  const std::string keep = dir.File("keep");
  auto r =
      RunCommand(fmt::format("{} matrix --preset controls --cache off,on --keep {} --json {} "
                             "--quiet",
                             POWERCUT_BIN, keep, dir.File("m.json")));
  SaveReport(dir.File("m.json"), "controls-seed1.json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = nlohmann::json::parse(ReadFile(dir.File("m.json")));
  ASSERT_EQ(j["cells"].size(), 28u) << r.output;
  std::set<std::string> fs;
  for (const auto& c : j["cells"]) {
    const std::string name = c["cell"];
    fs.insert(c["fs"].get<std::string>());
    ASSERT_EQ(c["status"] == "error", false) << c.dump(2);
    EXPECT_EQ(c["acks"], 8) << name;
    EXPECT_EQ(c["unexpected"].get<std::string>(), "") << name;  // "" when as expected
    ExpectPhysics(name, c["workload"], c["setting"], c["results"]);
  }
  EXPECT_EQ(fs, (std::set<std::string>{"ext4", "xfs"}));

  int rechecked = 0;
  for (const auto& c : j["cells"]) {
    std::string folder = c["cell"];
    std::replace(folder.begin(), folder.end(), '/', '_');
    const std::string trace = fmt::format("{}/{}/trace.log", keep, folder);
    const std::string seed1 = PlannedStates(trace, j["parameters"], 1);
    for (int seed = 2; seed <= 5; ++seed) {
      if (PlannedStates(trace, j["parameters"], seed) == seed1) continue;  // judged as seed 1
      ++rechecked;
      const std::string report = dir.File(fmt::format("{}-seed{}.json", folder, seed));
      auto check = RunCommand(
          fmt::format("{} run --trace {} --workload '{}' --checker '{}' --fs {} --cache off,on "
                      "--seed {} {} --json {} --quiet",
                      POWERCUT_BIN, trace, c["workload_command"].get<std::string>(),
                      c["checker_command"].get<std::string>(), c["fs"].get<std::string>(), seed,
                      MayLoopMount() ? "--check-in host" : "", report));
      ASSERT_NE(check.exit_code, 2) << check.output;
      SaveReport(report, fmt::format("controls-{}-seed{}.json", folder, seed));
      nlohmann::json k = nlohmann::json::parse(ReadFile(report));
      ExpectPhysics(fmt::format("{} seed {}", c["cell"].get<std::string>(), seed), c["workload"],
                    c["setting"], k["results"]);
    }
  }
  fmt::print(
      "seeds 2-5: {} of {} re-checks draw states seed 1 did not (the rest would judge seed "
      "1's again)\n",
      rechecked, 4 * j["cells"].size());
}

// 512n: a disk whose only atomic unit is 512 B. ext4's superblock (rewritten in place at
// unmount) can be torn; e2fsck repairs it from a backup, and the program's verdict is unchanged.
TEST(Controls, SixBlackBoxProgramsOn512nKeepTheirVerdicts) {
  TempDir dir;
  uint64_t repaired = 0;
  size_t cells = 0, superblock_repairs = 0;
  for (const auto& [workload, settings] :
       {std::pair<std::string, std::string>{"xlog-append",
                                            "fdatasync,ackfirst,none,sync_file_range"},
        {"xlog", "odsync,direct"}}) {
    const std::string json = dir.File(workload + ".json");
    auto r =
        RunCommand(fmt::format("{} matrix --workloads {} --barriers {} --fs ext4 --sector 512n "
                               "--count 8 --cache off,on --json {} "
                               "--quiet",
                               POWERCUT_BIN, workload, settings, json));
    SaveReport(json, "controls-512n-" + workload + ".json");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    nlohmann::json j = nlohmann::json::parse(ReadFile(json));
    EXPECT_EQ(j["parameters"]["sector"], "512n");
    for (const auto& c : j["cells"]) {
      ++cells;
      ASSERT_EQ(c["status"] == "error", false) << c.dump(2);
      EXPECT_EQ(c["unexpected"].get<std::string>(), "") << c["cell"];  // "" when as expected
      repaired += ExpectPhysics(c["cell"], c["workload"], c["setting"], c["results"]);
      for (const auto& m : c["results"]) {
        // e2fsck -p cannot open the file system (exit 8: the primary superblock is torn); the
        // next step, e2fsck -fy, takes a backup superblock.
        const std::string steps = m["fs_repair_steps"];
        superblock_repairs += steps.find("e2fsck -p exit 8") != std::string::npos ? 1 : 0;
      }
    }
  }
  EXPECT_EQ(cells, 6u);
  EXPECT_GT(repaired, 0u) << "no crash state of the six programs needed a file-system repair";
  EXPECT_GT(superblock_repairs, 0u) << "no repair of a torn superblock";
}

}  // namespace
}  // namespace powercut::product
