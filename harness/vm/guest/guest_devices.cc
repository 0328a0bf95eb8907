#include "harness/vm/guest/guest_devices.h"

#include <fcntl.h>
#include <linux/dm-ioctl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/hash.h"
#include "fmt/format.h"

namespace powercut::vm::guest {

namespace fs = std::filesystem;

std::string ReadLine(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

double Uptime() {
  std::ifstream in("/proc/uptime");
  double up = 0;
  in >> up;
  return up;
}

namespace {

std::string FindDiskNow(const std::string& serial) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/sys/block", ec)) {
    std::string name = entry.path().filename();
    if (name.rfind("vd", 0) != 0) continue;
    if (ReadLine(entry.path() / "serial") == serial) return "/dev/" + name;
  }
  return "";
}

// Whether the disk is fully added: its node opens (not ENXIO) and its queue attributes are there.
// The disk's sysfs entry, serial and /dev node appear before the kernel has registered its queue
// and made it openable (device_add_disk); reading in between gave an empty
// queue/physical_block_size once and ENXIO on open once, under TCG.
bool DiskReady(const std::string& disk) {
  const int fd = ::open(disk.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ::close(fd);
  return !ReadLine(fmt::format("/sys/block/{}/queue/physical_block_size",
                               fs::path(disk).filename().string()))
              .empty();
}

}  // namespace

std::string FindDisk(const std::string& serial, std::chrono::milliseconds wait) {
  // A hot-plugged disk appears once the guest handled the ACPI event and virtio-blk probed it;
  // sysfs offers no event to wait on without udev, so look every 5 ms (bounded).
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    std::string disk = FindDiskNow(serial);
    if (!disk.empty() && DiskReady(disk)) return disk;
    if (std::chrono::steady_clock::now() >= deadline) return "";
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string FindPort(const std::string& port_name) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/sys/class/virtio-ports", ec)) {
    if (ReadLine(entry.path() / "name") == port_name) {
      return "/dev/" + entry.path().filename().string();
    }
  }
  return "";
}

std::string FindDmDevice(const std::string& name) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/sys/block", ec)) {
    std::string dev = entry.path().filename();
    if (dev.rfind("dm-", 0) == 0 && ReadLine(entry.path() / "dm/name") == name) {
      return "/dev/" + dev;
    }
  }
  return "";
}

bool DmMessage(const std::string& device_name, const std::string& message) {
  int fd = open("/dev/mapper/control", O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  alignas(8) char buf[8192] = {};
  auto* io = reinterpret_cast<dm_ioctl*>(buf);
  io->version[0] = DM_VERSION_MAJOR;
  io->version[1] = 0;
  io->version[2] = 0;
  io->data_size = sizeof buf;
  io->data_start = sizeof(dm_ioctl);
  std::strncpy(io->name, device_name.c_str(), sizeof(io->name) - 1);
  auto* msg = reinterpret_cast<dm_target_msg*>(buf + io->data_start);
  msg->sector = 0;
  std::strncpy(msg->message, message.c_str(),
               sizeof buf - io->data_start - sizeof(dm_target_msg) - 1);
  bool ok = ioctl(fd, DM_TARGET_MSG, io) == 0;
  close(fd);
  return ok;
}

namespace {

std::string HashHead(const std::string& device, uint64_t bytes, int flags) {
  int fd = open(device.c_str(), O_RDONLY | O_CLOEXEC | flags);
  if (fd < 0) return "";
  constexpr size_t kChunk = 1 << 16;
  void* buf = nullptr;
  if (posix_memalign(&buf, 4096, kChunk) != 0) {
    close(fd);
    return "";
  }
  powercut::Hasher hasher;
  uint64_t done = 0;
  bool ok = true;
  while (done < bytes) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, bytes - done));
    ssize_t n = pread(fd, buf, want, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    hasher.Update(buf, static_cast<size_t>(n));
    done += static_cast<uint64_t>(n);
  }
  free(buf);
  close(fd);
  return ok ? hasher.Digest().Hex() : "";
}

}  // namespace

HeadHashes HashDiskHead(const std::string& device, uint64_t bytes) {
  // O_DIRECT first: the buffered read then fills the page cache from the disk itself, and the two
  // must agree with the host's image.
  return {.direct = HashHead(device, bytes, O_DIRECT), .cached = HashHead(device, bytes, 0)};
}

bool FreshStateBlock(const std::string& device, const std::string& token, std::string* error) {
  int fd = open(device.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = fmt::format("cannot open {}: {}", device, std::strerror(errno));
    return false;
  }
  uint64_t bytes = 0;
  std::string block(4096, '\0');
  if (ioctl(fd, BLKFLSBUF, 0) != 0 || ioctl(fd, BLKGETSIZE64, &bytes) != 0 || bytes < 4096 ||
      pread(fd, block.data(), block.size(), static_cast<off_t>(bytes - 4096)) !=
          static_cast<ssize_t>(block.size())) {
    *error = fmt::format("cannot drop the buffers of {} or read its state block: {}", device,
                         std::strerror(errno));
    close(fd);
    return false;
  }
  close(fd);
  if (block.compare(0, token.size(), token) == 0) return true;
  std::string seen = block.substr(0, std::min(block.find('\n'), size_t{64}));
  *error = fmt::format(
      "{}'s state block reads '{}' through the page cache after BLKFLSBUF, expected '{}': the "
      "guest still sees blocks of another crash state",
      device, seen, token.substr(0, token.size() - 1));
  return false;
}

bool DiskReleased(const std::string& device, std::string* error) {
  int fd = open(device.c_str(), O_RDONLY | O_EXCL | O_CLOEXEC);
  if (fd >= 0) {
    close(fd);
    return true;
  }
  *error = fmt::format(
      "{} is still in use in the guest after the workload ended ({}): a mount of it remains (a "
      "bind mount the workload made?) or a process holds it exclusively",
      device, std::strerror(errno));
  return false;
}

}  // namespace powercut::vm::guest
