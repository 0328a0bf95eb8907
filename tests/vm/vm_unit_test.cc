// Tests of the VM crash domain's host parts that need no guest: the NBD server (driven by qemu-io,
// the same NBD client code qemu uses), the ack channel, power-cut cache models, the cpio writer
// (read back by the cpio tool), child-process hygiene and option parsing.
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "base/process.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/trace/recorder.h"
#include "harness/trace/trace_reader.h"
#include "harness/trace/trace_replay.h"
#include "harness/vm/devices/ack_channel.h"
#include "harness/vm/devices/nbd_server.h"
#include "harness/vm/devices/state_server.h"
#include "harness/vm/machine/cpio_writer.h"
#include "harness/vm/machine/disk_image.h"
#include "harness/vm/warm/guest_judge.h"
#include "harness/vm/warm/vm_run.h"
#include "tests/vm/vm_temp_dir.h"

namespace powercut::vm {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const harness::CacheModel kCacheOff{.mode = harness::CacheMode::kOff};
const harness::CacheModel kCacheOn{.mode = harness::CacheMode::kOn};
const harness::CacheModel kCacheLying{.mode = harness::CacheMode::kLying};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string QemuIoUrl(const std::string& socket) { return "nbd+unix:///?socket=" + socket; }

bool HaveQemuIo() {
  auto r = RunCommand({"qemu-io", "--version"});
  return r.ok() && r->exit_code == 0;
}

// Starts a recorder and an NBD server on a 1 MiB image.
struct ServedImage {
  explicit ServedImage(const VmTempDir& dir, size_t lying_window = 64) {
    image = dir / "disk.img";
    trace = dir / "trace.log";
    socket = dir / "nbd.sock";
    EXPECT_TRUE(CreateSparseImage(image, 1 << 20).ok());
    auto rec = harness::Recorder::Create(
        {.log_path = trace, .sector_size = 512, .device_bytes = 1 << 20, .base_image = ""});
    EXPECT_TRUE(rec.ok()) << rec.status();
    recorder = std::move(*rec);
    auto srv = NbdServer::Start({.socket_path = socket,
                                 .image_path = image,
                                 .recorder = recorder.get(),
                                 .atomic_unit = 4096,
                                 .lying_window = lying_window});
    EXPECT_TRUE(srv.ok()) << srv.status();
    server = std::move(*srv);
  }
  // Runs qemu-io commands against the server; returns qemu-io's output.
  // Runs qemu-io commands against the server with a write-back cache (flushes and FUA reach the
  // server). qemu-io flushes when it closes the device, unless `crash`: then it ends with its
  // `abort` command, so the writes stay volatile, as in a power cut.
  std::string Io(const std::vector<std::string>& commands, bool crash = false) {
    std::string line = "ulimit -c 0; exec qemu-io -f raw -t writeback";
    for (const auto& c : commands) line += " -c '" + c + "'";
    if (crash) line += " -c abort";
    line += " '" + QemuIoUrl(socket) + "'";
    auto r = RunCommand({"sh", "-c", line});
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r->exit_code, crash ? 128 + SIGABRT : 0) << r->output;
    return r->output;
  }
  std::string image, trace, socket;
  std::unique_ptr<harness::Recorder> recorder;
  std::unique_ptr<NbdServer> server;
};

TEST(NbdServerTest, RecordsWritesFlushesAndFuaInCompletionOrder) {
  if (!HaveQemuIo()) GTEST_SKIP() << "qemu-io (qemu-utils) is not installed";
  VmTempDir dir;
  ServedImage s(dir);
  s.Io({"write -P 0xab 0 4096", "flush", "write -f -P 0xcd 8192 4096", "read -P 0xab 0 4096"});
  ASSERT_TRUE(s.recorder->RecordAck("1").ok());
  s.server->Stop();
  ASSERT_TRUE(s.server->status().ok()) << s.server->status();
  ASSERT_TRUE(s.recorder->Finish().ok());

  std::string img = ReadFile(s.image);
  EXPECT_EQ(img[0], '\xab');
  EXPECT_EQ(img[8192], '\xcd');
  EXPECT_EQ(img[4096], '\0');

  auto trace = harness::TraceFile::Open(s.trace);
  ASSERT_TRUE(trace.ok()) << trace.status();
  std::vector<std::string> kinds;
  for (const auto& e : (*trace)->trace().entries) {
    if (e.is_mark()) {
      kinds.push_back("mark " + e.mark);
    } else if (e.is_flush() && e.header.nr_sectors == 0) {
      kinds.emplace_back("flush");
    } else {
      kinds.push_back(fmt::format("write {} {}{}", e.header.sector, e.header.nr_sectors,
                                  e.is_fua() ? " fua" : ""));
    }
  }
  // qemu-io flushes once more when it closes the device.
  EXPECT_THAT(kinds, ElementsAre("write 0 8", "flush", "write 16 8 fua", "flush", "mark ack:1"));
}

