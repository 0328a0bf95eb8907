// The guest agent's disks (agent_job.h): found by serial, stacked under dm-log-writes or
// dm-flakey, mounted and unmounted (the boot path first for a check); the flakey table switched
// at its ack and healed after its window.
#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "harness/check/boot_recovery.h"
#include "harness/vm/guest/agent_job.h"
#include "harness/vm/guest/guest_devices.h"
#include "harness/vm/guest/job_cgroup.h"

namespace powercut::vm::guest {
namespace {

namespace fs = std::filesystem;

}  // namespace

bool Agent::BlockSizes(const std::string& dev, uint32_t* logical, uint32_t* physical) {
  const int fd = ::open(dev.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  int l = 0;
  unsigned int p = 0;
  const bool ok = ::ioctl(fd, BLKSSZGET, &l) == 0 && ::ioctl(fd, BLKPBSZGET, &p) == 0;
  const int saved = errno;
  ::close(fd);
  errno = saved;
  *logical = static_cast<uint32_t>(l);
  *physical = p;
  return ok;
}

bool Agent::DeviceSectors(const std::string& dev, uint64_t* sectors) {
  std::string s = ReadLine(fmt::format("/sys/block/{}/size", fs::path(dev).filename().string()));
  if (s.empty()) return false;
  *sectors = std::stoull(s);
  return true;
}

bool Agent::Setup() {
  disk_ = FindDisk(job_.disk_serial, kDiskAppears);
  if (disk_.empty()) {
    return Fail("find-disk", fmt::format("no virtio disk with serial {}", job_.disk_serial));
  }
  const std::string queue = fmt::format("/sys/block/{}/queue", fs::path(disk_).filename().string());
  result_.device_cache = ReadLine(queue + "/write_cache");
  // The sector sizes from the device itself (FindDisk returns it only once it opens and its
  // queue is registered: a read just before that gave physical 0 and failed a recording).
  if (!BlockSizes(disk_, &result_.logical_block_size, &result_.physical_block_size)) {
    return Fail("find-disk",
                fmt::format("cannot read the sector sizes of {}: {}", disk_, std::strerror(errno)));
  }
  uint64_t sectors = 0;
  if (!DeviceSectors(disk_, &sectors)) return Fail("find-disk", "cannot read the disk size");
  sectors_ = sectors;
  device_ = disk_;
  if (job_.head_hash_bytes > 0) {
    HeadHashes h = HashDiskHead(disk_, job_.head_hash_bytes);
    result_.head_hash_direct = h.direct;
    result_.head_hash_cached = h.cached;
  }
  for (const GuestExtraDisk& d : job_.extra_disks) {  // disks 2..N of a set
    std::string dev = FindDisk(d.disk_serial, kDiskAppears);
    if (dev.empty()) {
      return Fail("find-disk", fmt::format("no virtio disk with serial {}", d.disk_serial));
    }
    extra_devices_.push_back(dev);
  }
  if (!SetupNodeCut()) return false;
  if (!job_.log_writes_serial.empty()) {
    std::string log = FindDisk(job_.log_writes_serial, kDiskAppears);
    if (log.empty()) {
      return Fail("dm-log-writes",
                  fmt::format("no virtio disk with serial {}", job_.log_writes_serial));
    }
    if (!Cmd("dm-log-writes", {"dmsetup", "--noudevsync", "create", kLogWritesName, "--table",
                               fmt::format("0 {} log-writes {} {}", sectors, disk_, log)})) {
      return false;
    }
    device_ = FindDmDevice(kLogWritesName);
    if (device_.empty()) return Fail("dm-log-writes", "the dm device did not appear");
    log_writes_ = true;
  }
  if (job_.flakey.has_value()) {
    // The failing disk: disk 1 (over dm-log-writes when both run) or disk K of a set, whose
    // device the workload then reaches through the flakey target; the others keep working.
    std::string* failing = &device_;
    flakey_sectors_ = sectors;
    if (job_.flakey_disk > 0) {
      if (job_.flakey_disk > extra_devices_.size()) {
        return Fail("dm-flakey", fmt::format("flakey disk {} of a set of {}", job_.flakey_disk + 1,
                                             extra_devices_.size() + 1));
      }
      failing = &extra_devices_[job_.flakey_disk - 1];
      if (!DeviceSectors(*failing, &flakey_sectors_)) {
        return Fail("dm-flakey", fmt::format("cannot read the size of {}", *failing));
      }
    }
    flakey_base_ = *failing;
    if (!Cmd("dm-flakey",
             {"dmsetup", "--noudevsync", "create", kFlakeyName, "--table", PassThroughTable()})) {
      return false;
    }
    *failing = FindDmDevice(kFlakeyName);
    if (failing->empty()) return Fail("dm-flakey", "the dm device did not appear");
  }
  return true;
}

std::string Agent::PassThroughTable() const {
  return fmt::format("0 {} linear {} 0", flakey_sectors_, flakey_base_);
}

bool Agent::SwitchFlakey(const std::string& table) {
  return Cmd("dm-flakey", {"dmsetup", "--noudevsync", "suspend", "--nolockfs", kFlakeyName}) &&
         Cmd("dm-flakey", {"dmsetup", "--noudevsync", "load", kFlakeyName, "--table", table}) &&
         Cmd("dm-flakey", {"dmsetup", "--noudevsync", "resume", kFlakeyName});
}

std::string Agent::FlakeyTable() const {
  // Always "down" (up 0 s, down 3600 s): every write is dropped or fails from now on.
  return fmt::format("0 {} flakey {} 0 0 3600 1 {}", flakey_sectors_, flakey_base_,
                     FlakeyModeName(*job_.flakey));
}

bool Agent::MountExtras() {
  for (size_t i = 0; i < extra_devices_.size(); ++i) {
    const harness::FsKind fs = job_.extra_disks[i].fs;
    if (harness::FileSystemOf(fs).raw()) continue;
    const std::string dir = ExtraMountDir(i);
    fs::create_directories(dir);
    std::vector<std::string> argv = {"mount", "-t", harness::FsName(fs)};
    if (!job_.mount_options.empty()) {
      argv.emplace_back("-o");
      argv.push_back(job_.mount_options);
    } else if (::mount(extra_devices_[i].c_str(), dir.c_str(), harness::FsName(fs), 0, nullptr) ==
               0) {
      continue;
    } else {
      return Fail("mount", fmt::format("mount -t {} {} {}: {}", harness::FsName(fs),
                                       extra_devices_[i], dir, std::strerror(errno)));
    }
    argv.push_back(extra_devices_[i]);
    argv.push_back(dir);
    if (!Cmd("mount", argv)) return false;
  }
  return true;
}

bool Agent::UnmountExtras() {
  for (size_t i = extra_devices_.size(); i-- > 0;) {
    if (harness::FileSystemOf(job_.extra_disks[i].fs).raw()) continue;
    const std::string dir = ExtraMountDir(i);
    if (::umount2(dir.c_str(), 0) != 0) {
      return Fail("unmount", fmt::format("umount {}: {}", dir, std::strerror(errno)));
    }
  }
  return true;
}

bool Agent::Mount() {
  if (!MountExtras()) return false;
  if (Raw()) return true;
  fs::create_directories(mount_dir_);
  if (job_.mount_options.empty()) {
    // The system call, not mount(8): under TCG an exec of mount (libmount, libblkid, over 9p)
    // costs a few hundred ms of every recording. With options, mount(8) parses them into
    // flags and data.
    if (::mount(device_.c_str(), mount_dir_.c_str(), harness::FsName(job_.fs), 0, nullptr) != 0) {
      return Fail("mount", fmt::format("mount -t {} {} {}: {}", harness::FsName(job_.fs), device_,
                                       mount_dir_, std::strerror(errno)));
    }
    return true;
  }
  std::vector<std::string> argv = {"mount", "-t", harness::FsName(job_.fs)};
  if (!job_.mount_options.empty()) {
    argv.emplace_back("-o");
    argv.push_back(job_.mount_options);
  }
  argv.push_back(device_);
  argv.push_back(mount_dir_);
  return Cmd("mount", argv);
}

bool Agent::Unmount() {
  if (!UnmountExtras()) return false;
  if (Raw()) return true;
  if (::umount2(mount_dir_.c_str(), 0) != 0) {  // umount(8) would add an exec, as for mount
    return Fail("unmount", fmt::format("umount {}: {}", mount_dir_, std::strerror(errno)));
  }
  return true;
}

bool Agent::RecoverAndMount() {
  if (Raw()) return true;
  auto mount = [this]() -> absl::Status {
    if (!Mount()) return absl::UnavailableError(result_.error);
    result_.failed_step.clear();
    result_.error.clear();
    return absl::OkStatus();
  };
  auto rec = powercut::harness::RecoverFileSystem(powercut::harness::FileSystemOf(job_.fs), device_,
                                                  mount, 300);
  if (!rec.ok()) return Fail("boot-recovery", std::string(rec.status().message()));
  std::fprintf(stderr, "powercut-agent: boot path: %s\n", rec->Describe().c_str());
  if (rec->unrecoverable) return Fail("mount", "file system unrecoverable: " + rec->Describe());
  return true;
}

void Agent::SwitchToFlakey() {
  flakey_switched_ = true;
  const pid_t pgid = workload_pgid_;
  if (pgid > 0) {
    StopProcessGroup(pgid);
    DrainAcks();
  }
  result_.acks_before_cut = static_cast<int64_t>(result_.acks);
  if (SwitchFlakey(FlakeyTable())) Event(fmt::format("flakey {}", FlakeyModeName(*job_.flakey)));
  if (job_.flakey_heal_ms > 0) {
    heal_at_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(job_.flakey_heal_ms);
  }
  if (pgid > 0) kill(-pgid, SIGCONT);
}

int Agent::HealTimeoutMs() const {
  if (!heal_at_) return -1;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      *heal_at_ - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

void Agent::HealIfDue() {
  if (!heal_at_ || std::chrono::steady_clock::now() < *heal_at_) return;
  heal_at_.reset();
  if (SwitchFlakey(PassThroughTable())) {
    result_.flakey_healed = true;
    Event("flakey-healed");
  }
}
}  // namespace powercut::vm::guest
