// Builds a trace from images: every block that differs between `before` and `after`, in block
// order, then (optionally) a FLUSH, then an ack mark per id. It stands in for a recording where no
// VM is at hand (tests and benchmarks of file-system checks): the order of the writes is the
// block order, not what a kernel would issue, so it exercises the engine, not a file system's
// ordering. Only the states at the FLUSH/ack points (every step applied whole) are images a real
// crash could leave; states in between mix blocks of two images.
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

// One step of a multi-image trace: the blocks that differ from the previous step's image (the
// base for the first step), then a FLUSH when `flush`, then the acks.
struct DiffStep {
  std::string image;
  bool flush = true;
  std::vector<std::string> acks;
};

// Writes `log` and its manifest (base = `base`, order "completion"): the steps in order. A step
// whose image equals the previous one contributes only its FLUSH and acks, so a first step
// {base, flush} gives a crash point whose state is the base image itself.
absl::Status WriteDiffTraceSteps(const std::string& base, const std::vector<DiffStep>& steps,
                                 const std::string& log, uint32_t block_size = 4096);

}  // namespace powercut::harness
