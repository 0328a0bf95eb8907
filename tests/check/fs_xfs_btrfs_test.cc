// xfs and btrfs checks by loop mount, on real images: each crash image is what the file system
// left on its device right after fsync (xfs: `xfs_io shutdown -f`, which flushes the log and stops
// all further writes; btrfs: a copy of the device taken while mounted, after fsync, with periodic
// commits and discards held off), so mounting it replays the xfs log / the btrfs tree log. The
// engine rebuilds the images from a trace of the changed blocks, mounts them (several workers at
// once: copies of one file system share its UUID/fsid) and judges the checker's `have` lines.
// Needs root, loop devices and mkfs.xfs / mkfs.btrfs (skips otherwise).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/image_io.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/check/engine.h"
#include "harness/check/loop_mount.h"
#include "harness/check/report.h"
#include "harness/trace/diff_trace.h"
#include "tests/harness_testing.h"

namespace powercut::harness {
namespace {

using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::StartsWith;
using testing::TempDir;

// xfs needs at least 300 MiB (mkfs.xfs refuses smaller data sections); sparse, so cheap.
constexpr uint64_t kImageBytes = 300ull << 20;

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Loop devices whose backing file lies under `dir` (there must be none once a check is over).
std::vector<std::string> LoopsBackedUnder(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/block", ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind("loop", 0) != 0) continue;
    std::string backing = ReadText(e.path().string() + "/loop/backing_file");
    if (backing.find(dir) != std::string::npos) out.push_back(name + " -> " + backing);
  }
  return out;
}

bool MountedUnder(const std::string& dir) {
  return ReadText("/proc/self/mountinfo").find(dir) != std::string::npos;
}

class XfsBtrfsCheck : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    fs_ = GetParam();
    if (::geteuid() != 0 || ::access("/dev/loop-control", W_OK) != 0) {
      GTEST_SKIP() << "needs root and /dev/loop-control";
    }
    std::string mkfs_tool = "mkfs." + fs_;
    if (std::system(("command -v " + mkfs_tool + " >/dev/null 2>&1").c_str()) != 0) {
      GTEST_SKIP() << mkfs_tool << " is not installed (tools/install-deps.sh installs it)";
    }
    ASSERT_FALSE(dir_.path().empty());
    base_ = dir_.File("base.img");
    testing::MakeImage(base_, kImageBytes);
    std::string mkfs = fmt::format("{} -q -f '{}' >/dev/null 2>&1", mkfs_tool, base_);
    ASSERT_EQ(std::system(mkfs.c_str()), 0) << mkfs;
    // Crash images after 1, 2 and 3 fsynced commits, each from its own mount of the base.
    for (int commits = 1; commits <= 3; ++commits) {
      std::string crash = dir_.File(fmt::format("crash{}.img", commits));
      ASSERT_NO_FATAL_FAILURE(MakeCrashImage(commits, crash));
      if (IsSkipped()) return;
      crashes_.push_back(crash);
    }
    checker_log_ = dir_.File("checker.log");
    // Prints `have <id>` for every intact commit file and appends one line per run to the log:
    // "<fs type> <rw|ro>:<ids>", so that the test sees what was really mounted and found.
    checker_ = fmt::format(
        "ids=; for f in \"$POWERCUT_DIR\"/commit-*; do [ -f \"$f\" ] && grep -q '^commit ' \"$f\" "
        "&& {{ echo \"have ${{f##*commit-}}\"; ids=\"$ids ${{f##*commit-}}\"; }}; done; "
        "echo \"$(stat -f -c %T \"$POWERCUT_DIR\") $(awk -v d=\"$POWERCUT_DIR\" '$5 == d "
        "{{ split($6, o, \",\"); print o[1] }}' /proc/self/mountinfo):$ids\" >> '{}'; true",
        checker_log_);
  }

  void MakeCrashImage(int commits, const std::string& crash) {
    std::string work = dir_.File("work.img");
    ASSERT_TRUE(CopySparse(base_, work).ok());
    std::string mnt = dir_.File("mnt");
    std::filesystem::create_directories(mnt);
    // btrfs: no periodic transaction commit and no async discard while the copy is taken, so
    // the device holds exactly what the fsyncs wrote (the tree log), nothing written later.
    auto mount = LoopMount::Mount(work, fs_, mnt, fs_ == "btrfs" ? "commit=300,nodiscard" : "");
    if (!mount.ok()) GTEST_SKIP() << "cannot mount " << fs_ << " here: " << mount.status();
    for (int i = 0; i < commits; ++i) {
      std::string path = fmt::format("{}/commit-{}", mnt, i);
      int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ASSERT_GE(fd, 0) << path;
      std::string text = fmt::format("commit {}\n", i);
      ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
      ASSERT_EQ(::fsync(fd), 0);
      ::close(fd);
    }
    int dfd = ::open(mnt.c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_GE(dfd, 0);
    ASSERT_EQ(::fsync(dfd), 0);
    ::close(dfd);
    if (fs_ == "xfs") {
      // Flush the log, then stop the file system: nothing reaches the device after this.
      std::string shutdown = fmt::format("xfs_io -x -c 'shutdown -f' '{}'", mnt);
      ASSERT_EQ(std::system(shutdown.c_str()), 0) << shutdown;
    }
    ASSERT_TRUE(CopySparse(work, crash).ok());
    ASSERT_TRUE((*mount)->Unmount().ok());
    std::filesystem::remove(work);
  }

  CheckOptions Options(const std::string& log) {
    CheckOptions o;
    o.trace_path = log;
    o.checker = checker_;
    o.fs = *ParseFsKind(fs_);
    o.workers = 2;
    o.max_examples = 1000;
    o.exhaustive = true;  // the tests walk every example
    o.work_dir = dir_.File("work-" + std::filesystem::path(log).stem().string());
    return o;
  }

  void ExpectNothingLeft() {
    EXPECT_FALSE(MountedUnder(dir_.path())) << ReadText("/proc/self/mountinfo");
    EXPECT_THAT(LoopsBackedUnder(dir_.path()), ::testing::IsEmpty());
  }

  std::string fs_;
  TempDir dir_;
  std::string base_;
  std::vector<std::string> crashes_;
  std::string checker_;
  std::string checker_log_;
};

