// powercut's recording block device: an NBD server (fixed newstyle handshake, simple replies) on a
// unix socket, backed by an image file, that reports every completed request to a Recorder.
//
// Order guarantee: requests are executed one at a time in arrival order, and each is recorded
// after it completed on the backing file and before its reply is sent, so the trace is the
// device's completion order: whatever the guest saw complete is already in the trace.
//
// The export advertises FLUSH and FUA (NBD_FLAG_SEND_FLUSH | NBD_FLAG_SEND_FUA); qemu with
// cache.writeback=on shows the guest a volatile write cache, so the guest's barriers reach us as
// NBD_CMD_FLUSH and FUA writes. A flush is recorded, not fsynced: the host's durability of the
// backing file plays no part in the crash model.
//
// Live power cut: the server keeps an undo record (old bytes) of every write since the last flush
// (and of the last `lying_window` writes), so after the guest was killed ApplyPowerCut() can turn
// the backing image into what a drive with the chosen cache model could have left behind.
// ArmCut() makes the cut land on a request completion: right after a write completed, before the
// guest hears of it, so at least that write is unflushed at the cut.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "harness/state/cache_model.h"
#include "harness/trace/recorder.h"
#include "harness/vm/devices/nbd_protocol.h"

namespace powercut::vm {

// What a live power cut did to one write whose fate was drawn (PowerCutReport::decisions), so the
// cut image can be rebuilt from the trace as a crash state of the replay model and compared
// (harness/product/faults/live_cuts.h).
struct CutDecision {
  enum class Fate { kKept, kDropped, kTorn };
  uint64_t offset = 0;  // bytes
  uint64_t bytes = 0;
  bool fua = false;
  bool flushed = false;  // completed before the last flush (a lying cache's candidate)
  Fate fate = Fate::kKept;
  uint64_t units_kept = 0;  // kTorn: bit u = atomic unit u of the write reached the media
};

struct PowerCutReport {
  harness::CacheModel model{.mode = harness::CacheMode::kOn};
  uint64_t seed = 0;
  uint64_t candidates = 0;  // writes whose fate was drawn (volatile, or inside the lying window)
  uint64_t kept = 0;
  uint64_t dropped = 0;
  uint64_t torn = 0;                   // writes of which only some atomic units were kept
  uint32_t atomic_unit = 0;            // the unit writes were torn at
  std::vector<CutDecision> decisions;  // in completion order, one per candidate
};

class NbdServer {
 public:
  struct Options {
    std::string socket_path;
    std::string image_path;                 // the backing image; its size is the export size
    harness::Recorder* recorder = nullptr;  // may be null (then nothing is recorded)
    // Which disk of a set this server is (0-based): several servers share one recorder, so the
    // disks' requests land on one clock (harness/trace/disk_layout.h).
    uint32_t disk = 0;
    // Tearing granularity for ApplyPowerCut when the model's atomic_unit is 0.
    uint32_t atomic_unit = 4096;
    // Flushed writes kept undoable for the lying model: the largest window it can apply.
    size_t lying_window = 64;
  };

  // Binds and listens on the socket, then serves connections on a thread of its own.
  static absl::StatusOr<std::unique_ptr<NbdServer>> Start(const Options& options);
  ~NbdServer();

  // Stops serving (closes the listener and any connection) and joins the thread. Idempotent.
  void Stop();

  // Arms a power cut at a request completion: once `writes` more non-FUA writes have completed
  // (on the backing file, recorded, undoable), the server calls `on_cut` on its thread instead
  // of replying to that write, and executes nothing more until Stop(). So the cut finds at least
  // that write unflushed, and the guest never saw it complete. `writes` >= 1. Re-arming replaces
  // a cut that has not fired; after it fired, arming does nothing.
  void ArmCut(uint64_t writes, std::function<void()> on_cut);
  // The armed cut fired.
  bool cut() const;

