// Running a workload in a qemu guest on a recorded disk, and checking an image in a guest: the
// API the `powercut` CLI and the crash-state engine use (docs/vm.md).
//
//   auto env = PrepareVm();                    // kernel, initramfs, agent, accelerator
//   RunSpec spec{.fs = harness::FsKind::kExt4, .command = "...", .output_dir = "out"};
//   auto run = RunInVm(*env, spec);            // out/trace.log (+ .manifest.json), out/base.img,
//                                              // out/final.img, out/acks.jsonl, out/console.log
//   auto check = CheckInVm(*env, {.fs = harness::FsKind::kExt4, .image = "out/final.img",
//                                 .checker = "..."});
//
// Every run uses a private temporary folder (sockets, job, result) removed at the end; qemu never
// outlives the call; the guest is killed after `timeout`. RunInVm boots a guest for one recording;
// to record several, a GuestPool (guest_pool.h) keeps the guest warm between them.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/fs/file_system.h"
#include "harness/state/cache_model.h"
#include "harness/trace/disk_geometry.h"
#include "harness/vm/devices/nbd_server.h"
#include "harness/vm/guest/flakey_mode.h"
#include "harness/vm/guest/guest_job.h"
#include "harness/vm/machine/guest_config.h"
#include "harness/vm/machine/qemu.h"
#include "harness/vm/machine/vm_environment.h"

