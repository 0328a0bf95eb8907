// Removes what killed runs left behind: the scratch folders (base/scratch_dir.h) of processes that
// are gone. A scheduler ends a job at its time limit with SIGTERM, then SIGKILL; SIGKILL runs no
// cleanup, and a check's folder holds images of hundreds of MB (four 512 MiB sparse images for
// `powercut-check-*`). powercut sweeps at every start (tools/powercut/main.cc).
//
// Guarantees: only `powercut-*.lock` files in the given folders are looked at, only those owned by
// the calling user, and only when nobody holds their flock (the owner is dead: a live owner
// holds it for as long as the folder exists). For each, the folder the lock names (a directory of
// the same user, not a symbolic link) is removed with everything in it, then the lock file. A
// folder without a lock file (kept with Release(), made by another program or an older powercut)
// is never touched. Errors are skipped: a sweep never fails the command that runs it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace powercut {

struct SweepResult {
  int folders = 0;     // scratch folders removed
  uint64_t bytes = 0;  // their allocated size (sparse images count what they use)
};

SweepResult SweepDeadScratchFolders(const std::vector<std::string>& parents);

// The folders powercut makes scratch folders in: $TMPDIR (or /tmp), /tmp and /var/tmp, each once.
std::vector<std::string> ScratchParents();

}  // namespace powercut
