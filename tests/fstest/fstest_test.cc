// The file-system test room without a VM: the language (parser, errors, ids), the generator's
// space, the executor and tree reader on this host's own file system, the promises, and the
// judge's failure classes on real folders changed the way a crash would leave them.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/fstest/content.h"
#include "harness/fstest/executor.h"
#include "harness/fstest/generator.h"
#include "harness/fstest/judge.h"
#include "harness/fstest/model_fs.h"
#include "harness/fstest/promises.h"
#include "harness/fstest/tree.h"
#include "harness/fstest/workload.h"
#include "tests/harness_testing.h"

namespace powercut::fstest {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::TempDir;

Workload Parse(std::string_view text) {
  auto w = ParseWorkload(text, "t.fst");
  EXPECT_TRUE(w.ok()) << w.status();
  return w.ok() ? *w : Workload{};
}

std::string ErrorOf(std::string_view text) {
  auto w = ParseWorkload(text, "t.fst");
  if (!w.ok()) return std::string(w.status().message());
  absl::Status s = ValidateWorkload(*w);
  return s.ok() ? "" : std::string(s.message());
}

// Runs a workload on a real folder of this host, keeping each point's tree.
struct Ran {
  std::vector<int> acks;
  std::vector<Tree> snapshots;
  absl::Status status;
};
Ran RunOn(const Workload& w, const std::string& dir) {
  Ran r;
  ExecuteHooks hooks;
  hooks.ack = [&r](int point) {
    r.acks.push_back(point);
    return absl::OkStatus();
  };
  hooks.snapshot = [&r](int, const Op&, const Tree& tree) {
    r.snapshots.push_back(tree);
    return absl::OkStatus();
  };
  r.status = Execute(w, dir, hooks);
  return r;
}

TEST(Language, EveryOperationRoundTripsThroughItsText) {
  const std::string text =
      "creat foo\nmkdir A\nwrite foo 0 5000\ndwrite foo 8192 4096\nmmapwrite foo 100 50\n"
      "falloc foo zero_range_keep_size 10 20\ntruncate foo 2500\nlink foo A/bar\n"
      "symlink ../foo A/sym\nsetxattr foo user.k v\nremovexattr foo user.k\nrename A/bar bar\n"
      "unlink bar\nremove A/sym\nfsync .\nfdatasync foo\nsync_file_range foo 0 4096\nsync\n";
  const Workload w = Parse(text);
  EXPECT_EQ(WorkloadText(w), text);
  EXPECT_EQ(w.ops.size(), 18u);
  EXPECT_EQ(w.PersistencePoints(), 4u);
  EXPECT_TRUE(ValidateWorkload(w).ok()) << ValidateWorkload(w);
  EXPECT_EQ(Parse(WorkloadText(w)).ops, w.ops);
}

TEST(Language, CommentsBlanksAndSpacingDoNotChangeTheId) {
  const Workload a = Parse("creat foo\nfsync foo\n");
  const Workload b = Parse("# a comment\n\n  creat   foo   # trailing\n\tfsync foo\r\n");
  EXPECT_EQ(WorkloadId(a), WorkloadId(b));
  EXPECT_NE(WorkloadId(a), WorkloadId(Parse("creat bar\nfsync bar\n")));
  // The id is the content hash of the canonical text: pinned, so a change of the hash or of the
  // canonical form (which would rename every workload in every report) fails here.
  EXPECT_EQ(WorkloadId(a), "fst-4ad649c07ae21bd3");
  EXPECT_THAT(WorkloadId(a), StartsWith("fst-"));
  EXPECT_EQ(WorkloadId(a).size(), 20u);
}

TEST(Language, BadLinesAreRefusedWithFileLineAndReason) {
  EXPECT_EQ(ErrorOf("creat foo\nfrob foo\n").substr(0, 8), "t.fst:2:");
  EXPECT_THAT(ErrorOf("frob foo\n"), HasSubstr("unknown operation frob"));
  EXPECT_THAT(
      ErrorOf("write foo 0\n"),
      HasSubstr("write takes 3 arguments and an optional dsync, sync or rwf_dsync: write P OFF LEN "
                "[dsync|sync|rwf_dsync]"));
  EXPECT_THAT(ErrorOf("creat /etc/passwd\n"), HasSubstr("is absolute"));
  EXPECT_THAT(ErrorOf("creat A/../../x\n"), HasSubstr("leaves the file system's root"));
  EXPECT_THAT(ErrorOf("creat a//b\n"), HasSubstr("not a path of the language"));
  EXPECT_THAT(ErrorOf("creat .\n"), HasSubstr("may only be fsynced"));
  EXPECT_THAT(ErrorOf("write foo x 1\n"), HasSubstr("OFF x is not a byte count"));
  EXPECT_THAT(ErrorOf("write foo 0 0\n"), HasSubstr("LEN must be at least 1"));
  EXPECT_THAT(ErrorOf("dwrite foo 512 4096\n"), HasSubstr("multiples of 4096"));
  EXPECT_THAT(ErrorOf("falloc foo squash 0 1\n"), HasSubstr("falloc MODE squash"));
  EXPECT_THAT(ErrorOf("setxattr foo trusted.x v\n"), HasSubstr("must be user."));
  EXPECT_THAT(ErrorOf("write foo 0 99999999999\n"), HasSubstr("reaches past"));
  EXPECT_THAT(ErrorOf("# only a comment\n"), HasSubstr("no operations"));
}

TEST(Language, OperationsThatCannotRunWhereTheyStandAreRefused) {
  EXPECT_EQ(ErrorOf("write foo 0 10\nsync\n"),
            "t.fst:1: write foo 0 10: ENOENT: foo does not exist");
  EXPECT_THAT(ErrorOf("mkdir A\ncreat A/x\nremove A\nsync\n"),
              HasSubstr("t.fst:3: remove A: ENOTEMPTY"));
  EXPECT_THAT(ErrorOf("creat A/x\nsync\n"), HasSubstr("has no parent folder A"));
  EXPECT_THAT(ErrorOf("mkdir A\nmkdir A\nsync\n"), HasSubstr("t.fst:2: mkdir A: EEXIST"));
  EXPECT_THAT(ErrorOf("creat f\nremovexattr f user.x\nsync\n"), HasSubstr("ENODATA"));
  EXPECT_THAT(ErrorOf("mkdir A\nrename A A/B\nsync\n"), HasSubstr("EINVAL"));
  EXPECT_THAT(ErrorOf("creat foo\nsync_file_range foo 0 1\n"),
              HasSubstr("no persistence point that promises anything"));
}

TEST(Language, SynchronousWritesArePersistencePointsWithTheirFlavorInTheText) {
  const std::string text =
      "creat foo\nwrite foo 0 5000 dsync\ndwrite foo 8192 4096 sync\nwrite foo 10 20 rwf_dsync\n"
      "dwrite foo 0 4096 rwf_dsync\nwrite foo 0 1\n";
  const Workload w = Parse(text);
  EXPECT_EQ(WorkloadText(w), text);
  EXPECT_EQ(Parse(WorkloadText(w)).ops, w.ops);
  EXPECT_EQ(w.PersistencePoints(), 4u);
  EXPECT_EQ(w.ops[2].sync, SyncWrite::kSync);
  EXPECT_TRUE(IsPromisingPoint(w.ops[1]));
  EXPECT_FALSE(IsPersistencePoint(w.ops[5]));
  EXPECT_TRUE(ValidateWorkload(w).ok()) << ValidateWorkload(w);
  // A plain write's text (and so every older workload's id) is what it was.
  EXPECT_NE(WorkloadId(Parse("creat foo\nwrite foo 0 1 dsync\n")),
            WorkloadId(Parse("creat foo\nwrite foo 0 1\nfsync foo\n")));
  EXPECT_EQ(WorkloadShape(Parse("creat foo\ndwrite foo 0 4096 dsync\n")),
            "creat F1; dwrite F1 dsync");
  // A workload whose only point is a synchronous write promises something.
  EXPECT_EQ(ErrorOf("creat foo\nwrite foo 0 1 sync\n"), "");
  EXPECT_THAT(ErrorOf("creat foo\nwrite foo 0 1 fsync\n"),
              HasSubstr("write: fsync is not dsync (O_DSYNC), sync (O_SYNC) or rwf_dsync"));
  EXPECT_THAT(ErrorOf("creat foo\nmmapwrite foo 0 1 dsync\n"),
              HasSubstr("mmapwrite takes 3 arguments: mmapwrite P OFF LEN"));
  EXPECT_THAT(ErrorOf("creat foo\ndwrite foo 0 100 dsync\n"), HasSubstr("multiples of 4096"));
}

TEST(Content, IsDeterministicSliceableAndNamesItsWrite) {
  const std::string whole = ContentFor("A/foo", 3, 0, 96);
  EXPECT_EQ(whole.size(), 96u);
  EXPECT_EQ(ContentFor("A/foo", 3, 40, 20), whole.substr(40, 20));
  EXPECT_THAT(whole.substr(0, 32), StartsWith("w0003 0000000000 "));
  EXPECT_THAT(whole.substr(32, 32), StartsWith("w0003 0000000020 "));
  EXPECT_NE(ContentFor("A/foo", 4, 0, 96), whole);
  EXPECT_NE(ContentFor("A/bar", 3, 0, 96), whole);
}

TEST(Generator, TheSeq1SpaceHasAces328WorkloadsEachValidAndEndingInAPromise) {
  auto space = WorkloadSpace::Make({.seq = 1});
  ASSERT_TRUE(space.ok()) << space.status();
  EXPECT_EQ(space->size(), 328u);
  std::set<std::string> ids;
  std::map<std::string, int> cores;
  for (uint64_t i = 0; i < space->size(); ++i) {
    const Workload w = space->At(i);
    ASSERT_TRUE(ValidateWorkload(w).ok()) << ValidateWorkload(w) << "\n" << WorkloadText(w);
    ASSERT_TRUE(IsPromisingPoint(w.ops.back())) << WorkloadText(w);
    ids.insert(WorkloadId(w));
    EXPECT_EQ(WorkloadText(space->At(i)), WorkloadText(w));  // deterministic
    // The setup's folders are persisted before anything else happens.
    if (w.ops.front().kind == OpKind::kMkdir && w.ops.size() > 2 &&
        w.ops[1].kind == OpKind::kSync) {
      ++cores["setup"];
    }
  }
  EXPECT_EQ(ids.size(), 328u);  // no two generated workloads are the same operations
  EXPECT_GT(cores["setup"], 100);
}

TEST(Generator, Seq1CoversEveryCoreOperationAndTheLinuxFallocModes) {
  auto space = WorkloadSpace::Make({.seq = 1});
  ASSERT_TRUE(space.ok());
  std::set<std::string> seen;
  for (uint64_t i = 0; i < space->size(); ++i) {
    const Workload w = space->At(i);
    const size_t colon = w.description.find(": ");
    seen.insert(w.description.substr(colon + 2, w.description.find(' ', colon + 2) - colon - 2));
    for (const Op& op : w.ops) {
      if (op.kind == OpKind::kFalloc) seen.insert(std::string(FallocModeName(op.mode)));
    }
  }
  for (const char* name :
       {"creat", "mkdir", "falloc", "write", "dwrite", "mmapwrite", "link", "unlink", "remove",
        "rename", "setxattr", "removexattr", "truncate", "default", "keep_size", "punch_hole",
        "zero_range", "zero_range_keep_size"}) {
    EXPECT_TRUE(seen.count(name) == 1) << name;
  }
}

TEST(Generator, Seq2IsLargeAndItsSamplesAreReproducibleAndValid) {
  auto space = WorkloadSpace::Make({.seq = 2});
  ASSERT_TRUE(space.ok()) << space.status();
  EXPECT_GT(space->size(), 100000u);
  const std::vector<uint64_t> a = space->Sample(50, 7);
  EXPECT_EQ(a, space->Sample(50, 7));
  EXPECT_NE(a, space->Sample(50, 8));
  EXPECT_EQ(std::set<uint64_t>(a.begin(), a.end()).size(), 50u);
  for (uint64_t i : a) {
    const Workload w = space->At(i);
    EXPECT_TRUE(ValidateWorkload(w).ok()) << ValidateWorkload(w) << "\n" << WorkloadText(w);
    EXPECT_TRUE(IsPromisingPoint(w.ops.back()));
  }
  auto with_fdatasync = WorkloadSpace::Make(
      {.seq = 1, .persistence = {OpKind::kFsync, OpKind::kFdatasync, OpKind::kSync}});
  ASSERT_TRUE(with_fdatasync.ok());
  EXPECT_GT(with_fdatasync->size(), 328u);
  EXPECT_FALSE(WorkloadSpace::Make({.seq = 0}).ok());
  GeneratorOptions parsed;
  EXPECT_FALSE(ParsePersistence("fsync,msync", &parsed).ok());
}

TEST(Generator, PersistSyncWritesMakesCoreWritesSynchronousAsTheirOwnPoint) {
  GeneratorOptions options;
  ASSERT_TRUE(ParsePersistence("fsync,sync,odsync,osync,rwf_dsync", &options).ok());
  EXPECT_EQ(PersistenceText(options), "fsync,sync,odsync,osync,rwf_dsync");
  auto space = WorkloadSpace::Make(options);
  ASSERT_TRUE(space.ok()) << space.status();
  // seq-1 has 10 core writes (write: 2 files x 3 ranges, dwrite: 2 x 2), each 3 more ways.
  EXPECT_EQ(space->size(), 328u + 30u);
  std::set<SyncWrite> seen;
  for (uint64_t i = 0; i < space->size(); ++i) {
    const Workload w = space->At(i);
    ASSERT_TRUE(ValidateWorkload(w).ok()) << ValidateWorkload(w) << "\n" << WorkloadText(w);
    ASSERT_TRUE(IsPromisingPoint(w.ops.back())) << WorkloadText(w);
    if (w.ops.back().sync != SyncWrite::kNone) {
      seen.insert(w.ops.back().sync);
      EXPECT_TRUE(TakesSyncWrite(w.ops.back().kind)) << WorkloadText(w);
    }
  }
  EXPECT_EQ(seen.size(), 3u);
  // Synchronous writes alone leave the other core operations without a point.
  ASSERT_TRUE(ParsePersistence("odsync", &options).ok());
  EXPECT_FALSE(WorkloadSpace::Make(options).ok());
}

TEST(Executor, SnapshotsShowWhatTheWorkloadDidOnARealFileSystem) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const Workload w = Parse(
      "mkdir A\nsync\ncreat A/foo\nwrite A/foo 0 32768\nfalloc A/foo punch_hole 4096 4096\n"
      "dwrite A/foo 32768 8192\nmmapwrite A/foo 40960 100\nsetxattr A/foo user.k v1\n"
      "link A/foo bar\nsymlink A/foo sym\nfsync A/foo\ntruncate A/foo 2500\nfdatasync A/foo\n");
  const Ran r = RunOn(w, dir.path());
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.acks, (std::vector<int>{1, 2, 3}));
  ASSERT_EQ(r.snapshots.size(), 3u);
  const Node& foo = r.snapshots[1].nodes.at("A/foo");
  EXPECT_EQ(foo.size, 41060u);
  EXPECT_EQ(foo.nlink, 2u);
  EXPECT_EQ(foo.xattrs.at("user.k"), "v1");
  EXPECT_EQ(r.snapshots[1].nodes.at("sym").target, "A/foo");
  EXPECT_EQ(r.snapshots[2].nodes.at("A/foo").size, 2500u);
  // The snapshots agree with the model byte for byte, so the promises can be computed.
  auto points = PromisesAtPoints(w, r.snapshots);
  ASSERT_TRUE(points.ok()) << points.status();
  EXPECT_EQ(points->size(), 3u);
}

