#include "harness/state/materialize.h"

#include <algorithm>
#include <optional>

#include "base/image_io.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/state/cache_model.h"
#include "harness/state/crash_state.h"
#include "harness/state/working_image.h"
#include "harness/trace/manifest.h"
#include "harness/trace/trace_reader.h"

namespace powercut::harness {

absl::Status MaterializeState(const std::string& trace_path, const std::string& base_arg,
                              const std::string& state_id, const std::string& out) {
  ASSIGN_OR_RETURN(ParsedStateId parsed, DecodeStateId(state_id));
  std::optional<TraceManifest> manifest;
  ASSIGN_OR_RETURN(std::string base, ResolveBase(trace_path, base_arg, &manifest));
  ASSIGN_OR_RETURN(uint64_t base_bytes, FileSize(base));
  TraceReadOptions read_options;
  read_options.device_bytes = base_bytes;
  if (manifest) {
    ASSIGN_OR_RETURN(read_options.disks, LayoutOf(*manifest));
  }
  ASSIGN_OR_RETURN(auto file, TraceFile::Open(trace_path, read_options));
  const Trace& trace = file->trace();
  if (manifest) {
    RETURN_IF_ERROR(
        ValidateManifest(*manifest, ManifestPathFor(trace_path), trace.sector_size, base));
  }
  if (parsed.trace_hash8 != trace.ShortHash()) {
    return absl::InvalidArgumentError(fmt::format(
        "state {} was made from trace {}..., but {} hashes to {}...: use the trace the state id "
        "came from",
        state_id, parsed.trace_hash8, trace_path, trace.ShortHash()));
  }
  if (parsed.state.point > trace.entries.size()) {
    return absl::OutOfRangeError(fmt::format("state {}: point {} is past the {} entries of {}",
                                             state_id, parsed.state.point, trace.entries.size(),
                                             trace_path));
  }
  if (out == base || out == trace_path) {
    return absl::InvalidArgumentError(
        fmt::format("materialize: --out {} would overwrite an input", out));
  }
  TraceIndex index(trace);
  PointView view = index.View(parsed.state.point, parsed.state.model);
  uint32_t granule = std::min<uint32_t>(trace.sector_size, parsed.state.model.SmallestUnit());
  ASSIGN_OR_RETURN(auto image, WorkingImage::Create(out, base, file.get(), granule));
  return image->Materialize(parsed.state, view);
}

}  // namespace powercut::harness
