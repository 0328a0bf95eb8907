// The cluster launcher powercut-cluster (harness/cluster/launcher.h) as a program, on this host:
// what each node and the client see, that every node has its own address with every port free,
// and that bad input (too few nodes, a missing disk, a node that exits at once, a port a node
// cannot bind, a checker that hangs) is a clear error that leaves no process or folder behind.
// Real processes and sockets; nothing is mocked. Needs root or unprivileged user namespaces.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "base/process.h"
#include "base/temp_dir.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/check/checker.h"
#include "harness/cluster/cluster.h"
#include "harness/cluster/node_logs.h"

namespace powercut::cluster {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  return text.str();
}

// A node command prefix that records the node shell's pid as this host sees it (its /proc is the
// host's: the launcher makes a process namespace, not a new /proc), so that the test can prove the
// process is gone afterwards. Written aside and renamed: a node the launcher kills mid-write (a
// check that ends at once) leaves no pid file rather than an empty one.
constexpr char kRecordPid[] =
    "read -r pid rest < /proc/self/stat; echo $pid > $POWERCUT_NODE_DIR/pid.new; "
    "mv $POWERCUT_NODE_DIR/pid.new $POWERCUT_NODE_DIR/pid; ";

class LauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(root_.ok());
    for (int node = 1; node <= 3; ++node) {
      dirs_.push_back(fmt::format("{}/disk{}", root_.path(), node));
      fs::create_directories(dirs_.back());
    }
    fs::create_directories(tmp());
    // Without namespaces (no root, no user namespaces) the launcher cannot isolate the nodes.
    auto probe = RunCommand({"unshare", "--net", "--pid", "--fork", "true"});
    auto probe_user =
        RunCommand({"unshare", "--user", "--map-root-user", "--net", "--pid", "--fork", "true"});
    if ((!probe.ok() || probe->exit_code != 0) &&
        (!probe_user.ok() || probe_user->exit_code != 0)) {
      GTEST_SKIP() << "no network/process namespaces here (needs root or user namespaces)";
    }
  }

  std::string tmp() const { return root_.path() + "/tmp"; }

  // Runs the launcher with the three disks as POWERCUT_DIR, POWERCUT_DIR_2, POWERCUT_DIR_3 (the
  // first `disks` of them) and its scratch folder under tmp().
  CommandResult Launch(const std::vector<std::string>& args, int disks = 3,
                       std::vector<std::pair<std::string, std::string>> env = {},
                       std::string* stdout_text = nullptr) {
    std::vector<std::string> argv = {POWERCUT_CLUSTER_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessOptions options;
    options.timeout_seconds = 60;
    options.set_env = std::move(env);
    options.set_env.emplace_back("TMPDIR", tmp());
    options.unset_env = {"POWERCUT_DIR", "POWERCUT_DIR_2", "POWERCUT_DIR_3"};
    for (int d = 0; d < disks; ++d) {
      options.set_env.emplace_back(d == 0 ? "POWERCUT_DIR" : fmt::format("POWERCUT_DIR_{}", d + 1),
                                   dirs_[d]);
    }
    CommandResult result;
    std::string out, err;
    const auto start = std::chrono::steady_clock::now();
    auto end = RunProcess(
        argv, options, [&](std::string_view c) { out.append(c); },
        [&](std::string_view c) { err.append(c); });
    seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_TRUE(end.ok());
    if (!end.ok()) return result;
    EXPECT_FALSE(end->timed_out) << "the launcher hung: " << err;
    result.exit_code = end->exit_code;
    result.output = err;
    if (stdout_text != nullptr) *stdout_text = out;
    return result;
  }

  // Three nodes running `node_command` (after recording their pids) under a workload that would
  // wait forever: only a node's end can stop it, which is an error (exit 2).
  CommandResult LaunchStuckWorkload(const std::string& node_command) {
    CommandResult r = Launch({"--mode", "workload", "--nodes", "3", "--node",
                              std::string(kRecordPid) + node_command, "--", "sleep 1000"});
    EXPECT_EQ(r.exit_code, 2) << r.output;
    return r;
  }

  // Every node that recorded its pid is gone, and the launcher left no folder in tmp().
  void ExpectNothingLeft() {
    for (const std::string& dir : dirs_) {
      const std::string pid_file = dir + "/pid";
      if (!fs::exists(pid_file)) continue;
      const pid_t pid = std::stoi(ReadFile(pid_file));
      EXPECT_TRUE(::kill(pid, 0) != 0 && errno == ESRCH)
          << "node process " << pid << " of " << dir << " outlived the launcher";
    }
    EXPECT_TRUE(fs::is_empty(tmp())) << "the launcher left something in " << tmp();
  }

  testing::TempDir root_;
  std::vector<std::string> dirs_;
  double seconds_ = 0;
};