TEST(Executor, AnOperationTheKernelRefusesStopsTheWorkloadNamingIt) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(std::filesystem::create_directory(dir.File("foo")));  // in the way of creat
  const Ran r = RunOn(Parse("creat foo\nfsync foo\n"), dir.path());
  EXPECT_FALSE(r.status.ok());
  EXPECT_THAT(std::string(r.status.message()),
              HasSubstr("t.fst:1: creat foo: creat: Is a directory"));
}

TEST(Promises, WhatEachPointBindsAndWhatLaterOperationsLapse) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const Workload w = Parse(
      "creat foo\nwrite foo 0 100\nfsync foo\n"  // 1: foo's name, data, meta
      "write foo 0 10\ncreat bar\nfsync bar\n"   // 2: foo's data and meta lapsed; bar bound
      "mkdir A\nfsync .\n"                       // 3: the root's entries
      "unlink bar\nsync_file_range foo 0 1\n"    // 4: bar lapsed, nothing new
      "sync\n");                                 // 5: everything
  const Ran r = RunOn(w, dir.path());
  ASSERT_TRUE(r.status.ok()) << r.status;
  auto points = PromisesAtPoints(w, r.snapshots);
  ASSERT_TRUE(points.ok()) << points.status();
  auto keys = [&](int point) {
    std::set<std::string> out;
    for (const Promise& p : (*points)[point - 1].promises) {
      out.insert(p.path + ":" + std::string(AspectName(p.aspect)));
    }
    return out;
  };
  EXPECT_EQ(keys(1), (std::set<std::string>{"foo:name", "foo:data", "foo:meta"}));
  EXPECT_EQ(keys(2), (std::set<std::string>{"foo:name", "bar:name", "bar:data", "bar:meta"}));
  EXPECT_EQ(keys(3), (std::set<std::string>{"foo:name", "bar:name", "bar:data", "bar:meta",
                                            ".:entries", ".:meta"}));
  EXPECT_EQ(keys(4), (std::set<std::string>{"foo:name"}));
  EXPECT_EQ(keys(5), (std::set<std::string>{"foo:name", "foo:data", "foo:meta", "A:name",
                                            "A:entries", "A:meta", ".:entries", ".:meta"}));
  // The data promise of point 5 knows foo's older contents (empty, then the 100-byte write).
  for (const Promise& p : (*points)[4].promises) {
    if (p.path == "foo" && p.aspect == Aspect::kData) {
      EXPECT_EQ(p.older.size(), 2u);
    }
  }
  auto json = PromisesFromJson(PromisesToJson(*points));
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(PromisesToJson(*json), PromisesToJson(*points));
}

