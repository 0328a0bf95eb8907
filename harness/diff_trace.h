// Builds a trace from two images: every block that differs between `before` and `after`, in
// block order, then (optionally) a FLUSH, then an ack mark per id. It stands in for a recording
// where no VM is at hand (tests and benchmarks of file-system checks): the order of the writes is
// the block order, not what a kernel would issue, so it exercises the engine, not a file system's
// ordering.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace powercut::harness {

struct DiffTraceOptions {
  uint32_t block_size = 4096;
  bool flush_before_acks = true;
  std::vector<std::string> acks;
};

// Writes `log` and its manifest (base = `before`, order "completion").
absl::Status WriteDiffTrace(const std::string& before, const std::string& after,
                            const std::string& log, const DiffTraceOptions& options);

}  // namespace powercut::harness
