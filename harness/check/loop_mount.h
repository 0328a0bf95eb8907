// Mounts an image file read-write on a loop device (so that the kernel replays the file
// system's journal) and unmounts it again. Needs root (CAP_SYS_ADMIN).
//
// The loop device is configured with LO_FLAGS_AUTOCLEAR, so it detaches itself once unmounted
// and closed: no loop device outlives a LoopMount, even if the process dies. While mounted, the
// mount point is registered with harness/signal_cleanup.h, so a fatal SIGINT/SIGTERM/SIGHUP
// (with handlers installed) detaches it too.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace powercut::harness {

class LoopMount {
 public:
  // `fs_type`: a file system's name (harness/fs/file_system.h). The error names the image, the
  // device and the mount(2) errno (EPERM/EACCES mean "not permitted": callers may fall back to
  // e2fsck + debugfs); a type this kernel cannot mount at all (ENODEV) is Unimplemented.
  // `extra_options` is the mount(2) data, comma-separated (the file-system table's
  // mount_options: xfs needs `nouuid`, because every crash image is a copy of one file system).
  static absl::StatusOr<std::unique_ptr<LoopMount>> Mount(const std::string& image,
                                                          const std::string& fs_type,
                                                          const std::string& mountpoint,
                                                          const std::string& extra_options = "");
  ~LoopMount();  // unmounts if still mounted
  LoopMount(const LoopMount&) = delete;
  LoopMount& operator=(const LoopMount&) = delete;

  absl::Status Unmount();
  const std::string& device() const { return device_; }

 private:
  LoopMount(std::string device, int loop_fd, std::string mountpoint)
      : device_(std::move(device)), loop_fd_(loop_fd), mountpoint_(std::move(mountpoint)) {}
  std::string device_;
  int loop_fd_;
  std::string mountpoint_;
  bool mounted_ = true;
};

}  // namespace powercut::harness
