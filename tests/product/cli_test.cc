// The `powercut` binary on bad input: each mistake is a clear message naming what is wrong and
// exit 2, never a crash.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/fs/file_system.h"
#include "harness/product/cell/model_kind.h"
#include "harness/product/matrix/builtin.h"
#include "harness/product/matrix/matrix.h"
#include "nlohmann/json.hpp"
#include "tests/product/test_util.h"

namespace powercut::product {
namespace {

using ::testing::HasSubstr;
using testing::RunCommand;
using testing::TempDir;

TEST(Cli, UnknownWorkloadAndBadShardAreUsageErrors) {
  auto r = RunCommand(std::string(POWERCUT_BIN) + " matrix --workloads mongodb --quiet");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("unknown workload 'mongodb'"));
  for (const char* shard : {"0/3", "4/3", "x"}) {
    r = RunCommand(std::string(POWERCUT_BIN) + " matrix --shard " + shard + " --quiet");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_THAT(r.output, HasSubstr("--shard")) << shard;
  }
  r = RunCommand(std::string(POWERCUT_BIN) + " matrix --workloads xlog --barriers bogus");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("bogus"));
}

// Guest sizing is checked before any VM boots, and a matrix records it in its parameters.
TEST(Cli, GuestSizeFlagsAreCheckedAndRecorded) {
  auto r = RunCommand(std::string(POWERCUT_BIN) +
                      " run --workload true --checker true --disk-size 1MiB --quiet");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--disk-size 1MiB: at least 64MiB"));
  r = RunCommand(std::string(POWERCUT_BIN) + " matrix --preset databases --guest-cpus 0 --list");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--guest-cpus"));
  r = RunCommand(std::string(POWERCUT_BIN) +
                 " matrix --preset databases --guest-memory 1024 --disk-size 1GiB --list");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("postgres/sync-on/ext4"));
}

TEST(Cli, ListShowsEachShardsCellsAndTheyPartitionThePlan) {
  std::string all =
      RunCommand(std::string(POWERCUT_BIN) + " matrix --preset headline --list").output;
  std::string parts;
  for (const char* k : {"1/2", "2/2"}) {
    auto r =
        RunCommand(std::string(POWERCUT_BIN) + " matrix --preset headline --list --shard " + k);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    parts += r.output;
  }
  auto lines = [](const std::string& s) {
    std::vector<std::string> v;
    size_t start = 0;
    while (start < s.size()) {
      size_t nl = s.find('\n', start);
      v.push_back(s.substr(start, nl - start));
      start = nl + 1;
    }
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(lines(all).size(), 10u);
  EXPECT_EQ(lines(all), lines(parts));
}

// The controls preset runs on ext4 and xfs unless --fs says otherwise; btrfs rows take the
// catalog's per-fs expectations.
TEST(Cli, ControlsPresetListsItsCellsOnExt4AndXfs) {
  auto r = RunCommand(std::string(POWERCUT_BIN) + " matrix --preset controls --list");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 28) << r.output;
  EXPECT_THAT(r.output, ::testing::MatchesRegex("(.|\n)*xlog-append/ackfirst/xfs +expect "
                                                "off=loses on=loses lying=loses\n(.|\n)*"));
  EXPECT_THAT(r.output, ::testing::MatchesRegex("(.|\n)*wal/io_uring/ext4 +expect off=survives "
                                                "on=survives lying=loses\n(.|\n)*"));
  r = RunCommand(std::string(POWERCUT_BIN) + " matrix --preset controls --fs btrfs --list");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 14) << r.output;
  EXPECT_THAT(r.output, ::testing::MatchesRegex("(.|\n)*xlog/direct/btrfs +expect off=loses "
                                                "on=loses lying=loses\n(.|\n)*"));
}

