// The boot path on real ext4 images (harness/check/boot_recovery.h, image_check.h): a clean
// image is recovered without repairs, a torn primary superblock is repaired from a backup, and an
// image whose only superblock is gone is the file system's outcome, not the program's. And the
// oracle's side: a torn never-acked record and an unrecoverable file system are not violations.
#include "harness/check/boot_recovery.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "base/process.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/check/image_check.h"
#include "harness/check/oracle.h"
#include "harness/trace/recorder.h"
#include "harness/trace/trace_reader.h"
#include "tests/harness_testing.h"

namespace powercut::harness {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;

constexpr char kChecker[] = "test \"$(cat \"$POWERCUT_DIR/commit\")\" = one && echo 'have 1'";

class Ext4BootPath : public ::testing::Test {
 protected:
  // An ext4 image of `bytes` (mkfs's own profile for that size) holding /commit = "one".
  std::string MakeExt4(uint64_t bytes) {
    std::string image = dir_.File("fs.img");
    std::string data = dir_.File("commit");
    auto mk = RunCommand({"sh", "-c",
                          fmt::format("truncate -s {0} {1} && mkfs.ext4 -q -F {1} && printf one > "
                                      "{2} && debugfs -w -R 'write {2} commit' {1}",
                                      bytes, image, data)});
    EXPECT_TRUE(mk.ok() && mk->exit_code == 0) << (mk.ok() ? mk->output : "");
    return image;
  }

  // Overwrites the first 512 bytes of the primary superblock (byte 1024): a 512-byte torn write.
  void TearPrimarySuperblock(const std::string& image) {
    int fd = ::open(image.c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    std::string junk(512, '\x5a');
    ASSERT_EQ(::pwrite(fd, junk.data(), junk.size(), 1024), 512);
    ::close(fd);
  }

  absl::StatusOr<ImageCheckResult> Check(const std::string& image) {
    std::string mnt = dir_.File("mnt");
    std::filesystem::create_directories(mnt);
    return CheckImageFile(image, {.fs = FsKind::kExt4, .checker = kChecker, .mountpoint = mnt});
  }

  TempDir dir_;
};

TEST_F(Ext4BootPath, ACleanImageComesBackWithoutRepairs) {
  auto r = Check(MakeExt4(512ull << 20));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->fs.repaired);
  EXPECT_FALSE(r->fs.unrecoverable);
  EXPECT_EQ(r->fs.Describe(), "e2fsck -p exit 0; mount ok");
  EXPECT_TRUE(r->checker.recovered());
  EXPECT_TRUE(r->checker.have.contains("1"));
}

TEST_F(Ext4BootPath, ATornPrimarySuperblockIsRepairedFromItsBackup) {
  std::string image = MakeExt4(512ull << 20);  // four block groups: backups in groups 1 and 3
  TearPrimarySuperblock(image);
  auto r = Check(image);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->fs.repaired) << r->fs.Describe();
  EXPECT_FALSE(r->fs.unrecoverable);
  // The boot check gives up (exit 8); `e2fsck -fy` finds the backup superblock by itself.
  EXPECT_THAT(r->fs.Describe(), HasSubstr("e2fsck -p exit 8"));
  EXPECT_THAT(r->fs.Describe(), HasSubstr("e2fsck -fy exit 1 (repaired)"));
  EXPECT_TRUE(r->checker.have.contains("1")) << r->fs.Describe();
}

TEST_F(Ext4BootPath, AFileSystemWithNoSuperblockLeftIsUnrecoverable) {
  std::string image = MakeExt4(64ull << 20);  // 1 KiB blocks, 8 groups: tear them all
  for (uint64_t group = 0; group < 8; ++group) {
    int fd = ::open(image.c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    std::string junk(1024, '\x5a');
    uint64_t at = group == 0 ? 1024 : (group * 8192 + 1) * 1024;
    ASSERT_EQ(::pwrite(fd, junk.data(), junk.size(), static_cast<off_t>(at)), 1024);
    ::close(fd);
  }
  auto r = Check(image);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->fs.unrecoverable) << r->fs.Describe();
  EXPECT_FALSE(r->checker.recovered());
  EXPECT_THAT(r->checker.setup_error, HasSubstr("file system unrecoverable"));
  EXPECT_THAT(r->fs.Describe(), HasSubstr("e2fsck -p exit 8"));
  EXPECT_THAT(r->fs.Describe(), HasSubstr("e2fsck -fy -b 8193 -B 1024 exit"));
}