TEST(Promises, ASynchronousWriteBindsTheWholeDataOnlyWhereTheRestWasPromised) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const Workload w = Parse(
      "creat log\nwrite log 0 16384\nfsync log\n"     // 1: log's data promised
      "dwrite log 0 4096 dsync\n"                     // 2: the rest was promised: the whole data
      "write log 16384 4096\n"                        // not persisted
      "write log 4096 100 dsync\n"                    // 3: only its range (the tail may be delayed)
      "write log 8192 10 sync\n"                      // 4: another range, meta without blocks
      "write log 4096 50\nsync_file_range log 0 1\n"  // 5: the range of 3 lapsed, 4's kept
      "creat new\nwrite new 0 10 rwf_dsync\n");       // 6: an empty file: its whole data
  const Ran r = RunOn(w, dir.path());
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.acks, (std::vector<int>{1, 2, 3, 4, 5, 6}));
  auto points = PromisesAtPoints(w, r.snapshots);
  ASSERT_TRUE(points.ok()) << points.status();
  auto keys = [&](int point) {
    std::set<std::string> out;
    for (const Promise& p : (*points)[point - 1].promises) {
      std::string key = p.path + ":" + std::string(AspectName(p.aspect));
      if (p.aspect == Aspect::kRange) key += fmt::format("@{}+{}", p.offset, p.length);
      if (!p.with_blocks) key += "-blocks";
      out.insert(key);
    }
    return out;
  };
  // fsync's metadata promise lapsed with the write; O_DSYNC binds none.
  EXPECT_EQ(keys(2), (std::set<std::string>{"log:name", "log:data"}));
  EXPECT_EQ(keys(3), (std::set<std::string>{"log:name", "log:range@4096+100"}));
  EXPECT_EQ(keys(4), (std::set<std::string>{"log:name", "log:range@4096+100", "log:range@8192+10",
                                            "log:meta-blocks"}));
  EXPECT_EQ(keys(5), (std::set<std::string>{"log:name", "log:range@8192+10"}));
  EXPECT_EQ(keys(6),
            (std::set<std::string>{"log:name", "log:range@8192+10", "new:name", "new:data"}));
  // The range knows what it held before: nothing (a new file), then the 16 KiB write's bytes.
  for (const Promise& p : (*points)[2].promises) {
    if (p.aspect == Aspect::kRange) {
      EXPECT_EQ(p.older.size(), 2u);
    }
  }
  auto json = PromisesFromJson(PromisesToJson(*points));
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(PromisesToJson(*json), PromisesToJson(*points));
}

