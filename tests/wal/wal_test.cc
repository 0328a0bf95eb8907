// The WAL on one thread: every barrier mode, segments (roll, preallocation, recycling), error
// fencing, bad input, and the syscall budget of an uncontended commit.
#include "wal/wal.h"

#include <fmt/format.h>

#include <cerrno>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/wal/wal_test_util.h"
#include "wal/crc32c.h"
#include "wal/testing/fault_injection_env.h"

namespace powercut::wal {
namespace {

using testing::Bytes;
using ::testing::HasSubstr;
using testing::Payload;
using testing::ScanLog;
using testing::TempDir;

std::string Msg(const absl::Status& s) { return std::string(s.message()); }

// --- every barrier mode ------------------------------------------------------------------------

class BarrierModeTest : public ::testing::TestWithParam<Barrier> {};

TEST_P(BarrierModeTest, AppendSyncCommitCloseReadBack) {
  TempDir dir;
  WalOptions options;
  options.barrier = GetParam();
  options.segment_bytes = 32 * 1024;  // small: several rolls
  auto wal = Wal::Open(dir.File("wal"), options);
  ASSERT_TRUE(wal.ok()) << wal.status();
  std::vector<std::string> payloads;
  for (int i = 0; i < 300; ++i) {
    payloads.push_back(Payload(0, i, 1 + (i * 37) % 700));
    if (i % 3 == 0) {
      auto lsn = (*wal)->Commit(Bytes(payloads.back()));
      ASSERT_TRUE(lsn.ok()) << lsn.status();
      EXPECT_EQ(*lsn, payloads.size());
      EXPECT_EQ((*wal)->DurableLsn(), *lsn);
    } else {
      auto lsn = (*wal)->Append(Bytes(payloads.back()));
      ASSERT_TRUE(lsn.ok()) << lsn.status();
      EXPECT_EQ(*lsn, payloads.size());
      if (i % 10 == 1) {
        ASSERT_TRUE((*wal)->Sync(*lsn).ok());
        EXPECT_GE((*wal)->DurableLsn(), *lsn);
      }
    }
  }
  (*wal)->Append(Bytes("unsynced-before-close")).IgnoreError();
  payloads.emplace_back("unsynced-before-close");
  EXPECT_EQ((*wal)->LastLsn(), payloads.size());
  ASSERT_TRUE((*wal)->Close().ok());
  EXPECT_EQ((*wal)->DurableLsn(), payloads.size());

  auto log = ScanLog(Env::Default(), dir.File("wal"));
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_EQ(log->records.size(), payloads.size());
  for (size_t i = 0; i < payloads.size(); ++i) {
    EXPECT_EQ(log->records[i].lsn, i + 1);
    EXPECT_EQ(log->records[i].payload, payloads[i]) << "LSN " << i + 1;
  }
  EXPECT_GE(log->segments, 3u);
  EXPECT_EQ(log->seals, log->segments - 1);
}

TEST_P(BarrierModeTest, UncontendedCommitIsOneWriteAndOneBarrier) {
  TempDir dir;
  FaultInjectionEnv env(Env::Default());
  WalOptions options;
  options.barrier = GetParam();
  options.env = &env;
  options.segment_bytes = 1 << 20;
  auto wal = Wal::Open(dir.File("wal"), options);
  ASSERT_TRUE(wal.ok()) << wal.status();
  const CallCounts before = env.counts();
  const uint64_t calls_before = env.counted_calls();
  constexpr int kCommits = 50;
  for (int i = 0; i < kCommits; ++i) {
    auto lsn = (*wal)->Commit(Bytes(Payload(0, i)));
    ASSERT_TRUE(lsn.ok()) << lsn.status();
  }
  const CallCounts after = env.counts();
  const uint64_t calls = env.counted_calls() - calls_before;
  const Barrier b = GetParam();
  EXPECT_EQ(after.writes - before.writes, uint64_t{kCommits});
  const uint64_t barriers = after.barriers() - before.barriers();
  const uint64_t sfr = after.sync_file_ranges - before.sync_file_ranges;
  if (b == Barrier::kNone || b == Barrier::kDirect) {
    EXPECT_EQ(barriers, 0u);
    EXPECT_EQ(calls, uint64_t{kCommits});  // the write and nothing else
  } else if (b == Barrier::kSyncFileRange) {
    EXPECT_EQ(barriers, 0u);
    EXPECT_EQ(sfr, uint64_t{kCommits});
    EXPECT_EQ(calls, 2u * kCommits);
  } else {
    EXPECT_EQ(barriers, uint64_t{kCommits});
    // Barriers carried by the write itself (O_DSYNC, RWF_DSYNC, linked) need no second call.
    const bool in_write = b == Barrier::kOdsync || b == Barrier::kRwfDsync ||
                          b == Barrier::kDirectDsync || b == Barrier::kIoUring;
    EXPECT_EQ(calls, (in_write ? 1u : 2u) * kCommits);
  }
  EXPECT_EQ(after.opens, before.opens);
  EXPECT_EQ(after.renames, before.renames);
  ASSERT_TRUE((*wal)->Close().ok());
}

TEST_P(BarrierModeTest, CommitAsyncRunsEachCallbackOnceInOrder) {
  TempDir dir;
  WalOptions options;
  options.barrier = GetParam();
  options.segment_bytes = 1 << 20;
  auto wal = Wal::Open(dir.File("wal"), options);
  ASSERT_TRUE(wal.ok()) << wal.status();
  std::vector<Lsn> done;
  for (int i = 0; i < 20; ++i) {
    (*wal)->CommitAsync(Bytes(Payload(0, i)), [&, i](absl::StatusOr<Lsn> lsn) {
      ASSERT_TRUE(lsn.ok()) << lsn.status();
      EXPECT_EQ(*lsn, Lsn(i + 1));
      done.push_back(*lsn);
    });
  }
  // Single thread, no leader in flight: each CommitAsync led its own round.
  ASSERT_EQ(done.size(), 20u);
  for (size_t i = 0; i < done.size(); ++i) EXPECT_EQ(done[i], i + 1);
  EXPECT_EQ((*wal)->DurableLsn(), 20u);
  ASSERT_TRUE((*wal)->Close().ok());
}

TEST_P(BarrierModeTest, ReopenContinuesACleanLog) {
  TempDir dir;
  WalOptions options;
  options.barrier = GetParam();
  options.segment_bytes = 32 * 1024;
  std::vector<std::string> payloads;
  for (int round = 0; round < 3; ++round) {
    auto wal = Wal::Open(dir.File("wal"), options);
    ASSERT_TRUE(wal.ok()) << "round " << round << ": " << wal.status();
    EXPECT_EQ((*wal)->LastLsn(), payloads.size());
    EXPECT_EQ((*wal)->DurableLsn(), payloads.size());
    for (int i = 0; i < 70; ++i) {
      payloads.push_back(Payload(round, i, 1 + (i * 53) % 900));
      auto lsn = (*wal)->Commit(Bytes(payloads.back()));
      ASSERT_TRUE(lsn.ok()) << lsn.status();
      ASSERT_EQ(*lsn, payloads.size());
    }
    if (round == 1) {
      wal->reset();  // no Close: like a process exit after the last acknowledged commit
    } else {
      ASSERT_TRUE((*wal)->Close().ok());
    }
  }
  auto log = ScanLog(Env::Default(), dir.File("wal"));
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_EQ(log->records.size(), payloads.size());
  for (size_t i = 0; i < payloads.size(); ++i) {
    EXPECT_EQ(log->records[i].payload, payloads[i]) << "LSN " << i + 1;
  }
}

INSTANTIATE_TEST_SUITE_P(AllBarriers, BarrierModeTest, ::testing::ValuesIn(AllBarriers()),
                         [](const auto& param_info) {
                           return std::string(BarrierName(param_info.param));
                         });

// --- segments
// -------------------------------------------------------------------------------------

std::vector<uint64_t> SegmentSizes(const std::string& dir) {
  std::vector<uint64_t> sizes;
  const std::vector<std::string> names = *Env::Default()->ListDir(dir);
  for (const std::string& name : names) {
    if (ParseSegmentFileName(name)) {
      sizes.push_back(*Env::Default()->FileSize(dir + "/" + name));
    }
  }
  return sizes;
}

TEST(WalSegmentTest, PreallocatedSegmentsHaveFullSizeFromTheStart) {
  TempDir dir;
  WalOptions options;
  options.segment_bytes = 256 * 1024;
  auto wal = Wal::Open(dir.File("wal"), options);
  ASSERT_TRUE(wal.ok()) << wal.status();
  EXPECT_THAT(SegmentSizes(dir.File("wal")), ::testing::ElementsAre(256 * 1024));
  ASSERT_TRUE((*wal)->Commit(Bytes("x")).ok());
  EXPECT_THAT(SegmentSizes(dir.File("wal")), ::testing::ElementsAre(256 * 1024));
  ASSERT_TRUE((*wal)->Close().ok());
}

TEST(WalSegmentTest, WithoutPreallocationSegmentsGrow) {
  TempDir dir;
  WalOptions options;
  options.segment_bytes = 64 * 1024;
  options.preallocate = false;
  auto wal = Wal::Open(dir.File("wal"), options);
  ASSERT_TRUE(wal.ok()) << wal.status();
  EXPECT_THAT(SegmentSizes(dir.File("wal")), ::testing::ElementsAre(kSegmentHeaderSize));
  ASSERT_TRUE((*wal)->Commit(Bytes("12345")).ok());
  EXPECT_THAT(SegmentSizes(dir.File("wal")),
              ::testing::ElementsAre(kSegmentHeaderSize + kRecordHeaderSize + 5));
  for (int i = 0; i < 200; ++i) ASSERT_TRUE((*wal)->Commit(Bytes(Payload(0, i, 1000))).ok());
  ASSERT_TRUE((*wal)->Close().ok());
  auto sizes = SegmentSizes(dir.File("wal"));
  ASSERT_GE(sizes.size(), 3u);
  for (uint64_t s : sizes) EXPECT_LE(s, 64u * 1024);
  auto log = ScanLog(Env::Default(), dir.File("wal"));
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(log->records.size(), 201u);
}

TEST(WalSegmentTest, RecycledSegmentsKeepTheDirectoryBoundedAndStaleRecordsUnread) {
  TempDir dir;
  WalOptions options;
  options.segment_bytes = 16 * 1024;
  auto wal = Wal::Open(dir.File("wal"), options);
  ASSERT_TRUE(wal.ok()) << wal.status();
  std::vector<std::string> payloads;
  for (int i = 0; i < 400; ++i) {
    payloads.push_back(Payload(0, i, 500));
    auto lsn = (*wal)->Commit(Bytes(payloads.back()));
    ASSERT_TRUE(lsn.ok()) << lsn.status();
    // A consumer that keeps only the last 20 records.
    if (*lsn > 20) {
      ASSERT_TRUE((*wal)->ReleaseUpTo(*lsn - 20).ok());
    }
    EXPECT_LE(SegmentSizes(dir.File("wal")).size(), 4u) << "at LSN " << *lsn;
  }
  ASSERT_TRUE((*wal)->Close().ok());
  // The recycled files hold stale records of an older salt after the new ones: the scan must stop
  // at the last real record and every record it returns must be the right one.
  auto log = ScanLog(Env::Default(), dir.File("wal"));
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_FALSE(log->records.empty());
  EXPECT_EQ(log->records.back().lsn, 400u);
  EXPECT_LE(log->records.front().lsn, 381u);
  for (const auto& r : log->records) EXPECT_EQ(r.payload, payloads[r.lsn - 1]) << r.lsn;
}

TEST(WalSegmentTest, WithoutRecyclingReleasedSegmentsAreRemoved) {
  TempDir dir;
  WalOptions options;
  options.segment_bytes = 16 * 1024;
  options.recycle_segments = false;
  auto wal = Wal::Open(dir.File("wal"), options);
  ASSERT_TRUE(wal.ok()) << wal.status();
  for (int i = 0; i < 300; ++i) {
    auto lsn = (*wal)->Commit(Bytes(Payload(0, i, 500)));
    ASSERT_TRUE(lsn.ok()) << lsn.status();
    ASSERT_TRUE((*wal)->ReleaseUpTo(*lsn).ok());
  }
  // ~10 segments were filled. Released segments are removed by the background job that each
  // segment switch submits, so at any moment at most three exist: the active one, the one closed
  // at the last switch (released, waiting for the next switch's job), and the one that switch's
  // job is still removing. A switch waits for the previous job, so the count cannot grow further.
  EXPECT_LE(SegmentSizes(dir.File("wal")).size(), 3u);
  ASSERT_TRUE((*wal)->Close().ok());
}

TEST(WalSegmentTest, MaxBatchBytesBoundsOneWrite) {
  TempDir dir;
  FaultInjectionEnv env(Env::Default());
  WalOptions options;
  options.env = &env;
  options.max_batch_bytes = 1000;  // fits one 600-byte record
  auto wal = Wal::Open(dir.File("wal"), options);
  ASSERT_TRUE(wal.ok()) << wal.status();
  Lsn last = 0;
  for (int i = 0; i < 10; ++i) last = *(*wal)->Append(Bytes(Payload(0, i, 600)));
  const uint64_t writes = env.counts().writes;
  ASSERT_TRUE((*wal)->Sync(last).ok());
  EXPECT_EQ(env.counts().writes - writes, 10u);
  ASSERT_TRUE((*wal)->Close().ok());
  EXPECT_EQ(ScanLog(&env, dir.File("wal"))->records.size(), 10u);
}

TEST(WalSegmentTest, MaxBatchWaitStillCommits) {
  TempDir dir;
  WalOptions options;
  options.max_batch_wait = absl::Microseconds(200);
  auto wal = Wal::Open(dir.File("wal"), options);
  ASSERT_TRUE(wal.ok()) << wal.status();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(*(*wal)->Commit(Bytes("r")), Lsn(i + 1));
  ASSERT_TRUE((*wal)->Close().ok());
}

TEST(WalReopenTest, TornTailIsRefusedWithSegmentAndOffset) {
  TempDir dir;
  {
    auto wal = Wal::Open(dir.File("wal"), WalOptions{});
    ASSERT_TRUE(wal.ok()) << wal.status();
    for (int i = 0; i < 5; ++i) ASSERT_TRUE((*wal)->Commit(Bytes(Payload(0, i))).ok());
    ASSERT_TRUE((*wal)->Close().ok());
  }
  // Tear the last record: flip one payload byte of LSN 5.
  const std::string path = dir.File("wal/" + SegmentFileName(1));
  auto file = Env::Default()->Open(path, OpenOptions{});
  ASSERT_TRUE(file.ok());
  const uint64_t record = kRecordHeaderSize + 100;
  const uint64_t last = kSegmentHeaderSize + 4 * record;
  ASSERT_TRUE((*file)->Write(last + kRecordHeaderSize + 3, Bytes("#")).ok());
  auto reopened = Wal::Open(dir.File("wal"), WalOptions{});
  ASSERT_FALSE(reopened.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(reopened.status())) << reopened.status();
  EXPECT_THAT(Msg(reopened.status()), HasSubstr(path));
  EXPECT_THAT(Msg(reopened.status()), HasSubstr(fmt::format("offset {}", last)));
  EXPECT_THAT(Msg(reopened.status()), HasSubstr("OpenAndRecover"));
}

TEST(WalReopenTest, FullLastSegmentRollsOnReopen) {
  TempDir dir;
  WalOptions options;
  options.segment_bytes = 16 * 1024;
  options.preallocate = false;
  // 12288 bytes of record space; 3 records of 4082 bytes fit with the seal reserve, and leave
  // less than a header and a seal, so the reopened log seals this segment and starts a new one.
  {
    auto wal = Wal::Open(dir.File("wal"), options);
    ASSERT_TRUE(wal.ok()) << wal.status();
    for (int i = 0; i < 3; ++i) ASSERT_TRUE((*wal)->Commit(Bytes(Payload(0, i, 4050))).ok());
    ASSERT_TRUE((*wal)->Close().ok());
  }
  ASSERT_EQ(SegmentSizes(dir.File("wal")).size(), 1u);
  auto wal = Wal::Open(dir.File("wal"), options);
  ASSERT_TRUE(wal.ok()) << wal.status();
  EXPECT_EQ(*(*wal)->Commit(Bytes("next")), 4u);
  ASSERT_TRUE((*wal)->Close().ok());
  auto log = ScanLog(Env::Default(), dir.File("wal"));
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(log->records.size(), 4u);
  EXPECT_EQ(log->segments, 2u);
  EXPECT_EQ(log->seals, 1u);
}

// --- error fencing
// --------------------------------------------------------------------------------

struct FenceCase {
  FaultOp op;
  int error_number;
  Barrier barrier;
};

class WalFenceTest : public ::testing::TestWithParam<FenceCase> {};

TEST_P(WalFenceTest, FailedWriteOrBarrierFencesTheLog) {
  TempDir dir;
  FaultInjectionEnv env(Env::Default());
  WalOptions options;
  options.env = &env;
  options.barrier = GetParam().barrier;
  auto wal = Wal::Open(dir.File("wal"), options);
  ASSERT_TRUE(wal.ok()) << wal.status();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*wal)->Commit(Bytes("ok")).ok());
  ASSERT_EQ((*wal)->DurableLsn(), 3u);