TEST(BootPath, AMissingRecoveryToolIsAnErrorNamingThePackageNotAVerdict) {
  int mounts = 0;
  auto failing_mount = [&]() -> absl::Status {
    ++mounts;
    return absl::InvalidArgumentError("mount failed");
  };
  BootPath path{
      .fs_name = "myfs",
      .package = "myfs-tools",
      .recovery = {{.name = "myfs-repair", .argv = {"powercut-no-such-repair-tool", "{image}"}}}};
  auto r = RunBootPath(path, "/nonexistent.img", failing_mount, 5);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsNotFound(r.status())) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("apt-get install myfs-tools"));
  EXPECT_EQ(mounts, 1);  // the boot mount was tried; the missing tool stopped the recovery
}

TEST(BootPath, AMountThisProcessMayNotDoIsAnErrorNotAnUnrecoverableFileSystem) {
  int repairs_run = 0;
  BootPath path{.fs_name = "myfs", .recovery = {{.name = "repair", .argv = {"true", "{image}"}}}};
  auto r = RunBootPath(
      path, "/nonexistent.img",
      [&]() -> absl::Status {
        ++repairs_run;
        return absl::PermissionDeniedError("mount: Operation not permitted");
      },
      5);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsPermissionDenied(r.status())) << r.status();
  EXPECT_EQ(repairs_run, 1);  // stopped at the first mount: no repair tool touched the image
}

TEST(BootPath, EveryRecoveryStepIsTriedAndEachIsFollowedByAMount) {
  int mounts = 0;
  auto mount_after_second_repair = [&]() -> absl::Status {
    return ++mounts == 3 ? absl::OkStatus() : absl::InvalidArgumentError("mount failed");
  };
  BootPath path{
      .fs_name = "myfs",
      .recovery = {{.name = "first", .argv = {"true", "{image}"}, .repaired_exits = {0}},
                   {.name = "second", .argv = {"true", "{image}"}, .repaired_exits = {0}}}};
  auto r = RunBootPath(path, "/nonexistent.img", mount_after_second_repair, 5);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->repaired);
  EXPECT_FALSE(r->unrecoverable);
  EXPECT_EQ(r->Describe(),
            "mount failed: mount failed; first exit 0 (repaired); mount failed: mount failed; "
            "second exit 0 (repaired); mount ok");
}

// Acks "0" then "1": a crash between them.
class OracleOutcomes : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string log = dir_.File("t.log");
    auto rec = Recorder::Create({log, 512, 64 * 1024});
    ASSERT_TRUE(rec.ok()) << rec.status();
    std::string block(512, 'a');
    auto data = absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(block.data()), block.size());
    ASSERT_TRUE((*rec)->RecordWrite(0, data, true).ok());
    ASSERT_TRUE((*rec)->RecordAck("0").ok());
    ASSERT_TRUE((*rec)->RecordWrite(512, data, true).ok());
    ASSERT_TRUE((*rec)->RecordAck("1").ok());
    ASSERT_TRUE((*rec)->Finish().ok());
    auto file = TraceFile::Open(log, {.device_bytes = 64 * 1024});
    ASSERT_TRUE(file.ok()) << file.status();
    file_ = std::move(*file);
    index_ = std::make_unique<TraceIndex>(file_->trace());
  }

  Verdict Judge(const CompactOutput& out, bool fs_failures_are_violations = false,
                uint64_t point = 3, bool latest_ack_only = false) {
    Oracle oracle(*index_, false, fs_failures_are_violations, latest_ack_only);
    Verdict v;
    oracle.Judge(point, out, &v);  // 3: after ack "0", before the second write
    return v;
  }

  CompactOutput Have0(std::vector<std::string> corrupt = {}) {
    CompactOutput out;
    out.present = {{0, 1}};  // have "0", not "1"
    out.corrupt = std::move(corrupt);
    return out;
  }

  TempDir dir_;
  std::unique_ptr<TraceFile> file_;
  std::unique_ptr<TraceIndex> index_;
};

