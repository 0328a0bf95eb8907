// Everything one job's command starts, held in a cgroup of its own so the agent can kill what the
// workload left behind (a background `sleep` holding a file open on the disk, a daemon that
// called setsid) before it unmounts the disk. Without cgroup v2 in the guest the agent falls back
// to the command's process group, which a process that called setsid escapes.
#pragma once

#include <sys/types.h>

#include <string>

namespace powercut::vm::guest {

class JobCgroup {
 public:
  // /sys/fs/cgroup/powercut-<name>; valid() is false without cgroup v2 (then every call below
  // works on the process group instead).
  explicit JobCgroup(const std::string& name);
  ~JobCgroup();
  JobCgroup(const JobCgroup&) = delete;
  JobCgroup& operator=(const JobCgroup&) = delete;

  bool valid() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  // In the forked child, before exec: moves the calling process into the cgroup.
  void EnterFromChild() const;
  // The processes still in the cgroup (or in process group `pgid`).
  uint64_t Count(pid_t pgid) const;
  // SIGKILLs every member and waits (bounded, 10 s) until none is left; false if some survive
  // (a process stuck in the kernel).
  bool KillAll(pid_t pgid) const;

 private:
  std::string path_;
};

// SIGSTOPs process group `pgid` and waits (bounded, 1 s) until every member is stopped (the
// workload is paused while a dm table switches).
void StopProcessGroup(pid_t pgid);

}  // namespace powercut::vm::guest
