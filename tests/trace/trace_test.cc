// The dm-log-writes writer and reader: byte layout, round trip, tolerance and rejection.
#include <cstring>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/trace/manifest.h"
#include "harness/trace/recorder.h"
#include "harness/trace/trace_reader.h"
#include "harness/trace/trace_replay.h"
#include "harness/trace/trace_writer.h"
#include "tests/harness_testing.h"

namespace powercut::harness {
namespace {

using ::testing::HasSubstr;
using testing::ReadAll;
using testing::TempDir;
using testing::WriteAll;

std::vector<uint8_t> Filled(size_t n, uint8_t v) { return std::vector<uint8_t>(n, v); }

// Writes: a 2-sector write at sector 3, a flush, a mark, a FUA write, a discard.
std::string WriteSample(const TempDir& dir, uint32_t ss) {
  std::string path = dir.File("sample.log");
  auto rec = Recorder::Create({path, ss, 64 * uint64_t{ss}});
  EXPECT_TRUE(rec.ok()) << rec.status();
  EXPECT_TRUE((*rec)->RecordWrite(3 * ss, Filled(2 * ss, 0xab), false).ok());
  EXPECT_TRUE((*rec)->RecordFlush().ok());
  EXPECT_TRUE((*rec)->RecordAck("7").ok());
  EXPECT_TRUE((*rec)->RecordWrite(10 * ss, Filled(ss, 0xcd), true).ok());
  EXPECT_TRUE((*rec)->RecordDiscard(3 * ss, ss).ok());
  EXPECT_TRUE((*rec)->Finish().ok());
  return path;
}

TEST(TraceWriter, WritesTheKernelLayoutByteForByte) {
  TempDir dir;
  const uint32_t ss = 512;
  std::vector<uint8_t> log = ReadAll(WriteSample(dir, ss));
  // Expected bytes, built by hand from dm-log-writes.c: super block, then per entry one block
  // {sector, nr_sectors, flags, data_len} (+ mark text) and the data.
  std::vector<uint8_t> want;
  auto block = [&] { return std::vector<uint8_t>(ss, 0); };
  auto put64 = [](std::vector<uint8_t>& b, size_t at, uint64_t v) {
    for (int i = 0; i < 8; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
  };
  auto super = block();
  put64(super, 0, 0x6a736677736872ULL);
  put64(super, 8, 1);
  put64(super, 16, 5);
  super[24] = 0x00;
  super[25] = 0x02;  // 512 little-endian
  want.insert(want.end(), super.begin(), super.end());
  auto e = block();
  put64(e, 0, 3);
  put64(e, 8, 2);
  want.insert(want.end(), e.begin(), e.end());
  auto d = Filled(2 * ss, 0xab);
  want.insert(want.end(), d.begin(), d.end());
  e = block();
  put64(e, 16, 1);  // FLUSH
  want.insert(want.end(), e.begin(), e.end());
  e = block();
  put64(e, 16, 8);  // MARK
  put64(e, 24, 5);
  std::memcpy(e.data() + 32, "ack:7", 5);
  want.insert(want.end(), e.begin(), e.end());
  e = block();
  put64(e, 0, 10);
  put64(e, 8, 1);
  put64(e, 16, 2);  // FUA
  want.insert(want.end(), e.begin(), e.end());
  d = Filled(ss, 0xcd);
  want.insert(want.end(), d.begin(), d.end());
  e = block();
  put64(e, 0, 3);
  put64(e, 8, 1);
  put64(e, 16, 4);  // DISCARD: no data follows
  want.insert(want.end(), e.begin(), e.end());
  EXPECT_EQ(log, want);
}

TEST(TraceReader, RoundTripIsByteIdentical) {
  TempDir dir;
  for (uint32_t ss : {512u, 4096u}) {
    std::string first = WriteSample(dir, ss);
    auto file = TraceFile::Open(first);
    ASSERT_TRUE(file.ok()) << file.status();
    const Trace& t = (*file)->trace();
    ASSERT_EQ(t.entries.size(), 5u);
    EXPECT_TRUE(t.notes.empty());
    EXPECT_EQ(t.entries[2].mark, "ack:7");
    // Write every entry back through a fresh writer.
    std::string second = dir.File("copy.log");
    auto writer = TraceWriter::Create({second, ss});
    ASSERT_TRUE(writer.ok());
    for (const TraceEntry& e : t.entries) {
      ASSERT_TRUE((*writer)->Append(e.header, e.mark, (*file)->data(e)).ok());
    }
    ASSERT_TRUE((*writer)->Finish().ok());
    EXPECT_EQ(ReadAll(first), ReadAll(second)) << "sector size " << ss;
  }
}

TEST(TraceReader, ReadsEntriesBeyondALaggingSuperblockAndSaysSo) {
  TempDir dir;
  std::vector<uint8_t> log = ReadAll(WriteSample(dir, 512));
  log[16] = 2;  // nr_entries = 2, as if the kernel had not yet rewritten it
  std::string path = dir.File("lag.log");
  WriteAll(path, log);
  auto file = TraceFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->trace().entries.size(), 5u);
  EXPECT_EQ((*file)->trace().super_nr_entries, 2u);
  ASSERT_FALSE((*file)->trace().notes.empty());
  EXPECT_THAT((*file)->trace().notes[0], HasSubstr("superblock says 2 entries but 5"));
}

TEST(TraceReader, ReadsACutLogUpToTheLastWholeEntry) {
  TempDir dir;
  std::vector<uint8_t> log = ReadAll(WriteSample(dir, 512));
  // Cut inside the data of the FUA write (entry 3).
  const size_t cut = 512 /*super*/ + 3 * 512 /*entry 0*/ + 512 + 512 + 512 + 100;
  log.resize(cut);
  std::string path = dir.File("cut.log");
  WriteAll(path, log);
  auto file = TraceFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->trace().entries.size(), 3u);
  EXPECT_THAT((*file)->trace().notes[0], HasSubstr("cut inside the data of entry 3"));
}

absl::Status ParseBytes(const std::vector<uint8_t>& log, uint64_t device_bytes = 0) {
  TraceReadOptions o;
  o.device_bytes = device_bytes;
  o.name = "bad.log";
  return ParseTrace(log, o).status();
}

TEST(TraceReader, RejectsBadInputWithEntryAndOffset) {
  TempDir dir;
  const std::vector<uint8_t> good = ReadAll(WriteSample(dir, 512));
  auto bad = good;
  bad[0] ^= 1;
  EXPECT_THAT(std::string(ParseBytes(bad).message()), HasSubstr("magic"));
  bad = good;
  bad[8] = 2;
  EXPECT_THAT(std::string(ParseBytes(bad).message()), HasSubstr("version 2"));
  bad = good;
  bad[24] = 7;
  EXPECT_THAT(std::string(ParseBytes(bad).message()), HasSubstr("sectorsize"));
  EXPECT_THAT(std::string(ParseBytes({1, 2, 3}).message()), HasSubstr("too short"));
  // Unknown flag bits in entry 1 (byte 512 + 3*512 = 2048, flags at +16).
  bad = good;
  bad[2048 + 16] = 0x40;
  std::string msg(ParseBytes(bad).message());
  EXPECT_THAT(msg, HasSubstr("entry 1 at byte 2048"));
  EXPECT_THAT(msg, HasSubstr("unknown flags"));
  // A mark longer than a block holds (entry 2 at byte 2560, data_len at +24).
  bad = good;
  bad[2560 + 24] = 0xff;
  bad[2560 + 25] = 0x01;
  msg = std::string(ParseBytes(bad).message());
  EXPECT_THAT(msg, HasSubstr("entry 2 at byte 2560"));
  EXPECT_THAT(msg, HasSubstr("mark of 511 bytes"));
  // Garbage padding after a write's header.
  bad = good;
  bad[512 + 40] = 1;
  EXPECT_THAT(std::string(ParseBytes(bad).message()), HasSubstr("non-zero padding"));
  // Entries beyond the device: the FUA write is at sector 10.
  msg = std::string(ParseBytes(good, 8 * 512).message());
  EXPECT_THAT(msg, HasSubstr("entry 3 at byte 3072"));
  EXPECT_THAT(msg, HasSubstr("beyond the device"));
  EXPECT_TRUE(ParseBytes(good, 64 * 512).ok());
}

TEST(Recorder, RejectsMisalignedOutOfRangeAndBadIds) {
  TempDir dir;
  auto rec = Recorder::Create({dir.File("r.log"), 512, 4096});
  ASSERT_TRUE(rec.ok());
  EXPECT_FALSE((*rec)->RecordWrite(100, Filled(512, 1), false).ok());
  EXPECT_FALSE((*rec)->RecordWrite(0, Filled(100, 1), false).ok());
  EXPECT_FALSE((*rec)->RecordWrite(4096, Filled(512, 1), false).ok());
  EXPECT_FALSE((*rec)->RecordAck("bad id").ok());
  EXPECT_FALSE((*rec)->RecordAck(std::string(65, 'a')).ok());
  EXPECT_FALSE((*rec)->RecordMark(std::string(480, 'm')).ok());
  EXPECT_TRUE((*rec)->RecordMark(std::string(479, 'm')).ok());
  EXPECT_EQ((*rec)->entries(), 1u);
  EXPECT_TRUE((*rec)->Finish().ok());
  EXPECT_TRUE((*rec)->Finish().ok());
}

TEST(TraceReplay, AppliesAPrefixLikeReplayLog) {
  TempDir dir;
  std::string log = WriteSample(dir, 512);
  std::string base = dir.File("base.img");
  WriteAll(base, Filled(64 * 512, 0x11));
  auto file = TraceFile::Open(log);
  ASSERT_TRUE(file.ok());
  ReplayOptions to_mark;
  to_mark.end_mark = "ack:7";
  auto n = ReplayTrace(**file, base, dir.File("a.img"), to_mark);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 3u);
  auto img = ReadAll(dir.File("a.img"));
  EXPECT_EQ(img[3 * 512], 0xab);
  EXPECT_EQ(img[10 * 512], 0x11);
  auto all = ReplayTrace(**file, base, dir.File("b.img"), {});
  ASSERT_TRUE(all.ok());
  img = ReadAll(dir.File("b.img"));
  EXPECT_EQ(img[3 * 512], 0x00);  // discarded
  EXPECT_EQ(img[4 * 512], 0xab);
  EXPECT_EQ(img[10 * 512], 0xcd);
  ReplayOptions missing;
  missing.end_mark = "nope";
  EXPECT_THAT(std::string(ReplayTrace(**file, base, dir.File("c.img"), missing).status().message()),
              HasSubstr("no mark \"nope\""));
  ReplayOptions past;
  past.end_entry = 5;
  EXPECT_FALSE(ReplayTrace(**file, base, dir.File("c.img"), past).ok());
}

