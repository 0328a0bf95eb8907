// What a guest must have from boot for a job: the kernel modules it loads (a file system, dm
// targets) and the host folders under its tmpfs folders it keeps visible (docs/vm.md, "Host
// paths"). A warm guest runs a job only if its boot covered the job's needs; otherwise the pool
// boots one that covers both (warm_guest.h).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "harness/fs/file_system.h"

namespace powercut::vm {

struct GuestConfig {
  std::vector<std::string> modules;     // sorted, each once
  std::vector<std::string> keep_paths;  // sorted, each once
  // The guest's size from boot (`--guest-memory`, `--guest-cpus`; 0 = QemuOptions' defaults). A
  // guest covers a job only at exactly the size it asks for: a run is measured on the machine it
  // names.
  int memory_mib = 0;
  int cpus = 0;
  bool Covers(const GuestConfig& need) const;
  // The union of the lists; the size becomes `more`'s (the job's) where it names one.
  void Add(const GuestConfig& more);
};

std::vector<std::string> GuestModulesFor(harness::FsKind fs, bool log_writes, bool flakey);
// The folders to keep visible: the caller's, the agent's folder and what the commands name.
std::vector<std::string> KeepPathsFor(const std::string& agent, std::vector<std::string> keep,
                                      const std::vector<std::string>& commands);
absl::Status ValidateKeepPaths(const std::vector<std::string>& paths);
absl::Status ValidateCommand(const std::string& command, const char* what);

// The host folders a guest must keep visible for `commands` (docs/vm.md, "Host paths"): for
// every absolute path a command names that lies under a folder the guest covers with tmpfs
// (/tmp, /run, /var/tmp, /mnt), its nearest existing folder below that covered folder. A path
// whose nearest existing folder is the covered folder itself (e.g. /tmp/new-file) is left to
// the guest's tmpfs. Sorted, without duplicates or folders inside another kept one.
std::vector<std::string> CommandKeepPaths(const std::vector<std::string>& commands);

}  // namespace powercut::vm
