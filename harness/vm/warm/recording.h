// The host side of one recording, around the guest that runs it (warm_guest.cc): the disk under
// test made and copied to base.img before the guest sees it, the recorder (powercut's NBD server)
// started, and after the guest the outputs written: the trace manifests (NBD and dm-log-writes),
// the dm-log-writes trace cut to its used length, final.img (docs/vm.md).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/scratch_dir.h"
#include "harness/trace/disk_layout.h"
#include "harness/trace/recorder.h"
#include "harness/vm/devices/nbd_server.h"
#include "harness/vm/machine/qemu.h"
#include "harness/vm/warm/vm_run.h"

namespace powercut::vm {

struct RecordingDisks {
  std::string out;       // the output folder (absolute)
  std::string disk;      // out/disk.img, the disk under test while it is recorded
  std::string log_disk;  // out/log-writes.img, dm-log-writes' log device ("" without)
  uint64_t bytes = 0;
  harness::DiskGeometry geometry;
  // Several disks (RunSpec::extra_disks): disks 2..N (out/disk-<K>.img) and the set's layout;
  // base.img and final.img are then the set's concatenated images.
  struct Extra {
    std::string path;
    uint64_t bytes = 0;
    harness::FsKind fs = harness::DefaultFs();
    harness::DiskGeometry geometry;  // this disk's own sectors
    std::string mkfs_command;
    uint32_t fs_block_size = 0;
  };
  std::vector<Extra> extras;
  harness::DiskLayout layout;
};

// Everything about the spec that can be wrong before a guest is involved.
absl::Status ValidateRunSpec(const RunSpec& spec);

// Empty file systems made once per (file system, sector format, size) and copied for every
// recording that asks for the same: mkfs, reading its block size back and copying it cost
// 0.2-0.5 s per recording as three host commands, an in-process sparse copy of the made file
// system (a few hundred KiB of data for ext4) a few ms. Every recording of one pool then starts
// from the same bytes (the same UUID): a recording's disk is alone in its guest while recorded,
// and crash images of one file system already share a UUID (xfs mounts them `nouuid`).
// Not thread-safe: one per GuestPool (one per worker thread).
class BaseImageCache {
 public:
  // Makes `disk` (a new sparse file of `bytes`) hold the empty file system; fills
  // result->mkfs_command and result->fs_block_size.
  absl::Status MakeDisk(harness::FsKind fs, const harness::DiskGeometry& geometry, uint64_t bytes,
                        const std::string& disk, RunResult* result,
                        const std::string& mkfs_options = "");

 private:
  struct Made {
    std::string image, mkfs_command;
    uint32_t block_size = 0;
  };
  ScratchDir dir_;  // the made file systems, removed with the cache
  std::map<std::tuple<int, uint32_t, uint32_t, uint64_t, std::string>, Made> made_;
};

// Creates the output folder, the sparse disk, the file system (from `cache` when given, else a
// host mkfs) and base.img; fills result's paths, geometry, mkfs_command and fs_block_size.
absl::StatusOr<RecordingDisks> PrepareDisks(const RunSpec& spec, RunResult* result,
                                            BaseImageCache* cache = nullptr);

struct Recorders {
  std::unique_ptr<harness::Recorder> recorder;  // null without the NBD recording
  std::unique_ptr<NbdServer> nbd;
  std::vector<std::unique_ptr<NbdServer>> extra_nbd;  // disks 2..N, on the same recorder
};
// With Recording::kNbd: the recorder writing out/trace.log and the NBD server serving the disk on
// `socket_path`.
absl::StatusOr<Recorders> StartRecorder(const RunSpec& spec, const RecordingDisks& disks,
                                        const std::string& socket_path, RunResult* result);

// The disks the guest gets for this recording: the disk under test first, then the dm-log-writes
// log.
std::vector<GuestDisk> GuestDisksFor(const RunSpec& spec, const RecordingDisks& disks,
                                     const Recorders& recorders);

// After the guest: finishes the recorder, writes the manifests, the dm-log-writes trace and
// final.img.
absl::Status WriteRecordingOutputs(const RunSpec& spec, const RecordingDisks& disks,
                                   harness::Recorder* recorder, RunResult* result);

}  // namespace powercut::vm