// Steps: FLUSH (the base), then each crash image + FLUSH + its ack. Every state at an ack or flush
// point is a real crash image; under cache off and on alike, every acked commit must be read back
// after the journal replay, and the base must mount and show none.
TEST_P(XfsBtrfsCheck, CrashImagesAtFlushPointsMountAndShowTheAckedCommits) {
  std::string log = dir_.File("steps.log");
  ASSERT_TRUE(WriteDiffTraceSteps(base_,
                                  {{base_, true, {}},
                                   {crashes_[0], true, {"0"}},
                                   {crashes_[1], true, {"1"}},
                                   {crashes_[2], true, {"2"}}},
                                  log)
                  .ok());
  CheckOptions o = Options(log);
  o.models = {*ParseCacheModel("off"), *ParseCacheModel("on")};
  auto report = RunCheck(o);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->results.size(), 2u);
  uint64_t checked = 0;
  for (const ModelResult& r : report->results) {
    // Points: 4 flushes + 3 acks; one state each (nothing volatile, no tearable write).
    EXPECT_EQ(r.points, 7u);
    EXPECT_EQ(r.states, 7u);
    EXPECT_EQ(r.violations, 0u) << ReportSummaryTable(*report)
                                << (r.examples.empty() ? "" : r.examples[0].Describe());
    EXPECT_EQ(r.lost_acks_max, 0u);
    checked += r.checked;
  }
  // Four distinct images (base, 1, 2, 3 commits): four checker runs, every other state deduped.
  EXPECT_EQ(checked, 4u);
  // The checker saw exactly those four images. Two workers that meet one image at the same
  // moment may both run it (the check order starts both at the latest point): at most once more
  // per worker.
  std::vector<std::string> runs = Lines(ReadText(checker_log_));
  EXPECT_LE(runs.size(), 4u + 2u);
  std::sort(runs.begin(), runs.end());
  runs.erase(std::unique(runs.begin(), runs.end()), runs.end());
  std::string rw = fs_ + " rw:";
  EXPECT_THAT(runs, ElementsAre(rw, rw + " 0", rw + " 0 1", rw + " 0 1 2"));
  ExpectNothingLeft();
}

// All three commits' blocks without a FLUSH: under cache on, any subset may be lost. Losing all
// is the base image, which must mount and show none of them (a loss of every ack, recovered).
// Two workers mount copies of the same file system at once.
TEST_P(XfsBtrfsCheck, UnflushedCommitsAreLostUnderCacheOnAndTheBaseShowsNone) {
  std::string log = dir_.File("unflushed.log");
  DiffTraceOptions d;
  d.acks = {"0", "1", "2"};
  d.flush_before_acks = false;
  ASSERT_TRUE(WriteDiffTrace(base_, crashes_[2], log, d).ok());
  CheckOptions o = Options(log);
  o.models = {*ParseCacheModel("on")};
  o.states.samples = 4;
  o.states.max_all_but_one = 12;
  o.states.torn = false;
  auto report = RunCheck(o);
  ASSERT_TRUE(report.ok()) << report.status();
  bool clones = fs_ != "btrfs" || std::filesystem::exists("/sys/fs/btrfs/features/temp_fsid");
  EXPECT_EQ(report->workers, clones ? 2 : 1);
  ASSERT_EQ(report->results.size(), 1u);
  const ModelResult& r = report->results[0];
  EXPECT_GT(r.violations, 0u);
  EXPECT_EQ(r.lost_acks_max, 3u);
  EXPECT_EQ(r.checked + r.deduplicated, r.states);
  // The "all lost" state at the last ack point: the base, mounted fine, no commit.
  const Verdict* none = nullptr;
  for (const Verdict& v : r.examples) {
    EXPECT_THAT(v.state_id, ::testing::Not(::testing::HasSubstr("_kA"))) << v.Describe();
    if (v.state_id.find("_kN") != std::string::npos && v.acked_before == 3) none = &v;
  }
  ASSERT_NE(none, nullptr) << ReportSummaryTable(*report);
  EXPECT_TRUE(none->recovered) << none->Describe();
  EXPECT_EQ(none->mount_error, "");
  EXPECT_THAT(none->lost, ElementsAre("0", "1", "2"));
  std::vector<std::string> runs = Lines(ReadText(checker_log_));
  ASSERT_FALSE(runs.empty());
  EXPECT_THAT(runs, Each(StartsWith(fs_ + " rw:")));
  EXPECT_THAT(runs, ::testing::Contains(fs_ + " rw:"));        // the base
  EXPECT_THAT(runs, ::testing::Contains(fs_ + " rw: 0 1 2"));  // all kept
  ExpectNothingLeft();
}

INSTANTIATE_TEST_SUITE_P(Fs, XfsBtrfsCheck, ::testing::Values("xfs", "btrfs"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace powercut::harness
