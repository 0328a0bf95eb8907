// Warm guests (harness/vm/warm/warm_guest.h), end to end under qemu (label "vm"): one guest records
// several workloads, each on a fresh hot-plugged disk; a guest that misbehaves (a hang, a disk it
// will not release) is killed and the next recording runs on a clean one.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "base/hash.h"
#include "base/process.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/vm/warm/guest_judge.h"
#include "harness/vm/warm/guest_pool.h"
#include "tests/vm/vm_temp_dir.h"
#include "tests/vm/vm_test_env.h"

namespace powercut::vm {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The canary a recording leaves on its disk; no later recording's fresh disk may show it.
constexpr char kCanary[] = "powercut-canary-7f3a";

std::string HeadHash(const std::string& image) {
  std::ifstream in(image, std::ios::binary);
  std::vector<char> buf(1 << 20);
  in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
  return HashBytes({reinterpret_cast<const uint8_t*>(buf.data()), buf.size()}).Hex();
}

class WarmGuestTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto env = testing::PrepareTestVm();
    if (!env.ok()) {
      skip_reason_ = new std::string(env.status().message());
      return;
    }
    env_ = new VmEnvironment(*env);
  }

  void SetUp() override {
    if (skip_reason_ != nullptr) GTEST_SKIP() << *skip_reason_;
  }

  RunSpec Spec(harness::FsKind fs, const std::string& command, const std::string& name) {
    RunSpec spec;
    spec.fs = fs;
    spec.command = command;
    spec.output_dir = dir_ / name;
    spec.timeout = std::chrono::seconds(240);
    return spec;
  }

  // Records and prints what it cost.
  absl::StatusOr<RunResult> Record(GuestPool& pool, const RunSpec& spec) {
    auto r = pool.Record(spec);
    if (r.ok()) {
      fmt::print("{}: boot {:.1f} s, job {:.2f} s (workload {:.2f} s), {} acks, guest {}\n",
                 fs::path(spec.output_dir).filename().string(), r->boot_seconds, r->wall_seconds,
                 r->workload_seconds, r->host_acks.size(), r->reused_guest ? "reused" : "booted");
    } else {
      fmt::print("{}: {}\n", fs::path(spec.output_dir).filename().string(),
                 std::string(r.status().message()).substr(0, 300));
    }
    return r;
  }

  static VmEnvironment* env_;
  static std::string* skip_reason_;
  VmTempDir dir_;
};

VmEnvironment* WarmGuestTest::env_ = nullptr;
std::string* WarmGuestTest::skip_reason_ = nullptr;

TEST_F(WarmGuestTest, EachRecordingSeesAFreshDiskAndOnlyItsOwnAcks) {
  GuestPool pool(*env_, {.modules = {"ext4"}, .keep_paths = {}});
  // Raw: the first recording writes the canary at the start of the device, the second must read
  // zeros there (the agent's O_DIRECT and page-cache hashes of the first MiB are also compared
  // with base.img by the host on every recording).
  auto a = Record(pool, Spec(harness::FsKind::kRaw,
                             fmt::format("printf {} | dd of=$POWERCUT_DEV conv=fsync status=none "
                                         "&& echo 'ack a1' >&$POWERCUT_ACK_FD",
                                         kCanary),
                             "raw-canary"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->guest.exit_code, 0);
  EXPECT_THAT(a->host_acks, ElementsAre("a1"));
  EXPECT_FALSE(a->reused_guest);
  auto b = Record(
      pool, Spec(harness::FsKind::kRaw,
                 fmt::format("head -c 1048576 $POWERCUT_DEV | grep -q {} && exit 9; "
                             "echo 'ack b1' >&$POWERCUT_ACK_FD; echo 'ack b2' >&$POWERCUT_ACK_FD",
                             kCanary),
                 "raw-fresh"));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->guest.exit_code, 0) << "the second disk showed the first one's canary";
  EXPECT_THAT(b->host_acks, ElementsAre("b1", "b2"));
  EXPECT_TRUE(b->reused_guest);
  EXPECT_EQ(b->guest.head_hash_direct, HeadHash(b->base_image));
  EXPECT_EQ(b->guest.head_hash_cached, HeadHash(b->base_image));

  // ext4: a file written and synced in one recording is not on the next one's file system, and
  // the trace of each holds only its own ack marks.
  auto c = Record(pool, Spec(harness::FsKind::kExt4,
                             fmt::format("echo {} > canary && sync canary && "
                                         "echo 'ack c1' >&$POWERCUT_ACK_FD",
                                         kCanary),
                             "ext4-canary"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->guest.exit_code, 0);
  auto d = Record(
      pool, Spec(harness::FsKind::kExt4,
                 "test ! -e canary || exit 9; echo 'ack d1' >&$POWERCUT_ACK_FD", "ext4-fresh"));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->guest.exit_code, 0) << "the second ext4 disk holds the first one's file";
  EXPECT_THAT(d->host_acks, ElementsAre("d1"));
  EXPECT_EQ(d->guest.head_hash_direct, HeadHash(d->base_image));
  EXPECT_EQ(pool.boots(), 1u);
}

