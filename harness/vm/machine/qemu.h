// One qemu-system-x86_64 guest of the crash domain: the Debian kernel, the project's initramfs,
// the host root read-only over 9p (tag hostroot), the run folder read-write over 9p (tag
// powercut), a serial console written to a log file, a virtio-serial port "powercut.ack" for the
// guest agent, and the disks under test as virtio-blk devices with serial numbers powercut0, 1...
// and the sector sizes each disk's GuestDisk::geometry says.
//
// Guarantees: qemu runs in its own process group and dies with powercut (see ChildProcess); the
// guest is killed when WaitForExit times out and on destruction; all files live in the caller's
// run folder.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/process.h"
#include "harness/trace/disk_geometry.h"

namespace powercut::vm {

enum class Accel { kAuto, kKvm, kTcg };

// KVM only when /dev/kvm opens read-write, KVM_CREATE_VM succeeds and the CPU advertises vmx/svm
// (a nested host can open /dev/kvm and still run guests at a crawl). POWERCUT_ACCEL=kvm|tcg
// overrides the probe.
Accel ChooseAccel();
const char* AccelName(Accel accel);

// The virtual drive's volatile write cache (qemu's cache.writeback) as the guest sees it.
// kDefault: each disk kind's usual mode (NBD: write back; image file: cache=unsafe, write back
// whose flushes the host ignores). kWriteBack: write back, guest flushes reach the host
// (fdatasync of the image, or NBD flush). kWriteThrough: the guest sees no volatile cache; each
// write completes once the host has it durable (image file opened O_DSYNC).
enum class DiskCache { kDefault, kWriteBack, kWriteThrough };

struct GuestDisk {
  // Exactly one of the two: a unix socket of an NBD server, or a raw image file.
  std::string nbd_socket;
  std::string image_file;
  DiskCache cache = DiskCache::kDefault;
  // The sectors the guest sees (virtio-blk logical_block_size / physical_block_size).
  harness::DiskGeometry geometry;
};

struct QemuOptions {
  std::string kernel;       // vmlinuz
  std::string initramfs;    // cpio
  std::string agent;        // host path of the guest agent binary (run chrooted in the host root)
  std::string run_dir;      // exported to the guest as /run/powercut (job.json, results)
  std::string console_log;  // serial console output
  std::string ack_socket;   // a unix socket the host listens on; qemu connects to it ("" = none)
  std::vector<GuestDisk> disks;  // virtio-blk, serial powercut<i>, in this order
  // A unix socket the host listens on for qemu's QMP monitor (qmp.h; "" = no monitor). Disks
  // hot-plugged through it are on the i440fx root bus with ACPI PCI hotplug (docs/vm.md).
  std::string qmp_socket;
  // The agent serves job after job (a warm guest) instead of doing one job.json and powering off.
  bool serve = false;
  // Modules the guest loads besides the base ones (see initramfs.h), e.g. {"ext4", "dm-flakey"}.
  std::vector<std::string> guest_modules;
  // Host folders that must stay visible although they lie under a folder the guest covers with
  // tmpfs (/tmp, /run, /var/tmp, /mnt). No spaces or commas.
  std::vector<std::string> keep_paths;
  int memory_mib = 768;
  int cpus = 1;
  Accel accel = Accel::kAuto;
};

class Qemu {
 public:
  static absl::StatusOr<std::unique_ptr<Qemu>> Start(const QemuOptions& options);
  ~Qemu();

  // Waits for the guest to power off; qemu's exit code, or DeadlineExceeded after SIGKILLing a
  // guest that did not finish within `timeout` (the error quotes the last console lines).
  absl::StatusOr<int> WaitForExit(std::chrono::milliseconds timeout);
  // Waits up to `timeout` without killing: qemu's exit code, or nullopt while it still runs.
  std::optional<int> Poll(std::chrono::milliseconds timeout);
  // The power cut: SIGKILL qemu now (and reap it).
  void Kill();
  // SIGKILLs qemu's process group without reaping: safe from any thread while another thread
  // waits in WaitForExit.
  void SignalKill();

  Accel accel() const { return accel_; }
  const std::string& console_log() const { return console_log_; }
  // The last `lines` lines of the serial console.
  std::string ConsoleTail(int lines = 30) const;
  std::chrono::steady_clock::time_point started_at() const { return started_at_; }

 private:
  Qemu(ChildProcess process, Accel accel, std::string console_log)
      : process_(std::move(process)), accel_(accel), console_log_(std::move(console_log)) {}

  ChildProcess process_;
  std::atomic<pid_t> pid_{-1};  // cleared once the child was reaped
  Accel accel_;
  std::string console_log_;
  std::chrono::steady_clock::time_point started_at_ = std::chrono::steady_clock::now();
};

}  // namespace powercut::vm
