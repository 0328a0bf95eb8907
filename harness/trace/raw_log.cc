#include "harness/trace/raw_log.h"

#include <string>
#include <vector>

#include "base/status_macros.h"

namespace powercut::harness {

absl::Status WriteRawLog(Recorder& recorder, uint64_t commits, RawLogBarrier barrier) {
  for (uint64_t i = 0; i < commits; ++i) {
    std::vector<uint8_t> block = RawLogRecord(i);
    std::string id = std::to_string(i);
    if (barrier == RawLogBarrier::kAckBeforeWrite) RETURN_IF_ERROR(recorder.RecordAck(id));
    RETURN_IF_ERROR(recorder.RecordWrite(i * kRawLogBlock, block, barrier == RawLogBarrier::kFua));
    if (barrier == RawLogBarrier::kFlushBeforeAck) RETURN_IF_ERROR(recorder.RecordFlush());
    if (barrier != RawLogBarrier::kAckBeforeWrite) RETURN_IF_ERROR(recorder.RecordAck(id));
  }
  return absl::OkStatus();
}

}  // namespace powercut::harness
