#include "base/signal_cleanup.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace powercut {
namespace {

// One registered path. `state` claims the slot: writers fill `path` and `owner` while it is
// kWriting, so the handler only ever reads a complete entry.
struct Slot {
  static constexpr int kFree = 0;
  static constexpr int kWriting = 1;
  static constexpr int kSet = 2;
  std::atomic<int> state{kFree};
  pid_t owner = 0;
  char path[kMaxCleanupPath + 1] = {};
};

Slot g_mounts[kMaxCleanupMounts];
Slot g_folders[kMaxCleanupFolders];

template <size_t N>
void Register(Slot (&slots)[N], const std::string& path) {
  if (path.empty() || path.size() > kMaxCleanupPath) return;
  for (Slot& slot : slots) {
    int expected = Slot::kFree;
    if (slot.state.compare_exchange_strong(expected, Slot::kWriting)) {
      std::memcpy(slot.path, path.c_str(), path.size() + 1);
      slot.owner = ::getpid();
      slot.state.store(Slot::kSet);
      return;
    }
  }
}

template <size_t N>
void Unregister(Slot (&slots)[N], const std::string& path) {
  for (Slot& slot : slots) {
    int expected = Slot::kSet;
    // Claim the slot before comparing, so that no other thread reuses it meanwhile.
    if (!slot.state.compare_exchange_strong(expected, Slot::kWriting)) continue;
    if (path == slot.path && slot.owner == ::getpid()) {
      slot.state.store(Slot::kFree);
      return;
    }
    slot.state.store(Slot::kSet);
  }
}

bool IsDotOrDotDot(const char* name) {
  return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

void RemoveTree(int parent_fd, const char* name, dev_t device, bool top, int depth);

// Removes everything in the open folder `dir_fd`. Entries are unlinked while the folder is being
// read, which may make getdents64 skip some: read it again from the start until a pass removes
// nothing.
void EmptyFolder(int dir_fd, dev_t device, int depth) {
  for (int pass = 0; pass < 8; ++pass) {
    if (::lseek(dir_fd, 0, SEEK_SET) != 0) return;
    bool removed_any = false;
    alignas(8) char buf[2048];
    for (;;) {
      long n = ::syscall(SYS_getdents64, dir_fd, buf, sizeof buf);
      if (n <= 0) break;
      for (long off = 0; off < n;) {
        // struct linux_dirent64 { u64 ino; s64 off; u16 reclen; u8 type; char name[]; }
        unsigned short reclen;
        std::memcpy(&reclen, buf + off + 16, sizeof reclen);
        unsigned char type = static_cast<unsigned char>(buf[off + 18]);
        const char* name = buf + off + 19;
        off += reclen;
        if (IsDotOrDotDot(name)) continue;
        if (type != DT_DIR && ::unlinkat(dir_fd, name, 0) == 0) {
          removed_any = true;
          continue;
        }
        if ((type == DT_DIR || errno == EISDIR) && depth < kMaxCleanupDepth) {
          RemoveTree(dir_fd, name, device, /*top=*/false, depth + 1);
          removed_any = true;
        }
      }
    }
    if (!removed_any) return;
  }
}

// Removes the folder `name` (relative to `parent_fd`) and everything in it, without following
// symlinks or leaving the file system `device` (the top folder's own, when `top`).
void RemoveTree(int parent_fd, const char* name, dev_t device, bool top, int depth) {
  int fd = ::openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  if (::fstat(fd, &st) != 0 || (!top && st.st_dev != device)) {
    ::close(fd);  // a mount that could not be detached: leave its contents alone
    return;
  }
  EmptyFolder(fd, st.st_dev, depth);
  ::close(fd);
  ::unlinkat(parent_fd, name, AT_REMOVEDIR);
}

void CleanupAndDie(int sig) {
  RunSignalCleanup();
  ::signal(sig, SIG_DFL);
  ::raise(sig);  // blocked until the handler returns, then fatal
}

}  // namespace

void RegisterCleanupMount(const std::string& mountpoint) { Register(g_mounts, mountpoint); }
void UnregisterCleanupMount(const std::string& mountpoint) { Unregister(g_mounts, mountpoint); }
void RegisterCleanupFolder(const std::string& path) { Register(g_folders, path); }
void UnregisterCleanupFolder(const std::string& path) { Unregister(g_folders, path); }

void RunSignalCleanup() {
  int saved_errno = errno;
  pid_t self = ::getpid();
  // Mounts first: a mount point inside a registered folder is then an empty folder.
  for (Slot& slot : g_mounts) {
    if (slot.state.load() == Slot::kSet && slot.owner == self) ::umount2(slot.path, MNT_DETACH);
  }
  for (Slot& slot : g_folders) {
    if (slot.state.load() == Slot::kSet && slot.owner == self) {
      RemoveTree(AT_FDCWD, slot.path, 0, /*top=*/true, 0);
    }
  }
  errno = saved_errno;
}

void InstallSignalCleanupHandlers() {
  struct sigaction sa {};
  sa.sa_handler = CleanupAndDie;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGHUP, &sa, nullptr);
}

}  // namespace powercut
