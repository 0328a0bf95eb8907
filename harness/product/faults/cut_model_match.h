// The reality check of a live power cut (docs/live-cuts.md): the cut image must equal, byte for
// byte, the crash state of cache model "on" that keeps, drops and tears exactly the writes the
// drive did. A cut outside the model is a tester bug (the recorder, the model or the
// materializer is wrong).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/state/state_generator.h"
#include "harness/vm/devices/nbd_server.h"

namespace powercut::product {

// What a cut image is, in the replay model's terms.
struct ModelMatch {
  bool in_model = false;
  bool sampled = false;
  std::string state_id;
  std::string evidence;
  uint64_t point = 0;            // the crash point: the cut's trace's entries
  uint64_t volatile_writes = 0;  // the model's volatile writes at that point
};

// Rebuilds, from `trace` (+ its manifest's base image), the crash state of cache model "on" (at
// `report.atomic_unit`) at the trace's end that keeps, drops and tears the writes as `report`
// says the cut did, and compares it with `image` (the disk after the cut, before any recovery).
// `states`/`seed` are the replay's: `sampled` says whether its state set at that point holds an
// image with the same content hash. Errors: the trace or images cannot be read.
// Several disks (the trace's manifest lists them): `report` is disk 1's, `extra` disks 2..N's,
// each disk's drawn writes in its own completion order; `image` is the set's concatenated image.
absl::StatusOr<ModelMatch> MatchCutToModel(const std::string& trace, const std::string& image,
                                           const vm::PowerCutReport& report,
                                           const harness::StateOptions& states, uint64_t seed,
                                           const std::vector<vm::PowerCutReport>& extra = {});

}  // namespace powercut::product