TEST(NbdServerTest, PowerCutCacheOnKeepsFlushedAndFuaWritesAndDrawsTheRest) {
  if (!HaveQemuIo()) GTEST_SKIP() << "qemu-io (qemu-utils) is not installed";
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    VmTempDir dir;
    ServedImage s(dir);
    s.Io({"write -P 0x11 0 4096"});  // flushed when qemu-io closes
    s.Io({"write -P 0x22 0 4096", "write -f -P 0x33 65536 4096", "write -P 0x44 131072 8192"},
         true);
    auto report = s.server->ApplyPowerCut(kCacheOn, seed);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_EQ(report->candidates, 3u);
    EXPECT_EQ(report->kept + report->dropped + report->torn, 3u);
    std::string img = ReadFile(s.image);
    // Block 0: flushed 0x11, or the volatile overwrite 0x22 (kept or torn: one unit either way).
    EXPECT_TRUE(img[0] == '\x11' || img[0] == '\x22') << seed;
    EXPECT_EQ(img[4095], img[0]);   // a 4 KiB write inside one atomic unit is never split
    EXPECT_EQ(img[65536], '\x33');  // FUA: durable
    // The 8 KiB volatile write: each 4 KiB unit is new or old on its own.
    EXPECT_TRUE(img[131072] == '\x44' || img[131072] == '\0');
    EXPECT_TRUE(img[135168] == '\x44' || img[135168] == '\0');
  }
}

TEST(NbdServerTest, PowerCutSeedsCoverKeptAndDropped) {
  if (!HaveQemuIo()) GTEST_SKIP() << "qemu-io (qemu-utils) is not installed";
  bool saw_kept = false, saw_dropped = false;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    VmTempDir dir;
    ServedImage s(dir);
    s.Io({"write -P 0x11 0 4096"});
    s.Io({"write -P 0x22 0 4096"}, true);
    ASSERT_TRUE(s.server->ApplyPowerCut(kCacheOn, seed).ok());
    char c = ReadFile(s.image)[0];
    saw_kept |= c == '\x22';
    saw_dropped |= c == '\x11';
  }
  EXPECT_TRUE(saw_kept);
  EXPECT_TRUE(saw_dropped);
}

// A single node's cut (docs/cluster.md, "Single-node cuts"): the same draw as a power cut, but
// the server keeps serving, and afterwards the drive's cache is empty: a second cut finds nothing
// to draw, and what the next connection writes and flushes is on the image.
TEST(NbdServerTest, NodeCutDrawsTheVolatileWritesAndKeepsServing) {
  if (!HaveQemuIo()) GTEST_SKIP() << "qemu-io (qemu-utils) is not installed";
  bool saw_kept = false, saw_dropped = false;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    VmTempDir dir;
    ServedImage s(dir);
    s.Io({"write -P 0x11 0 4096"});  // flushed when qemu-io closes
    s.Io({"write -P 0x22 0 4096", "write -f -P 0x33 65536 4096"}, true);
    auto report = s.server->ApplyNodeCut(kCacheOn, seed);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_EQ(report->candidates, 2u) << seed;
    ASSERT_EQ(report->decisions.size(), 2u);
    EXPECT_TRUE(report->decisions[1].fua);
    std::string img = ReadFile(s.image);
    const char block0 = img[0];
    EXPECT_TRUE(block0 == '\x11' || block0 == '\x22') << seed;
    EXPECT_EQ(img[65536], '\x33');  // FUA: on the media before the cut
    saw_kept |= block0 == '\x22';
    saw_dropped |= block0 == '\x11';
    // The drive came back with an empty cache: nothing is left to draw.
    auto again = s.server->ApplyNodeCut(kCacheOn, seed + 100);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->candidates, 0u);
    EXPECT_EQ(ReadFile(s.image)[0], block0);
    // And it still serves: the node's restart writes through it.
    s.Io({"write -P 0x55 8192 4096"});
    EXPECT_EQ(ReadFile(s.image)[8192], '\x55');
    s.server->Stop();
    EXPECT_TRUE(s.server->status().ok()) << s.server->status();
  }
  EXPECT_TRUE(saw_kept);
  EXPECT_TRUE(saw_dropped);
}

