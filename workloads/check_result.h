// What a checker found: the commits it read back intact and the ones it found damaged.
//
// Printed in the protocol's format (docs/protocol.md): one "have <id>" line per intact commit,
// then one "corrupt <id>" line per damaged one, on stdout; notes (why a block was skipped, what
// the torn tail looked like) go to stderr so that they never mix with the verdict lines.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace powercut::workloads {

struct CheckResult {
  std::vector<std::string> have;
  std::vector<std::string> corrupt;
  std::vector<std::string> notes;

  // Writes have/corrupt lines to `out` and notes (prefixed with `name: `) to `err`; flushes both.
  void Print(const std::string& name, std::FILE* out, std::FILE* err) const;
};

// True when `path` lies on a file system mounted read-only (statvfs ST_RDONLY). Checkers whose
// store recovers by writing (RocksDB, SQLite) then open read-only instead.
bool OnReadOnlyMount(const std::string& path);

}  // namespace powercut::workloads
