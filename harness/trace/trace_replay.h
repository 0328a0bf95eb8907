// Replays a prefix of a trace onto a copy of a base image: the contract of xfstests' replay-log
// (`powercut trace replay`). Writes land at sector * sectorsize; discards read back as zeros.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "harness/trace/trace_reader.h"

namespace powercut::harness {

struct ReplayOptions {
  // Last entry to apply (inclusive); the whole log when neither is set.
  std::optional<uint64_t> end_entry;
  // Apply up to and including the first mark with exactly this text (replay-log --end-mark).
  std::optional<std::string> end_mark;
};

// Copies `base` to `out` (sparse) and applies the selected entries. Returns how many entries
// were applied. An end mark that is not in the log, or an end entry past its end, is an error.
absl::StatusOr<uint64_t> ReplayTrace(const TraceFile& trace, const std::string& base,
                                     const std::string& out, const ReplayOptions& options);

}  // namespace powercut::harness