TEST(NbdServerTest, PowerCutCacheOffKeepsEveryCompletedWrite) {
  if (!HaveQemuIo()) GTEST_SKIP() << "qemu-io (qemu-utils) is not installed";
  VmTempDir dir;
  ServedImage s(dir);
  s.Io({"write -P 0x22 0 4096", "write -P 0x44 131072 8192"}, true);
  auto report = s.server->ApplyPowerCut(kCacheOff, 7);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->candidates, 0u);
  std::string img = ReadFile(s.image);
  EXPECT_EQ(img[0], '\x22');
  EXPECT_EQ(img[139263], '\x44');
}

TEST(NbdServerTest, PowerCutLyingMayDropFlushedWritesInsideTheWindow) {
  if (!HaveQemuIo()) GTEST_SKIP() << "qemu-io (qemu-utils) is not installed";
  bool saw_flushed_write_lost = false;
  for (uint64_t seed = 1; seed <= 12 && !saw_flushed_write_lost; ++seed) {
    VmTempDir dir;
    ServedImage s(dir, /*lying_window=*/4);
    s.Io({"write -P 0x11 0 4096", "flush"});
    ASSERT_TRUE(s.server->ApplyPowerCut(kCacheLying, seed).ok());
    saw_flushed_write_lost = ReadFile(s.image)[0] != '\x11';
  }
  EXPECT_TRUE(saw_flushed_write_lost);
}

TEST(NbdServerTest, PowerCutLyingByteWindowCoversOnlyTheLastBytes) {
  if (!HaveQemuIo()) GTEST_SKIP() << "qemu-io (qemu-utils) is not installed";
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    VmTempDir dir;
    ServedImage s(dir);
    s.Io({"write -P 0x11 0 4096", "write -P 0x22 65536 4096", "flush"});
    auto report = s.server->ApplyPowerCut(
        {.mode = harness::CacheMode::kLying, .window = 4096, .window_in_bytes = true}, seed);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_EQ(report->candidates, 1u);
    EXPECT_EQ(ReadFile(s.image)[0], '\x11');  // outside the 4 KiB window: kept
  }
}

TEST(NbdServerTest, RejectsABadImage) {
  VmTempDir dir;
  ASSERT_TRUE(CreateSparseImage(dir / "odd.img", 1000).ok());
  auto s = NbdServer::Start({.socket_path = dir / "s", .image_path = dir / "odd.img"});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("multiple of 512"));
  auto missing = NbdServer::Start({.socket_path = dir / "s", .image_path = dir / "none.img"});
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("none.img"));
}