  env.FailOp(GetParam().op, 1, GetParam().error_number);
  auto failed = (*wal)->Commit(Bytes("fails"));
  ASSERT_FALSE(failed.ok());
  EXPECT_TRUE(absl::IsDataLoss(failed.status())) << failed.status();
  EXPECT_THAT(Msg(failed.status()), HasSubstr("durability unknown"));
  EXPECT_THAT(Msg(failed.status()), HasSubstr(std::strerror(GetParam().error_number)));
  EXPECT_THAT(Msg(failed.status()), HasSubstr("reopen and recover"));
  EXPECT_EQ((*wal)->DurableLsn(), 3u);

  // The fault was one-shot, but the log stays fenced: no retry, no later success.
  const CallCounts counts = env.counts();
  EXPECT_TRUE(absl::IsDataLoss((*wal)->Commit(Bytes("later")).status()));
  EXPECT_TRUE(absl::IsDataLoss((*wal)->Append(Bytes("later")).status()));
  EXPECT_TRUE(absl::IsDataLoss((*wal)->Sync(4)));
  EXPECT_TRUE((*wal)->Sync(3).ok());  // passed its barrier before the fault: still durable
  EXPECT_TRUE(absl::IsDataLoss((*wal)->health()));
  bool called = false;
  (*wal)->CommitAsync(Bytes("async"), [&](const absl::StatusOr<Lsn>& lsn) {
    called = true;
    EXPECT_TRUE(absl::IsDataLoss(lsn.status()));
  });
  EXPECT_TRUE(called);
  EXPECT_EQ(env.counts().writes, counts.writes);
  EXPECT_EQ(env.counts().barriers(), counts.barriers());
  EXPECT_EQ((*wal)->DurableLsn(), 3u);
  EXPECT_TRUE(absl::IsDataLoss((*wal)->Close()));
}