TEST(Promises, ASnapshotThatDisagreesWithTheWorkloadIsRefused) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const Workload w = Parse("creat foo\nwrite foo 0 100\nfsync foo\n");
  Ran r = RunOn(w, dir.path());
  ASSERT_TRUE(r.status.ok());
  r.snapshots[0].nodes.at("foo").data_hash = DataHash("something else");
  auto points = PromisesAtPoints(w, r.snapshots);
  EXPECT_FALSE(points.ok());
  EXPECT_THAT(std::string(points.status().message()), HasSubstr("foo with other content"));
}

class JudgeTest : public ::testing::Test {
 protected:
  // Runs `text`, then lets `crash` change the folder as a power cut might have, and judges it.
  std::string Judge(std::string_view text, const std::function<void(const std::string&)>& crash) {
    const Workload w = Parse(text);
    const Ran r = RunOn(w, dir_.path());
    EXPECT_TRUE(r.status.ok()) << r.status;
    auto points = PromisesAtPoints(w, r.snapshots);
    EXPECT_TRUE(points.ok()) << points.status();
    crash(dir_.path());
    auto out = JudgeMountedState(dir_.path(), *points);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *out : "";
  }
  TempDir dir_;
};

TEST_F(JudgeTest, AStateThatKeptEveryPromiseHasEveryPointAndIsEmptiedAfterwards) {
  EXPECT_EQ(Judge("mkdir A\ncreat A/foo\nwrite A/foo 0 5000\nfsync A/foo\nsync\n",
                  [](const std::string&) {}),
            "have 1\nhave 2\n");
  EXPECT_TRUE(std::filesystem::is_empty(dir_.path()));
}