TEST_F(WarmGuestTest, ProcessesAWorkloadLeavesBehindAreKilledAndTheGuestStaysUsable) {
  GuestPool pool(*env_);
  // The background sleep holds a file on the disk and the ack pipe open after the shell exits.
  auto a =
      Record(pool, Spec(harness::FsKind::kExt4,
                        "sleep 1000 > held 2>&1 & echo 'ack 1' >&$POWERCUT_ACK_FD", "leftover"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->guest.exit_code, 0);
  EXPECT_GE(a->guest.leftover_processes, 1u);
  EXPECT_THAT(a->host_acks, ElementsAre("1"));
  auto b = Record(pool, Spec(harness::FsKind::kExt4,
                             "test ! -e held || exit 9; echo 'ack 2' >&$POWERCUT_ACK_FD", "next"));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->guest.exit_code, 0);
  EXPECT_EQ(b->guest.leftover_processes, 0u);
  EXPECT_TRUE(b->reused_guest);
  EXPECT_EQ(pool.boots(), 1u);
}

TEST_F(WarmGuestTest, ADiskTheGuestStillHoldsFailsTheRecordingAndTheNextRunsOnACleanGuest) {
  GuestPool pool(*env_);
  // A bind mount outlives the unmount of the disk's mount point: the disk is not released.
  auto a = Record(pool, Spec(harness::FsKind::kExt4,
                             "mkdir -p /tmp/hold && mount --bind $POWERCUT_DIR /tmp/hold && "
                             "echo 'ack 1' >&$POWERCUT_ACK_FD",
                             "held-disk"));
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(std::string(a.status().message()), HasSubstr("still in use in the guest"));
  EXPECT_THAT(std::string(a.status().message()), HasSubstr("the guest was killed"));
  auto b = Record(
      pool, Spec(harness::FsKind::kExt4,
                 "mountpoint -q /tmp/hold && exit 9; echo 'ack 2' >&$POWERCUT_ACK_FD", "after"));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->guest.exit_code, 0) << "the next recording ran in the guest that held the disk";
  EXPECT_FALSE(b->reused_guest);
  EXPECT_EQ(pool.boots(), 2u);
}

TEST_F(WarmGuestTest, AHangPastTheTimeoutIsReportedAndTheGuestReplaced) {
  GuestPool pool(*env_);
  RunSpec hang =
      Spec(harness::FsKind::kExt4, "echo 'ack 1' >&$POWERCUT_ACK_FD; sleep 1000", "hang");
  hang.timeout = std::chrono::seconds(5);
  auto a = Record(pool, hang);
  ASSERT_FALSE(a.ok());
  EXPECT_TRUE(absl::IsDeadlineExceeded(a.status())) << a.status();
  EXPECT_THAT(std::string(a.status().message()), HasSubstr("did not finish within 5 s"));
  auto b = Record(pool, Spec(harness::FsKind::kExt4, "echo 'ack 2' >&$POWERCUT_ACK_FD", "after"));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_THAT(b->host_acks, ElementsAre("2"));
  EXPECT_EQ(pool.boots(), 2u);
}

TEST_F(WarmGuestTest, ADiskNotReleasedInTimeFailsTheRecordingAndKillsTheGuest) {
  // device_del that does not complete within the release timeout (1 ms: no guest handles the
  // ACPI eject that fast) takes the path of a guest that never gives the disk back.
  GuestPool pool(*env_, {}, std::chrono::milliseconds(1));
  auto a = Record(pool, Spec(harness::FsKind::kExt4, "echo 'ack 1' >&$POWERCUT_ACK_FD", "slow"));
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(std::string(a.status().message()), HasSubstr("did not release disk"));
  EXPECT_THAT(std::string(a.status().message()), HasSubstr("the guest was killed"));
  EXPECT_EQ(pool.boots(), 1u);
}