INSTANTIATE_TEST_SUITE_P(Faults, WalFenceTest,
                         ::testing::Values(FenceCase{FaultOp::kWrite, EIO, Barrier::kFdatasync},
                                           FenceCase{FaultOp::kSync, EIO, Barrier::kFdatasync},
                                           FenceCase{FaultOp::kWrite, ENOSPC, Barrier::kFdatasync},
                                           FenceCase{FaultOp::kSync, ENOSPC, Barrier::kFsync},
                                           FenceCase{FaultOp::kWrite, EIO, Barrier::kRwfDsync},
                                           FenceCase{FaultOp::kWrite, EIO, Barrier::kDirectDsync},
                                           FenceCase{FaultOp::kWrite, EIO, Barrier::kIoUring},
                                           FenceCase{FaultOp::kSync, EIO, Barrier::kSyncFileRange}),
                         [](const auto& param_info) {
                           const FenceCase& c = param_info.param;
                           const char* op = c.op == FaultOp::kWrite ? "write" : "sync";
                           return std::string(op) + "_" +
                                  (c.error_number == EIO ? "EIO" : "ENOSPC") + "_" +
                                  std::string(BarrierName(c.barrier));
                         });

TEST(WalFenceTest, FailedSegmentRollFencesTheLog) {
  TempDir dir;
  FaultInjectionEnv env(Env::Default());
  WalOptions options;
  options.env = &env;
  options.segment_bytes = 16 * 1024;
  auto wal = Wal::Open(dir.File("wal"), options);
  ASSERT_TRUE(wal.ok()) << wal.status();
  env.FailOp(FaultOp::kSyncDir, 1, EIO);  // the next segment's directory entry
  absl::Status status;
  Lsn acked = 0;
  for (int i = 0; i < 100 && status.ok(); ++i) {
    auto lsn = (*wal)->Commit(Bytes(Payload(0, i, 1000)));
    status = lsn.status();
    if (lsn.ok()) acked = *lsn;
  }
  EXPECT_TRUE(absl::IsDataLoss(status)) << status;
  EXPECT_THAT(Msg(status), HasSubstr("wal-"));
  EXPECT_EQ((*wal)->DurableLsn(), acked);
  EXPECT_FALSE((*wal)->Commit(Bytes("x")).ok());
}

