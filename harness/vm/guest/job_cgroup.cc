#include "harness/vm/guest/job_cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "fmt/format.h"
#include "harness/vm/guest/guest_devices.h"

namespace powercut::vm::guest {

namespace fs = std::filesystem;

namespace {

constexpr char kCgroupRoot[] = "/sys/fs/cgroup";

// The states ("R", "S", "T", "Z"...) of the members of process group `pgid`, from /proc.
std::vector<std::string> GroupMemberStates(pid_t pgid) {
  std::vector<std::string> states;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat = ReadLine(entry.path() / "stat");
    auto close_paren = stat.rfind(')');
    if (close_paren == std::string::npos) continue;
    std::istringstream fields(stat.substr(close_paren + 2));
    std::string state;
    long ppid = 0, pgrp = 0;
    fields >> state >> ppid >> pgrp;
    if (pgrp == pgid) states.push_back(state);
  }
  return states;
}

bool Dead(const std::string& state) { return state == "Z" || state == "X"; }

// Members of process group `pgid` (the fallback without cgroups), zombies excluded.
uint64_t CountGroup(pid_t pgid) {
  uint64_t n = 0;
  for (const std::string& state : GroupMemberStates(pgid)) n += Dead(state) ? 0 : 1;
  return n;
}

}  // namespace

JobCgroup::JobCgroup(const std::string& name) {
  if (access(fmt::format("{}/cgroup.controllers", kCgroupRoot).c_str(), F_OK) != 0) return;
  std::string path = fmt::format("{}/powercut-{}", kCgroupRoot, name);
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return;
  path_ = path;
}

JobCgroup::~JobCgroup() {
  if (!path_.empty()) rmdir(path_.c_str());
}

void JobCgroup::EnterFromChild() const {
  if (path_.empty()) return;
  // Async-signal-safe: open/write only.
  int fd = open((path_ + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  (void)!write(fd, "0", 1);
  close(fd);
}

uint64_t JobCgroup::Count(pid_t pgid) const {
  if (path_.empty()) return pgid > 0 ? CountGroup(pgid) : 0;
  std::ifstream in(path_ + "/cgroup.procs");
  uint64_t n = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) ++n;
  }
  return n;
}

bool JobCgroup::KillAll(pid_t pgid) const {
  if (path_.empty()) {
    if (pgid > 0) kill(-pgid, SIGKILL);
  } else {
    std::ofstream(path_ + "/cgroup.kill") << "1";
  }
  // The kernel delivers SIGKILL asynchronously; members leave the cgroup as they die.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    // The agent is the children's subreaper: reap the orphans so no zombie is counted.
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    if (Count(pgid) == 0) break;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

void StopProcessGroup(pid_t pgid) {
  kill(-pgid, SIGSTOP);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    bool all_stopped = true;
    for (const std::string& state : GroupMemberStates(pgid)) {
      if (state != "T" && state != "t" && !Dead(state)) all_stopped = false;
    }
    if (all_stopped) return;
    usleep(1000);
  }
}

}  // namespace powercut::vm::guest
