// harness/signal_cleanup.h: a fatal SIGINT detaches a real loop mount and removes a nested scratch
// folder (in a forked child, so the signal kills only the child); RunSignalCleanup never follows
// symlinks and ignores unregistered folders.
#include "base/signal_cleanup.h"

#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "harness/check/loop_mount.h"
#include "tests/harness_testing.h"

namespace powercut::harness {
namespace {

namespace fs = std::filesystem;

bool IsMounted(const std::string& mountpoint) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, devno, root, point;
    fields >> id >> parent >> devno >> root >> point;
    if (point == mountpoint) return true;
  }
  return false;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

// A folder tree several levels deep, with files at every level.
void MakeTree(const std::string& root, int depth) {
  std::string dir = root;
  for (int level = 0; level < depth; ++level) {
    fs::create_directories(dir);
    WriteFile(dir + "/file" + std::to_string(level), "level " + std::to_string(level));
    WriteFile(dir + "/other", "x");
    dir += "/sub" + std::to_string(level);
  }
}

TEST(SignalCleanupTest, RunSignalCleanupRemovesNestedFolderButNotSymlinkTargets) {
  testing::TempDir tmp;
  ASSERT_TRUE(tmp.ok()) << tmp.error();
  const std::string victim = tmp.path() + "/victim";
  const std::string outside = tmp.path() + "/outside";
  MakeTree(victim, 6);
  fs::create_directories(outside);
  WriteFile(outside + "/keep", "keep");
  fs::create_directory_symlink(outside, victim + "/sub0/link_to_outside");
  fs::create_symlink(outside + "/keep", victim + "/link_to_file");
  const std::string bystander = tmp.path() + "/bystander";  // registered, then unregistered
  MakeTree(bystander, 2);

  RegisterCleanupFolder(victim);
  RegisterCleanupFolder(bystander);
  UnregisterCleanupFolder(bystander);
  RunSignalCleanup();
  UnregisterCleanupFolder(victim);

  EXPECT_FALSE(fs::exists(fs::symlink_status(victim)));
  EXPECT_TRUE(fs::exists(outside + "/keep"));
  EXPECT_TRUE(fs::exists(bystander + "/sub0/file1"));
}

TEST(SignalCleanupTest, ChildDoesNotCleanUpItsParentsRegistrations) {
  testing::TempDir tmp;
  ASSERT_TRUE(tmp.ok()) << tmp.error();
  const std::string folder = tmp.path() + "/parents";
  MakeTree(folder, 2);
  RegisterCleanupFolder(folder);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    RunSignalCleanup();  // what a forked child that gets SIGINT before exec() would do
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  UnregisterCleanupFolder(folder);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(fs::exists(folder + "/sub0/file1"));
}

// The child registers `victim`, loop-mounts an ext4 image at victim/a/b/mnt, writes a file into
// the mount, installs the handlers, reports 'R' (or 'P' when mounting is not permitted, 'E' on
// another failure) and waits for the signal.
[[noreturn]] void ChildMountAndWait(const std::string& victim, const std::string& image,
                                    const std::string& mountpoint, int ready_fd) {
  RegisterCleanupFolder(victim);
  auto mount = LoopMount::Mount(image, "ext4", mountpoint);
  if (!mount.ok()) {
    char code = absl::IsPermissionDenied(mount.status()) ? 'P' : 'E';
    (void)!::write(ready_fd, &code, 1);
    ::_exit(1);
  }
  WriteFile(mountpoint + "/inside", "written through the mount");
  InstallSignalCleanupHandlers();
  char ready = fs::exists(mountpoint + "/inside") ? 'R' : 'E';
  (void)!::write(ready_fd, &ready, 1);
  for (;;) ::pause();
}

TEST(SignalCleanupTest, SigintDetachesLoopMountAndRemovesFolder) {
  testing::TempDir tmp;
  ASSERT_TRUE(tmp.ok()) << tmp.error();
  const std::string victim = tmp.path() + "/victim";
  const std::string mountpoint = victim + "/a/b/mnt";
  const std::string image = victim + "/a/fs.img";
  MakeTree(victim + "/a", 4);
  fs::create_directories(mountpoint);
  {
    std::ofstream(image, std::ios::trunc).close();
    fs::resize_file(image, 16 << 20);
  }
  std::string mkfs = "mkfs.ext4 -q -F " + image;
  ASSERT_EQ(std::system(mkfs.c_str()), 0) << mkfs;

  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
    ChildMountAndWait(victim, image, mountpoint, pipe_fds[1]);
  }
  ::close(pipe_fds[1]);
  // Whatever happens below: no child, no mount left behind.
  struct Reaper {
    pid_t pid;
    std::string mountpoint;
    bool reaped = false;
    ~Reaper() {
      if (!reaped) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
      if (IsMounted(mountpoint)) ::umount2(mountpoint.c_str(), MNT_DETACH);
    }
  } reaper{child, mountpoint};

  pollfd pfd{pipe_fds[0], POLLIN, 0};
  ASSERT_EQ(::poll(&pfd, 1, 60'000), 1) << "the child never reported";
  char ready = 0;
  ASSERT_EQ(::read(pipe_fds[0], &ready, 1), 1);
  ::close(pipe_fds[0]);
  if (ready == 'P') GTEST_SKIP() << "loop mount not permitted here";
  ASSERT_EQ(ready, 'R') << "the child could not mount " << image;
  ASSERT_TRUE(IsMounted(mountpoint));

  ASSERT_EQ(::kill(child, SIGINT), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  reaper.reaped = true;
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGINT);
  EXPECT_FALSE(IsMounted(mountpoint));
  EXPECT_FALSE(fs::exists(fs::symlink_status(victim)));
}

}  // namespace
}  // namespace powercut::harness