int Connect(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

TEST(AckChannelTest, RecordsValidAcksAsMarksAndLogsEverything) {
  VmTempDir dir;
  auto rec = harness::Recorder::Create(
      {.log_path = dir / "t.log", .sector_size = 512, .device_bytes = 1 << 20, .base_image = ""});
  ASSERT_TRUE(rec.ok());
  std::vector<uint64_t> counts;
  absl::Mutex mu;
  auto ch = AckChannel::Start({.socket_path = dir / "ack.sock",
                               .ack_log_path = dir / "acks.jsonl",
                               .recorder = rec->get(),
                               .on_ack =
                                   [&](uint64_t n) {
                                     absl::MutexLock l(&mu);
                                     counts.push_back(n);
                                   },
                               .on_event = nullptr});
  ASSERT_TRUE(ch.ok()) << ch.status();
  int fd = Connect(dir / "ack.sock");
  ASSERT_GE(fd, 0);
  std::string lines =
      "ack 1\nevent workload-start\nack bad id\nack tx:7.a-b_c\nack " + std::string(65, 'x') + "\n";
  ASSERT_EQ(write(fd, lines.data(), lines.size()), static_cast<ssize_t>(lines.size()));
  close(fd);
  (*ch)->Stop();  // drains the connection before returning
  EXPECT_THAT((*ch)->acks(), ElementsAre("1", "tx:7.a-b_c"));
  EXPECT_EQ((*ch)->invalid_lines(), 2u);
  {
    absl::MutexLock l(&mu);
    EXPECT_THAT(counts, ElementsAre(1u, 2u));
  }
  ASSERT_TRUE((*rec)->Finish().ok());
  auto trace = harness::TraceFile::Open(dir / "t.log");
  ASSERT_TRUE(trace.ok());
  ASSERT_EQ((*trace)->trace().entries.size(), 2u);
  EXPECT_EQ((*trace)->trace().entries[1].mark, "ack:tx:7.a-b_c");
  std::string log = ReadFile(dir / "acks.jsonl");
  EXPECT_THAT(log, HasSubstr("\"id\":\"1\""));
  EXPECT_THAT(log, HasSubstr("\"event\":\"workload-start\""));
  EXPECT_THAT(log, HasSubstr("\"invalid\":\"ack bad id\""));
}

// A warm guest's channel: only the current job's lines reach its recorder and log; a line of
// another job (an ack of an earlier cell arriving late) is stale and never becomes a mark.
TEST(AckChannelTest, OnlyTheCurrentJobsLinesAreRecorded) {
  VmTempDir dir;
  auto rec = harness::Recorder::Create(
      {.log_path = dir / "t.log", .sector_size = 512, .device_bytes = 1 << 20, .base_image = ""});
  ASSERT_TRUE(rec.ok());
  auto ch = AckChannel::Start({.socket_path = dir / "ack.sock",
                               .ack_log_path = "",
                               .recorder = nullptr,
                               .on_ack = nullptr,
                               .on_event = nullptr});
  ASSERT_TRUE(ch.ok()) << ch.status();
  int fd = Connect(dir / "ack.sock");
  ASSERT_GE(fd, 0);
  absl::Notification done;
  ASSERT_TRUE((*ch)
                  ->BeginJob(2, {.socket_path = "",
                                 .ack_log_path = dir / "acks-2.jsonl",
                                 .recorder = rec->get(),
                                 .on_ack = nullptr,
                                 .on_event =
                                     [&](const std::string& e) {
                                       if (e == "job-done") done.Notify();
                                     }})
                  .ok());
  std::string lines = "job 1 ack 5\njob 2 ack 7\njob 12 ack 8\njob 2 event job-done\n";
  ASSERT_EQ(write(fd, lines.data(), lines.size()), static_cast<ssize_t>(lines.size()));
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_THAT((*ch)->acks(), ElementsAre("7"));
  EXPECT_EQ((*ch)->stale_lines(), 2u);
  (*ch)->EndJob();
  // After the job, its late lines are stale too.
  lines = "job 2 ack 9\n";
  ASSERT_EQ(write(fd, lines.data(), lines.size()), static_cast<ssize_t>(lines.size()));
  // The host's requests reach the guest.
  ASSERT_TRUE((*ch)->Send("job 3").ok());
  char buf[16] = {};
  ASSERT_EQ(read(fd, buf, 6), 6);
  EXPECT_EQ(std::string(buf, 6), "job 3\n");
  close(fd);
  ASSERT_TRUE((*ch)->WaitForPeerClose(std::chrono::seconds(30)));
  EXPECT_EQ((*ch)->stale_lines(), 3u);
  (*ch)->Stop();
  ASSERT_TRUE((*rec)->Finish().ok());
  auto trace = harness::TraceFile::Open(dir / "t.log");
  ASSERT_TRUE(trace.ok());
  ASSERT_EQ((*trace)->trace().entries.size(), 1u);
  EXPECT_EQ((*trace)->trace().entries[0].mark, "ack:7");
  std::string log = ReadFile(dir / "acks-2.jsonl");
  EXPECT_THAT(log, HasSubstr("\"stale\":\"job 1 ack 5\""));
}

TEST(CpioWriterTest, TheCpioToolReadsTheArchiveBack) {
  VmTempDir dir;
  CpioWriter w;
  w.AddDirectory("bin");
  w.AddFile("bin/hello", "hello world\n", 0755);
  w.AddSymlink("bin/link", "hello");
  std::ofstream(dir / "a.cpio", std::ios::binary) << w.Finish();
  auto r = RunCommand({"cpio", "-i", "-d", "--quiet", "-F", dir / "a.cpio"}, dir / "");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->exit_code, 0) << r->output;
  EXPECT_EQ(ReadFile(dir / "bin/hello"), "hello world\n");
  EXPECT_EQ(fs::read_symlink(dir / "bin/link"), "hello");
  EXPECT_TRUE(access((dir / "bin/hello").c_str(), X_OK) == 0);
}

TEST(ProcessTest, ErrorNamesTheStepAndQuotesOutput) {
  auto r = RunCommandOrError("step frobnicate", {"sh", "-c", "echo boom; exit 3"});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("step frobnicate"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("status 3"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("boom"));
  auto missing = RunCommand({"/nonexistent/program"});
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->exit_code, 127);
}

// A guest booted by one matrix worker thread serves the next cell after that thread ended: the
// child must not die with the thread that started it (PR_SET_PDEATHSIG is per thread).
TEST(ProcessTest, AChildOutlivesTheThreadThatStartedIt) {
  std::optional<absl::StatusOr<ChildProcess>> child;
  std::thread starter([&] { child.emplace(ChildProcess::Spawn({"sleep", "600"}, "")); });
  starter.join();
  ASSERT_TRUE(child.has_value() && child->ok());
  // The death signal, if any, follows the thread's exit at once; half a second is ample.
  EXPECT_FALSE((*child)->WaitFor(std::chrono::milliseconds(500)).has_value());
  EXPECT_EQ((*child)->Kill(), 128 + SIGKILL);
}

