// Crash states served to a checking guest (guest_judge.h): an NBD export (nbd_protocol.h) over
// one check worker's materialized crash image, read only, plus:
//
//   - a per-state overlay: the guest's writes (the boot path's journal replay, e2fsck's
//     repairs, a checker that writes) land in memory, 4 KiB pages, dropped when the next state is
//     served, so the worker's image stays the exact crash state and no state sees another's
//     repairs;
//   - a trailing 4 KiB "state block" past the image's end naming the state served (TokenFor):
//     the agent reads it through the page cache after dropping its buffers (BLKFLSBUF), which
//     proves the guest's cache of this device holds nothing of the previous state (that block
//     was cached while the previous state was checked);
//   - sealing between states: writes that arrive while no state is being checked (a file system
//     that outlived its unmount in the guest, docs/boot-recovery.md) are refused with EIO and
//     counted, so they can neither land in the next state nor go unnoticed.
//
// The export advertises FLUSH and FUA; both are no-ops (nothing here is durable on purpose).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "harness/vm/devices/nbd_protocol.h"

namespace powercut::vm {

class StateServer {
 public:
  static constexpr uint64_t kPage = 4096;

  struct Options {
    std::string socket_path;
    int image_fd = -1;         // the crash image (not owned; only read)
    uint64_t image_bytes = 0;  // a multiple of 4 KiB
    // Where the served disk starts in the file: one disk of a set's concatenated image
    // (harness/trace/disk_layout.h); a multiple of 4 KiB.
    uint64_t image_offset = 0;
  };
  // Binds and listens; serves connections on a thread of its own. Starts sealed.
  static absl::StatusOr<std::unique_ptr<StateServer>> Start(const Options& options);
  ~StateServer();
  StateServer(const StateServer&) = delete;
  StateServer& operator=(const StateServer&) = delete;

  // Stops serving and joins the thread. Idempotent.
  void Stop();

  // Serves state `generation` (the image's current content): drops the overlay, names the
  // generation in the state block and accepts writes.
  void ServeState(uint64_t generation);
  // Serves another image of the same size from the next ServeState on (a disk kept attached to its
  // guest across checks: guest_judge.h). Only while sealed.
  absl::Status UseImage(int image_fd, uint64_t image_bytes, uint64_t image_offset = 0);
  // Refuses writes from now on; returns how many were refused since the last ServeState (a write
  // between two states is a file system still alive in the guest).
  void Seal();
  uint64_t refused_writes() const;
  uint64_t overlay_pages() const;

  // The image plus the state block.
  uint64_t export_bytes() const { return options_.image_bytes + kPage; }
  const std::string& socket_path() const { return options_.socket_path; }
  // The state block's first line for `generation` (the rest of the block is zeros).
  static std::string TokenFor(uint64_t generation);
  // The first I/O error met while serving, or OK.
  absl::Status status() const;

 private:
  using Page = std::array<uint8_t, kPage>;
  StateServer(Options options, int listen_fd)
      : options_(std::move(options)), listener_(listen_fd, options_.socket_path) {}
  // Serves one connection (NbdListener::ServeFn).
  bool Serve(int fd);
  absl::Status Transmission(int fd);
  // The page's current content: overlay, state block, or the image.
  absl::Status ReadPage(uint64_t page, uint8_t* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Read(uint64_t offset, uint8_t* out, size_t length);
  absl::Status Write(uint64_t offset, const uint8_t* data, size_t length);

  const Options options_;
  mutable absl::Mutex mu_;
  int image_fd_ ABSL_GUARDED_BY(mu_) = -1;  // the image served (options_.image_fd, or UseImage's)
  uint64_t image_offset_ ABSL_GUARDED_BY(mu_) = 0;  // and where the disk starts in it
  bool sealed_ ABSL_GUARDED_BY(mu_) = true;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<uint64_t, std::unique_ptr<Page>> overlay_ ABSL_GUARDED_BY(mu_);
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  // Last: destroyed (its thread joined) before anything the thread uses.
  NbdListener listener_;
};

}  // namespace powercut::vm