TEST_F(JudgeTest, AMissingPromisedFileIsMissing) {
  const std::string out = Judge("creat foo\nfsync foo\n",
                                [](const std::string& d) { std::filesystem::remove(d + "/foo"); });
  EXPECT_THAT(out, StartsWith("why 1 missing foo: not there"));
}

TEST_F(JudgeTest, AnOlderVersionIsOldContentAndGarbageIsADataMismatch) {
  const std::string text = "creat foo\nwrite foo 0 5000\nsync\nwrite foo 0 100\nfsync foo\n";
  const std::string old = Judge(text, [](const std::string& d) {
    std::ofstream(d + "/foo", std::ios::binary | std::ios::trunc) << ContentFor("foo", 1, 0, 5000);
  });
  EXPECT_THAT(old, HasSubstr("why 2 old-content foo: holds an older content (5000 bytes)"));
  const std::string garbage = Judge(text, [](const std::string& d) {
    std::ofstream(d + "/foo", std::ios::binary | std::ios::trunc) << std::string(5000, 'x');
  });
  EXPECT_THAT(garbage, HasSubstr("why 2 data-mismatch foo: 5000 bytes, point 2 (fsync foo)"));
  EXPECT_THAT(garbage, HasSubstr("first differing block at byte 0"));
}

TEST_F(JudgeTest, ASynchronousWriteLostIsOldContentOfItsRangeOrOfTheWholeFile) {
  // Only the range is promised (the file's tail was never persisted): a state that lost the tail
  // keeps the promise, one that lost the write breaks it.
  const std::string text = "creat foo\nwrite foo 0 8192\nwrite foo 0 100 dsync\n";
  EXPECT_EQ(Judge(text,
                  [](const std::string& d) {
                    std::ofstream(d + "/foo", std::ios::binary | std::ios::trunc)
                        << ContentFor("foo", 2, 0, 100);
                  }),
            "have 1\n");
  EXPECT_THAT(Judge(text,
                    [](const std::string& d) {
                      std::ofstream(d + "/foo", std::ios::binary | std::ios::trunc)
                          << ContentFor("foo", 1, 0, 8192);
                    }),
              HasSubstr("why 1 old-content foo: holds an older content in bytes 0-100 (a file of "
                        "8192 bytes), promised by point 1 (write foo 0 100 dsync)"));
  EXPECT_THAT(Judge(text,
                    [](const std::string& d) {
                      std::ofstream(d + "/foo", std::ios::binary | std::ios::trunc) << "";
                    }),
              HasSubstr("why 1 old-content foo"));  // empty: what it held before the writes
  // Preallocated and fsynced, then overwritten: the whole file is promised, so the old record is
  // old content of the file.
  const std::string log = "creat log\nwrite log 0 8192\nfsync log\ndwrite log 0 4096 dsync\n";
  EXPECT_THAT(Judge(log,
                    [](const std::string& d) {
                      std::ofstream(d + "/log", std::ios::binary | std::ios::trunc)
                          << ContentFor("log", 1, 0, 8192);
                    }),
              HasSubstr("why 2 old-content log: holds an older content (8192 bytes) than point 2 "
                        "(dwrite log 0 4096 dsync)"));
}

