#include "tests/wal/wal_test_util.h"

#include <fmt/format.h>

#include "absl/status/status.h"
#include "base/status_macros.h"

namespace powercut::wal::testing {

absl::StatusOr<ScannedLog> ScanLog(Env* env, const std::string& dir) {
  ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDir(dir));
  ScannedLog log;
  uint64_t log_id = 0;
  Lsn next = 0;
  for (const std::string& name : names) {
    if (!ParseSegmentFileName(name)) continue;
    const std::string path = dir + "/" + name;
    ASSIGN_OR_RETURN(uint64_t size, env->FileSize(path));
    ASSIGN_OR_RETURN(std::unique_ptr<File> file, env->Open(path, OpenOptions{.read_only = true}));
    std::vector<uint8_t> data(size);
    ASSIGN_OR_RETURN(size_t got, file->Read(0, size, data.data()));
    RETURN_IF_ERROR(file->Close());
    data.resize(got);
    ASSIGN_OR_RETURN(SegmentHeader header, DecodeSegmentHeader(data));
    if (log.segments == 0) {
      log_id = header.log_id;
      next = header.first_lsn;
    } else if (header.log_id != log_id) {
      return absl::DataLossError(fmt::format("{}: log id differs from the first segment", path));
    } else if (header.first_lsn != next) {
      return absl::DataLossError(
          fmt::format("{}: starts at LSN {}, expected {}", path, header.first_lsn, next));
    }
    ++log.segments;
    const uint64_t end = std::min<uint64_t>(data.size(), header.segment_size);
    uint64_t off = kSegmentHeaderSize;
    bool sealed = false;
    while (off < end) {
      DecodedRecord r = DecodeRecord(header.segment_salt,
                                     absl::MakeConstSpan(data.data() + off, end - off), end - off);
      if (r.outcome != DecodeOutcome::kOk || r.header.lsn != next) break;
      if (r.header.type == RecordType::kSeal) {
        sealed = true;
        ++log.seals;
        break;
      }
      log.records.push_back(
          {r.header.lsn,
           std::string(reinterpret_cast<const char*>(r.payload.data()), r.payload.size())});
      ++next;
      off += r.size;
    }
    if (!sealed) break;
  }
  return log;
}

std::string Payload(int writer, int seq, size_t size) {
  std::string s = fmt::format("w{}-s{}-", writer, seq);
  while (s.size() < size) s.push_back(static_cast<char>('a' + (s.size() * 7 + seq) % 26));
  s.resize(std::max(size, s.size()));
  return s;
}

}  // namespace powercut::wal::testing
