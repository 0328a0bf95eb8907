// The lmdb workload: LMDB (Debian's liblmdb), one put per write transaction, linked in (LMDB is
// a library, not a server: no account, no socket).
//
// Run: mdb_env_open on POWERCUT_DIR/lmdb with the flags under test (none, MDB_NOSYNC or
// MDB_NOMETASYNC), then for id 1..count: mdb_txn_begin; mdb_put(id, payload); mdb_txn_commit,
// acked once the commit returned. Check: the environment opened as a restarted program would
// (LMDB has no recovery step: it picks the newer of its two meta pages), every entry read,
// have/corrupt per key. What lmdb.h promises for each flag is in the catalog entries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "workloads/ack_channel.h"
#include "workloads/check_result.h"

namespace powercut::workloads {

inline constexpr char kLmdbDir[] = "lmdb";

struct LmdbOptions {
  std::string sync = "default";  // "default", "nosync" or "nometasync"
  uint64_t count = 100;
  size_t value_size = 100;
  uint64_t seed = 1;
};

absl::Status RunLmdb(const std::string& dir, const LmdbOptions& options, AckChannel& acks);

// No POWERCUT_DIR/lmdb/data.mdb: nothing was committed (OK). An environment LMDB refuses to open
// (bad meta pages: MDB_INVALID, MDB_CORRUPTED) is DataLoss with LMDB's words.
absl::StatusOr<CheckResult> CheckLmdb(const std::string& dir);

}  // namespace powercut::workloads
