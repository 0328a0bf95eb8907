// Failing disks as a mode of `powercut run` and `matrix` (`--flakey error_writes|drop_writes
// --flakey-after-acks N [--flakey-for DURATION]`, docs/live-cuts.md "Failing disks"): the workload
// runs once in the guest on a dm-flakey device that passes writes through until the N-th ack, then
// fails them (error_writes: EIO) or drops them silently (drop_writes), for good or for a window
// after which the guest restores the pass-through table (the disk heals). After the workload the
// guest unmounts, restores the table, remounts (journal replay) and runs the checker on the final
// image (xfstests' way). With several disks (`--disks N --flakey-disk K`) only disk K fails; the
// workload's writes to the others go on, and the checker sees every disk remounted. The oracle:
// every ack given after the failure began must be backed by data on that image; an ack the disk
// never stored is listed in acks_after_failure.
#pragma once

#include <chrono>
#include <string>

#include "absl/status/statusor.h"
#include "harness/product/run/run.h"
#include "harness/vm/warm/guest_pool.h"
#include "harness/vm/warm/vm_run.h"

namespace powercut::product {

// A mode (none is an error); after_acks >= 0; window >= 0 (0: for good).
absl::Status ValidateFlakey(const RunOptions::Flakey& flakey);
// `--flakey-for`: "2s", "500ms", "1.5s"; positive.
absl::StatusOr<std::chrono::milliseconds> ParseFlakeyWindow(const std::string& text);

// One flakey run of `options.workload` (checked and given a folder by StartRun, as a replayed
// run is), in `pool`'s warm guest (or a guest of its own when null). Never fails: what went wrong
// is the outcome's error_kind ("timeout": the guest hung on the failing disk and was killed;
// "flakey-unsupported": the guest kernel's dm-flakey refused the mode; "vm"; "no-acks").
RunOutcome RunFlakey(const vm::VmEnvironment& env, const RunOptions& options, vm::GuestPool* pool);

}  // namespace powercut::product
