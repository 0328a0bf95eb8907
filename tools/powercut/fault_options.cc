#include "tools/powercut/fault_options.h"

#include "base/duration_flag.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/product/faults/flakey.h"
#include "harness/vm/guest/flakey_mode.h"

namespace powercut::cli {

void AddFaultOptions(CLI::App* c, FaultArgs* a) {
  c->add_option("--live-cuts", a->live_cuts,
                "also cut the power of N live runs (seeded, at an unflushed write), check each "
                "cut image and that it is a crash state of the replay model (a guest boot each); "
                "run --disks N / --nodes N: every disk (every node, a zone outage) at once, each "
                "one's image matched on its own, the cluster restarted on its cut images");
  c->add_option("--flakey", a->flakey,
                "instead of the replay: run on a disk that fails (error_writes: EIO) or drops "
                "(drop_writes) every write after --flakey-after-acks acks; the final image must "
                "hold every ack given after the failure began");
  c->add_option("--flakey-after-acks", a->flakey_after_acks,
                "the disk fails after this many acks (default 3)");
  c->add_option("--flakey-for", a->flakey_for,
                "the disk heals after this long (2s, 500ms); default: it fails for good");
  c->add_option("--flakey-disk", a->flakey_disk,
                "with --disks N: the disk that fails (1..N, default 1); the others keep working");
}

void AddNodeCutOptions(CLI::App* c, const std::string& what, uint64_t* cuts, uint64_t* down_ms) {
  c->add_option("--node-cuts", *cuts,
                "K more recordings, in each one node (drawn from --seed) loses its power once "
                "while the workload runs and restarts; every ack must be in the live cluster's "
                "checker output afterwards (docs/cluster.md); " +
                    what);
  c->add_option_function<std::string>(
      "--node-down",
      [down_ms](const std::string& text) {
        absl::StatusOr<absl::Duration> d =
            ParseDurationFlag("--node-down", text, {.allow_zero = true});
        if (!d.ok()) throw CLI::ValidationError("--node-down", std::string(d.status().message()));
        *down_ms = static_cast<uint64_t>(absl::ToInt64Milliseconds(*d));
      },
      "with --node-cuts: how long the cut node's power stays off (default 2s)");
}

absl::Status ApplyFaultArgs(const FaultArgs& a, int64_t default_after, uint64_t* live_cuts,
                            product::RunOptions::Flakey* flakey) {
  *live_cuts = a.live_cuts;
  if (a.flakey.empty()) {
    if (a.flakey_after_acks >= 0 || !a.flakey_for.empty() || a.flakey_disk >= 0) {
      return absl::InvalidArgumentError(
          "--flakey-after-acks, --flakey-for and --flakey-disk need --flakey "
          "error_writes|drop_writes");
    }
    return absl::OkStatus();
  }
  if (a.live_cuts > 0) {
    return absl::InvalidArgumentError(
        "--live-cuts and --flakey are different runs: a flakey run replaces the replay the live "
        "cuts are compared with; give one of them");
  }
  ASSIGN_OR_RETURN(flakey->mode, vm::ParseFlakeyMode(a.flakey, "--flakey"));
  if (a.flakey_disk >= 0) {  // a disk the run does not have: ValidateFlakeyDisk
    flakey->disk = a.flakey_disk > 1000000 ? 0 : static_cast<uint32_t>(a.flakey_disk);
  }
  flakey->after_acks = a.flakey_after_acks >= 0 ? a.flakey_after_acks : default_after;
  if (!a.flakey_for.empty()) {
    absl::StatusOr<std::chrono::milliseconds> w = product::ParseFlakeyWindow(a.flakey_for);
    if (!w.ok()) return w.status();
    flakey->window = *w;
  }
  return product::ValidateFlakey(*flakey);
}

}  // namespace powercut::cli