// A guest whose first boot fails (here: a qemu whose first start boots a garbage initramfs, so the
// kernel panics at boot as the timer check under load made it panic) is booted once more, and the
// recording runs on the second guest, saying what happened to the first.
TEST_F(WarmGuestTest, AFailedBootIsTriedOnceMore) {
  const fs::path bin = dir_ / "bin";
  fs::create_directories(bin);
  const fs::path wrapper = bin / "qemu-system-x86_64";
  {
    std::ofstream out(wrapper);
    out << "#!/bin/bash\n"
           "real=$(PATH=${PATH#*:} command -v qemu-system-x86_64)\n"
           "if [ ! -e \"$0.failed\" ]; then\n"
           "  : > \"$0.failed\"; echo not-a-cpio > \"$0.initrd\"\n"
           "  args=(); prev=\n"
           "  for a in \"$@\"; do [ \"$prev\" = -initrd ] && args+=(\"$0.initrd\") || "
           "args+=(\"$a\"); "
           "prev=$a; done\n"
           "  exec \"$real\" \"${args[@]}\"\n"
           "fi\n"
           "exec \"$real\" \"$@\"\n";
  }
  fs::permissions(wrapper, fs::perms::owner_all);
  const std::string path = std::getenv("PATH");
  ::setenv("PATH", (bin.string() + ":" + path).c_str(), 1);
  GuestPool pool(*env_);
  auto r = Record(pool, Spec(harness::FsKind::kExt4, "echo ack 1 >&$POWERCUT_ACK_FD", "retry"));
  ::setenv("PATH", path.c_str(), 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(fs::exists(bin / "qemu-system-x86_64.failed"));  // the fault did happen
  EXPECT_EQ(r->host_acks.size(), 1u);
  EXPECT_THAT(r->boot_failure, HasSubstr("before its agent started"));
  EXPECT_EQ(pool.boots(), 1u);
  EXPECT_EQ(pool.boot_failures(), 1u);
}

// `powercut run` judging in guests: the guest that recorded is taken over as the first checking
// guest, so the check boots none.
TEST_F(WarmGuestTest, TheRecordingGuestIsTakenOverAsTheFirstCheckingGuest) {
  GuestPool recorders(*env_);
  auto r = Record(recorders, Spec(harness::FsKind::kExt4, "echo ack 1 >&$POWERCUT_ACK_FD", "rec"));
  ASSERT_TRUE(r.ok()) << r.status();
  std::unique_ptr<WarmGuest> recorder = recorders.TakeIdleGuest();
  ASSERT_NE(recorder, nullptr);
  EXPECT_EQ(recorders.TakeIdleGuest(), nullptr);  // taken out of the recording pool
  const WarmGuest* const taken = recorder.get();
  GuestCheckPool checks(*env_);
  checks.Adopt(std::move(recorder));
  auto leased = checks.Lease({.modules = GuestModulesFor(harness::FsKind::kExt4, false, false)});
  ASSERT_TRUE(leased.ok()) << leased.status();
  EXPECT_EQ(leased->guest.get(), taken);
  EXPECT_EQ(checks.adopted(), 1u);
  EXPECT_EQ(checks.boots(), 0u);
  checks.Return(std::move(leased->guest), std::move(leased->disks));
}

// At the pool's cap a judge that needs a guest waits for one to come back instead of booting
// another (a guest is one vCPU: more than one per core only share the cores).
TEST_F(WarmGuestTest, AtTheCapAJudgeWaitsForTheCheckingGuestInsteadOfBootingAnother) {
  GuestCheckPool checks(*env_, /*max_guests=*/1);
  auto first = checks.Lease({});
  ASSERT_TRUE(first.ok()) << first.status();
  const WarmGuest* const guest = first->guest.get();
  absl::StatusOr<GuestCheckPool::Leased> second = absl::UnknownError("not leased");
  std::thread judge([&] { second = checks.Lease({}); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (checks.waiting() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_EQ(checks.waiting(), 1u);  // the second judge waits: nothing came back yet
  checks.Return(std::move(first->guest), std::move(first->disks));
  judge.join();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->guest.get(), guest);
  EXPECT_EQ(checks.boots(), 1u);
  checks.Return(std::move(second->guest), std::move(second->disks));
}

}  // namespace
}  // namespace powercut::vm
