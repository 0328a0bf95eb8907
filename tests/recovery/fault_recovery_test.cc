// Recovery and repair against FaultInjectionEnv: crashes in the middle of Repair, and a segment
// whose rename had not reached the directory when the power went out.
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "recovery/recovery.h"
#include "recovery/repair.h"
#include "tests/recovery/log_builder.h"
#include "wal/posix_env.h"
#include "wal/testing/fault_injection_env.h"

namespace powercut::recovery {
namespace {

using powercut::testing::PayloadFor;
using powercut::testing::SegmentBuilder;
using powercut::testing::TempDir;
using powercut::testing::WriteFile;
using wal::Lsn;
using wal::SegmentFileName;

std::vector<Lsn> Lsns(const RecoveryResult& result) {
  std::vector<Lsn> out;
  for (const RecoveredRecord& r : result.records) out.push_back(r.lsn);
  return out;
}

// A log whose first segment is torn at record 21 with megabytes of unsynced garbage (and valid
// but unsynced records) after it, followed by two segments of unsynced records.
void BuildTornLog(const TempDir& dir) {
  constexpr uint64_t kSegment = 4 << 20;
  SegmentBuilder a(1, 1, kSegment);
  for (Lsn lsn = 1; lsn <= 20; ++lsn) a.Add(lsn, PayloadFor(lsn, 500), lsn - 1);
  const uint64_t torn = a.Add(21, PayloadFor(21, 500), 20);
  std::string bytes = a.Contents();
  bytes[torn + 100] ^= 1;
  std::mt19937_64 rng(7);
  for (uint64_t off = torn + 4096; off < kSegment - 8192; off += 1 + rng() % 40000) {
    bytes[off] = static_cast<char>(rng());
  }
  WriteFile(dir.File(SegmentFileName(1)), bytes);
  Lsn lsn = 30;
  for (int s = 0; s < 2; ++s) {
    SegmentBuilder later(lsn, 10 + s, 64 << 10);
    const Lsn first = lsn;
    for (; lsn < first + 5; ++lsn) later.Add(lsn, PayloadFor(lsn), 20);
    WriteFile(dir.File(SegmentFileName(first)), later.Contents());
  }
  WriteFile(dir.File(SegmentFileName(lsn) + ".tmp"), "interrupted creation");
}

// Crash the machine after every file-system call Repair makes (each crash point with a torn,
// random prefix of the unsynced writes kept): recovery afterwards returns the same records, and
// the repair finishes when run again.
TEST(FaultRecoveryTest, CrashAfterEveryCallOfRepair) {
  wal::PosixEnv posix;
  bool finished = false;
  uint64_t calls = 0;
  for (; calls < 200 && !finished; ++calls) {
    SCOPED_TRACE(::testing::Message() << "crash after " << calls << " calls");
    TempDir dir;
    BuildTornLog(dir);
    auto original = Recover(dir.path());
    ASSERT_TRUE(original.ok()) << original.status();
    ASSERT_EQ(original->tail, TailState::kTorn);
    ASSERT_EQ(original->records.size(), 20u);

    wal::FaultInjectionEnv fault(&posix);
    fault.SetCrashAfter(calls);
    RecoverOptions options;
    options.env = &fault;
    auto result = Recover(dir.path(), options);
    ASSERT_TRUE(result.ok()) << result.status();
    auto report = Repair(*result, &fault);
    finished = report.ok() && !fault.crashed();
    ASSERT_TRUE(fault.SimulatePowerCut(wal::PowerCutMode::kTornPrefix, calls).ok());

    auto after = Recover(dir.path());
    ASSERT_TRUE(after.ok()) << after.status();
    EXPECT_EQ(Lsns(*after), Lsns(*original));
    for (size_t i = 0; i < after->records.size(); ++i) {
      EXPECT_EQ(after->records[i].payload, original->records[i].payload);
    }
    EXPECT_NE(after->tail, TailState::kCorrupt);
    if (finished) {
      EXPECT_EQ(after->tail, TailState::kClean) << after->Summary();
      EXPECT_TRUE(after->temp_files.empty());
    }
    // Running repair again (no faults) always completes the job.
    auto redo = Repair(*after, &posix);
    ASSERT_TRUE(redo.ok()) << redo.status();
    auto final_state = RecoverOptions{};
    final_state.mode = Mode::kAbsolute;
    auto clean = Recover(dir.path(), final_state);
    ASSERT_TRUE(clean.ok()) << clean.status();
    EXPECT_EQ(Lsns(*clean), Lsns(*original));
  }
  EXPECT_TRUE(finished) << "Repair never completed within 200 calls";
  // open, several chunk writes, sync, close, three removes, directory sync: every one was a
  // crash point.
  EXPECT_GE(calls, 8u);
}

// Writes `bytes` to `path` through `env` as the WAL does for a new segment's temp file.
void WriteThrough(wal::Env& env, const std::string& path, const std::string& bytes) {
  wal::OpenOptions create;
  create.create = true;
  auto file = env.Open(path, create);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE((*file)
                  ->Write(0, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bytes.data()),
                                                 bytes.size()))
                  .ok());
  ASSERT_TRUE((*file)->Sync(wal::SyncKind::kFsync).ok());
  ASSERT_TRUE((*file)->Close().ok());
}

// The next segment was created, synced and renamed, but the directory was not fsynced before the
// power went out: the file is gone (or back under its temp name) and the log is still clean.
TEST(FaultRecoveryTest, RenamedSegmentWithoutDirectorySyncVanishes) {
  for (bool temp_name_synced : {false, true}) {
    SCOPED_TRACE(::testing::Message() << "temp name synced " << temp_name_synced);
    TempDir dir;
    SegmentBuilder a(1, 1);
    for (Lsn lsn = 1; lsn <= 10; ++lsn) a.Add(lsn, PayloadFor(lsn), lsn - 1);
    a.Seal(11, 10);
    WriteFile(dir.File(SegmentFileName(1)), a.Contents());

    wal::PosixEnv posix;
    wal::FaultInjectionEnv fault(&posix);
    SegmentBuilder b(11, 2);
    const std::string temp = dir.File(SegmentFileName(11) + ".tmp");
    WriteThrough(fault, temp, b.Contents());
    if (temp_name_synced) {
      ASSERT_TRUE(fault.SyncDir(dir.path()).ok());
    }
    ASSERT_TRUE(fault.Rename(temp, dir.File(SegmentFileName(11))).ok());
    ASSERT_TRUE(fault.SimulatePowerCut(wal::PowerCutMode::kDropUnsynced, 1).ok());

    auto exists = posix.Exists(dir.File(SegmentFileName(11)));
    ASSERT_TRUE(exists.ok());
    EXPECT_FALSE(*exists);
    auto result = Recover(dir.path());
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->tail, TailState::kClean);
    EXPECT_EQ(result->records.size(), 10u);
    EXPECT_EQ(result->next_lsn, 11u);
    EXPECT_EQ(result->temp_files.size(), temp_name_synced ? 1u : 0u);
  }
}

}  // namespace
}  // namespace powercut::recovery
