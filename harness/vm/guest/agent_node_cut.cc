// A single node's power cut (GuestJob::node_cut_disk; docs/cluster.md, "Single-node cuts"): the
// node's disk sits under a dm device whose table the cluster launcher has switched, through the
// workload's ack descriptor, to `error` (the drive lost its power) and back.
//
//   power-off  every request of the disk in flight completes (dm suspend), then the disk errors;
//              the host is told (`event node-cut`) and applies the drive's cache to the disk while
//              nothing of it can be in flight; its answer ends the request.
//   power-on   the dead node's file system is unmounted (its dirty pages fail against `error`
//              and are lost with the power), the disk's table is linear again, the buffers of the
//              device are dropped, and the disk goes through its boot path and is mounted again
//              at the same place: the node restarts on what its drive kept.
// The launcher freezes the node's processes before power-off and kills them between the two.
#include <fcntl.h>
#include <linux/fs.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "fmt/format.h"
#include "harness/check/boot_recovery.h"
#include "harness/vm/guest/agent_job.h"
#include "harness/vm/guest/guest_devices.h"

namespace powercut::vm::guest {
namespace {

// The host answers a node cut within this long (it applies the cache to one disk and copies it).
constexpr std::chrono::seconds kHostAnswers{120};
// A killed node's last processes leave its file system within this long.
constexpr std::chrono::seconds kNodeLeaves{20};

}  // namespace

bool Agent::SetupNodeCut() {
  if (job_.node_cut_disk < 0) return true;
  const auto k = static_cast<size_t>(job_.node_cut_disk);
  if (k > extra_devices_.size()) {
    return Fail("node-cut", fmt::format("node cut of disk {} in a set of {}", k + 1,
                                        extra_devices_.size() + 1));
  }
  std::string* dev = k == 0 ? &device_ : &extra_devices_[k - 1];
  node_cut_base_ = *dev;
  if (!DeviceSectors(*dev, &node_cut_sectors_)) {
    return Fail("node-cut", fmt::format("cannot read the size of {}", *dev));
  }
  if (!Cmd("node-cut", {"dmsetup", "--noudevsync", "create", kNodeCutName, "--table",
                        NodeCutTable(/*powered=*/true)})) {
    return false;
  }
  *dev = FindDmDevice(kNodeCutName);
  if (dev->empty()) return Fail("node-cut", "the dm device did not appear");
  return true;
}

std::string Agent::NodeCutTable(bool powered) const {
  return powered ? fmt::format("0 {} linear {} 0", node_cut_sectors_, node_cut_base_)
                 : fmt::format("0 {} error", node_cut_sectors_);
}

bool Agent::SwitchNodeCutTable(bool powered, std::string* why) {
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{"dmsetup", "--noudevsync", "suspend", "--nolockfs", kNodeCutName},
        std::vector<std::string>{"dmsetup", "--noudevsync", "load", kNodeCutName, "--table",
                                 NodeCutTable(powered)},
        std::vector<std::string>{"dmsetup", "--noudevsync", "resume", kNodeCutName}}) {
    if (!Cmd("node-cut", argv)) {
      *why = result_.error;  // the launcher reports it; the job itself goes on
      result_.failed_step.clear();
      result_.error.clear();
      return false;
    }
  }
  return true;
}

void Agent::HandleNodeCutLine(const std::string& line) {
  std::string why;
  const bool ok = line == "power-off" ? PowerOffNode(&why) : PowerOnNode(&why);
  if (sync_fd_ >= 0) WriteLine(sync_fd_, ok ? "ok " + line : fmt::format("error {} {}", line, why));
}

bool Agent::PowerOffNode(std::string* why) {
  if (!ConfirmsOverPort()) {
    *why = "this guest's port is one-way: the host cannot answer a node cut";
    return false;
  }
  if (!SwitchNodeCutTable(/*powered=*/false, why)) return false;
  Event("node-cut");
  return AwaitHost("node-cut-done", "node-cut-failed", why);
}

bool Agent::AwaitHost(const std::string& done, const std::string& failed, std::string* why) {
  const auto deadline = std::chrono::steady_clock::now() + kHostAnswers;
  for (;;) {
    size_t nl;
    while ((nl = port_pending_.find('\n')) != std::string::npos) {
      const std::string line = port_pending_.substr(0, nl);
      port_pending_.erase(0, nl + 1);
      if (line == prefix_ + done) return true;
      if (line.rfind(prefix_ + failed, 0) == 0) {
        *why = "the host could not cut the disk: " + line.substr(prefix_.size() + failed.size());
        return false;
      }
      const std::string acked = prefix_ + "acked ";
      if (line.rfind(acked, 0) == 0 && sync_fd_ >= 0 && job_.sync_acks) {
        WriteLine(sync_fd_, "ok " + line.substr(acked.size()));
      }
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      *why = fmt::format("the host did not answer the node cut within {} s", kHostAnswers.count());
      return false;
    }
    pollfd p{port_fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[512];
    const ssize_t n = ::read(port_fd_, buf, sizeof buf);
    if (n == 0) {
      *why = "the host closed the port";
      return false;
    }
    if (n > 0) port_pending_.append(buf, static_cast<size_t>(n));
  }
}

bool Agent::PowerOnNode(std::string* why) {
  const auto k = static_cast<size_t>(job_.node_cut_disk);
  const harness::FsKind fs = k == 0 ? job_.fs : job_.extra_disks[k - 1].fs;
  const std::string dir = k == 0 ? mount_dir_ : ExtraMountDir(k - 1);
  const std::string dev = k == 0 ? device_ : extra_devices_[k - 1];
  const bool raw = harness::FileSystemOf(fs).raw();
  if (!raw) {
    // The node's processes are dead; what they held closes as they are reaped.
    const auto deadline = std::chrono::steady_clock::now() + kNodeLeaves;
    while (::umount2(dir.c_str(), 0) != 0) {
      if (errno != EBUSY || std::chrono::steady_clock::now() >= deadline) {
        *why = fmt::format("umount {} after the cut: {}", dir, std::strerror(errno));
        return false;
      }
      // The dead node's last files closing: there is nothing to wait on but the unmount.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  if (!SwitchNodeCutTable(/*powered=*/true, why)) return false;
  // Nothing cached of the disk from before the cut may be read after it.
  const int fd = ::open(dev.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::ioctl(fd, BLKFLSBUF, 0) != 0) {
    *why = fmt::format("cannot drop the buffers of {}: {}", dev, std::strerror(errno));
    if (fd >= 0) ::close(fd);
    return false;
  }
  ::close(fd);
  if (raw) return true;
  auto mount = [&]() -> absl::Status {
    if (!MountDisk(dev, dir, fs)) return absl::UnavailableError(result_.error);
    return absl::OkStatus();
  };
  auto rec = harness::RecoverFileSystem(harness::FileSystemOf(fs), dev, mount, 300);
  result_.failed_step.clear();  // a failure here is the node's, reported by the launcher
  result_.error.clear();
  if (!rec.ok()) {
    *why = fmt::format("the boot path of the cut disk failed: {}",
                       std::string(rec.status().message()));
    return false;
  }
  if (rec->unrecoverable) {
    *why = "the cut disk's file system is unrecoverable: " + rec->Describe();
    return false;
  }
  Event(fmt::format("node-power-on {}", rec->Describe()));
  return true;
}

}  // namespace powercut::vm::guest
