// wal_recovery_fuzzer: recovery must never crash, hang, or return a record whose checksum failed,
// whatever the bytes of the segment files.
//
// Input: byte 0 picks a layout, the rest is the body:
//   0  the body is one raw segment file (header included);
//   1  a valid header (fixed salt, first LSN 1) followed by the body;
//   2  two segments: the body split at a point chosen by its first byte, each with a valid header;
//   3  a "program" that builds records with the real encoder (valid checksums), with LSN skips,
//      repeats, seals, synced LSNs, bit flips and segment switches, so the classification logic
//      sees logs that are nearly right.
// For every mode, each returned record must be one that decodes with a valid checksum somewhere in
// the files (found by an independent byte-by-byte search), LSNs must ascend (densely outside
// salvage). Then Repair of a point-in-time result must leave a log that recovers in absolute mode
// with the same records.
#include <stdlib.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "recovery/recovery.h"
#include "recovery/repair.h"
#include "wal/record_format.h"

namespace {

using powercut::wal::Lsn;
namespace rec = powercut::recovery;
namespace wal = powercut::wal;

constexpr uint64_t kSalt = 0x0123456789abcdefull;
constexpr uint64_t kLogId = 0x1122334455667788ull;

[[noreturn]] void Fail(const std::string& what) {
  fprintf(stderr, "wal_recovery_fuzzer: invariant broken: %s\n", what.c_str());
  abort();
}

const std::string& WorkDir() {
  static const std::string* dir = [] {
    std::string base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
    std::string pattern = base + "/powercut-fuzz-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) Fail("mkdtemp");
    auto* d = new std::string(pattern);
    atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(WorkDir(), ignored);
    });
    return d;
  }();
  return *dir;
}

std::string Header(Lsn first_lsn, uint64_t segment_size, uint64_t salt = kSalt) {
  wal::SegmentHeader h;
  h.log_id = kLogId;
  h.segment_salt = salt;
  h.first_lsn = first_lsn;
  h.segment_size = segment_size;
  h.block_size = 4096;
  return wal::EncodeSegmentHeader(h);
}

void Put(const std::string& name, const std::string& bytes) {
  std::ofstream out(WorkDir() + "/" + name, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Layout 3: 4 bytes per step.
void BuildProgram(const uint8_t* p, size_t n) {
  std::vector<std::pair<Lsn, std::string>> segments;  // first LSN, bytes
  Lsn lsn = 1;
  uint64_t salt = kSalt;
  segments.emplace_back(1, Header(1, 1 << 16, salt));
  for (size_t i = 0; i + 4 <= n && i < 4 * 200; i += 4) {
    const uint8_t op = p[i], len = p[i + 1], sync = p[i + 2], damage = p[i + 3];
    std::string& bytes = segments.back().second;
    wal::RecordHeader h;
    h.length = len % 64;
    h.synced_lsn = sync == 0 ? 0 : (sync >= lsn ? lsn - 1 : lsn - sync);
    switch (op % 8) {
      case 0:
      case 1:
      case 2:
        h.lsn = lsn++;
        break;
      case 3:
        h.lsn = ++lsn;  // skips one
        ++lsn;
        break;
      case 4:
        h.lsn = lsn > 1 ? lsn - 1 : 1;  // repeats
        break;
      case 5:  // seal and start the next segment (sometimes at the wrong LSN)
        h.lsn = lsn;
        h.length = 0;
        h.type = wal::RecordType::kSeal;
        break;
      case 6:  // switch segment without a seal
        lsn += damage % 3 == 0 ? 1 : 0;
        segments.emplace_back(lsn, Header(lsn, 1 << 16, ++salt));
        continue;
      default:  // raw garbage
        bytes.append(reinterpret_cast<const char*>(p + i + 1), 3);
        continue;
    }
    const std::string payload(h.length, static_cast<char>('a' + h.lsn % 26));
    const size_t at = bytes.size();
    wal::EncodeRecord(
        salt, h,
        absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(payload.data()), payload.size()),
        &bytes);
    if (damage >= 200) {  // flip one bit of the record just written
      const size_t bit = (damage - 200) * 7 % ((bytes.size() - at) * 8);
      bytes[at + bit / 8] ^= static_cast<char>(1 << (bit % 8));
    }
    if (h.type == wal::RecordType::kSeal) {
      segments.emplace_back(lsn + (damage % 5 == 0 ? 1 : 0), "");
      segments.back().second = Header(segments.back().first, 1 << 16, ++salt);
    }
  }
  std::set<Lsn> used;
  for (auto& [first, bytes] : segments) {
    if (!used.insert(first).second) continue;
    if (bytes.size() > (1 << 16)) bytes.resize(1 << 16);
    Put(wal::SegmentFileName(first), bytes);
  }
}

void Build(const uint8_t* data, size_t size) {
  const uint8_t layout = data[0] % 4;
  const uint8_t* body = data + 1;
  const size_t n = size - 1;
  const std::string raw(reinterpret_cast<const char*>(body), n);
  switch (layout) {
    case 0:
      Put(wal::SegmentFileName(1), raw);
      break;
    case 1:
      // Declared size: sometimes exactly the file, sometimes longer (a file not preallocated).
      Put(wal::SegmentFileName(1), Header(1, 4096 + n + (data[0] >> 2) * 16 + 32) + raw);
      break;
    case 2: {
      if (n == 0) return;
      const size_t split = n * body[0] / 256;
      const Lsn second = 1 + (n > 1 ? body[1] % 16 : 0);
      Put(wal::SegmentFileName(1), Header(1, 4096 + split + 64) + raw.substr(0, split));
      Put(wal::SegmentFileName(second),
          Header(second, 4096 + (n - split) + 64, kSalt + 1) + raw.substr(split));
      break;
    }
    default:
      BuildProgram(body, n);
  }
}

// Every (LSN, payload) that decodes with a valid checksum at any offset of any file.
std::set<std::pair<Lsn, std::string>> ValidRecords() {
  std::set<std::pair<Lsn, std::string>> valid;
  for (const auto& entry : std::filesystem::directory_iterator(WorkDir())) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.size() < wal::kSegmentHeaderSize) continue;
    const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
    auto header = wal::DecodeSegmentHeader(absl::MakeConstSpan(p, wal::kSegmentHeaderSize));
    if (!header.ok()) continue;
    for (size_t o = wal::kSegmentHeaderSize; o < bytes.size(); ++o) {
      const uint64_t max_length = header->segment_size > o + 32 ? header->segment_size - o - 32 : 0;
      const wal::DecodedRecord r = wal::DecodeRecord(
          header->segment_salt, absl::MakeConstSpan(p + o, bytes.size() - o), max_length);
      if (r.outcome == wal::DecodeOutcome::kOk && r.header.type == wal::RecordType::kData) {
        valid.emplace(r.header.lsn, std::string(reinterpret_cast<const char*>(r.payload.data()),
                                                r.payload.size()));
      }
    }
  }
  return valid;
}

