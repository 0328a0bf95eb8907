// End-to-end tests of powercut-workload as the tester runs it: a child process with a pipe as
// POWERCUT_ACK_FD, in a directory on a real disk file system, then the checker as a second process.
// Process crashes (SIGKILL after K acks, read from the pipe) must lose no acked commit in any mode
// that wrote the data; power cuts are the tester's business (harness/, the VM rooms).
// Nothing may be left behind in $TMPDIR (the servers' socket folders), killed or not.
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/workloads/child_process.h"
#include "workloads/ack_channel.h"
#include "workloads/catalog.h"

namespace powercut::workloads {
namespace {

using powercut::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr char kBinary[] = POWERCUT_WORKLOAD_BIN;
constexpr char kClientsBinary[] = POWERCUT_WORKLOAD_CLIENTS_BIN;

struct RunOutput {
  int exit_code = -1;
  std::vector<std::string> acks;  // ids, in the order acked
  std::string err;
};

struct CheckOutput {
  int exit_code = -1;
  std::set<std::string> have;
  std::vector<std::string> corrupt;
  std::string out;
  std::string err;
};

using Env = std::map<std::string, std::string>;

class WorkloadProcessTest : public ::testing::Test {
 protected:
  WorkloadProcessTest()
      : data_(tmp_.MakeSubdir("data")),
        data2_(tmp_.MakeSubdir("data2")),
        tmpdir_(tmp_.MakeSubdir("tmp")) {
    // The servers' accounts (postgres, redis) must enter the folders of their sockets.
    ::chmod(tmp_.path().c_str(), 0711);
    ::chmod(tmpdir_.c_str(), 0711);
    // Orphans of the workload (its server, the remover of its socket folder) become this
    // process's children, so ReapOrphans() can wait for them instead of guessing how long.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  }

  // POWERCUT_DIR_2 too: the two-disk configurations (twodisk, rocksdb/postgres/etcd --wal-disk)
  // put their data or log there; the others never look at it.
  Env DirEnv() const {
    return {{"POWERCUT_DIR", data_}, {"POWERCUT_DIR_2", data2_}, {"TMPDIR", tmpdir_}};
  }

  // Waits for every descendant that outlived its parent: a killed workload's server (gone
  // before its checker starts a server on the same files, as after a real crash) and the
  // removers of the servers' socket folders.
  static void ReapOrphans() {
    while (::waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {
    }
  }

  // Empties both data folders for a fresh run in the same test.
  void ClearDataFolders() const {
    for (const std::string& folder : {data_, data2_}) {
      for (const auto& entry : std::filesystem::directory_iterator(folder)) {
        std::filesystem::remove_all(entry.path());
      }
    }
  }

  // After ReapOrphans, expects $TMPDIR to be empty.
  void ExpectNothingLeftInTmp() const {
    ReapOrphans();
    std::vector<std::string> left;
    for (const auto& entry : std::filesystem::directory_iterator(tmpdir_)) {
      left.push_back(entry.path().filename());
    }
    EXPECT_THAT(left, IsEmpty()) << "left behind in " << tmpdir_;
  }

  // Runs `args`; with `kill_after`, SIGKILLs the child once it has acked that many ids, then
  // collects every ack it wrote before dying.
  RunOutput Run(const std::vector<std::string>& args, std::optional<size_t> kill_after = {},
                const std::optional<Env>& env = {}, bool ack_pipe = true) {
    std::vector<std::string> argv = {kBinary};
    argv.insert(argv.end(), args.begin(), args.end());
    ChildProcess child({argv, env.value_or(DirEnv()), ack_pipe, tmp_.path() + "/run.out",
                        tmp_.path() + "/run.err"});
    RunOutput output;
    if (!child.started()) {
      ADD_FAILURE() << child.start_error();
      return output;
    }
    bool killed = false;
    while (std::optional<std::string> line = child.NextAckLine()) {
      if (line->rfind("ack ", 0) != 0 || !IsValidAckId(line->substr(4))) {
        ADD_FAILURE() << "malformed ack line '" << *line << "'";
        continue;
      }
      output.acks.push_back(line->substr(4));
      if (!killed && kill_after.has_value() && output.acks.size() >= *kill_after) {
        child.Kill(SIGKILL);
        killed = true;
      }
    }
    output.exit_code = child.Wait();
    output.err = ChildProcess::ReadFile(tmp_.path() + "/run.err");
    return output;
  }

  CheckOutput Check(const std::string& workload, const std::optional<Env>& env = {},
                    const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {kBinary, workload, "check"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    ChildProcess child({argv, env.value_or(DirEnv()), false, tmp_.path() + "/check.out",
                        tmp_.path() + "/check.err"});
    CheckOutput output;
    if (!child.started()) {
      ADD_FAILURE() << child.start_error();
      return output;
    }
    output.exit_code = child.Wait();
    output.out = ChildProcess::ReadFile(tmp_.path() + "/check.out");
    output.err = ChildProcess::ReadFile(tmp_.path() + "/check.err");
    size_t start = 0;
    while (start < output.out.size()) {
      size_t end = output.out.find('\n', start);
      if (end == std::string::npos) end = output.out.size();
      const std::string line = output.out.substr(start, end - start);
      start = end + 1;
      if (line.rfind("have ", 0) == 0 && IsValidAckId(line.substr(5))) {
        EXPECT_TRUE(output.have.insert(line.substr(5)).second) << "duplicate " << line;
      } else if (line.rfind("corrupt ", 0) == 0 && IsValidAckId(line.substr(8))) {
        output.corrupt.push_back(line.substr(8));
      } else {
        ADD_FAILURE() << "malformed checker line '" << line << "'";
      }
    }
    return output;
  }

  static void ExpectAllAckedHad(const RunOutput& run, const CheckOutput& check) {
    size_t missing = 0;
    for (const std::string& id : run.acks) {
      if (!check.have.contains(id) && ++missing <= 5) ADD_FAILURE() << "acked id " << id << " lost";
    }
    EXPECT_EQ(missing, 0u) << "of " << run.acks.size() << " acks";
  }

  TempDir tmp_;
  std::string data_;
  std::string data2_;   // the second disk's folder
  std::string tmpdir_;  // the children's $TMPDIR
};

// Every configuration `powercut-workload list` offers, with a gtest-friendly label.
std::vector<WorkloadConfig> AllConfigs() { return Catalog(); }

std::string Label(const WorkloadConfig& config) {
  std::string label = config.name;
  for (char& c : label) {
    if (c == '-') c = '_';
  }
  return label;
}

std::vector<std::string> RunArgs(const WorkloadConfig& c, const std::string& count) {
  std::vector<std::string> args = {c.workload, "run", "--count", count};
  args.insert(args.end(), c.run_args.begin(), c.run_args.end());
  return args;
}

class WorkloadCaseTest : public WorkloadProcessTest,
                         public ::testing::WithParamInterface<WorkloadConfig> {};

TEST_P(WorkloadCaseTest, EveryAckIsHadAfterACleanRun) {
  constexpr int kCount = 30;
  RunOutput run = Run(RunArgs(GetParam(), std::to_string(kCount)));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_EQ(run.acks.size(), static_cast<size_t>(kCount));
  std::set<std::string> distinct(run.acks.begin(), run.acks.end());
  std::set<std::string> expected;
  for (int i = 1; i <= kCount; ++i) expected.insert(std::to_string(i));
  EXPECT_EQ(distinct, expected);
  if (GetParam().workload == "xlog" || GetParam().workload == "sqlite") {
    // Single committer: acks come in commit order.
    for (int i = 0; i < kCount; ++i) EXPECT_EQ(run.acks[i], std::to_string(i + 1));
  }

  CheckOutput check = Check(GetParam().workload);
  ASSERT_EQ(check.exit_code, 0) << check.err;
  EXPECT_THAT(check.corrupt, IsEmpty()) << check.err;
  EXPECT_EQ(check.have, expected) << check.err;
  ExpectNothingLeftInTmp();
}

// SIGKILL once K acks were read. A configuration that survives a process crash (all but
// rocksdb --disable-wal) must lose nothing; one that loses must lose something, so both
// directions of the catalog's expectation are checked.
TEST_P(WorkloadCaseTest, ProcessCrashMatchesTheCatalog) {
  constexpr size_t kKillAfter = 25;
  const bool survives = GetParam().process_crash == Expectation::kSurvives;
  // May lose (redis everysec): one run, judged for what it can say (the store opens, nothing is
  // corrupt), not for whether this kill hit the window.
  const bool may_lose = GetParam().process_crash == Expectation::kMayLose;
  // A losing configuration loses only when the kill lands before the server wrote the acked
  // commits out of its own memory: postgres synchronous_commit=off's WAL writer writes every
  // 200 ms, and a kill right after it wrote loses nothing (seen once in a loaded suite). So up to
  // three fresh runs, and one of them must lose; a surviving one gets one run that must not.
  const int tries = survives || may_lose ? 1 : 3;
  size_t lost = 0;
  for (int attempt = 0; attempt < tries && lost == 0; ++attempt) {
    if (attempt > 0) ClearDataFolders();
    // A count the child cannot reach before the kill: it blocks once the pipe buffer is full.
    RunOutput run = Run(RunArgs(GetParam(), "1000000"), kKillAfter);
    EXPECT_EQ(run.exit_code, 128 + SIGKILL) << run.err;
    ASSERT_GE(run.acks.size(), kKillAfter);
    ReapOrphans();

    CheckOutput check = Check(GetParam().workload);
    ASSERT_EQ(check.exit_code, 0) << check.err;
    EXPECT_THAT(check.corrupt, IsEmpty()) << check.err;
    if (survives) {
      ExpectAllAckedHad(run, check);
    } else {
      for (const std::string& id : run.acks) lost += check.have.contains(id) ? 0 : 1;
    }
    // The killed workload never ran its destructors: its server's socket folder goes anyway.
    ExpectNothingLeftInTmp();
  }
  if (!survives && !may_lose) {
    EXPECT_GT(lost, 0u) << "the catalog says " << GetParam().name << " loses acks (" << tries
                        << " runs)";
  }
}

INSTANTIATE_TEST_SUITE_P(Workloads, WorkloadCaseTest, ::testing::ValuesIn(AllConfigs()),
                         [](const ::testing::TestParamInfo<WorkloadConfig>& param_info) {
                           return Label(param_info.param);
                         });

TEST_F(WorkloadProcessTest, ListPrintsTheCatalogAsJson) {
  ChildProcess child({{kBinary, "list", "--json", "--count", "7"},
                      {},
                      false,
                      tmp_.path() + "/list.out",
                      tmp_.path() + "/list.err"});
  ASSERT_TRUE(child.started()) << child.start_error();
  ASSERT_EQ(child.Wait(), 0);
  const nlohmann::json list =
      nlohmann::json::parse(ChildProcess::ReadFile(tmp_.path() + "/list.out"), nullptr, false);
  ASSERT_TRUE(list.is_array());
  const std::vector<WorkloadConfig> catalog = Catalog();
  ASSERT_EQ(list.size(), catalog.size());
  for (size_t i = 0; i < catalog.size(); ++i) {
    EXPECT_EQ(list[i]["name"], catalog[i].name);
    const std::string run = list[i]["run"];
    EXPECT_EQ(run.rfind(std::string("/"), 0), 0u) << "absolute binary path: " << run;
    EXPECT_THAT(run, HasSubstr(catalog[i].workload + " run"));
    EXPECT_THAT(run, HasSubstr("--count 7"));
    EXPECT_EQ(list[i]["check"].get<std::string>().substr(run.find(' ')),
              " " + catalog[i].workload + " check");
    for (const char* model : {"process_crash", "off", "on", "lying"}) {
      const std::string verdict = list[i]["expect"][model];
      EXPECT_TRUE(verdict == "survives" || verdict == "loses" || verdict == "may-lose") << verdict;
    }
  }
}

TEST_F(WorkloadProcessTest, RocksDbWithoutWalKeepsAcksAfterCleanClose) {
  RunOutput run = Run({"rocksdb", "run", "--disable-wal", "--sync", "false", "--count", "20"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  CheckOutput check = Check("rocksdb");
  ASSERT_EQ(check.exit_code, 0) << check.err;
  ExpectAllAckedHad(run, check);
}

TEST_F(WorkloadProcessTest, XlogDefaultIsThe2001Test) {
  RunOutput run = Run({"xlog", "run"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.acks.size(), 2000u);
  EXPECT_EQ(run.acks.back(), "2000");
  CheckOutput check = Check("xlog");
  EXPECT_EQ(check.exit_code, 0);
  EXPECT_EQ(check.have.size(), 2000u);
}

TEST_F(WorkloadProcessTest, XlogRunsOnARawDevice) {
  const std::string dev = tmp_.path() + "/raw.img";
  ASSERT_EQ(::truncate(dev.c_str(), 0), -1);  // does not exist yet
  {
    FILE* f = std::fopen(dev.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
    ASSERT_EQ(::truncate(dev.c_str(), 1 << 20), 0);
  }
  const Env env = {{"POWERCUT_DEV", dev}};
  EXPECT_EQ(Check("xlog", env).have.size(), 0u);  // no header yet: nothing set up
  RunOutput run = Run({"xlog", "run", "--append", "--count", "40"}, {}, env);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  CheckOutput check = Check("xlog", env);
  ASSERT_EQ(check.exit_code, 0) << check.err;
  EXPECT_EQ(check.have.size(), 40u);
  ExpectAllAckedHad(run, check);

  RunOutput too_many = Run({"xlog", "run", "--append", "--count", "1000"}, {}, env);
  EXPECT_EQ(too_many.exit_code, 2);
  EXPECT_THAT(too_many.err, HasSubstr("use a smaller --count or a larger device"));
}

TEST_F(WorkloadProcessTest, CheckersOfAnEmptyDirectoryHaveNothing) {
  for (const std::string workload :
       {"xlog", "rocksdb", "sqlite", "wal", "postgres", "redis", "lmdb"}) {
    CheckOutput check = Check(workload);
    EXPECT_EQ(check.exit_code, 0) << workload << ": " << check.err;
    EXPECT_THAT(check.have, IsEmpty()) << workload;
    EXPECT_THAT(check.out, IsEmpty()) << workload;
  }
}

// What the dynamic loader maps for `binary` (LD_TRACE_LOADED_OBJECTS: the loader lists the
// libraries and exits without running the program).
std::string LoadedLibraries(const std::string& binary, const std::string& out_path) {
  ChildProcess child({{binary}, {{"LD_TRACE_LOADED_OBJECTS", "1"}}, false, out_path, "/dev/null"});
  if (!child.started()) return child.start_error();
  child.Wait();
  return ChildProcess::ReadFile(out_path);
}

// The point of the two binaries (workloads/README.md): every start of powercut-workload, the
// checker the guest runs per crash state, loads neither RocksDB nor libpq (with OpenSSL, GnuTLS,
// Kerberos...); powercut-workload-clients loads both.
TEST_F(WorkloadProcessTest, OnlyTheClientsBinaryLoadsRocksDbAndLibpq) {
  const std::string light = LoadedLibraries(kBinary, tmp_.path() + "/light.txt");
  EXPECT_THAT(light, HasSubstr("libsqlite3"));  // the listing worked
  EXPECT_THAT(light, Not(HasSubstr("librocksdb")));
  EXPECT_THAT(light, Not(HasSubstr("libpq")));
  EXPECT_THAT(light, Not(HasSubstr("libgnutls")));
  const std::string clients = LoadedLibraries(kClientsBinary, tmp_.path() + "/clients.txt");
  EXPECT_THAT(clients, HasSubstr("librocksdb"));
  EXPECT_THAT(clients, HasSubstr("libpq"));
}

// A powercut-workload copied away from its clients binary: the forwarded forms say what is
// missing and exit 127, which the tester reads as "the checker cannot start", never as a store
// that does not recover (exit 1); the other workloads still run.
TEST_F(WorkloadProcessTest, AForwardedWorkloadWithoutItsClientsBinarySaysSo) {
  const std::string alone = tmp_.MakeSubdir("alone") + "/powercut-workload";
  std::filesystem::copy_file(kBinary, alone);
  for (const std::string workload : {"rocksdb", "postgres"}) {
    ChildProcess child({{alone, workload, "check"},
                        DirEnv(),
                        false,
                        tmp_.path() + "/alone.out",
                        tmp_.path() + "/alone.err"});
    ASSERT_TRUE(child.started()) << child.start_error();
    EXPECT_EQ(child.Wait(), 127) << workload;
    const std::string err = ChildProcess::ReadFile(tmp_.path() + "/alone.err");
    EXPECT_THAT(err, HasSubstr("powercut-workload-clients")) << workload;
    EXPECT_THAT(err, HasSubstr("the " + workload + " workload runs in it")) << workload;
  }
  ChildProcess wal({{alone, "wal", "check"},
                    DirEnv(),
                    false,
                    tmp_.path() + "/alone.out",
                    tmp_.path() + "/alone.err"});
  ASSERT_TRUE(wal.started()) << wal.start_error();
  EXPECT_EQ(wal.Wait(), 0) << ChildProcess::ReadFile(tmp_.path() + "/alone.err");
}

TEST_F(WorkloadProcessTest, MissingAckFdIsAUsageError) {
  RunOutput run = Run({"xlog", "run", "--count", "3"}, {}, DirEnv(), /*ack_pipe=*/false);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("POWERCUT_ACK_FD is not set"));
}

TEST_F(WorkloadProcessTest, AckFdThatIsNotOpenIsAUsageError) {
  Env env = DirEnv();
  env["POWERCUT_ACK_FD"] = "57";
  RunOutput run = Run({"sqlite", "run", "--count", "3"}, {}, env, /*ack_pipe=*/false);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("POWERCUT_ACK_FD=57: not an open file descriptor"));
}

TEST_F(WorkloadProcessTest, MissingDirIsAUsageErrorForRunAndCheck) {
  for (const std::string workload : {"xlog", "rocksdb", "sqlite", "wal"}) {
    RunOutput run = Run({workload, "run", "--count", "3"}, {}, Env{});
    EXPECT_EQ(run.exit_code, 2) << workload;
    EXPECT_THAT(run.err, HasSubstr("POWERCUT_DIR")) << workload;
    EXPECT_TRUE(run.acks.empty());
    CheckOutput check = Check(workload, Env{});
    EXPECT_EQ(check.exit_code, 2) << workload;
    EXPECT_THAT(check.err, HasSubstr("POWERCUT_DIR")) << workload;
  }
}

TEST_F(WorkloadProcessTest, TwoDiskWorkloadsNeedTheSecondDisk) {
  const Env env = {{"POWERCUT_DIR", data_}, {"TMPDIR", tmpdir_}};
  RunOutput twodisk = Run({"twodisk", "run", "--count", "3"}, {}, env);
  EXPECT_EQ(twodisk.exit_code, 2);
  EXPECT_THAT(twodisk.err, HasSubstr("POWERCUT_DIR_2"));
  EXPECT_TRUE(twodisk.acks.empty());
}

// --wal-disk without a second disk is bad input: exit 2 saying how to record one, before the
// store is created on the first disk (nothing to clean up, nothing acked).
TEST_F(WorkloadProcessTest, WalDiskWithoutASecondDiskIsAUsageError) {
  const Env env = {{"POWERCUT_DIR", data_}, {"TMPDIR", tmpdir_}};
  for (const std::string workload : {"rocksdb", "postgres", "etcd"}) {
    RunOutput run = Run({workload, "run", "--wal-disk", "--count", "3"}, {}, env);
    EXPECT_EQ(run.exit_code, 2) << workload;
    EXPECT_THAT(run.err, HasSubstr("--wal-disk needs a second disk")) << workload;
    EXPECT_THAT(run.err, HasSubstr("POWERCUT_DIR_2 is not set")) << workload;
    EXPECT_THAT(run.err, HasSubstr("--disks 2")) << workload;
    EXPECT_TRUE(run.acks.empty()) << workload;
    EXPECT_TRUE(std::filesystem::is_empty(data_)) << workload;
  }
  ExpectNothingLeftInTmp();
}

// The check may mount the disks elsewhere than the run did (the tester's loop mounts, or the
// guest's): the WAL on the second disk is found there. PostgreSQL's pg_wal is a link with the
// run's absolute path, which the checker points at the second disk as mounted now; etcd's
// --wal-dir is passed again.
TEST_F(WorkloadProcessTest, WalOnTheSecondDiskIsFoundWhereTheCheckMountsIt) {
  for (const std::string workload : {"postgres", "etcd"}) {
    SCOPED_TRACE(workload);
    const std::string data = tmp_.MakeSubdir(workload + "-1");
    const std::string data2 = tmp_.MakeSubdir(workload + "-2");
    RunOutput run =
        Run({workload, "run", "--wal-disk", "--count", "5"}, {},
            Env{{"POWERCUT_DIR", data}, {"POWERCUT_DIR_2", data2}, {"TMPDIR", tmpdir_}});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    ASSERT_EQ(run.acks.size(), 5u);
    ReapOrphans();
    // The WAL is not on the first disk: pg_wal is a link, etcd has no member/wal.
    if (workload == "postgres") {
      EXPECT_TRUE(std::filesystem::is_symlink(data + "/pgdata/pg_wal"));
      EXPECT_FALSE(std::filesystem::is_empty(data2 + "/pg_wal"));
    } else {
      EXPECT_FALSE(std::filesystem::exists(data + "/etcd/member/wal"));
      EXPECT_FALSE(std::filesystem::is_empty(data2 + "/etcd/wal"));
    }
    const std::string moved = tmp_.path() + "/" + workload + "-2-elsewhere";
    ASSERT_EQ(::rename(data2.c_str(), moved.c_str()), 0) << std::strerror(errno);

    // Without the second disk the postgres check cannot find its WAL: a usage error.
    if (workload == "postgres") {
      CheckOutput alone = Check(workload, Env{{"POWERCUT_DIR", data}, {"TMPDIR", tmpdir_}});
      EXPECT_EQ(alone.exit_code, 2);
      EXPECT_THAT(alone.err, HasSubstr("kept the WAL on a second disk (--wal-disk)"));
      EXPECT_THAT(alone.err, HasSubstr("--disks 2"));
    }
    CheckOutput check = Check(
        workload, Env{{"POWERCUT_DIR", data}, {"POWERCUT_DIR_2", moved}, {"TMPDIR", tmpdir_}});
    ASSERT_EQ(check.exit_code, 0) << check.err;
    EXPECT_THAT(check.corrupt, IsEmpty());
    ExpectAllAckedHad(run, check);
    EXPECT_THAT(check.err, HasSubstr(moved)) << "the note names the WAL's folder";
    ExpectNothingLeftInTmp();
  }
}

// etcd.ready is the set-up's marker, not etcd's: a data disk that ignores flushes may drop it
// while the WAL (here on the second disk) keeps every put. Without it the checker asks etcd
// whenever a WAL is there, and says "nothing committed" only when there is none.
TEST_F(WorkloadProcessTest, EtcdCheckerAsksEtcdWhenOnlyTheMarkerIsGone) {
  RunOutput run = Run({"etcd", "run", "--wal-disk", "--count", "4"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ReapOrphans();
  ASSERT_EQ(::unlink((data_ + "/etcd.ready").c_str()), 0);
  CheckOutput check = Check("etcd");
  ASSERT_EQ(check.exit_code, 0) << check.err;
  ExpectAllAckedHad(run, check);
  EXPECT_THAT(check.err, HasSubstr("or the marker was dropped"));

  std::filesystem::remove_all(data2_ + "/etcd");  // no WAL anywhere: nothing was committed
  CheckOutput none = Check("etcd");
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_THAT(none.have, IsEmpty());
  EXPECT_THAT(none.err, HasSubstr("nothing was committed"));
  ExpectNothingLeftInTmp();
}

TEST_F(WorkloadProcessTest, FileSystemWorkloadsRejectARawDevice) {
  const Env env = {{"POWERCUT_DEV", "/dev/null"}};
  for (const std::string workload : {"rocksdb", "sqlite", "wal"}) {
    RunOutput run = Run({workload, "run", "--count", "3"}, {}, env);
    EXPECT_EQ(run.exit_code, 2) << workload;
    EXPECT_THAT(run.err, HasSubstr("needs a file system")) << workload;
  }
}

TEST_F(WorkloadProcessTest, BadOptionsAreUsageErrors) {
  RunOutput run = Run({"xlog", "run", "--barrier", "fsync_maybe"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("unknown barrier 'fsync_maybe'"));
  EXPECT_EQ(Run({"sqlite", "run", "--journal", "memory"}).exit_code, 2);
  RunOutput sync_without_wal = Run({"rocksdb", "run", "--disable-wal"});
  EXPECT_EQ(sync_without_wal.exit_code, 2);
  EXPECT_THAT(sync_without_wal.err, HasSubstr("--disable-wal needs --sync false"));
  EXPECT_EQ(Run({"xlog", "run", "--count", "0"}).exit_code, 2);
  EXPECT_EQ(Run({"nosuchworkload", "run"}).exit_code, 2);
  EXPECT_EQ(Run({"wal"}).exit_code, 2);
  EXPECT_EQ(Check("wal", {}, {"--mode", "optimistic"}).exit_code, 2);
}

TEST_F(WorkloadProcessTest, RunningTwiceInOneDirectoryIsRefused) {
  for (const std::string workload : {"xlog", "rocksdb", "sqlite", "wal"}) {
    ASSERT_EQ(Run({workload, "run", "--count", "2"}).exit_code, 0) << workload;
    RunOutput again = Run({workload, "run", "--count", "2"});
    EXPECT_EQ(again.exit_code, 2) << workload;
    EXPECT_THAT(again.err, HasSubstr("already exists")) << workload;
    EXPECT_TRUE(again.acks.empty()) << workload;
  }
}

TEST_F(WorkloadProcessTest, CheckerOfADamagedStoreExitsOne) {
  ASSERT_EQ(Run({"sqlite", "run", "--count", "50", "--journal", "delete"}).exit_code, 0);
  {
    // Overwrite the middle of the database file (page 2 onwards) with garbage.
    FILE* f = std::fopen((data_ + "/sqlite.db").c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fseek(f, 4096, SEEK_SET);
    std::vector<char> junk(4096, '\x5a');
    std::fwrite(junk.data(), 1, junk.size(), f);
    std::fclose(f);
  }
  CheckOutput check = Check("sqlite");
  EXPECT_EQ(check.exit_code, 1);
  EXPECT_FALSE(check.err.empty());
}

// A PostgreSQL server that cannot recover its data folder (pg_control overwritten) is the
// checker's failure, exit 1, with the server's own log quoted: the report must say why.
TEST_F(WorkloadProcessTest, PostgresCheckerQuotesTheServerLogWhenItCannotRecover) {
  ASSERT_EQ(Run({"postgres", "run", "--count", "3"}).exit_code, 0);
  {
    FILE* f = std::fopen((data_ + "/pgdata/global/pg_control").c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::vector<char> junk(512, '\x5a');
    std::fwrite(junk.data(), 1, junk.size(), f);
    std::fclose(f);
  }
  CheckOutput check = Check("postgres");
  EXPECT_EQ(check.exit_code, 1);
  EXPECT_THAT(check.out, IsEmpty());
  EXPECT_THAT(check.err, HasSubstr("PostgreSQL server on"));
  EXPECT_THAT(check.err, HasSubstr("its log:"));
  EXPECT_THAT(check.err, HasSubstr("PG_CONTROL_VERSION"));  // the server's own words
}

// Redis loads an AOF whose last command was cut short (aof-load-truncated yes, its default) and
// keeps every whole one; garbage in the middle of the AOF stops it, exit 1, its log quoted.
TEST_F(WorkloadProcessTest, RedisCheckerLoadsATruncatedAofAndRefusesAGarbledOne) {
  ASSERT_EQ(Run({"redis", "run", "--count", "5"}).exit_code, 0);
  std::string aof;
  for (const auto& e : std::filesystem::directory_iterator(data_ + "/redis/appendonlydir")) {
    if (e.path().string().ends_with(".incr.aof")) aof = e.path().string();
  }
  ASSERT_FALSE(aof.empty());
  const auto size = std::filesystem::file_size(aof);
  std::filesystem::resize_file(aof, size - 10);  // inside the fifth SET
  CheckOutput cut = Check("redis");
  EXPECT_EQ(cut.exit_code, 0) << cut.err;
  EXPECT_EQ(cut.have, (std::set<std::string>{"1", "2", "3", "4"})) << cut.err;
  {
    FILE* f = std::fopen(aof.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fputs("garbage!", f);  // over the first command's header: not RESP any more
    std::fclose(f);
  }
  CheckOutput garbled = Check("redis");
  EXPECT_EQ(garbled.exit_code, 1);
  EXPECT_THAT(garbled.err, HasSubstr("its log:"));
}

// A real ENOSPC from a small tmpfs: the workload stops acking, exits 1 with the error, and every
// id it did ack is still there. Needs root (mount); skipped otherwise.
class WorkloadFullFileSystemTest : public WorkloadProcessTest {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "mounting tmpfs needs root";
    if (::mount("tmpfs", data_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=512k") != 0) {
      GTEST_SKIP() << "mount tmpfs: " << std::strerror(errno);
    }
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) {
      EXPECT_EQ(::umount2(data_.c_str(), MNT_DETACH), 0) << std::strerror(errno);
    }
  }
  bool mounted_ = false;
};

// The tester may mount a crash image read-only: checkers whose store recovers by writing fall
// back to read-only opens, and say what to do when recovery is needed. Needs root (bind mount).
TEST_F(WorkloadProcessTest, CheckersReadARecoveredStoreOnAReadOnlyMount) {
  if (::geteuid() != 0) GTEST_SKIP() << "bind mounts need root";
  const std::string ro = tmp_.MakeSubdir("ro");
  for (const std::string workload : {"xlog", "rocksdb", "sqlite", "wal"}) {
    ASSERT_EQ(Run({workload, "run", "--count", "12"}).exit_code, 0) << workload;
  }
  if (::mount(data_.c_str(), ro.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    GTEST_SKIP() << "bind mount: " << std::strerror(errno);
  }
  struct Unmount {
    std::string path;
    ~Unmount() { EXPECT_EQ(::umount2(path.c_str(), MNT_DETACH), 0) << std::strerror(errno); }
  } unmount{ro};
  ASSERT_EQ(::mount(nullptr, ro.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr), 0)
      << std::strerror(errno);
  const Env env = {{"POWERCUT_DIR", ro}};
  for (const std::string workload : {"xlog", "rocksdb", "sqlite", "wal"}) {
    CheckOutput check = Check(workload, env);
    EXPECT_EQ(check.exit_code, 0) << workload << ": " << check.err;
    EXPECT_EQ(check.have.size(), 12u) << workload;
  }
  // A leftover WAL means SQLite must recover, which it cannot do read-only: a usage error.
  FILE* wal = std::fopen((data_ + "/sqlite.db-wal").c_str(), "w");
  ASSERT_NE(wal, nullptr);
  std::fputs("not empty", wal);
  std::fclose(wal);
  CheckOutput check = Check("sqlite", env);
  EXPECT_EQ(check.exit_code, 2);
  EXPECT_THAT(check.err, HasSubstr("mount the crash image read-write"));
}

TEST_F(WorkloadFullFileSystemTest, XlogAppendStopsAtEnospc) {
  RunOutput run = Run({"xlog", "run", "--append", "--count", "100000"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("No space left on device"));
  EXPECT_THAT(run.err, HasSubstr("no further acks"));
  EXPECT_GT(run.acks.size(), 0u);
  EXPECT_LT(run.acks.size(), 100000u);
  CheckOutput check = Check("xlog");
  ASSERT_EQ(check.exit_code, 0) << check.err;
  ExpectAllAckedHad(run, check);
}

TEST_F(WorkloadFullFileSystemTest, WalFencesAtEnospcAndStopsAcking) {
  RunOutput run =
      Run({"wal", "run", "--count", "100000", "--threads", "4", "--segment-bytes", "65536"});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_THAT(run.err, HasSubstr("no further acks"));
  EXPECT_GT(run.acks.size(), 0u);
  EXPECT_LT(run.acks.size(), 100000u);
  CheckOutput check = Check("wal");
  ASSERT_EQ(check.exit_code, 0) << check.err;
  ExpectAllAckedHad(run, check);
}

}  // namespace
}  // namespace powercut::workloads
