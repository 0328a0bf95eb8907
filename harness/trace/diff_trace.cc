#include "harness/trace/diff_trace.h"

#include <cstring>
#include <memory>

#include "base/image_io.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/trace/recorder.h"

namespace powercut::harness {

absl::Status WriteDiffTrace(const std::string& before, const std::string& after,
                            const std::string& log, const DiffTraceOptions& options) {
  return WriteDiffTraceSteps(before, {{after, options.flush_before_acks, options.acks}}, log,
                             options.block_size);
}

absl::Status WriteDiffTraceSteps(const std::string& base, const std::vector<DiffStep>& steps,
                                 const std::string& log, uint32_t block_size) {
  ASSIGN_OR_RETURN(std::unique_ptr<ReadOnlyMap> previous, ReadOnlyMap::Open(base));
  if (block_size == 0 || previous->size() % block_size != 0) {
    return absl::InvalidArgumentError(
        fmt::format("diff trace: base {} ({} bytes) is not a multiple of the block size {}", base,
                    previous->size(), block_size));
  }
  Recorder::Options ro;
  ro.log_path = log;
  ro.sector_size = block_size;
  ro.device_bytes = previous->size();
  ro.base_image = base;
  ASSIGN_OR_RETURN(auto recorder, Recorder::Create(ro));
  for (const DiffStep& step : steps) {
    ASSIGN_OR_RETURN(std::unique_ptr<ReadOnlyMap> next, ReadOnlyMap::Open(step.image));
    if (next->size() != previous->size()) {
      return absl::InvalidArgumentError(
          fmt::format("diff trace: {} has {} bytes, the base {} has {}: every step's image must "
                      "have the base's size",
                      step.image, next->size(), base, previous->size()));
    }
    for (uint64_t off = 0; off < next->size(); off += block_size) {
      if (std::memcmp(previous->data() + off, next->data() + off, block_size) == 0) continue;
      RETURN_IF_ERROR(
          recorder->RecordWrite(off, absl::MakeConstSpan(next->data() + off, block_size), false));
    }
    if (step.flush) RETURN_IF_ERROR(recorder->RecordFlush());
    for (const std::string& id : step.acks) RETURN_IF_ERROR(recorder->RecordAck(id));
    previous = std::move(next);
  }
  return recorder->Finish();
}

}  // namespace powercut::harness