TEST(Cli, ListShowsTheCatalogsExpectedVerdictsAndCustomCells) {
  auto r = RunCommand(std::string(POWERCUT_BIN) + " matrix --preset headline --list");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output,
              ::testing::MatchesRegex(
                  "(.|\n)*xlog/none/ext4 +expect off=loses on=loses lying=loses\n(.|\n)*"));
  EXPECT_THAT(r.output, ::testing::MatchesRegex("(.|\n)*xlog/direct/ext4 +expect off=survives "
                                                "on=loses lying=loses\n(.|\n)*"));
  r = RunCommand(std::string(POWERCUT_BIN) + " matrix --preset headline --list --no-expect");
  // The raw rule claims no expectation (issue 34).
  EXPECT_THAT(r.output, ::testing::MatchesRegex("(.|\n)*xlog/none/ext4 +no expectation "
                                                "\\(--no-expect: any violation fails\\)\n(.|\n)*"));
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("survives")));
  TempDir dir;
  {
    std::ofstream(dir.File("cells.json"))
        << R"({"cells": [{"name": "hangs", "workload": "sleep 600", "checker": "true",
                          "timeout": 20, "expect": {"error": "timeout"}}]})";
  }
  r = RunCommand(std::string(POWERCUT_BIN) + " matrix --list --cells " + dir.File("cells.json"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("hangs/custom/ext4"));
  EXPECT_THAT(r.output, HasSubstr("expect error=timeout"));
  { std::ofstream(dir.File("bad.json")) << R"([{"name": "x", "workload": "true"}])"; }
  r = RunCommand(std::string(POWERCUT_BIN) + " matrix --quiet --cells " + dir.File("bad.json"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("bad.json: cell 1"));
  EXPECT_THAT(r.output, HasSubstr("\"checker\""));
}

// Names are read once, at the edge: an unknown cache model, crash-point kind, model or verdict is
// bad usage (exit 2) that lists the valid names, in every command that reads one, before anything
// is read or booted (the traces named here do not exist).
TEST(Cli, UnknownModelPointAndVerdictNamesAreUsageErrorsListingTheValidOnes) {
  const std::string bin = POWERCUT_BIN;
  const std::string run = bin + " run --workload true --checker true";
  const std::string check = bin + " check --trace /nonexistent/t.log --checker true";
  const std::string list = bin + " state list --trace /nonexistent/t.log";
  const std::string matrix = bin + " matrix --workloads xlog --list";
  const std::string cache = "\"fast\" is not a cache model: off, on, lying or all";
  const std::string points = "\"sometimes\" is not a crash-point choice: every, acks, flushes";
  for (const auto& [command, message] : std::vector<std::pair<std::string, std::string>>{
           {run + " --cache off,fast", cache},
           {check + " --cache off,fast", cache},
           {list + " --cache off,fast", cache},
           {matrix + " --cache off,fast", cache},
           {run + " --points sometimes", points},
           {check + " --points sometimes", points},
           {list + " --points sometimes", points},
           {matrix + " --points sometimes", points},
           {run + " --cache off --expect off=maybe", "the verdict is survives, loses or may-lose"},
           {run + " --cache off --expect fast=loses",
            "with model off, on, lying, live, node-cut, error_writes or drop_writes"},
           {run + " --disks 2 --cache-per-disk 1=fast", "MODEL off, on or lying"},
           {check + " --order sideways", "\"completion\" or \"flush-epoch\""},
           {bin + " trace manifest --log /nonexistent/t.log --base /nonexistent/b --order sideways",
            "\"completion\" or \"flush-epoch\""},
       }) {
    auto r = RunCommand(command);
    EXPECT_EQ(r.exit_code, 2) << command << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr(message)) << command;
  }
  TempDir dir;
  {
    std::ofstream(dir.File("cells.json"))
        << R"([{"name": "a", "workload": "true", "checker": "true", "expect": {"lying": "fine"}}])";
  }
  auto r = RunCommand(bin + " matrix --list --cells " + dir.File("cells.json"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"fine\" is not an expected verdict: survives, loses or "
                                  "may-lose"));
}

// A failing disk's mode is read once too (vm::ParseFlakeyMode): a misspelt one is bad usage in
// `run` and `matrix`, naming the valid modes, before any guest boots.
TEST(Cli, UnknownFlakeyModeIsAUsageErrorListingTheValidOnes) {
  const std::string bin = POWERCUT_BIN;
  const std::string message =
      "--flakey \"error-writes\": not a failing disk's mode; expected error_writes or drop_writes";
  for (const std::string& command :
       {bin + " run --workload true --checker true --flakey error-writes",
        bin + " matrix --workloads xlog --list --flakey error-writes"}) {
    auto r = RunCommand(command);
    EXPECT_EQ(r.exit_code, 2) << command << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr(message)) << command;
  }
  // The valid ones plan their cells: one per fault, named by it.
  auto r = RunCommand(bin + " matrix --workloads xlog --fs ext4 --list --flakey drop_writes");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("/ext4/drop_writes"));
}