TEST_F(LauncherTest, EveryNodeAndTheClientGetTheirEnvironmentAndAddresses) {
  // Each node records what it sees, then serves a TCP port on its own address until killed. The
  // client waits for every node, connects to each address, and acks on the protocol's descriptor.
  const std::string node_command =
      std::string(kRecordPid) +
      "env | grep '^POWERCUT' | sort > $POWERCUT_NODE_DIR/env.tmp; "
      "if [ -e /proc/self/fd/7 ]; then echo fd7-open; fi >> "
      "$POWERCUT_NODE_DIR/env.tmp; pwd >> $POWERCUT_NODE_DIR/env.tmp; "
      "mv $POWERCUT_NODE_DIR/env.tmp $POWERCUT_NODE_DIR/env; "
      "exec python3 -c 'import os,socket; s=socket.socket(); "
      "s.bind((os.environ[\"POWERCUT_NODE_ADDR\"], 5000)); s.listen(); "
      "open(os.environ[\"POWERCUT_NODE_DIR\"]+\"/listening\",\"w\").close();"
      "[s.accept()[0].sendall(os.environ[\"POWERCUT_NODE\"].encode()) for _ in "
      "iter(int, 1)]'";
  const std::string client = fmt::format(
      "for d in {0} {1} {2}; do until [ -e $d/listening ]; do sleep 0.05; done; done; "
      "env | grep '^POWERCUT' | sort > {3}/client.env; "
      "python3 -c 'import os,socket; print(\" \".join(socket.create_connection((a, "
      "5000)).recv(9).decode() for a in os.environ[\"POWERCUT_NODE_ADDRS\"].split(\",\")))' > "
      "{3}/client.answers; echo ack 1 >&$POWERCUT_ACK_FD",
      dirs_[0], dirs_[1], dirs_[2], root_.path());
  const std::string acks = root_.path() + "/acks";
  const int ack_fd = ::open(acks.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);  // inherited
  ASSERT_GE(ack_fd, 0);
  ASSERT_GE(::dup2(ack_fd, 7), 0);
  CommandResult r =
      Launch({"--mode", "workload", "--nodes", "3", "--node", node_command, "--", client}, 3,
             {{"POWERCUT_ACK_FD", "7"}});
  ::close(7);
  ::close(ack_fd);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(ReadFile(acks), "ack 1\n");
  EXPECT_EQ(ReadFile(root_.path() + "/client.answers"), "1 2 3\n");
  for (int node = 1; node <= 3; ++node) {
    const std::string& dir = dirs_[node - 1];
    // Only the node's own variables: no disk of another node, no ack descriptor; it runs on its
    // own disk.
    EXPECT_EQ(ReadFile(dir + "/env"),
              fmt::format("POWERCUT_NODE={}\nPOWERCUT_NODES=3\nPOWERCUT_NODE_ADDR=127.0.0.1{}\n"
                          "POWERCUT_NODE_ADDRS=127.0.0.11,127.0.0.12,127.0.0.13\n"
                          "POWERCUT_NODE_DIR={}\n{}\n",
                          node, node, dir, dir));
  }
  const std::string client_env = ReadFile(root_.path() + "/client.env");
  EXPECT_THAT(client_env, HasSubstr("POWERCUT_ACK_FD=7\n"));
  EXPECT_THAT(client_env, HasSubstr("POWERCUT_NODES=3\n"));
  EXPECT_THAT(client_env, HasSubstr("POWERCUT_NODE_ADDRS=127.0.0.11,127.0.0.12,127.0.0.13\n"));
  EXPECT_THAT(client_env, Not(HasSubstr("POWERCUT_DIR")));
  ExpectNothingLeft();
}

