#include "workloads/ack_channel.h"

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace powercut::workloads {
namespace {

using ::testing::HasSubstr;

// A pipe whose ends close with the test.
class Pipe {
 public:
  Pipe() { EXPECT_EQ(::pipe2(fds_, O_CLOEXEC), 0); }
  ~Pipe() {
    CloseRead();
    CloseWrite();
  }
  int read_fd() const { return fds_[0]; }
  int write_fd() const { return fds_[1]; }
  void CloseRead() {
    if (fds_[0] >= 0) ::close(fds_[0]);
    fds_[0] = -1;
  }
  void CloseWrite() {
    if (fds_[1] >= 0) ::close(fds_[1]);
    fds_[1] = -1;
  }
  // Everything written so far, once the write end is closed.
  std::string ReadAll() {
    CloseWrite();
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fds_[0], buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
    return out;
  }

 private:
  int fds_[2] = {-1, -1};
};

TEST(WorkloadIdTest, AcceptsIntegersAndTokens) {
  EXPECT_TRUE(IsValidAckId("1"));
  EXPECT_TRUE(IsValidAckId("18446744073709551615"));
  EXPECT_TRUE(IsValidAckId("txn-7:part_2.a"));
  EXPECT_TRUE(IsValidAckId("ABCXYZabcxyz0189_.:-"));
  EXPECT_TRUE(IsValidAckId(std::string(kMaxAckIdBytes, 'x')));
}

TEST(WorkloadIdTest, RejectsMalformedIds) {
  EXPECT_FALSE(IsValidAckId(""));
  EXPECT_FALSE(IsValidAckId(std::string(kMaxAckIdBytes + 1, 'x')));
  EXPECT_FALSE(IsValidAckId("two words"));
  EXPECT_FALSE(IsValidAckId("line\nbreak"));
  EXPECT_FALSE(IsValidAckId("a/b"));
  EXPECT_FALSE(IsValidAckId("tab\t"));
  EXPECT_FALSE(IsValidAckId("caf\xc3\xa9"));
}

TEST(WorkloadAckChannelTest, WritesOneLinePerAck) {
  Pipe pipe;
  AckChannel channel(pipe.write_fd());
  ASSERT_TRUE(channel.Ack("txn-1").ok());
  ASSERT_TRUE(channel.Ack(uint64_t{42}).ok());
  EXPECT_EQ(channel.acks_sent(), 2);
  EXPECT_EQ(pipe.ReadAll(), "ack txn-1\nack 42\n");
}

TEST(WorkloadAckChannelTest, RejectsMalformedIdWithoutWriting) {
  Pipe pipe;
  AckChannel channel(pipe.write_fd());
  absl::Status status = channel.Ack("bad id");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("malformed id 'bad id'"));
  EXPECT_EQ(channel.Ack(std::string(kMaxAckIdBytes + 1, '7')).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(channel.acks_sent(), 0);
  EXPECT_EQ(pipe.ReadAll(), "");
}

TEST(WorkloadAckChannelTest, ConcurrentAcksNeverInterleave) {
  Pipe pipe;
  AckChannel channel(pipe.write_fd());
  constexpr int kThreads = 8;
  constexpr int kPerThread = 300;  // 2400 lines of ~14 bytes: fits the 64 KiB pipe buffer
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&channel, t] {
      for (int i = 0; i < kPerThread; ++i) {
        EXPECT_TRUE(channel.Ack("t" + std::to_string(t) + "." + std::to_string(i)).ok());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const std::string out = pipe.ReadAll();
  std::set<std::string> seen;
  size_t start = 0;
  while (start < out.size()) {
    size_t end = out.find('\n', start);
    ASSERT_NE(end, std::string::npos) << "unterminated last line";
    const std::string line = out.substr(start, end - start);
    ASSERT_EQ(line.rfind("ack t", 0), 0u) << line;
    EXPECT_TRUE(seen.insert(line.substr(4)).second) << "duplicate " << line;
    start = end + 1;
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kThreads * kPerThread));
  EXPECT_EQ(channel.acks_sent(), kThreads * kPerThread);
}

TEST(WorkloadAckChannelTest, ClosedReaderIsAnError) {
  auto previous = std::signal(SIGPIPE, SIG_IGN);
  Pipe pipe;
  pipe.CloseRead();
  AckChannel channel(pipe.write_fd());
  absl::Status status = channel.Ack("1");
  std::signal(SIGPIPE, previous);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr("Broken pipe"));
}

// Sets or unsets one environment variable for the scope of a test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old != nullptr) old_ = old;
    had_old_ = old != nullptr;
    if (value == nullptr) {
      ::unsetenv(name);
    } else {
      ::setenv(name, value, 1);
    }
  }
  ~ScopedEnv() {
    if (had_old_) {
      ::setenv(name_, old_.c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::string old_;
  bool had_old_ = false;
};

TEST(WorkloadAckEnvironmentTest, MissingVariableSaysWhatToSet) {
  ScopedEnv fd("POWERCUT_ACK_FD", nullptr);
  auto channel = AckChannel::FromEnvironment();
  ASSERT_EQ(channel.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(channel.status().message()), HasSubstr("POWERCUT_ACK_FD is not set"));
}

TEST(WorkloadAckEnvironmentTest, RejectsNonNumbersAndClosedDescriptors) {
  {
    ScopedEnv fd("POWERCUT_ACK_FD", "three");
    auto channel = AckChannel::FromEnvironment();
    EXPECT_THAT(std::string(channel.status().message()), HasSubstr("not a file descriptor"));
  }
  {
    ScopedEnv fd("POWERCUT_ACK_FD", "-1");
    EXPECT_EQ(AckChannel::FromEnvironment().status().code(), absl::StatusCode::kInvalidArgument);
  }
  {
    Pipe pipe;
    const std::string closed = std::to_string(pipe.write_fd());
    pipe.CloseWrite();
    ScopedEnv fd("POWERCUT_ACK_FD", closed.c_str());
    auto channel = AckChannel::FromEnvironment();
    EXPECT_THAT(std::string(channel.status().message()), HasSubstr("not an open file descriptor"));
  }
  {
    Pipe pipe;
    const std::string read_end = std::to_string(pipe.read_fd());
    ScopedEnv fd("POWERCUT_ACK_FD", read_end.c_str());
    auto channel = AckChannel::FromEnvironment();
    EXPECT_THAT(std::string(channel.status().message()), HasSubstr("read-only"));
  }
}

TEST(WorkloadAckEnvironmentTest, AcceptsAWritableDescriptor) {
  Pipe pipe;
  const std::string write_end = std::to_string(pipe.write_fd());
  ScopedEnv fd("POWERCUT_ACK_FD", write_end.c_str());
  auto channel = AckChannel::FromEnvironment();
  ASSERT_TRUE(channel.ok()) << channel.status();
  ASSERT_TRUE((*channel)->Ack("9").ok());
  EXPECT_EQ(pipe.ReadAll(), "ack 9\n");
}

TEST(WorkloadTargetEnvironmentTest, NeedsExactlyOneTarget) {
  {
    ScopedEnv dir("POWERCUT_DIR", nullptr);
    ScopedEnv dev("POWERCUT_DEV", nullptr);
    auto target = TargetFromEnvironment();
    ASSERT_EQ(target.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(target.status().message()), HasSubstr("POWERCUT_DIR"));
  }
  {
    ScopedEnv dir("POWERCUT_DIR", "/");
    ScopedEnv dev("POWERCUT_DEV", "/dev/null");
    EXPECT_THAT(std::string(TargetFromEnvironment().status().message()), HasSubstr("only one"));
  }
  {
    ScopedEnv dir("POWERCUT_DIR", "/nonexistent/powercut");
    ScopedEnv dev("POWERCUT_DEV", nullptr);
    EXPECT_THAT(std::string(TargetFromEnvironment().status().message()),
                HasSubstr("POWERCUT_DIR=/nonexistent/powercut"));
  }
  {
    ScopedEnv dir("POWERCUT_DIR", "/dev/null");
    ScopedEnv dev("POWERCUT_DEV", nullptr);
    EXPECT_THAT(std::string(TargetFromEnvironment().status().message()),
                HasSubstr("not a directory"));
  }
  {
    ScopedEnv dir("POWERCUT_DIR", nullptr);
    ScopedEnv dev("POWERCUT_DEV", "/dev/null");
    auto target = TargetFromEnvironment();
    ASSERT_TRUE(target.ok()) << target.status();
    EXPECT_EQ(target->dev, "/dev/null");
    EXPECT_EQ(RequireDir(*target, "rocksdb").code(), absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace powercut::workloads
