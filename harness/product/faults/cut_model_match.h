// The reality check of a live power cut (docs/live-cuts.md): the cut image must equal, byte for
// byte, the crash state of cache model "on" that keeps, drops and tears exactly the writes the
// drive did. A cut outside the model is a tester bug (the recorder, the model or the
// materializer is wrong).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/state/state_generator.h"
#include "harness/vm/devices/nbd_server.h"

namespace powercut::product {

// One disk's part of the reality check (a set's disk, a cluster's node): its drive's unflushed
// writes are the model's volatile writes on that disk, and its image is that disk's part of the
// crash state.
struct DiskMatch {
  bool in_model = false;
  uint64_t volatile_writes = 0;  // the model's volatile writes on this disk at the point
  std::string evidence;          // outside the model: what differs on this disk
};

// What a cut image is, in the replay model's terms.
struct ModelMatch {
  bool in_model = false;
  bool sampled = false;
  std::string state_id;
  std::string evidence;
  uint64_t point = 0;            // the crash point: the cut's trace's entries
  uint64_t volatile_writes = 0;  // the model's volatile writes at that point
  // Per disk, in disk order (one entry for a single disk). in_model is every disk's; evidence
  // names each disk outside (`disk_word` K: ...) when there are several.
  std::vector<DiskMatch> disks;
};

// Rebuilds, from `trace` (+ its manifest's base image), the crash state of cache model "on" (at
// `report.atomic_unit`) at the trace's end that keeps, drops and tears the writes as `report`
// says the cut did, and compares it with `image` (the disk after the cut, before any recovery).
// `states`/`seed` are the replay's: `sampled` says whether its state set at that point holds an
// image with the same content hash. Errors: the trace or images cannot be read.
// Several disks (the trace's manifest lists them): `report` is disk 1's, `extra` disks 2..N's,
// each disk's drawn writes in its own completion order; `image` is the set's concatenated image.
// Each disk is judged on its own (disks[K]): a disk whose drive disagrees with the model does not
// keep another from being compared. `disk_word` names a disk in the evidence ("node" for a
// cluster).
absl::StatusOr<ModelMatch> MatchCutToModel(const std::string& trace, const std::string& image,
                                           const vm::PowerCutReport& report,
                                           const harness::StateOptions& states, uint64_t seed,
                                           const std::vector<vm::PowerCutReport>& extra = {},
                                           std::string_view disk_word = "disk");

// The reality check of a single node's power cut (docs/cluster.md, "Single-node cuts"): disk
// `disk` (0-based) of the set lost its power at trace entry `point` (the entries before the
// cut's mark) while the others ran on; `disk_image` is that disk's image right after the cut
// (NbdServer::ApplyNodeCut), `report` its drive's draws. The image must equal that disk's part
// of the crash state of cache model "on" at `point` that keeps, drops and tears what the drive
// did. Only that disk is compared (`disks[disk]`); `sampled` is not set (the replay draws states
// of every disk at once).
absl::StatusOr<ModelMatch> MatchNodeCutToModel(const std::string& trace, uint64_t point,
                                               uint32_t disk, const std::string& disk_image,
                                               const vm::PowerCutReport& report);

}  // namespace powercut::product