TEST_F(LauncherTest, CheckModePassesTheCheckersLinesThrough) {
  std::string out;
  CommandResult r = Launch(
      {"--mode", "check", "--nodes", "2", "--node", std::string(kRecordPid) + "exec sleep 1000",
       "--timeout", "30", "--", "echo have 1; echo have 2"},
      2, {}, &out);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(out, "have 1\nhave 2\n");
  ExpectNothingLeft();
}

TEST_F(LauncherTest, EachNodesWholeLogComesBackFromTheWorkloadsOutputIntoAFileOfItsOwn) {
  // Each node writes many lines (more than the 12 quoted on an error) to stdout and stderr; the
  // workload writes its own line to $POWERCUT_OUTPUT first, as a workload may.
  const std::string node_command =
      "i=0; while [ $i -lt 40 ]; do echo \"node $POWERCUT_NODE line $i\"; i=$((i + 1)); done; "
      "echo \"node $POWERCUT_NODE on stderr\" >&2; touch $POWERCUT_NODE_DIR/up; exec sleep 1000";
  const std::string client = fmt::format(
      "for d in {} {} {}; do until [ -e $d/up ]; do sleep 0.05; done; done; "
      "echo 'the workload own line' >> $POWERCUT_OUTPUT",
      dirs_[0], dirs_[1], dirs_[2]);
  const std::string output = root_.path() + "/output.txt";
  CommandResult r =
      Launch({"--mode", "workload", "--nodes", "3", "--node", node_command, "--", client}, 3,
             {{"POWERCUT_OUTPUT", output}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string kept = root_.path() + "/kept";
  fs::create_directories(kept);
  auto logs = SplitNodeLogs(output, kept, 3);
  ASSERT_TRUE(logs.ok()) << logs.status();
  ASSERT_EQ(logs->size(), 3u) << ReadFile(output);
  for (uint32_t node = 1; node <= 3; ++node) {
    const NodeLog& log = (*logs)[node - 1];
    EXPECT_EQ(log.node, node);
    EXPECT_EQ(log.path, NodeLogPath(kept, node));
    EXPECT_EQ(log.left_out, 0u);
    const std::string text = ReadFile(log.path);
    EXPECT_EQ(log.bytes, text.size());
    // The whole log, in order, and nothing of another node's or the workload's.
    EXPECT_THAT(text, HasSubstr(fmt::format("node {} line 0\n", node)));
    EXPECT_THAT(text, HasSubstr(fmt::format("node {} line 39\n", node)));
    EXPECT_THAT(text, HasSubstr(fmt::format("node {} on stderr\n", node)));
    EXPECT_THAT(text, Not(HasSubstr("the workload own line")));
    EXPECT_THAT(text, Not(HasSubstr("===")));
    for (uint32_t other = 1; other <= 3; ++other) {
      if (other != node) {
        EXPECT_THAT(text, Not(HasSubstr(fmt::format("node {} ", other))));
      }
    }
  }
  ExpectNothingLeft();
}

TEST(NodeLogs, ALongLogKeepsItsFirstAndLastBytesAndSaysWhatItLeftOut) {
  testing::TempDir dir;
  const std::string output = dir.path() + "/output.txt";
  {
    std::ofstream out(output);
    out << "the workload's own output\n=== node 1 (127.0.0.11): /tmp/x/node-1.log\n";
    for (int i = 0; i < 1000; ++i) out << fmt::format("line {:04}\n", i);  // 10 bytes a line
    out << "=== node 2 (127.0.0.12): /tmp/x/node-2.log\nshort\n";
    // Node 3's header is missing (the launcher could not start it): no file for it, and a
    // header out of order is a line of node 2's log.
    out << "=== node 1 (127.0.0.11): again\n";
  }
  auto logs = SplitNodeLogs(output, dir.path(), 3, /*cap_bytes=*/400);
  ASSERT_TRUE(logs.ok()) << logs.status();
  ASSERT_EQ(logs->size(), 2u);
  const std::string one = ReadFile((*logs)[0].path);
  EXPECT_EQ((*logs)[0].left_out, 10000u - 100 - 300);
  EXPECT_TRUE(one.starts_with("line 0000\n")) << one;  // the first quarter: 10 lines
  EXPECT_THAT(one, HasSubstr("line 0009\n[powercut: 9600 bytes of node 1's log left out here"));
  EXPECT_TRUE(one.ends_with("line 0999\n")) << one;  // the last three quarters: 30 lines
  EXPECT_THAT(one, HasSubstr("left out here; the kept log holds its first and its last bytes, "
                             "at most 400 in all]\nline 0970\n"));
  EXPECT_EQ(ReadFile((*logs)[1].path), "short\n=== node 1 (127.0.0.11): again\n");
  EXPECT_FALSE(fs::exists(NodeLogPath(dir.path(), 3)));
  // No output file (a recording that never started the nodes): no logs, no error.
  auto none = SplitNodeLogs(dir.path() + "/missing.txt", dir.path(), 3);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(LauncherTest, CheckModeKeepsTheNodesLogsWhereAsked) {
  const std::string logs = root_.path() + "/logs";
  // The client runs in the logs' folder: it waits for both nodes' lines.
  const std::string client =
      "until grep -q up node-1.log && grep -q up node-2.log; do sleep 0.05; done; echo have 1";
  std::string out;
  CommandResult r =
      Launch({"--mode", "check", "--nodes", "2", "--node",
              "echo \"node $POWERCUT_NODE up on $POWERCUT_NODE_ADDR\"; exec sleep 1000",
              "--timeout", "30", "--keep-logs", logs, "--", client},
             2, {}, &out);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(out, "have 1\n");
  EXPECT_EQ(ReadFile(logs + "/node-1.log"), "node 1 up on 127.0.0.11\n");
  EXPECT_EQ(ReadFile(logs + "/node-2.log"), "node 2 up on 127.0.0.12\n");
  ExpectNothingLeft();
}

TEST_F(LauncherTest, ANodeThatExitsAtOnceIsNamedWithItsStatusAndLastLines) {
  // The workload would wait forever: the node's end stops it.
  CommandResult r = LaunchStuckWorkload(
      "if [ $POWERCUT_NODE = 2 ]; then echo 'etcd: no such flag --bogus' >&2; exit 3; fi; "
      "exec sleep 1000");
  EXPECT_THAT(r.output,
              HasSubstr("node 2 (127.0.0.12) exited with status 3 while the workload ran"));
  EXPECT_THAT(r.output, HasSubstr("etcd: no such flag --bogus"));
  EXPECT_LT(seconds_, 30);
  ExpectNothingLeft();
}

TEST_F(LauncherTest, APortANodeCannotBindIsNamed) {
  // Every node binds node 1's address and port: the second to try cannot.
  CommandResult r = LaunchStuckWorkload(
      "exec python3 -c 'import socket,time; s=socket.socket(); s.bind((\"127.0.0.11\", 4222)); "
      "s.listen(); time.sleep(1000)'");
  EXPECT_THAT(r.output, HasSubstr("exited with status 1 while the workload ran"));
  EXPECT_THAT(r.output, HasSubstr("Address already in use"));
  ExpectNothingLeft();
}

TEST_F(LauncherTest, ACheckerThatHangsMakesTheStateUnavailableInTime) {
  std::string out;
  CommandResult r = Launch({"--mode", "check", "--nodes", "3", "--node",
                            std::string(kRecordPid) + "echo serving; exec sleep 1000", "--timeout",
                            "1", "--", "echo have 1; sleep 1000"},
                           3, {}, &out);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(
      out, HasSubstr(std::string(kUnavailablePrefix) + " the checker did not finish within 1 s"));
  // Each node's last log lines, for the report's checker stderr.
  EXPECT_THAT(r.output, HasSubstr("node 3 (127.0.0.13): last lines"));
  EXPECT_THAT(r.output, HasSubstr("serving"));
  EXPECT_LT(seconds_, 20);
  ExpectNothingLeft();
}

// The launcher as the engine runs it on a crash state (harness/check/checker.h's RunChecker, the
// protocol's parser): a checker that hangs makes the state `unavailable` — not a protocol error,
// so the engine counts it apart from violations and from states it could not check — and the
// 2 KiB of stderr the engine keeps hold every node's last log lines, however long its lines.
TEST_F(LauncherTest, TheEngineReadsAHungCheckerAsUnavailableWithEveryNodesLog) {
  const std::string node =
      std::string(kRecordPid) +
      "for i in $(seq 40); do printf \"node %s line %s %0300d\\n\" $POWERCUT_NODE $i 0; done; "
      "echo \"node $POWERCUT_NODE last words\"; exec sleep 1000";
  const std::string launcher =
      fmt::format("{} --mode check --nodes 3 --node '{}' --timeout 1 -- 'echo have 1; sleep 1000'",
                  POWERCUT_CLUSTER_BIN, node);
  auto out = harness::RunChecker(launcher,
                                 {{"POWERCUT_DIR", dirs_[0]},
                                  {"POWERCUT_DIR_2", dirs_[1]},
                                  {"POWERCUT_DIR_3", dirs_[2]},
                                  {"TMPDIR", tmp()}},
                                 30);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->exit_code, 1);
  EXPECT_FALSE(out->timed_out);
  EXPECT_EQ(out->protocol_error, "");  // not "could not check"
  EXPECT_THAT(out->unavailable,
              HasSubstr("the cluster did not come back: the checker did not finish within 1 s"));
  for (int n = 1; n <= 3; ++n) {
    EXPECT_THAT(out->stderr_tail,
                HasSubstr(fmt::format("node {} (127.0.0.1{}): last lines", n, n)));
    EXPECT_THAT(out->stderr_tail, HasSubstr(fmt::format("node {} last words", n)));
  }
  ExpectNothingLeft();
}

TEST_F(LauncherTest, ACheckerThatFailsNamesTheNodesThatDidNotComeBack) {
  std::string out;
  CommandResult r = Launch(
      {"--mode", "check", "--nodes", "3", "--node",
       std::string(kRecordPid) + "if [ $POWERCUT_NODE != 1 ]; then echo 'wal: crc mismatch' >&2; "
                                 "touch $POWERCUT_NODE_DIR/said; exit 1; fi; exec sleep 1000",
       "--timeout", "30", "--",
       fmt::format("for d in {} {}; do until [ -e $d/said ]; do sleep 0.05; "
                   "done; done; exit 1",
                   dirs_[1], dirs_[2])},
      3, {}, &out);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(out, HasSubstr("the checker exited with status 1"));
  EXPECT_THAT(r.output, HasSubstr("wal: crc mismatch"));
  ExpectNothingLeft();
}

TEST_F(LauncherTest, TooFewNodesAndAMissingDiskAreUsageErrors) {
  CommandResult one =
      Launch({"--mode", "workload", "--nodes", "1", "--node", "sleep 1000", "--", "true"});
  EXPECT_EQ(one.exit_code, 2);
  EXPECT_THAT(one.output, HasSubstr("--nodes 1: a cluster has at least 2 nodes"));
  CommandResult missing =
      Launch({"--mode", "workload", "--nodes", "3", "--node", "sleep 1000", "--", "true"}, 2);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.output, HasSubstr("POWERCUT_DIR_3 is not set: node 3's disk"));
  ExpectNothingLeft();
}

TEST(ClusterTest, AddressesEnvironmentAndQuoting) {
  EXPECT_EQ(NodeAddress(1), "127.0.0.11");
  EXPECT_EQ(NodeAddresses(3), "127.0.0.11,127.0.0.12,127.0.0.13");
  EXPECT_FALSE(ValidateNodeCount(1).ok());
  EXPECT_TRUE(ValidateNodeCount(2).ok());
  EXPECT_FALSE(ValidateNodeCount(kMaxNodes + 1).ok());
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  const ClusterCommands wrapped = WrapForCluster({.nodes = 3,
                                                  .node_command = "etcd --name n$POWERCUT_NODE",
                                                  .workload = "w 'x'",
                                                  .checker = "c",
                                                  .checker_timeout_s = 20},
                                                 "/opt/pc/libexec/powercut/powercut-cluster");
  EXPECT_EQ(wrapped.workload,
            "'/opt/pc/libexec/powercut/powercut-cluster' --nodes 3 --node 'etcd --name "
            "n$POWERCUT_NODE' --mode workload -- 'w '\\''x'\\'''");
  EXPECT_EQ(wrapped.checker,
            "'/opt/pc/libexec/powercut/powercut-cluster' --nodes 3 --node 'etcd --name "
            "n$POWERCUT_NODE' --mode check --timeout 20 -- 'c'");
}

// A node cut's plan reaches the launcher as its flags, and its outcome comes back as a section of
// $POWERCUT_OUTPUT that the product reads (harness/cluster/node_cut.h): every field survives the
// trip, the checker's lines included, wherever the section sits among the nodes' logs.
TEST(ClusterTest, NodeCutPlanAndOutcomeSurviveTheirTrips) {
  ClusterSpec spec{.nodes = 3, .node_command = "n", .workload = "w", .checker = "c"};
  spec.checker_timeout_s = 30;
  spec.node_cut =
      NodeCutPlan{.node = 2, .after_ack = 4, .delay_ms = 17, .down_ms = 1500, .checker = "chk"};
  EXPECT_EQ(WrapForCluster(spec, "/l").workload,
            "'/l' --nodes 3 --node 'n' --mode workload --cut-node 2 --cut-after-ack 4 "
            "--cut-delay-ms 17 --node-down-ms 1500 --timeout 30 --checker 'chk' -- 'w'");

  NodeCutOutcome out{.node = 2,
                     .fired = true,
                     .acks_before = 4,
                     .at_seconds = 6.25,
                     .down_seconds = 1.75,
                     .error = "two\nlines",
                     .checker_ran = true,
                     .checker_exit = 0,
                     .checker_timed_out = false,
                     .checker_stdout = "have 1\nhave 2\n",
                     .checker_stderr = "slow quorum"};
  const std::string output =
      "=== node 1 (127.0.0.11): log\nhave 9\n" + FormatNodeCutSection(out) + "=== node 2\n";
  NodeCutOutcome back;
  ASSERT_TRUE(ParseNodeCutSection(output, &back).ok());
  EXPECT_EQ(back.node, 2u);
  EXPECT_TRUE(back.fired);
  EXPECT_EQ(back.acks_before, 4u);
  EXPECT_DOUBLE_EQ(back.at_seconds, 6.25);
  EXPECT_DOUBLE_EQ(back.down_seconds, 1.75);
  EXPECT_EQ(back.error, "two lines");  // one line in the section
  EXPECT_TRUE(back.checker_ran);
  EXPECT_EQ(back.checker_exit, 0);
  EXPECT_FALSE(back.checker_timed_out);
  EXPECT_EQ(back.checker_stdout, "have 1\nhave 2\n");  // not the node log's `have 9`
  EXPECT_EQ(back.checker_stderr, "slow quorum\n");

  EXPECT_TRUE(absl::IsNotFound(ParseNodeCutSection("=== node 1\nhave 1\n", &back)));
  const std::string section = FormatNodeCutSection(out);
  EXPECT_TRUE(absl::IsDataLoss(ParseNodeCutSection(section.substr(0, section.size() / 2), &back)));
}

// Without the guest agent's descriptors a node cut cannot be asked for: a usage error before any
// node starts.
TEST_F(LauncherTest, ANodeCutOutsideTheGuestIsRefusedBeforeAnyNodeStarts) {
  CommandResult r = Launch({"--mode", "workload", "--nodes", "3", "--node",
                            std::string(kRecordPid) + "sleep 1000", "--cut-node", "2",
                            "--cut-after-ack", "1", "--checker", "true", "--", "true"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("POWERCUT_ACK_SYNC_FD"));
  for (const std::string& dir : dirs_) EXPECT_FALSE(fs::exists(dir + "/pid")) << dir;
  ExpectNothingLeft();
}

}  // namespace
}  // namespace powercut::cluster