// The catalog's verdicts as `powercut-workload list --json` prints them read back into the same
// types, entry by entry and file system by file system.
TEST(Cli, TheCatalogsVerdictsRoundTripThroughItsJson) {
  // The powercut-workload built beside this powercut, found as `matrix` finds it.
  auto workload = FindWorkloadBinary("", POWERCUT_BIN);
  ASSERT_TRUE(workload.ok()) << workload.status();
  auto r = RunCommand(*workload + " list --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto parsed = ParseBuiltinExpectations(r.output, "powercut-workload list --json");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const nlohmann::json catalog = nlohmann::json::parse(r.output);
  ASSERT_GT(catalog.size(), 20u);
  size_t by_fs = 0;
  for (const nlohmann::json& entry : catalog) {
    const CellExpect& e = parsed->at(entry.at("name").get<std::string>());
    for (ModelKind kind : {ModelKind::kOff, ModelKind::kOn, ModelKind::kLying}) {
      EXPECT_EQ(ExpectedVerdictName(e.For(kind)),
                entry.at("expect").at(std::string(ModelKindName(kind))).get<std::string>())
          << entry.at("name");
    }
    // The catalog names no file system: a difference is keyed by a property of the table and
    // applies to every row that has it.
    const nlohmann::json where = entry.value("expect_where", nlohmann::json::object());
    for (const auto& [property, verdicts] : where.items()) {
      for (const harness::FileSystem& fs : harness::AllFileSystems()) {
        absl::StatusOr<bool> has = harness::HasCatalogProperty(fs, property);
        ASSERT_TRUE(has.ok()) << has.status();
        if (!*has) continue;
        for (const auto& [model, verdict] : verdicts.items()) {
          ++by_fs;
          absl::StatusOr<ModelKind> kind = ParseModelKind(model);
          ASSERT_TRUE(kind.ok()) << kind.status();
          EXPECT_EQ(ExpectedVerdictName(e.ForFs(fs.kind).For(*kind)), verdict.get<std::string>())
              << entry.at("name") << " on " << fs.name;
        }
      }
    }
  }
  EXPECT_GT(by_fs, 0u);  // btrfs differs for direct and sync_file_range, f2fs for direct_dsync
}

TEST(Cli, RunAndMergeAndReproRejectBadInput) {
  TempDir dir;
  auto r = RunCommand(std::string(POWERCUT_BIN) +
                      " run --workload true --checker true --cache sometimes --quiet");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--cache"));
  // An unknown sector format is refused before any guest boots (no VM is prepared: the message
  // is the only output), with the three choices.
  for (const char* command : {" run --workload true --checker true --sector 4k",
                              " matrix --workloads xlog --sector 4k"}) {
    r = RunCommand(std::string(POWERCUT_BIN) + command);
    EXPECT_EQ(r.exit_code, 2) << command << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr("--sector 4k: expected 512n")) << command;
    EXPECT_THAT(r.output, HasSubstr("512e")) << command;
    EXPECT_THAT(r.output, HasSubstr("4kn")) << command;
    EXPECT_THAT(r.output, ::testing::Not(HasSubstr("preparing the VM"))) << command;
  }
  r = RunCommand(std::string(POWERCUT_BIN) + " merge " + dir.File("none.json"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cannot read"));
  { std::ofstream(dir.File("x.json")) << "{\"schema\": \"something-else\"}"; }
  r = RunCommand(std::string(POWERCUT_BIN) + " merge " + dir.File("x.json"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("powercut-matrix/1"));
  r = RunCommand(std::string(POWERCUT_BIN) + " repro nonsense --trace " + dir.File("t.log") +
                 " --checker true --bundle " + dir.File("b"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

// `check` takes --kernel like run, matrix and repro: the guests that judge boot it, and a kernel
// that is not there is refused naming it, before any state is read.
TEST(Cli, CheckInAGuestBootsTheKernelGiven) {
  TempDir dir;
  auto r = RunCommand(std::string(POWERCUT_BIN) + " check --trace " + dir.File("t.log") +
                      " --checker true --fs ext4 --check-in guest --kernel " +
                      dir.File("no-such-kernel"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr(dir.File("no-such-kernel")));
  EXPECT_THAT(r.output, HasSubstr("--check-in guest: cannot prepare the VM"));
}

// Exit 1 of `check` means a state violates, nothing else: a trace that cannot be read is 2.
TEST(Cli, CheckExitsTwoWhenItCannotRun) {
  TempDir dir;
  auto r = RunCommand(std::string(POWERCUT_BIN) + " check --trace " + dir.File("none.log") +
                      " --checker true --fs raw");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr(dir.File("none.log")));
}

// An unknown file system is a usage error on every command that takes --fs (exit 2, before any
// guest boots: no kernel is prepared, so each takes well under a second), naming the typo and
// listing the valid names; never a fallback to raw or ext4.
TEST(Cli, AnUnknownFileSystemIsAUsageErrorListingTheValidOnes) {
  TempDir dir;
  const std::string bin = POWERCUT_BIN;
  for (const std::string& args : std::vector<std::string>{
           "run --workload true --checker true --fs ext5",
           "run --workload true --checker true --disks 2 --fs ext4,ext5", "matrix --list --fs ext5",
           "matrix --list --fs ext4,ext5",
           "check --trace " + dir.File("t.log") + " --checker true --fs ext5",
           "repro pc1_x --trace " + dir.File("t.log") + " --checker true --fs ext5",
           std::string("fstest run --quiet --seq 1 --fs ext5")}) {
    auto r = RunCommand(bin + " " + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr("ext5")) << args;
    EXPECT_THAT(r.output, HasSubstr("ext4, xfs, btrfs, f2fs")) << args;
  }
}

// `powercut fstest`: every bad input is refused before any guest boots (no kernel is prepared, so
// these take seconds), exit 2, naming what is wrong.
TEST(Cli, FsTestRefusesBadInputBeforeAnyGuestBoots) {
  TempDir dir;
  const std::string bin = POWERCUT_BIN;
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir.File(name)) << text;
    return dir.File(name);
  };
  struct Case {
    std::string args, says;
  };
  const std::vector<Case> cases = {
      {"--workloads " + write("op.fst", "creat foo\nfrobnicate foo\nsync\n"),
       "op.fst:2: unknown operation frobnicate"},
      {"--workloads " + write("root.fst", "creat ../etc/x\nsync\n"),
       "root.fst:1: path ../etc/x leaves the file system's root"},
      {"--workloads " + write("abs.fst", "creat /etc/x\nsync\n"),
       "abs.fst:1: path /etc/x is absolute"},
      {"--workloads " + write("enoent.fst", "write foo 0 10\nsync\n"),
       "enoent.fst:1: write foo 0 10: ENOENT: foo does not exist"},
      {"--workloads " + dir.File("nothing.fst"), "no such file or folder"},
      {"--seq 1 --mkfs-options '-O no_such_feature'", "mkfs of ext4 refuses them"},
      {"--seq 1 --fs raw", "needs a file system"},
      {"--seq 1 --fs zfs", "zfs"},
      {"--seq 4", "--seq 4: the sequence length is 1 to 3"},
      {"--seq 1 --persist fsync,msync",
       "\"msync\" is not fsync, fdatasync, sync, odsync, osync or rwf_dsync"},
      {"--seq 1 --cache bogus", "bogus"},
      {"--seq 1 --profiles ext4:nope", "ext4 has no profile nope"},
      {"--seq 1 --fs xfs --profiles ext4:fast_commit", "ext4:fast_commit is not one of --fs xfs"},
      {"--seq 1 --kernel default,default", "two kernels are labelled 'default'"},
      {"--seq 1 --kernel default," + dir.File("no-such-kernel.deb"), "no-such-kernel.deb"},
  };
  for (const Case& c : cases) {
    const auto start = std::chrono::steady_clock::now();
    auto r = RunCommand(bin + " fstest run --quiet " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.says)) << c.args;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60)) << c.args;
  }
  // The listing needs no VM at all: the seq-1 space, its count and stable ids.
  auto list = RunCommand(bin + " fstest list --seq 1");
  ASSERT_EQ(list.exit_code, 0) << list.output;
  EXPECT_THAT(list.output, HasSubstr("seq-1: 328 workloads"));
  EXPECT_THAT(list.output, HasSubstr("fst-4ad649c07ae21bd3  creat foo; fsync foo"));
  // The profiles' table needs no VM either.
  auto profiles = RunCommand(bin + " fstest profiles");
  ASSERT_EQ(profiles.exit_code, 0) << profiles.output;
  EXPECT_THAT(profiles.output, HasSubstr("ext4:fast_commit  (mkfs -O fast_commit)"));
  EXPECT_THAT(profiles.output, HasSubstr("f2fs:fsync_strict  (mount fsync_mode=strict)"));
  auto repro = RunCommand(bin + " fstest repro fst-0000000000000000 --bundle " + dir.File("b"));
  EXPECT_EQ(repro.exit_code, 2) << repro.output;
  EXPECT_THAT(repro.output, HasSubstr("no workload of the seq-1 space has the id"));
}

}  // namespace
}  // namespace powercut::product