TEST_F(JudgeTest, ChangedModeOrXattrsAreAMetadataMismatch) {
  const std::string out = Judge("creat foo\nsetxattr foo user.k v\nfsync foo\n",
                                [](const std::string& d) { ::chmod((d + "/foo").c_str(), 0600); });
  EXPECT_THAT(out, HasSubstr("why 1 metadata-mismatch foo: mode 600 (promised 644)"));
}

TEST_F(JudgeTest, AnEntryAFolderFsyncRemovedButStillThereIsOldContent) {
  const std::string out = Judge("mkdir A\ncreat A/x\nsync\nunlink A/x\nfsync A\n",
                                [](const std::string& d) { std::ofstream(d + "/A/x") << ""; });
  EXPECT_THAT(out, HasSubstr("why 2 old-content A: still lists x (an older listing)"));
  EXPECT_THAT(out, StartsWith("have 1\n"));
}

TEST_F(JudgeTest, AFolderThatCannotBeRemovedIsNotRemovable) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a tmpfs in the way";
  const std::string out = Judge("mkdir A\nsync\n", [](const std::string& d) {
    ASSERT_EQ(::mount("tmpfs", (d + "/A").c_str(), "tmpfs", 0, "mode=0755"), 0);
  });
  ::umount2((dir_.path() + "/A").c_str(), MNT_DETACH);
  // A tmpfs on A hides its (empty) directory: the tree held its promises, but A cannot go.
  EXPECT_THAT(out,
              HasSubstr("why 1 not-removable A: rmdir after emptying it: Device or resource busy"));
}

