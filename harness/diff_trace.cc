#include "harness/diff_trace.h"

#include <cstring>

#include "fmt/format.h"
#include "harness/image_io.h"
#include "harness/recorder.h"
#include "wal/status_macros.h"

namespace powercut::harness {

absl::Status WriteDiffTrace(const std::string& before, const std::string& after,
                            const std::string& log, const DiffTraceOptions& options) {
  ASSIGN_OR_RETURN(auto a, ReadOnlyMap::Open(before));
  ASSIGN_OR_RETURN(auto b, ReadOnlyMap::Open(after));
  if (a->size() != b->size() || a->size() % options.block_size != 0) {
    return absl::InvalidArgumentError(fmt::format(
        "diff trace: {} ({} bytes) and {} ({} bytes) must have one size, a multiple of {}", before,
        a->size(), after, b->size(), options.block_size));
  }
  Recorder::Options ro;
  ro.log_path = log;
  ro.sector_size = options.block_size;
  ro.device_bytes = a->size();
  ro.base_image = before;
  ASSIGN_OR_RETURN(auto recorder, Recorder::Create(ro));
  for (uint64_t off = 0; off < a->size(); off += options.block_size) {
    if (std::memcmp(a->data() + off, b->data() + off, options.block_size) == 0) continue;
    RETURN_IF_ERROR(recorder->RecordWrite(
        off, absl::MakeConstSpan(b->data() + off, options.block_size), false));
  }
  if (options.flush_before_acks) RETURN_IF_ERROR(recorder->RecordFlush());
  for (const std::string& id : options.acks) RETURN_IF_ERROR(recorder->RecordAck(id));
  return recorder->Finish();
}

}  // namespace powercut::harness
