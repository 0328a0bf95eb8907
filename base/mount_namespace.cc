#include "base/mount_namespace.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>

namespace powercut {

bool EnterOwnMountNamespace() {
  std::error_code ec;
  int threads = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++threads;
  }
  if (ec || threads != 1) return false;
  // The way back, should / refuse to become a slave: a namespace whose mounts propagate to the
  // host's would be no better than the host's own.
  const int host_ns = ::open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
  if (host_ns < 0) return false;
  bool moved = ::unshare(CLONE_NEWNS) == 0;
  if (moved && ::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) {
    moved = false;
    (void)::setns(host_ns, CLONE_NEWNS);
  }
  ::close(host_ns);
  return moved;
}

}  // namespace powercut