// powercut-fstest-exec with synchronous acks (docs/protocol.md, POWERCUT_ACK_SYNC_FD): after each
// ack it blocks until `ok <k>` arrives, so nothing of the next operation can happen before the
// tester recorded the ack; a wrong answer or a closed descriptor stops it.
class ExecProgram : public ::testing::Test {
 protected:
  struct Child {
    pid_t pid = -1;
    int acks = -1;  // what it acks (read end)
    int oks = -1;   // what we answer (write end)
  };
  Child Start(const std::string& workload) {
    std::ofstream(dir_.File("w.fst")) << workload;
    int ack[2], ok[2];
    // Close-on-exec, so the child holds only its fds 3 and 4 (dup2 clears the flag there): a
    // child that kept our write end open would never see the tester go.
    EXPECT_EQ(::pipe2(ack, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(ok, O_CLOEXEC), 0);
    const std::string root = dir_.MakeSubdir("root");
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(ack[1], 3);
      ::dup2(ok[0], 4);
      ::setenv("POWERCUT_ACK_FD", "3", 1);
      ::setenv("POWERCUT_ACK_SYNC_FD", "4", 1);
      ::setenv("POWERCUT_DIR", root.c_str(), 1);
      ::setenv("POWERCUT_OUTPUT", dir_.File("out.txt").c_str(), 1);
      ::execl(FSTEST_EXEC, FSTEST_EXEC, "run", dir_.File("w.fst").c_str(), nullptr);
      ::_exit(127);
    }
    ::close(ack[1]);
    ::close(ok[0]);
    return {pid, ack[0], ok[1]};
  }
  static std::string ReadLine(int fd) {
    std::string line;
    char c;
    while (::read(fd, &c, 1) == 1 && c != '\n') line.push_back(c);
    return line;
  }
  // Whether the child sits in read(2) on fd 4 (its /proc/<pid>/syscall: "0 0x4 ..."), polled
  // with a deadline.
  static bool BlockedReading4(pid_t pid) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      std::ifstream in("/proc/" + std::to_string(pid) + "/syscall");
      std::string number, fd;
      in >> number >> fd;
      if (number == "0" && fd == "0x4") return true;
      std::this_thread::yield();
    }
    return false;
  }
  static int Wait(pid_t pid) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  TempDir dir_;
};