// --- bad input
// ------------------------------------------------------------------------------------

TEST(WalBadInputTest, MissingParentDirectory) {
  TempDir dir;
  auto wal = Wal::Open(dir.File("no/such/parent"), WalOptions{});
  ASSERT_FALSE(wal.ok());
  EXPECT_TRUE(absl::IsNotFound(wal.status())) << wal.status();
  EXPECT_THAT(Msg(wal.status()), HasSubstr(dir.File("no/such")));
  EXPECT_THAT(Msg(wal.status()), HasSubstr("create it first"));
}

TEST(WalBadInputTest, MissingDirectoryWithoutCreateIfMissing) {
  TempDir dir;
  WalOptions options;
  options.create_if_missing = false;
  auto wal = Wal::Open(dir.File("wal"), options);
  EXPECT_TRUE(absl::IsNotFound(wal.status())) << wal.status();
  EXPECT_THAT(Msg(wal.status()), HasSubstr(dir.File("wal")));
}

TEST(WalBadInputTest, PathIsAFile) {
  TempDir dir;
  ASSERT_TRUE(Env::Default()->Open(dir.File("file"), OpenOptions{.create = true}).ok());
  auto wal = Wal::Open(dir.File("file"), WalOptions{});
  EXPECT_TRUE(absl::IsFailedPrecondition(wal.status())) << wal.status();
  EXPECT_THAT(Msg(wal.status()), HasSubstr("not a directory"));
}

