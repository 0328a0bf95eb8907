// The resident checker's wire (base/check_server.h), both ends in this test: a forked process
// serves (as a checker's main() would, by calling ServeChecksIfAsked first), and each state's
// child reports what it was given — its working folder, its process group, its descriptors —
// on the stdout the request handed it.
#include "base/check_server.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "base/temp_dir.h"
#include "fmt/format.h"
#include "gtest/gtest.h"

namespace powercut {
namespace {

using testing::TempDir;

// What one state's child reports and how it exits (the test's stand-in for a checker).
[[noreturn]] void ActAsChecker(int socket_fd) {
  char cwd[4096] = {};
  const bool in_own_group = getpgid(0) == getpid();
  const bool socket_closed = fcntl(socket_fd, F_GETFD) < 0;
  const char* dir = getcwd(cwd, sizeof cwd);
  const std::string report =
      fmt::format("cwd={} own_group={} socket_closed={} fd3={} env={}\n", dir ? dir : "?",
                  in_own_group, socket_closed, fcntl(3, F_GETFD) >= 0,
                  std::getenv(kCheckServerFdVariable) == nullptr ? "unset" : "set");
  (void)!write(1, report.data(), report.size());
  (void)!write(3, "ack-fd\n", 7);
  _exit(std::string(dir ? dir : "").find("fail") != std::string::npos ? 3 : 0);
}

class CheckServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    server_pid_ = fork();
    ASSERT_GE(server_pid_, 0);
    if (server_pid_ == 0) {
      close(sv[0]);
      setenv(kCheckServerFdVariable, std::to_string(sv[1]).c_str(), 1);
      ServeChecksIfAsked();  // returns only in a state's child
      ActAsChecker(sv[1]);
    }
    close(sv[1]);
    fd_ = sv[0];
  }

  void TearDown() override {
    if (fd_ >= 0) close(fd_);
    if (server_pid_ > 0) {
      kill(server_pid_, SIGKILL);
      waitpid(server_pid_, nullptr, 0);
    }
  }

  // One state in `dir`: its child's report (stdout), what it wrote on fd 3, and its wait status.
  struct State {
    pid_t pid = 0;
    std::string out, ack;
    int status = -1;
  };
  State RunState(const std::string& dir) {
    State s;
    int out[2], ack[2];
    EXPECT_EQ(pipe2(out, O_CLOEXEC), 0);
    EXPECT_EQ(pipe2(ack, O_CLOEXEC), 0);
    const int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    absl::StatusOr<pid_t> pid = SendCheckRequest(fd_, {.stdin_fd = devnull,
                                                       .stdout_fd = out[1],
                                                       .stderr_fd = devnull,
                                                       .ack_fd = ack[1],
                                                       .cgroup_procs = "",
                                                       .working_dir = dir});
    close(out[1]);
    close(ack[1]);
    close(devnull);
    EXPECT_TRUE(pid.ok()) << pid.status();
    s.pid = pid.value_or(0);
    s.out = ReadAll(out[0]);
    s.ack = ReadAll(ack[0]);
    absl::StatusOr<int> status = ReadCheckExit(fd_, 10000);
    EXPECT_TRUE(status.ok()) << status.status();
    s.status = status.value_or(-1);
    return s;
  }

  static std::string ReadAll(int fd) {
    std::string text;
    char buf[512];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
    close(fd);
    return text;
  }

  pid_t server_pid_ = -1;
  int fd_ = -1;
};

TEST_F(CheckServerTest, EachStateIsAFreshChildWithTheRequestsWorld) {
  ASSERT_TRUE(ReadCheckServerReady(fd_, 10000).ok());
  TempDir a, b;
  const State first = RunState(a.path());
  const State second = RunState(b.path());
  for (const auto& [s, dir] : {std::pair{first, a.path()}, std::pair{second, b.path()}}) {
    EXPECT_EQ(s.out,
              fmt::format("cwd={} own_group=true socket_closed=true fd3=true env=unset\n", dir));
    EXPECT_EQ(s.ack, "ack-fd\n");
    ASSERT_TRUE(WIFEXITED(s.status));
    EXPECT_EQ(WEXITSTATUS(s.status), 0);
    EXPECT_NE(s.pid, server_pid_);
  }
  EXPECT_NE(first.pid, second.pid) << "a state's checker is never reused";
}

TEST_F(CheckServerTest, TheChildsExitStatusComesBackAsItIs) {
  ASSERT_TRUE(ReadCheckServerReady(fd_, 10000).ok());
  TempDir dir;
  const std::string failing = dir.path() + "/fail";
  ASSERT_EQ(mkdir(failing.c_str(), 0700), 0);
  const State s = RunState(failing);
  ASSERT_TRUE(WIFEXITED(s.status));
  EXPECT_EQ(WEXITSTATUS(s.status), 3);
}

TEST_F(CheckServerTest, AFolderTheChildCannotEnterIsExit126AsExecWouldSay) {
  ASSERT_TRUE(ReadCheckServerReady(fd_, 10000).ok());
  const State s = RunState("/nonexistent/powercut-check-server-test");
  ASSERT_TRUE(WIFEXITED(s.status));
  EXPECT_EQ(WEXITSTATUS(s.status), 126);
  EXPECT_EQ(s.out, "");
}

TEST_F(CheckServerTest, ClosingTheSocketEndsTheServer) {
  ASSERT_TRUE(ReadCheckServerReady(fd_, 10000).ok());
  close(fd_);
  fd_ = -1;
  int status = -1;
  ASSERT_EQ(waitpid(server_pid_, &status, 0), server_pid_);
  server_pid_ = -1;
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(CheckServerTest, AServerThatDiedIsAnErrorNotAHang) {
  ASSERT_TRUE(ReadCheckServerReady(fd_, 10000).ok());
  kill(server_pid_, SIGKILL);
  waitpid(server_pid_, nullptr, 0);
  server_pid_ = -1;
  const int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  absl::StatusOr<pid_t> pid = SendCheckRequest(fd_, {.stdin_fd = devnull,
                                                     .stdout_fd = devnull,
                                                     .stderr_fd = devnull,
                                                     .ack_fd = devnull,
                                                     .working_dir = "/"});
  close(devnull);
  EXPECT_FALSE(pid.ok());
}

// A variable that names no open descriptor (a checker started by hand with a stale
// environment) is a plain start, and the checker's own children do not see the variable.
TEST(CheckServer, AVariableNamingNoDescriptorIsAPlainStart) {
  setenv(kCheckServerFdVariable, "987", 1);
  ASSERT_LT(fcntl(987, F_GETFD), 0);
  ServeChecksIfAsked();  // returns at once instead of serving
  EXPECT_EQ(std::getenv(kCheckServerFdVariable), nullptr);
}

}  // namespace
}  // namespace powercut
