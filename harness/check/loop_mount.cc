#include "harness/check/loop_mount.h"

#include <fcntl.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/signal_cleanup.h"
#include "fmt/format.h"

namespace powercut::harness {

absl::StatusOr<std::unique_ptr<LoopMount>> LoopMount::Mount(const std::string& image,
                                                            const std::string& fs_type,
                                                            const std::string& mountpoint,
                                                            const std::string& extra_options) {
  int image_fd = ::open(image.c_str(), O_RDWR | O_CLOEXEC);
  if (image_fd < 0) {
    return absl::Status(absl::ErrnoToStatusCode(errno),
                        fmt::format("loop mount: open({}): {}", image, std::strerror(errno)));
  }
  int control = ::open("/dev/loop-control", O_RDWR | O_CLOEXEC);
  if (control < 0) {
    int err = errno;
    ::close(image_fd);
    return absl::Status(absl::ErrnoToStatusCode(err),
                        fmt::format("loop mount of {}: open(/dev/loop-control): {} (needs root)",
                                    image, std::strerror(err)));
  }
  std::string device;
  int loop_fd = -1;
  for (int attempt = 0; attempt < 64 && loop_fd < 0; ++attempt) {
    int n = ::ioctl(control, LOOP_CTL_GET_FREE);
    if (n < 0) break;
    device = fmt::format("/dev/loop{}", n);
    int fd = ::open(device.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) continue;
    loop_config config;
    std::memset(&config, 0, sizeof(config));
    config.fd = static_cast<uint32_t>(image_fd);
    config.info.lo_flags = LO_FLAGS_AUTOCLEAR;
    if (::ioctl(fd, LOOP_CONFIGURE, &config) == 0) {
      loop_fd = fd;
    } else {
      ::close(fd);  // raced with another user of the same free device: take the next one
      if (errno != EBUSY) break;
    }
  }
  int err = errno;
  ::close(control);
  ::close(image_fd);
  if (loop_fd < 0) {
    return absl::Status(absl::ErrnoToStatusCode(err),
                        fmt::format("loop mount of {}: no loop device could be configured: {}",
                                    image, std::strerror(err)));
  }
  const std::string& options = extra_options;
  if (::mount(device.c_str(), mountpoint.c_str(), fs_type.c_str(), 0, options.c_str()) != 0) {
    err = errno;
    ::close(loop_fd);
    if (err == ENODEV) {  // says nothing about the image: this kernel cannot mount the type
      return absl::UnimplementedError(fmt::format(
          "mount -t {} of {}: this host's kernel has no {} (neither built in nor a module it can "
          "load): judge the crash states in a guest, by the kernel that recorded them "
          "(--check-in guest)",
          fs_type, image, fs_type));
    }
    return absl::Status(absl::ErrnoToStatusCode(err),
                        fmt::format("mount -t {} -o {} {} ({}) on {}: {}", fs_type,
                                    options.empty() ? "defaults" : options, device, image,
                                    mountpoint, std::strerror(err)));
  }
  // Until Unmount(), a fatal signal detaches the mount (the loop device then clears itself).
  RegisterCleanupMount(mountpoint);
  return std::unique_ptr<LoopMount>(new LoopMount(device, loop_fd, mountpoint));
}

absl::Status LoopMount::Unmount() {
  if (!mounted_) return absl::OkStatus();
  absl::Status status;
  if (::umount2(mountpoint_.c_str(), 0) != 0) {
    int err = errno;
    // Busy (a straggler holds a file): detach lazily so the loop device still goes away.
    if (::umount2(mountpoint_.c_str(), MNT_DETACH) != 0) {
      status =
          absl::Status(absl::ErrnoToStatusCode(errno),
                       fmt::format("umount {} ({}): {}", mountpoint_, device_, std::strerror(err)));
    }
  }
  mounted_ = false;
  UnregisterCleanupMount(mountpoint_);
  ::close(loop_fd_);
  return status;
}

LoopMount::~LoopMount() { (void)Unmount(); }

}  // namespace powercut::harness
