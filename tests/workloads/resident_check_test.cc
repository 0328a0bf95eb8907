// The built-in checkers served resident (base/check_server.h), as a checking guest's agent runs
// them: powercut-workload (and powercut-workload-clients) started once with
// POWERCUT_CHECK_SERVER_FD, then one forked child per state. Each state's output and exit status
// must be exactly those of the same check exec'd on its own.
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "base/check_server.h"
#include "base/temp_dir.h"
#include "gtest/gtest.h"
#include "tests/workloads/child_process.h"

namespace powercut::workloads {
namespace {

using powercut::testing::TempDir;

struct Case {
  const char* binary;
  std::vector<std::string> run;  // the run form's arguments after the workload name
  const char* workload;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.workload; }

std::string ReadAll(int fd) {
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  close(fd);
  return text;
}

class ResidentCheckTest : public ::testing::TestWithParam<Case> {
 protected:
  // The workload's run form in `dir` (acks read and dropped); its exit code.
  int Run(const std::string& dir) {
    std::vector<std::string> argv = {GetParam().binary, GetParam().workload, "run"};
    argv.insert(argv.end(), GetParam().run.begin(), GetParam().run.end());
    ChildProcess child({argv, Env(dir), true, tmp_.path() + "/run.out", tmp_.path() + "/run.err"});
    while (child.NextAckLine()) {
    }
    return child.Wait();
  }

  std::map<std::string, std::string> Env(const std::string& dir) const {
    return {{"POWERCUT_DIR", dir}, {"TMPDIR", tmp_.path()}, {"HOME", tmp_.path()}};
  }

  // The check exec'd on its own: stdout and exit code.
  std::pair<std::string, int> ExecCheck(const std::string& dir) {
    ChildProcess child({{GetParam().binary, GetParam().workload, "check"},
                        Env(dir),
                        false,
                        tmp_.path() + "/check.out",
                        tmp_.path() + "/check.err"});
    const int code = child.Wait();
    return {ChildProcess::ReadFile(tmp_.path() + "/check.out"), code};
  }

  TempDir tmp_;
};

TEST_P(ResidentCheckTest, EveryStateGetsWhatAnExecdCheckWouldPrint) {
  const std::string a = tmp_.MakeSubdir("a");
  const std::string b = tmp_.MakeSubdir("b");
  ASSERT_EQ(Run(a), 0) << ChildProcess::ReadFile(tmp_.path() + "/run.err");
  // b: an empty folder, as a state that lost everything (the check's own verdict on nothing).
  const auto [want_a, code_a] = ExecCheck(a);
  const auto [want_b, code_b] = ExecCheck(b);
  ASSERT_NE(want_a, "") << "the exec'd check of a run printed nothing";

  const std::string state = tmp_.path() + "/state";
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  const pid_t server = fork();
  ASSERT_GE(server, 0);
  if (server == 0) {
    // The environment of every state: as the agent mounts each state at the same folder, each
    // state's folder is moved to `state` for its check.
    clearenv();
    setenv("POWERCUT_DIR", state.c_str(), 1);
    setenv("TMPDIR", tmp_.path().c_str(), 1);
    setenv("HOME", tmp_.path().c_str(), 1);
    setenv(kCheckServerFdVariable, std::to_string(sv[1]).c_str(), 1);
    fcntl(sv[1], F_SETFD, 0);
    execl(GetParam().binary, GetParam().binary, GetParam().workload, "check",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(sv[1]);
  ASSERT_TRUE(ReadCheckServerReady(sv[0], 60000).ok());
  for (const auto& [dir, want, code] :
       {std::tuple{a, want_a, code_a}, std::tuple{b, want_b, code_b},
        std::tuple{a, want_a, code_a}}) {
    ASSERT_EQ(rename(dir.c_str(), state.c_str()), 0);
    int out[2];
    ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
    const int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    absl::StatusOr<pid_t> pid = SendCheckRequest(sv[0], {.stdin_fd = devnull,
                                                         .stdout_fd = out[1],
                                                         .stderr_fd = devnull,
                                                         .ack_fd = devnull,
                                                         .working_dir = state});
    close(out[1]);
    close(devnull);
    ASSERT_TRUE(pid.ok()) << pid.status();
    const std::string got = ReadAll(out[0]);
    absl::StatusOr<int> status = ReadCheckExit(sv[0], 60000);
    ASSERT_EQ(rename(state.c_str(), dir.c_str()), 0);
    ASSERT_TRUE(status.ok()) << status.status();
    ASSERT_TRUE(WIFEXITED(*status));
    EXPECT_EQ(WEXITSTATUS(*status), code) << dir;
    EXPECT_EQ(got, want) << dir;
  }
  close(sv[0]);
  int status = -1;
  ASSERT_EQ(waitpid(server, &status, 0), server);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the server ends with its socket";
}

INSTANTIATE_TEST_SUITE_P(
    Builtins, ResidentCheckTest,
    ::testing::Values(
        Case{POWERCUT_WORKLOAD_BIN, {"--barrier", "fdatasync", "--count", "5"}, "xlog"},
        Case{POWERCUT_WORKLOAD_BIN,
             {"--journal", "wal", "--synchronous", "full", "--count", "5"},
             "sqlite"},
        Case{POWERCUT_WORKLOAD_CLIENTS_BIN, {"--sync", "true", "--count", "5"}, "rocksdb"}),
    [](const ::testing::TestParamInfo<Case>& p) { return std::string(p.param.workload); });

}  // namespace
}  // namespace powercut::workloads