TEST(WalBadInputTest, ForeignFileIsNamed) {
  TempDir dir;
  ASSERT_TRUE(Env::Default()->CreateDir(dir.File("wal")).ok());
  ASSERT_TRUE(Env::Default()->Open(dir.File("wal/notes.txt"), OpenOptions{.create = true}).ok());
  auto wal = Wal::Open(dir.File("wal"), WalOptions{});
  EXPECT_TRUE(absl::IsFailedPrecondition(wal.status())) << wal.status();
  EXPECT_THAT(Msg(wal.status()), HasSubstr("notes.txt"));
  EXPECT_THAT(Msg(wal.status()), HasSubstr("move it away"));
  EXPECT_TRUE(*Env::Default()->Exists(dir.File("wal/notes.txt")));  // never touched
}

TEST(WalBadInputTest, SegmentOfAnotherFormatVersion) {
  TempDir dir;
  ASSERT_TRUE(Env::Default()->CreateDir(dir.File("wal")).ok());
  SegmentHeader h;
  h.log_id = 1;
  h.segment_salt = 2;
  h.first_lsn = 1;
  h.segment_size = 64 * 1024;
  std::string block = EncodeSegmentHeader(h);
  block[8] = 7;  // version 7, with a valid header checksum
  const uint32_t crc = crc32c::Value(block.data(), 52);
  std::memcpy(block.data() + 52, &crc, 4);
  const std::string path = dir.File("wal/" + SegmentFileName(1));
  auto file = Env::Default()->Open(path, OpenOptions{.create = true});
  ASSERT_TRUE((*file)->Write(0, Bytes(block)).ok());
  auto wal = Wal::Open(dir.File("wal"), WalOptions{});
  EXPECT_TRUE(absl::IsFailedPrecondition(wal.status())) << wal.status();
  EXPECT_THAT(Msg(wal.status()), HasSubstr(path));
  EXPECT_THAT(Msg(wal.status()), HasSubstr("version 7"));
  EXPECT_EQ(*Env::Default()->FileSize(path), kSegmentHeaderSize);  // left alone
}

