// A minimal raw-device commit log: the reference workload for the engine's own tests and
// benchmark. Commit i is one 4 KiB block at byte i * 4096 holding {magic, id, XXH3-64 of the
// payload, payload}; a commit is durable when its block is. The checker side (the engine tests'
// tests/check/raw_log_checker.cc, the benchmark's bench/enginebench/raw_checker.cc) scans blocks
// from 0 with raw_log_format.h alone and reports `have <id>` for every intact record up to the
// first invalid block.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
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

}  // namespace powercut::harness