TEST(ProcessTest, KillTakesTheWholeProcessGroup) {
  VmTempDir dir;
  std::string pidfile = dir / "grandchild.pid";
  // The child starts a grandchild in its group and waits.
  auto child =
      ChildProcess::Spawn({"sh", "-c", fmt::format("sleep 600 & echo $! > {}; wait", pidfile)}, "");
  ASSERT_TRUE(child.ok());
  // Wait (bounded) until the grandchild has written its pid.
  std::string pid_text;
  for (int i = 0; i < 500 && pid_text.empty(); ++i) {
    EXPECT_FALSE(child->WaitFor(std::chrono::milliseconds(10)).has_value());
    pid_text = ReadFile(pidfile);
    if (!pid_text.empty() && pid_text.back() != '\n') pid_text.clear();
  }
  ASSERT_FALSE(pid_text.empty());
  pid_t grandchild = std::stoi(pid_text);
  EXPECT_EQ(child->Kill(), 128 + SIGKILL);
  // The grandchild was in the group: it is dead or a zombie about to be reaped by init.
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    std::string stat = ReadFile(fmt::format("/proc/{}/stat", grandchild));
    gone = stat.empty() || stat.find(") Z") != std::string::npos;
    if (!gone) usleep(10000);
  }
  EXPECT_TRUE(gone);
}

TEST(ParseCutTest, AcceptsTheThreeFormsAndRejectsOthers) {
  EXPECT_EQ(ParseCut("random")->when, CutSpec::When::kRandom);
  EXPECT_EQ(ParseCut("after-acks=5")->after_acks, 5u);
  EXPECT_EQ(ParseCut("after=1.5s")->after, std::chrono::milliseconds(1500));
  EXPECT_EQ(ParseCut("after=300ms")->after, std::chrono::milliseconds(300));
  EXPECT_EQ(ParseCut("")->when, CutSpec::When::kNever);
  for (const char* bad : {"after-acks=", "after-acks=0", "after=5", "after=xs", "sometimes"}) {
    auto c = ParseCut(bad);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_THAT(std::string(c.status().message()), HasSubstr("--cut"));
  }
}

TEST(GuestJobTest, SeveralChecksRoundTripThroughJson) {
  GuestJob job;
  job.mode = GuestJob::Mode::kCheck;
  job.checks = {{.disk_serial = "powercut0", .fs = harness::FsKind::kXfs, .command = "c0"},
                {.disk_serial = "powercut1",
                 .fs = harness::FsKind::kBtrfs,
                 .command = "c1",
                 .mount_options = "ro"}};
  auto back = GuestJobFromJson(GuestJobToJson(job));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->checks.size(), 2u);
  EXPECT_EQ(back->checks[1].disk_serial, "powercut1");
  EXPECT_EQ(back->checks[1].fs, harness::FsKind::kBtrfs);
  EXPECT_THAT(GuestJobToJson(job), HasSubstr("\"fs\": \"btrfs\""));
  auto zfs = GuestJobFromJson("{\"fs\": \"zfs\"}");
  ASSERT_FALSE(zfs.ok());
  EXPECT_THAT(std::string(zfs.status().message()),
              HasSubstr("expected one of raw, ext4, xfs, btrfs, f2fs"));
  EXPECT_EQ(back->checks[1].command, "c1");
  EXPECT_EQ(back->checks[1].mount_options, "ro");

  GuestResult r;
  r.ok = true;
  r.checks.resize(2);
  r.checks[0].have = {"1", "2"};
  r.checks[1].failed_step = "mount";
  r.logical_block_size = 512;
  r.physical_block_size = 4096;
  auto rb = GuestResultFromJson(GuestResultToJson(r));
  ASSERT_TRUE(rb.ok()) << rb.status();
  ASSERT_EQ(rb->checks.size(), 2u);
  EXPECT_THAT(rb->checks[0].have, ElementsAre("1", "2"));
  EXPECT_EQ(rb->checks[1].failed_step, "mount");
  EXPECT_EQ(rb->logical_block_size, 512u);
  EXPECT_EQ(rb->physical_block_size, 4096u);
  EXPECT_FALSE(GuestResultFromJson("{\"checks\": [1]}").ok());
}

