// Rebuilds the image of one crash state from its id (`powercut state materialize`): the same
// WorkingImage code path the engine uses, so the image is byte-identical to the one checked.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace powercut::harness {

// `base` may be empty when the trace has a manifest. Rejects an id made from another trace.
absl::Status MaterializeState(const std::string& trace_path, const std::string& base,
                              const std::string& state_id, const std::string& out);

}  // namespace powercut::harness
