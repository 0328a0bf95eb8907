// A minimal raw-device commit log: the reference workload for the engine's own tests and
// benchmark. Commit i is one 4 KiB block at byte i * 4096 holding {magic, id, XXH3-64 of the
// payload, payload}; a commit is durable when its block is. The checker side scans blocks from 0
// and reports `have <id>` for every intact record up to the first invalid block.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/trace/raw_log_format.h"
#include "harness/trace/recorder.h"

namespace powercut::harness {

enum class RawLogBarrier {
  kFlushBeforeAck,  // write, FLUSH, ack: durable under cache off and on
  kNone,            // write, ack: durable only under cache off
  kAckBeforeWrite,  // ack, write: never durable at the ack
  kFua,             // FUA write, ack: durable under off and on
};

// Records `commits` commits through `recorder` (as the block server would after each request
// completed), acking commit i as "i".
absl::Status WriteRawLog(Recorder& recorder, uint64_t commits, RawLogBarrier barrier);

// Reads the device image and returns the ids of the intact records, in order, stopping at the
// first block that is not a record. Reads at least `min_read_bytes` (to model a checker's cost).
absl::StatusOr<std::vector<uint64_t>> ScanRawLog(const std::string& device,
                                                 uint64_t min_read_bytes = 0);

// main() of a checker command: scans $POWERCUT_DEV, prints `have <id>` lines, exits 0; exits 2
// with a message when the variable is missing or the device cannot be read.
int RawLogCheckerMain(uint64_t min_read_bytes);

}  // namespace powercut::harness