// A check job and its result cross the agent's port as one line each (`job <id> inline <json>`,
// `job-result <json>`): whatever their strings hold (a checker's output lines, a command with a
// newline), the line has none, and it reads back to the same job and result.
TEST(GuestJobTest, AJobAndItsResultTravelAsOneLineEach) {
  GuestJob job;
  job.mode = GuestJob::Mode::kCheck;
  job.command = "sh -c 'printf \"have 1\\nhave 2\\n\"'\necho two lines";
  job.fstest_promises = "point 1\npoint 2\n";
  job.extra_disks.push_back({.disk_serial = "powercut-2", .state_token = "t2"});
  const std::string job_line = GuestJobToLine(job);
  EXPECT_EQ(job_line.find('\n'), std::string::npos) << job_line;
  auto back = GuestJobFromJson(job_line);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->command, job.command);
  EXPECT_EQ(back->fstest_promises, job.fstest_promises);
  ASSERT_EQ(back->extra_disks.size(), 1u);
  EXPECT_EQ(back->extra_disks[0].state_token, "t2");

  GuestResult r;
  r.ok = true;
  r.have = {"1", "2"};
  r.error = "line one\nline two";
  r.phases = {{"mount", 0.01}, {"checker-fork", 0.05}};
  const std::string result_line = GuestResultToLine(r);
  EXPECT_EQ(result_line.find('\n'), std::string::npos) << result_line;
  auto rb = GuestResultFromJson(result_line);
  ASSERT_TRUE(rb.ok()) << rb.status();
  EXPECT_THAT(rb->have, ElementsAre("1", "2"));
  EXPECT_EQ(rb->error, r.error);
  ASSERT_EQ(rb->phases.size(), 2u);
  EXPECT_EQ(rb->phases[1].first, "checker-fork");
}

// The failing disk's mode crosses to the guest by its dm-flakey name, read back into the type; no
// mode is an empty name, and an unknown name is an error listing the valid ones.
TEST(GuestJobTest, TheFailingDisksModeTravelsByName) {
  GuestJob job;
  job.flakey = FlakeyMode::kDropWrites;
  EXPECT_THAT(GuestJobToJson(job), HasSubstr("\"flakey\": \"drop_writes\""));
  auto back = GuestJobFromJson(GuestJobToJson(job));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->flakey, FlakeyMode::kDropWrites);
  job.flakey.reset();
  back = GuestJobFromJson(GuestJobToJson(job));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_FALSE(back->flakey.has_value());
  auto bad = GuestJobFromJson("{\"fs\": \"ext4\", \"flakey\": \"lose_writes\"}");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("\"lose_writes\": not a failing disk's mode; expected error_writes or "
                        "drop_writes"));
}

// Where a guest check's time goes (docs/run.md): the agent's steps travel in the result, and a
// check's judges sum them into one mean per step, in the order the steps ran.
TEST(GuestCheckPhasesTest, StepsRoundTripAndAverageInOrder) {
  GuestResult r;
  r.phases = {{"state-block", 0.5}, {"fsck", 1.25}, {"checker", 2.0}};
  auto back = GuestResultFromJson(GuestResultToJson(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->phases, r.phases);

  GuestCheckPhases phases;
  EXPECT_TRUE(phases.Mean().empty());
  phases.Add({{"state-block", 1.0}, {"fsck", 3.0}, {"exchange", 0.5}});
  phases.Add({{"state-block", 3.0}, {"checker", 4.0}, {"exchange", 1.5}});
  EXPECT_THAT(phases.Mean(), ElementsAre(std::pair<std::string, double>{"state-block", 2.0},
                                         std::pair<std::string, double>{"fsck", 1.5},
                                         std::pair<std::string, double>{"exchange", 1.0},
                                         std::pair<std::string, double>{"checker", 2.0}));
}

TEST(CheckImagesTest, RefusesMoreImagesThanOneGuestTakes) {
  std::vector<CheckSpec> specs(kMaxCheckImages + 1);
  auto r = CheckImagesInVm(VmEnvironment{}, specs);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("at most 16"));
}

TEST(DiskImageTest, RefusesBlockDevices) {
  auto s = MakeFileSystem(harness::FsKind::kExt4, harness::GeometryOf(harness::SectorFormat::k512e),
                          "/dev/null");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("never writes to block devices"));
}