void Check(const rec::RecoveryResult& result, rec::Mode mode,
           const std::set<std::pair<Lsn, std::string>>& valid) {
  for (size_t i = 0; i < result.records.size(); ++i) {
    const rec::RecoveredRecord& r = result.records[i];
    if (!valid.contains({r.lsn, r.payload})) {
      Fail("mode " + std::string(rec::ModeName(mode)) + " returned LSN " + std::to_string(r.lsn) +
           ", which has no valid checksum anywhere");
    }
    if (i > 0) {
      const Lsn prev = result.records[i - 1].lsn;
      if (r.lsn <= prev) Fail("LSNs not ascending");
      if (mode != rec::Mode::kSalvage && r.lsn != prev + 1) Fail("LSNs not dense");
    }
  }
  if (mode != rec::Mode::kSalvage && result.next_lsn != result.last_lsn() + 1) {
    Fail("next_lsn does not follow the last record");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > (1 << 20)) return 0;
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator(WorkDir())) {
    std::filesystem::remove(entry.path(), ignored);
  }
  Build(data, size);
  const auto valid = ValidRecords();
  for (rec::Mode mode : rec::AllModes()) {
    rec::RecoverOptions options;
    options.mode = mode;
    options.read_chunk_bytes = 4096;  // many window moves on small inputs
    auto result = rec::Recover(WorkDir(), options);
    if (result.ok()) Check(*result, mode, valid);
  }
  rec::RecoverOptions pit;
  pit.mode = rec::Mode::kPointInTime;
  auto before = rec::Recover(WorkDir(), pit);
  if (!before.ok()) return 0;
  auto repaired = rec::Repair(*before);
  if (!repaired.ok()) Fail("repair failed: " + std::string(repaired.status().message()));
  rec::RecoverOptions absolute;
  absolute.mode = rec::Mode::kAbsolute;
  auto after = rec::Recover(WorkDir(), absolute);
  if (!after.ok()) Fail("not clean after repair: " + std::string(after.status().message()));
  if (after->records.size() != before->records.size()) Fail("repair changed the record count");
  for (size_t i = 0; i < after->records.size(); ++i) {
    if (after->records[i].lsn != before->records[i].lsn ||
        after->records[i].payload != before->records[i].payload) {
      Fail("repair changed a record");
    }
  }
  return 0;
}