  // Stops the server, then rewrites the writes that were not yet durable under `model` with a
  // seeded RNG: off keeps every completed write; on keeps every write completed before the last
  // flush and every FUA write, and keeps, drops or tears (per atomic unit: the model's, else
  // Options::atomic_unit) each later write; lying does the same to the writes inside the model's
  // window (entries = writes, or bytes; at most Options::lying_window writes), flushes or not.
  // Kept writes are applied in completion order. At most one write is torn (the one the drive
  // was writing when the power went; the replay model's crash states tear at most one write,
  // docs/live-cuts.md), and only a write of at most 64 atomic units.
  // `may_tear` false: no write is torn (the other disks of a set, when this one's write was cut:
  // the replay model tears one write per state).
  absl::StatusOr<PowerCutReport> ApplyPowerCut(const harness::CacheModel& model, uint64_t seed,
                                               bool may_tear = true);

  // A single node's power cut (docs/cluster.md, "Single-node cuts"): the same draw as
  // ApplyPowerCut, but the server keeps serving. The caller guarantees that no request of this
  // disk is in flight and none arrives until the call returned (the guest switched the disk's dm
  // table to `error` first). Afterwards the drive's cache is empty: every write is on its media.
  absl::StatusOr<PowerCutReport> ApplyNodeCut(const harness::CacheModel& model, uint64_t seed);

  // The first error met while serving (I/O or recorder), or OK.
  absl::Status status() const;
  uint64_t requests() const;
  uint64_t flushes() const;
  uint64_t export_bytes() const { return export_bytes_; }
  const std::string& socket_path() const { return options_.socket_path; }
  const std::string& image_path() const { return options_.image_path; }

 private:
  struct UndoRecord {
    uint64_t offset;
    std::vector<uint8_t> old_data;
    std::vector<uint8_t> new_data;
    bool fua;
    bool volatile_;  // completed after the last flush
  };

  NbdServer(Options options, int listen_fd, int image_fd, uint64_t export_bytes)
      : options_(std::move(options)),
        image_fd_(image_fd),
        export_bytes_(export_bytes),
        listener_(listen_fd, options_.socket_path) {}
  // Serves one connection (NbdListener::ServeFn); false after a power cut, once stopped.
  bool Serve(int fd);
  absl::Status ServeConnection(int fd);
  absl::Status Handshake(int fd, bool* go);
  absl::Status Transmission(int fd);
  void NoteError(const absl::Status& s);
  // ApplyPowerCut's steps: where the writes whose fate is drawn begin (a suffix of undo_), one
  // such write kept, dropped or torn (report->atomic_unit set; `torn_one`: a write was torn
  // already, or none may be), and the tearing of one write unit by unit.
  absl::StatusOr<PowerCutReport> CutLocked(const harness::CacheModel& model, uint64_t seed,
                                           bool may_tear) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  size_t FirstCandidate(const harness::CacheModel& model) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ReplayCandidate(const UndoRecord& u, const harness::CacheModel& model,
                               std::mt19937_64* rng, bool* torn_one, PowerCutReport* report) const;
  absl::Status TearWrite(const UndoRecord& u, uint32_t unit, std::mt19937_64* rng,
                         CutDecision* d) const;

  const Options options_;
  int image_fd_;
  const uint64_t export_bytes_;

  // Locked with base/tsan_mutex.h's helpers, so TSan sees the edges of Debian's prebuilt Abseil.
  mutable absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  uint64_t requests_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t flushes_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<UndoRecord> undo_ ABSL_GUARDED_BY(mu_);
  uint64_t cut_countdown_ ABSL_GUARDED_BY(mu_) = 0;  // 0: no cut armed
  std::function<void()> on_cut_ ABSL_GUARDED_BY(mu_);
  bool cut_ ABSL_GUARDED_BY(mu_) = false;
  // Last: destroyed (its thread joined) before anything the thread uses.
  NbdListener listener_;
};

}  // namespace powercut::vm