// mkfs as the table says, on the table's default disk, for every row: the block size read back
// from the made file system is the row's (ext4 4 KiB, not the 1 KiB "small" profile), and xfs
// takes the physical sector as its sector size.
TEST(DiskImageTest, MakesEachFileSystemWithItsDeploymentProfile) {
  VmTempDir dir;
  const harness::DiskGeometry g512e = harness::GeometryOf(harness::SectorFormat::k512e);
  for (const harness::FileSystem& table : harness::AllFileSystems()) {
    if (table.raw()) continue;
    const std::vector<std::string> argv = table.MkfsArgv(g512e.physical_sector);
    if (!SystemToolInstalled(argv.front())) {
      fmt::print("{} not installed (apt-get install {}): {} skipped\n", argv.front(), table.package,
                 table.name);
      continue;
    }
    const std::string image = dir / fmt::format("{}.img", table.name);
    ASSERT_TRUE(CreateSparseImage(image, table.default_image_bytes).ok());
    auto mkfs = MakeFileSystem(table.kind, g512e, image);
    ASSERT_TRUE(mkfs.ok()) << mkfs.status();
    EXPECT_EQ(*mkfs, harness::ShellJoin(argv));
    EXPECT_THAT(*mkfs, HasSubstr("{image}"));
    auto block = FileSystemBlockSize(table.kind, image);
    ASSERT_TRUE(block.ok()) << block.status();
    EXPECT_EQ(*block, table.block_size) << table.name;
    fs::remove(image);
  }
  EXPECT_THAT(harness::ShellJoin(
                  harness::FileSystemOf(harness::FsKind::kXfs).MkfsArgv(g512e.physical_sector)),
              HasSubstr("-s size=4096"));
  auto raw = MakeFileSystem(harness::FsKind::kRaw, g512e, dir / "raw.img");
  EXPECT_FALSE(raw.ok());  // not created yet: mkfs refuses what is not a regular file
  ASSERT_TRUE(CreateSparseImage(dir / "raw.img", 1 << 20).ok());
  EXPECT_EQ(*MakeFileSystem(harness::FsKind::kRaw, g512e, dir / "raw.img"), "");
  EXPECT_EQ(*FileSystemBlockSize(harness::FsKind::kRaw, dir / "raw.img"), 0u);
}

// The guest keeps visible what the commands name under its tmpfs folders: the nearest existing
// folder of each absolute path, never a covered folder itself, never a path outside them.
TEST(CommandKeepPathsTest, KeepsTheNearestExistingFolderOfEveryNamedPath) {
  VmTempDir dir;  // under /tmp (or $TMPDIR)
  const std::string base = fs::weakly_canonical(dir.path()).string();
  if (base.rfind("/tmp/", 0) != 0) GTEST_SKIP() << "the scratch folder is not under /tmp";
  fs::create_directories(base + "/bin");
  fs::create_directories(base + "/data/sub");
  std::ofstream(base + "/bin/prog") << "#!/bin/sh\n";
  const std::string workload = fmt::format(
      "{}/bin/prog run --dir=\"{}/data/sub/new-file\" --count 3 >/tmp/new-log 2>&1; "
      "cat /etc/hostname /usr/bin/env",
      base, base);
  const std::string checker = fmt::format("'{}/bin/prog' check:{}/data", base, base);
  EXPECT_THAT(CommandKeepPaths({workload, checker}), ElementsAre(base + "/bin", base + "/data"));
  // /tmp/new-log: its nearest existing folder is /tmp itself, left to the guest's tmpfs.
  EXPECT_THAT(CommandKeepPaths({"echo x > /tmp/new-log; ls /var/tmp /mnt/"}), ElementsAre());
  // Relative words and words that merely contain a slash are not paths.
  EXPECT_THAT(CommandKeepPaths({fmt::format("a{}/bin/prog x/{}", base, base)}), ElementsAre());
}

TEST(DiskImageTest, LogWritesUsedBytesFollowsTheEntries) {
  VmTempDir dir;
  auto rec = harness::Recorder::Create(
      {.log_path = dir / "t.log", .sector_size = 512, .device_bytes = 1 << 20, .base_image = ""});
  ASSERT_TRUE(rec.ok());
  std::vector<uint8_t> data(4096, 7);
  ASSERT_TRUE((*rec)->RecordWrite(0, data, false).ok());
  ASSERT_TRUE((*rec)->RecordFlush().ok());
  ASSERT_TRUE((*rec)->RecordAck("1").ok());
  ASSERT_TRUE((*rec)->Finish().ok());
  // super + (entry + 8 data sectors) + flush entry + mark entry.
  uint64_t expected = 512 + (512 + 4096) + 512 + 512;
  ASSERT_GE(fs::file_size(dir / "t.log"), expected);
  fs::resize_file(dir / "t.log", 1 << 20);  // as a log device: much bigger than its log
  auto used = LogWritesUsedBytes(dir / "t.log");
  ASSERT_TRUE(used.ok()) << used.status();
  EXPECT_EQ(*used, expected);
  std::ofstream(dir / "junk", std::ios::binary) << std::string(4096, 'j');
  EXPECT_FALSE(LogWritesUsedBytes(dir / "junk").ok());
}