// An unavailable state (the system did not come back: `unavailable <text>`) is neither a
// violation nor a checker failure nor "could not check", whatever `have` lines came before it and
// however the checker ended; a protocol error still wins (nothing of such output is trusted).
TEST_F(OracleOutcomes, AnUnavailableStateIsNoViolationAndNoLoss) {
  CompactOutput out;  // not even "0": were it judged, "lost 1 of 1"
  out.unavailable = "the cluster did not come back: no quorum answered";
  out.exit_code = 1;
  out.stderr_tail = "--- node 2 (127.0.0.12): last lines\nwal: crc mismatch\n";
  Verdict v = Judge(out, /*fs_failures_are_violations=*/true);
  EXPECT_EQ(v.unavailable, out.unavailable);
  EXPECT_TRUE(v.lost.empty());
  EXPECT_FALSE(v.violation()) << v.Describe();
  EXPECT_FALSE(v.checker_failed());
  EXPECT_EQ(v.could_not_check, "");
  EXPECT_THAT(v.stderr_tail, HasSubstr("wal: crc mismatch"));
  EXPECT_THAT(v.Describe(), HasSubstr("unavailable: the cluster did not come back"));
  EXPECT_THAT(v.Describe(), Not(HasSubstr("not recoverable")));
  out.protocol_error = "checker stdout line 3 is not the protocol: \"hello\"";
  v = Judge(out);
  EXPECT_EQ(v.unavailable, "");
  EXPECT_FALSE(v.could_not_check.empty());
}

TEST_F(OracleOutcomes, ACorruptRecordThatWasNeverAckedIsATornTailNotAViolation) {
  Verdict v = Judge(Have0({"1"}));
  EXPECT_FALSE(v.violation()) << v.Describe();
  EXPECT_EQ(v.torn_unacked, std::vector<std::string>{"1"});
  EXPECT_TRUE(v.corrupt.empty());
  EXPECT_THAT(v.Describe(), HasSubstr("torn tail (never acked) [1]"));
}

TEST_F(OracleOutcomes, ACorruptAckedRecordIsAViolation) {
  Verdict v = Judge(Have0({"0"}));
  EXPECT_TRUE(v.violation());
  EXPECT_EQ(v.corrupt, std::vector<std::string>{"0"});
}

TEST_F(OracleOutcomes, AnUnrecoverableFileSystemIsTheFileSystemsOutcomeUnlessAsked) {
  CompactOutput out;
  out.present.clear();  // neither
  out.exit_code = -1;
  out.setup_error = "file system unrecoverable: e2fsck -p exit 8; ...";
  out.fs_unrecoverable = true;
  out.fs_steps = "e2fsck -p exit 8";
  Verdict v = Judge(out);
  EXPECT_FALSE(v.violation()) << v.Describe();
  EXPECT_TRUE(v.fs_unrecoverable);
  EXPECT_TRUE(v.lost.empty());  // the checker never saw the data: unknown, not lost
  EXPECT_THAT(v.Describe(), HasSubstr("not the program's"));
  Verdict strict = Judge(out, /*fs_failures_are_violations=*/true);
  EXPECT_TRUE(strict.violation());
  EXPECT_EQ(strict.lost, std::vector<std::string>{"0"});
}

TEST_F(OracleOutcomes, ARepairedFileSystemIsJudgedOnTheProgramsData) {
  CompactOutput out = Have0();
  out.fs_repaired = true;
  out.fs_steps = "e2fsck -fy exit 1 (repaired); mount ok";
  Verdict v = Judge(out);
  EXPECT_FALSE(v.violation());
  EXPECT_TRUE(v.fs_repaired);
  out.present.clear();  // neither
  EXPECT_TRUE(Judge(out).violation());
}

// The latest-ack rule (`powercut fstest`): only the last id acked before the crash point must be
// had, since its promises include every earlier one that still binds; the checker's `why` for it
// is quoted.
TEST_F(OracleOutcomes, TheLatestAckRuleJudgesOnlyTheLastIdAckedBeforeThePoint) {
  CompactOutput only_1;
  only_1.present = {{1, 2}};                                  // have "1", not "0"
  const uint64_t after_both = 4;                              // after entry 3, the mark of "1"
  EXPECT_TRUE(Judge(only_1, false, after_both).violation());  // the default rule: "0" is lost
  Verdict latest = Judge(only_1, false, after_both, /*latest_ack_only=*/true);
  EXPECT_FALSE(latest.violation()) << latest.Describe();
  EXPECT_EQ(latest.acked_before, 2u);

  CompactOutput only_0 = Have0();
  only_0.why = {{"1", "missing foo: not there"}};
  Verdict lost = Judge(only_0, false, after_both, true);
  EXPECT_TRUE(lost.violation());
  EXPECT_EQ(lost.lost, std::vector<std::string>{"1"});
  EXPECT_EQ(lost.why, std::vector<std::string>{"1: missing foo: not there"});
  EXPECT_THAT(lost.Describe(), HasSubstr("the checker says why: 1: missing foo: not there"));
  // Before any ack nothing binds; after "0" only "0" does.
  EXPECT_FALSE(Judge(CompactOutput{}, false, 1, true).violation());
  EXPECT_FALSE(Judge(only_0, false, 3, true).violation());
}

}  // namespace
}  // namespace powercut::harness
