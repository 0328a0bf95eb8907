// File-system checks by loop mount: a real ext4 image, the kernel's journal replay on mount, a
// shell checker reading files, unmount, discard. Needs root and loop devices (skips otherwise).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "base/image_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/check/engine.h"
#include "harness/check/loop_mount.h"
#include "harness/check/report.h"
#include "harness/trace/diff_trace.h"
#include "tests/harness_testing.h"

namespace powercut::harness {
namespace {

using testing::TempDir;

constexpr char kChecker[] =
    "for f in \"$POWERCUT_DIR\"/commit-*; do [ -f \"$f\" ] && grep -q '^commit ' \"$f\" && echo "
    "\"have ${f##*commit-}\"; done; true";

class Ext4Check : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0 || ::access("/dev/loop-control", W_OK) != 0) {
      GTEST_SKIP() << "needs root and /dev/loop-control";
    }
    base_ = dir_.File("base.img");
    testing::MakeImage(base_, 32 << 20);
    std::string mkfs = "mkfs.ext4 -q -F -b 4096 -E lazy_itable_init=1,lazy_journal_init=1 " + base_;
    ASSERT_EQ(std::system(mkfs.c_str()), 0) << mkfs;
    after_ = dir_.File("after.img");
    ASSERT_TRUE(CopySparse(base_, after_).ok());
    std::string mnt = dir_.File("mnt");
    std::filesystem::create_directories(mnt);
    auto mount = LoopMount::Mount(after_, "ext4", mnt);
    if (!mount.ok()) GTEST_SKIP() << "loop mount not permitted here: " << mount.status();
    ASSERT_NO_FATAL_FAILURE(WriteCommits(mnt));
    ASSERT_TRUE((*mount)->Unmount().ok());
  }

  // commit-0..2, each fsynced, in the mounted file system at `mnt`.
  static void WriteCommits(const std::string& mnt) {
    for (int i = 0; i < 3; ++i) {
      std::string path = mnt + "/commit-" + std::to_string(i);
      int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ASSERT_GE(fd, 0);
      std::string text = "commit " + std::to_string(i) + "\n";
      ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
      ASSERT_EQ(::fsync(fd), 0);
      ::close(fd);
    }
  }

  CheckReport Check(bool flush_before_acks, const std::string& fs = "ext4") {
    std::string log = dir_.File(flush_before_acks ? "flushed.log" : "unflushed.log");
    DiffTraceOptions d;
    d.acks = {"0", "1", "2"};
    d.flush_before_acks = flush_before_acks;
    EXPECT_TRUE(WriteDiffTrace(base_, after_, log, d).ok());
    CheckOptions o;
    o.trace_path = log;
    o.checker = kChecker;
    o.fs = FsKind::kExt4;
    o.without_mount = fs == "ext4-debugfs";
    o.models = {*ParseCacheModel("off"), *ParseCacheModel("on")};
    o.states.samples = 8;
    o.states.max_all_but_one = 8;
    o.exhaustive = true;  // the tests compare full counts
    o.work_dir = dir_.File("work");
    auto report = RunCheck(o);
    EXPECT_TRUE(report.ok()) << report.status();
    return report.ok() ? *report : CheckReport{};
  }

  TempDir dir_;
  std::string base_, after_;
};

