// Helpers shared by the WAL tests: a self-removing temp directory on a disk-backed file system,
// and a plain reader of a log directory (segment header + record chain, through wal/record_format).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "base/temp_dir.h"
#include "wal/env.h"
#include "wal/record_format.h"

namespace powercut::wal::testing {

// The shared self-removing folder (base/temp_dir.h), under $POWERCUT_TEST_TMPDIR or
// /var/tmp (not /tmp, which may be tmpfs, where O_DIRECT fails).
using TempDir = powercut::testing::TempDir;

struct ScannedRecord {
  Lsn lsn = 0;
  std::string payload;
};

struct ScannedLog {
  std::vector<ScannedRecord> records;  // the valid chain, in LSN order
  uint64_t segments = 0;
  uint64_t seals = 0;
};

// Reads every segment of `dir` in LSN order and follows each one's record chain until a seal or
// the first non-record; stops the whole log at the first segment whose chain did not end in a
// seal. Fails if segments disagree on the log id or LSNs are not dense.
absl::StatusOr<ScannedLog> ScanLog(Env* env, const std::string& dir);

inline absl::Span<const uint8_t> Bytes(std::string_view s) {
  return absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

// A payload that encodes its writer and sequence, so a reader can check it byte for byte.
std::string Payload(int writer, int seq, size_t size = 100);

}  // namespace powercut::wal::testing