// The real traces in tests/data (recorded in a guest by both recorders at once) replay onto a
// zero base image to the guest's final disk.
TEST(SampleTracesTest, BothRecordersReplayToTheGuestsFinalImage) {
  const std::string data = POWERCUT_TEST_DATA_DIR;
  std::string final_json = ReadFile(data + "/raw-dio-fdatasync.final.json");
  ASSERT_FALSE(final_json.empty());
  auto pos = final_json.find("\"final_image_sha256\": \"");
  ASSERT_NE(pos, std::string::npos);
  std::string expected = final_json.substr(pos + 23, 64);
  VmTempDir dir;
  ASSERT_TRUE(CreateSparseImage(dir / "zero.img", 16 << 20).ok());
  for (const char* name : {"raw-dio-fdatasync.log-writes.log", "raw-dio-fdatasync.nbd.log"}) {
    auto file =
        harness::TraceFile::Open(data + "/" + name, {.device_bytes = 16 << 20, .name = name});
    ASSERT_TRUE(file.ok()) << file.status();
    size_t acks = 0;
    for (const auto& e : (*file)->trace().entries) acks += e.mark.rfind("ack:", 0) == 0 ? 1 : 0;
    EXPECT_EQ(acks, 8u) << name;
    auto applied = harness::ReplayTrace(**file, dir / "zero.img", dir / "out.img", {});
    ASSERT_TRUE(applied.ok()) << applied.status();
    auto sum = RunCommand({"sha256sum", dir / "out.img"});
    ASSERT_TRUE(sum.ok());
    EXPECT_EQ(sum->output.substr(0, 64), expected) << name;
  }
}

// The state server (guest_judge.h): the image is read, never written; writes go to the state's
// overlay and vanish with the next state; the block past the image names the state; a sealed
// disk refuses writes and counts them.
TEST(StateServerTest, OverlayPerStateStateBlockAndSealing) {
  if (!HaveQemuIo()) GTEST_SKIP() << "qemu-io (qemu-utils) is not installed";
  VmTempDir dir;
  const std::string image = dir / "state.img";
  ASSERT_TRUE(CreateSparseImage(image, 1 << 20).ok());
  {
    std::fstream f(image, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);
    f.write(std::string(4096, '\x11').data(), 4096);
  }
  const int fd = ::open(image.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto srv = StateServer::Start(
      {.socket_path = dir / "state.sock", .image_fd = fd, .image_bytes = 1 << 20});
  ASSERT_TRUE(srv.ok()) << srv.status();
  StateServer& server = **srv;
  EXPECT_EQ(server.export_bytes(), (1u << 20) + 4096);
  auto io = [&](const std::vector<std::string>& commands) {
    std::string line = "exec qemu-io -f raw -t writeback";
    for (const auto& c : commands) line += " -c '" + c + "'";
    line += " '" + QemuIoUrl(server.socket_path()) + "'";
    auto r = RunCommand({"sh", "-c", line});
    EXPECT_TRUE(r.ok());
    return r.ok() ? r->output : "";
  };
  server.ServeState(7);
  // A partial-page write over image data: the rest of the page still reads the image's bytes.
  std::string out = io({"write -P 0x22 4096 512", "read -P 0x22 4096 512", "read -P 0x11 4608 3584",
                        "read -v 1048576 16"});
  EXPECT_THAT(out, ::testing::Not(HasSubstr("Pattern verification failed"))) << out;
  EXPECT_THAT(out, HasSubstr("74 61 74 65 20 37  powercut.state.7")) << out;
  EXPECT_EQ(server.overlay_pages(), 1u);
  server.Seal();
  server.ServeState(8);  // the overlay is gone: the image's bytes again, the new state's name
  out = io({"read -P 0x11 4096 4096", "read -v 1048576 16"});
  EXPECT_THAT(out, ::testing::Not(HasSubstr("Pattern verification failed"))) << out;
  EXPECT_THAT(out, HasSubstr("74 61 74 65 20 38  powercut.state.8")) << out;
  server.Seal();
  out = io({"write -P 0x33 0 4096"});
  EXPECT_EQ(server.refused_writes(), 1u) << out;
  server.Stop();
  std::ifstream in(image, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(bytes.substr(4096, 4096), std::string(4096, '\x11'));  // never written
  EXPECT_EQ(bytes.substr(0, 4096), std::string(4096, '\0'));
  ::close(fd);
}

}  // namespace
}  // namespace powercut::vm
