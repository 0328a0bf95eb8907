// What the guest agent finds and probes in the guest kernel: virtio disks by serial (also one
// hot-plugged a moment ago), the virtio-serial port, device-mapper devices, dm target messages,
// the first bytes of a fresh disk and whether a disk is still held after the job.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace powercut::vm::guest {

// The first line of a (sysfs) file, "" if it cannot be read.
std::string ReadLine(const std::string& path);
// Seconds since the guest booted.
double Uptime();

// "/dev/vdb" for the virtio disk with that serial; waits up to `wait` for a disk that was just
// hot-plugged to appear (the kernel registers it asynchronously). "" if it never does.
std::string FindDisk(const std::string& serial, std::chrono::milliseconds wait);
// "/dev/vport1p1" for the virtio-serial port with that name.
std::string FindPort(const std::string& port_name);
// "/dev/dm-0" for the device-mapper device of that name (devtmpfs makes the node; there is no
// udev in the guest to make /dev/mapper/<name>).
std::string FindDmDevice(const std::string& name);
// Sends a dm target message (e.g. "mark ack:7") with the DM_TARGET_MSG ioctl: no process per ack.
bool DmMessage(const std::string& device_name, const std::string& message);

// XXH3-128 hex of the first `bytes` of `device`, read with O_DIRECT (what the disk holds) and
// through the page cache (what a program would see); "" on a read error.
struct HeadHashes {
  std::string direct;
  std::string cached;
};
HeadHashes HashDiskHead(const std::string& device, uint64_t bytes);

// A crash state served by the host's StateServer (state_server.h): drops `device`'s buffers
// (BLKFLSBUF), then reads its last 4 KiB through the page cache; true when that block starts with
// `token`. `error` says what was read otherwise (the cache still held the previous state).
bool FreshStateBlock(const std::string& device, const std::string& token, std::string* error);

// Whether nothing in the guest holds `device` any more (no mount, no open with O_EXCL): an
// exclusive open succeeds. `error` says what holds it otherwise.
bool DiskReleased(const std::string& device, std::string* error);

}  // namespace powercut::vm::guest