TEST_F(ExecProgram, WaitsForEachAckToBeConfirmedBeforeTheNextOperation) {
  Child c = Start("creat a\nfsync a\ncreat b\nfsync b\n");
  EXPECT_EQ(ReadLine(c.acks), "ack 1");
  ASSERT_TRUE(BlockedReading4(c.pid));
  EXPECT_FALSE(std::filesystem::exists(dir_.File("root/b")));  // the next operation waits
  ASSERT_EQ(::write(c.oks, "ok 1\n", 5), 5);
  EXPECT_EQ(ReadLine(c.acks), "ack 2");
  ASSERT_EQ(::write(c.oks, "ok 2\n", 5), 5);
  EXPECT_EQ(Wait(c.pid), 0);
  EXPECT_TRUE(std::filesystem::exists(dir_.File("root/b")));
  ::close(c.acks);
  ::close(c.oks);
}

TEST_F(ExecProgram, AWrongAnswerOrAClosedChannelStopsIt) {
  Child c = Start("creat a\nfsync a\ncreat b\nfsync b\n");
  EXPECT_EQ(ReadLine(c.acks), "ack 1");
  ASSERT_EQ(::write(c.oks, "ok 7\n", 5), 5);
  EXPECT_EQ(Wait(c.pid), 1);
  EXPECT_FALSE(std::filesystem::exists(dir_.File("root/b")));
  ::close(c.acks);
  ::close(c.oks);
  Child d = Start("creat a\nfsync a\n");
  ::close(d.oks);  // the tester is gone
  EXPECT_EQ(Wait(d.pid), 1);
  ::close(d.acks);
}

}  // namespace
}  // namespace powercut::fstest