TEST_F(Ext4Check, FlushedCommitsSurviveEveryModelAndUnflushedOnesDoNotUnderOn) {
  CheckReport flushed = Check(true);
  ASSERT_EQ(flushed.results.size(), 2u);
  for (const auto& r : flushed.results) {
    EXPECT_EQ(r.violations, 0u) << ReportSummaryTable(flushed);
    EXPECT_EQ(r.checked + r.deduplicated, r.states);
  }
  EXPECT_GT(flushed.results[0].checked, 0u);
  CheckReport unflushed = Check(false);
  ASSERT_EQ(unflushed.results.size(), 2u);
  EXPECT_EQ(unflushed.results[0].violations, 0u) << ReportSummaryTable(unflushed);  // off
  EXPECT_GT(unflushed.results[1].violations, 0u) << ReportSummaryTable(unflushed);  // on
  EXPECT_EQ(unflushed.results[1].lost_acks_max, 3u);
  // Nothing is left mounted or attached under the work folder.
  std::string mounts;
  {
    std::ifstream in("/proc/self/mountinfo");
    mounts.assign(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_EQ(mounts.find(dir_.path()), std::string::npos);
}

TEST_F(Ext4Check, WithoutMountingE2fsckAndDebugfsGiveTheSameVerdicts) {
  CheckReport flushed = Check(true, "ext4-debugfs");
  ASSERT_EQ(flushed.results.size(), 2u);
  EXPECT_EQ(flushed.results[0].violations, 0u) << ReportSummaryTable(flushed);
  EXPECT_EQ(flushed.results[1].violations, 0u) << ReportSummaryTable(flushed);
  CheckReport unflushed = Check(false, "ext4-debugfs");
  ASSERT_EQ(unflushed.results.size(), 2u);
  EXPECT_EQ(unflushed.results[0].violations, 0u) << ReportSummaryTable(unflushed);
  EXPECT_GT(unflushed.results[1].violations, 0u) << ReportSummaryTable(unflushed);
}

// The whole image in one read (a late write of another file system may land anywhere: its
// superblock, its journal, the blocks its checkpoint writes back).
std::string WholeImage(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  std::string bytes(static_cast<size_t>(std::max<std::streamoff>(in.tellg(), 0)), '\0');
  in.seekg(0);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return bytes;
}

// A process that copies the mount namespace while a state is mounted (another worker's checker
// running `unshare -m`, a container, a service with PrivateTmp) keeps that file system alive
// after our umount; when the copy goes away the kernel writes its superblock and journal back
// through the still-bound loop device. Here each state's checker leaves such a copy behind and
// the next state ends it after its image was copied and before the boot path reads it: the
// late write must not land in that next state's image.
TEST_F(Ext4Check, AFileSystemKeptAliveByAnotherMountNamespaceCannotWriteIntoTheNextState) {
  if (std::system("command -v unshare >/dev/null && command -v setsid >/dev/null") != 0) {
    GTEST_SKIP() << "needs unshare and setsid (util-linux)";
  }
  const std::string holder = dir_.File("holder");
  // The commits are in the journal only (the image copied while mounted, after the fsyncs), so
  // every state needs the boot path's journal replay, which a stale clean superblock would skip.
  const std::string live = dir_.File("live.img"), crash = dir_.File("crash.img");
  ASSERT_TRUE(CopySparse(base_, live).ok());
  {
    std::string mnt = dir_.File("live.mnt");
    std::filesystem::create_directories(mnt);
    auto mount = LoopMount::Mount(live, "ext4", mnt);
    ASSERT_TRUE(mount.ok()) << mount.status();
    ASSERT_NO_FATAL_FAILURE(WriteCommits(mnt));
    ASSERT_TRUE(CopySparse(live, crash).ok());
    ASSERT_TRUE((*mount)->Unmount().ok());
  }
  std::string log = dir_.File("journal.log");
  DiffTraceOptions d;
  d.acks = {"0", "1", "2"};
  d.flush_before_acks = true;
  ASSERT_TRUE(WriteDiffTrace(base_, crash, log, d).ok());
  CheckOptions o;
  o.trace_path = log;
  // The holder escapes the checker's process group (setsid), which is killed when it exits.
  o.checker = std::string(kChecker) + "; src=$(findmnt -n -o SOURCE \"$POWERCUT_DIR\"); " +
              "cat /sys/block/${src#/dev/}/loop/backing_file > " + holder + ".backing; " +
              "echo ${src#/dev/} > " + holder + ".loop; " +
              "setsid unshare -m sleep 600 </dev/null >/dev/null 2>&1 & echo $! > " + holder +
              ".pid; true";
  o.fs = FsKind::kExt4;
  o.models = {*ParseCacheModel("off")};
  o.points.every_entry = true;  // a distinct image at every write, so every state is checked
  o.workers = 1;
  o.exhaustive = true;
  o.work_dir = dir_.File("work");
  int released = 0, calls = 0;
  int changed = 0;  // states whose image changed while the previous file system went away
  o.before_mount = [&](const std::string& image) -> std::string {
    ++calls;
    std::ifstream pid_in(holder + ".pid"), loop_in(holder + ".loop"),
        backing_in(holder + ".backing");
    pid_t pid = 0;
    std::string loop, backing;
    if (!(pid_in >> pid) || !(loop_in >> loop) || !std::getline(backing_in, backing)) return "";
    std::filesystem::remove(holder + ".pid");
    const std::string before = WholeImage(image);
    ::kill(pid, SIGKILL);
    // The old file system is gone once its loop device let go of the old backing file.
    const std::string sys = "/sys/block/" + loop + "/loop/backing_file";
    for (int i = 0; i < 2000; ++i) {
      std::ifstream now(sys);
      std::string current;
      if (!now || !std::getline(now, current) || current != backing) {
        ++released;
        if (WholeImage(image) != before) ++changed;
        return "";
      }
      ::usleep(5000);
    }
    return "the copied mount namespace kept the previous state's file system for 10 s";
  };
  auto report = RunCheck(o);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->results.size(), 1u);
  const ModelResult& r = report->results[0];
  EXPECT_GE(released, 2) << "the test's holders never held a file system; before_mount calls "
                         << calls << " states " << r.states << " checked " << r.checked;
  EXPECT_EQ(changed, 0) << "the previous state's file system wrote into the next state's image";
  EXPECT_EQ(r.violations, 0u) << ReportSummaryTable(*report);
  EXPECT_EQ(r.fs_repaired, 0u) << ReportSummaryTable(*report);
  EXPECT_EQ(r.fs_unrecoverable, 0u) << ReportSummaryTable(*report);
  std::ifstream pid_in(holder + ".pid");
  if (pid_t pid = 0; pid_in >> pid) ::kill(pid, SIGKILL);
}

}  // namespace
}  // namespace powercut::harness
