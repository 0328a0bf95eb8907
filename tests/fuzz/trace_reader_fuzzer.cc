// libFuzzer target for the dm-log-writes reader (harness/trace_reader.h): any bytes must parse
// or fail with a status, never crash, hang or read out of bounds; a parsed trace must be
// self-consistent.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "harness/trace/trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace powercut::harness;
  TraceReadOptions options;
  options.name = "fuzz.log";
  // Exercise the device-size check too, with a size taken from the input.
  options.device_bytes = size > 0 ? uint64_t{data[0]} * 4096 : 0;
  for (int pass = 0; pass < 2; ++pass) {
    auto trace = ParseTrace(absl::MakeConstSpan(data, size), options);
    if (trace.ok()) {
      uint64_t end = trace->sector_size;
      for (const TraceEntry& e : trace->entries) {
        if (e.log_offset != end) std::abort();
        end = e.data_offset + LoggedDataBytes(e.header, trace->sector_size);
        if (end > size) std::abort();
        if (e.is_mark() && e.mark.size() != e.header.data_len) std::abort();
      }
    }
    options.device_bytes = 0;
  }
  return 0;
}