TEST(Manifest, RecorderWritesOneAndAChangedImageIsRejected) {
  TempDir dir;
  std::string base = dir.File("base.img");
  WriteAll(base, Filled(8192, 0));
  Recorder::Options options{dir.File("m.log"), 512, 8192, base};
  auto rec = Recorder::Create(options);
  ASSERT_TRUE(rec.ok());
  ASSERT_TRUE((*rec)->RecordWrite(0, Filled(512, 1), false).ok());
  ASSERT_TRUE((*rec)->Finish().ok());
  std::string mpath = ManifestPathFor(options.log_path);
  auto m = ReadManifest(mpath);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->order, OrderSemantics::kCompletion);
  EXPECT_EQ(m->block_size, 512u);
  EXPECT_TRUE(ValidateManifest(*m, mpath, 512, base).ok());
  EXPECT_THAT(std::string(ValidateManifest(*m, mpath, 4096, base).message()),
              HasSubstr("block size"));
  WriteAll(base, Filled(8192, 2));
  EXPECT_THAT(std::string(ValidateManifest(*m, mpath, 512, base).message()), HasSubstr("modified"));
  WriteAll(mpath, {'{', 'x'});
  EXPECT_THAT(std::string(ReadManifest(mpath).status().message()), HasSubstr("not a JSON"));
}

}  // namespace
}  // namespace powercut::harness