namespace powercut::vm {

class WarmGuest;  // warm_guest.h

// How the disk under test is recorded.
enum class Recording {
  kNbd,        // powercut's NBD server + Recorder: completion order, all cache models exact
  kLogWrites,  // the kernel's dm-log-writes in the guest: flush-epoch order
  kNone,       // a plain image file (dm-flakey runs, check runs)
};

// A live power cut (SIGKILL of qemu) during the workload (docs/vm.md, "Live power cut").
struct CutSpec {
  enum class When { kNever, kAfterAcks, kAfter, kRandom };
  When when = When::kNever;
  uint64_t after_acks = 0;             // kAfterAcks: right after the N-th ack arrived
  std::chrono::milliseconds after{0};  // kAfter: this long after the workload started
  // kRandom, drawn from `seed`: after ack N (N uniform in [1, random_max_acks]), at the
  // completion of the K-th non-FUA write that follows (K uniform in [1, random_max_writes]):
  // with the NBD recorder the cut lands right after that write completed on the device, before
  // the guest heard of it, so at least one write is unflushed at the cut. Without the NBD
  // recorder (no request stream to cut on) the cut is a delay uniform in [0, random_window)
  // after ack N instead. If the workload acks fewer, or the guest powers off first, it ends uncut.
  uint64_t random_max_acks = 20;
  std::chrono::milliseconds random_window{200};
  uint64_t random_max_writes = 8;
  uint64_t seed = 1;
  // What the disk keeps (NBD recording only; dm-log-writes and none keep every completed write).
  harness::CacheModel model{.mode = harness::CacheMode::kOn};
};

// "random", "after-acks=N", "after=DURATION" (e.g. 1.5s, 300ms); "" or "none" = never.
absl::StatusOr<CutSpec> ParseCut(const std::string& text);

struct RunSpec {
  harness::FsKind fs = harness::DefaultFs();
  // The recorded disk's sectors as the guest sees them (512e: 512-byte logical, 4,096-byte
  // physical); also the log disk's of dm-log-writes, the NBD trace's sectorsize (the logical
  // sector) and the live cut's atomic unit (the physical sector, unless cut.model says one).
  harness::SectorFormat sector = harness::kDefaultSectorFormat;
  std::string command;  // the workload, run with /bin/sh -c
  std::string mount_options;
  std::string mkfs_options;  // added to the file system's mkfs (`--mkfs-options`), split at blanks
  // The workload waits for each ack to be recorded before it runs on (POWERCUT_ACK_SYNC_FD;
  // AckChannel::Options::confirm_acks): its crash points sit exactly at its acks.
  bool sync_acks = false;
  Recording recording = Recording::kNbd;
  // With Recording::kNbd: also run dm-log-writes in the guest on top of the NBD disk, so one run
  // yields both traces of the same writes (out/log-writes.log besides out/trace.log).
  bool also_log_writes = false;
  // 0 = the file system's default_image_bytes (harness/fs/file_system.h: ext4 512 MiB, so
  // mke2fs picks its normal 4 KiB-block profile; xfs 300 MiB; btrfs and raw 128 MiB).
  uint64_t disk_bytes = 0;
  // Several recorded disks on one clock (docs/vm.md, "Several disks"): disks 2..N, each with its
  // own file system and size (0: that file system's default), recorded by one recorder into one
  // trace over the set (harness/trace/disk_layout.h); the workload sees POWERCUT_DIR_2 ... Disk 1
  // is `fs`, `disk_bytes` and `sector`; each other disk has its own sectors (unset: `sector`'s).
  // The trace's sectorsize is then the smallest logical sector of the set. Empty: one disk. NBD
  // recording only, without dm-flakey or a live cut.
  struct ExtraDisk {
    harness::FsKind fs = harness::DefaultFs();
    uint64_t bytes = 0;
    std::optional<harness::SectorFormat> sector;
  };
  std::vector<ExtraDisk> extra_disks;
  // The guest's memory and CPUs (`--guest-memory`, `--guest-cpus`); 0 = QemuOptions' defaults
  // (768 MiB, 1 CPU).
  int memory_mib = 0;
  int cpus = 0;
  // The disk under test's write cache as the guest sees it (qemu.h); kWriteThrough makes the
  // guest see no volatile cache (then the block layer strips FLUSH/FUA: nothing to record).
  DiskCache disk_cache = DiskCache::kDefault;
  std::string output_dir;  // created if missing
  CutSpec cut;
  // dm-flakey (Recording::kNone or kNbd; none: no failing disk), switched on after
  // `flakey_after_acks` acks; the guest then unmounts, restores the table, remounts and runs
  // `checker` in the same boot (xfstests' way).
  std::optional<FlakeyMode> flakey;
  int64_t flakey_after_acks = 0;
  // > 0: the disk fails for this long, then heals (pass-through again) while the workload runs.
  std::chrono::milliseconds flakey_for{0};
  // Several disks: which one fails (0 = disk 1, K = extra_disks[K - 1]); the others keep working.
  uint32_t flakey_disk = 0;
  std::string checker;
  // A single node's power cut (docs/cluster.md, "Single-node cuts"): disk `node_cut_disk` (0 =
  // disk 1) of a set is stacked under a dm device in the guest that the cluster launcher asks the
  // agent to switch to `error` (the drive's power is gone) and back. At that moment the host
  // applies the drive's cache (`node_cut_model`, seeded with `node_cut_seed`) to that disk's NBD
  // server while the other disks keep serving, marks the instant in the trace and snapshots the
  // disk (RunResult::node_cut). -1: no node cut. NBD recording only, without dm-flakey.
  int32_t node_cut_disk = -1;
  uint64_t node_cut_seed = 1;
  harness::CacheModel node_cut_model{.mode = harness::CacheMode::kOn};
  std::chrono::seconds timeout{300};
  // Host folders the workload needs that lie under /tmp, /run, /var/tmp or /mnt (tmpfs in the
  // guest). Kept automatically: the agent's folder and every absolute path the workload or
  // checker command names (CommandKeepPaths); list here only folders reached indirectly.
  std::vector<std::string> keep_paths;
};

// What a single node's power cut did (RunSpec::node_cut_disk), taken on the host at the instant.
struct NodeCutRecord {
  bool fired = false;
  uint32_t disk = 0;      // 0-based
  uint64_t point = 0;     // the trace's entries before the cut's mark (the crash point)
  PowerCutReport report;  // the drive's draws on that disk's unflushed writes
  std::string image;      // that disk's image right after the cut, before any recovery
  std::string error;      // the host could not apply the cut (the guest was told)
};

struct RunResult {
  GuestResult guest;       // the agent's report (empty when the power was cut)
  bool power_cut = false;  // qemu was SIGKILLed by the cut
  PowerCutReport cut_report;
  NodeCutRecord node_cut;  // RunSpec::node_cut_disk
  // Several disks: what the cut did to disks 2..N (each under its own model; only disk 1, whose
  // write completion the cut lands on, may tear a write).
  std::vector<PowerCutReport> extra_cut_reports;
  std::vector<std::string> host_acks;  // acks as the host received them, in order
  std::string trace;                   // dm-log-writes v1 log ("" for Recording::kNone)
  std::string manifest;
  std::string log_writes_trace;  // the dm-log-writes trace when also_log_writes
  std::string log_writes_manifest;
  harness::DiskGeometry geometry;  // the recorded disk's sectors
  std::string mkfs_command;        // as run on the host ("" for raw)
  uint32_t fs_block_size = 0;      // read back from the made file system (0: raw)
  std::string base_image;          // the disk right after mkfs, before the guest booted
  std::string final_image;         // the disk as the guest (or the cut) left it
  std::string ack_log;             // JSON lines
  std::string console_log;
  std::string workload_log;  // the workload's stdout and stderr (checker.log beside it)
  // Where the workload's $POWERCUT_OUTPUT file was kept (docs/protocol.md); the file exists only
  // when the workload wrote one.
  std::string workload_output;
  Accel accel = Accel::kTcg;
  // qemu start -> agent running (host clock), for the guest this recording booted; 0 when it
  // reused a warm guest (warm_guest.h).
  double boot_seconds = 0;
  bool reused_guest = false;
  // A boot that failed before the guest this recording ran on came up (GuestPool boots once
  // more), with its error; "" when none did.
  std::string boot_failure;
  // The workload's own run time as the host saw it (its start and exit events), so the cost of
  // a recording beyond the workload shows: wall_seconds - workload_seconds.
  double workload_seconds = 0;
  double wall_seconds = 0;  // job sent -> job done (or cut), without mkfs and boot
  // Where this recording's time went (host clock, in order; docs/vm.md, "Recording overhead"):
  // disk (the disk under test and base.img), recorder, attach (hot-plug), guest-setup (job sent
  // -> workload start: finding the disk, the fresh-disk hashes, mount), workload, guest-teardown
  // (workload exit -> job done: leftovers, unmount, release check), detach (device_del until
  // DEVICE_DELETED, blockdev-del), proof (the host's hash of base.img), outputs (trace finalize,
  // manifests, final.img). A boot the recording waited for is boot_seconds, not a phase.
  std::vector<std::pair<std::string, double>> phases;
  uint64_t trace_entries = 0;
  uint64_t nbd_requests = 0;
  uint64_t nbd_flushes = 0;
};

// Fails (naming the step and quoting the last console lines) when a step before the workload
// fails or the guest hangs (DeadlineExceeded); a workload that exits non-zero is reported in
// guest.exit_code, processes it left behind (killed before the unmount) in
// guest.leftover_processes. `keep_guest` set: the guest that recorded is handed over there instead
// of shut down, when it is still usable (for GuestCheckPool::Adopt), else left null.
absl::StatusOr<RunResult> RunInVm(const VmEnvironment& env, const RunSpec& spec,
                                  std::unique_ptr<WarmGuest>* keep_guest = nullptr);

struct CheckSpec {
  harness::FsKind fs = harness::DefaultFs();
  // The disk's sectors as the guest sees them: the recording's (a file system made for 4kn
  // sectors does not mount on a 512-byte disk, and the reverse).
  harness::SectorFormat sector = harness::kDefaultSectorFormat;
  std::string image;       // checked in place unless copy_image
  bool copy_image = true;  // check a sparse copy, leave `image` untouched
  std::string checker;
  std::string mount_options;
  std::chrono::seconds timeout{300};
  std::vector<std::string> keep_paths;  // as in RunSpec
};

// Boots a fresh guest on the image, mounts it (the real kernel replays the journal), runs the
// checker and returns its `have`/`corrupt` lines and exit status (guest.checker_exit_code). A
// mount failure is reported as guest.ok = false with failed_step "mount", not as an error.
absl::StatusOr<GuestResult> CheckInVm(const VmEnvironment& env, const CheckSpec& spec);

// The same for several images (up to kMaxCheckImages) in ONE guest boot: each image is its own
// disk, mounted, checked and unmounted in turn, so n checks cost one boot instead of n. Results
// are in the order of `specs`; a failed mount is reported in that image's result and the others
// are still checked. The guest's timeout is the largest of the specs'.
inline constexpr size_t kMaxCheckImages = 16;
absl::StatusOr<std::vector<GuestResult>> CheckImagesInVm(const VmEnvironment& env,
                                                         const std::vector<CheckSpec>& specs);

}  // namespace powercut::vm