TEST(WalBadInputTest, DiskFullAtSegmentCreation) {
  TempDir dir;
  FaultInjectionEnv env(Env::Default());
  env.FailOp(FaultOp::kWrite, 2, ENOSPC);  // the header goes in, the zeros do not
  WalOptions options;
  options.env = &env;
  auto wal = Wal::Open(dir.File("wal"), options);
  ASSERT_FALSE(wal.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(wal.status())) << wal.status();
  EXPECT_THAT(Msg(wal.status()), HasSubstr(dir.File("wal/" + SegmentFileName(1))));
  EXPECT_THAT(Msg(wal.status()), HasSubstr("disk is full"));
  // Nothing half-made is left behind, so a retry with space works.
  EXPECT_TRUE(Env::Default()->ListDir(dir.File("wal"))->empty());
  auto retry = Wal::Open(dir.File("wal"), options);
  ASSERT_TRUE(retry.ok()) << retry.status();
  EXPECT_TRUE((*retry)->Commit(Bytes("x")).ok());
}

TEST(WalBadInputTest, BadOptionsAndOversizedRecord) {
  TempDir dir;
  WalOptions options;
  options.segment_bytes = 10000;
  EXPECT_TRUE(absl::IsInvalidArgument(Wal::Open(dir.File("a"), options).status()));
  options.segment_bytes = 16 * 1024;
  auto wal = Wal::Open(dir.File("wal"), options);
  ASSERT_TRUE(wal.ok()) << wal.status();
  auto big = (*wal)->Commit(Bytes(std::string(16 * 1024, 'x')));
  EXPECT_TRUE(absl::IsInvalidArgument(big.status())) << big.status();
  EXPECT_THAT(Msg(big.status()), HasSubstr("segment_bytes"));
  EXPECT_TRUE((*wal)->health().ok());  // a refused record does not fence the log
  EXPECT_EQ(*(*wal)->Commit(Bytes("fits")), 1u);
  EXPECT_TRUE(absl::IsInvalidArgument((*wal)->Sync(99)));
  ASSERT_TRUE((*wal)->Close().ok());
}

TEST(WalBadInputTest, UseAfterClose) {
  TempDir dir;
  auto wal = Wal::Open(dir.File("wal"), WalOptions{});
  ASSERT_TRUE(wal.ok()) << wal.status();
  ASSERT_TRUE((*wal)->Close().ok());
  EXPECT_TRUE(absl::IsFailedPrecondition((*wal)->Commit(Bytes("x")).status()));
  EXPECT_TRUE(absl::IsFailedPrecondition((*wal)->Close()));
}

TEST(WalBadInputTest, LeftoverTempSegmentIsRemovedOnOpen) {
  TempDir dir;
  ASSERT_TRUE(Env::Default()->CreateDir(dir.File("wal")).ok());
  const std::string tmp = dir.File("wal/" + SegmentFileName(1) + ".tmp");
  ASSERT_TRUE(Env::Default()->Open(tmp, OpenOptions{.create = true}).ok());
  auto wal = Wal::Open(dir.File("wal"), WalOptions{});
  ASSERT_TRUE(wal.ok()) << wal.status();
  EXPECT_FALSE(*Env::Default()->Exists(tmp));
}

}  // namespace
}  // namespace powercut::wal
