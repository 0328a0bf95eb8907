// The postgres workload's libpq half (postgres_client.cc), which only powercut-workload-clients
// links: the run's session (initdb, the server, one connection) and the checker's read-back.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "workloads/database_workload.h"

namespace powercut::workloads {

// The settings under test (postgresql.conf) and where the server's programs are.
struct PostgresSettings {
  std::string synchronous_commit = "on";
  std::string fsync = "on";
  std::string full_page_writes = "on";
  uint64_t checkpoint_every = 0;  // CHECKPOINT after every N commits (0: never)
  std::string bin_dir;            // "" = $POWERCUT_PG_BIN, else /usr/lib/postgresql/15/bin
  bool wal_disk = false;          // initdb --waldir on the second disk: POWERCUT_DIR_2/pg_wal
};

// With --wal-disk, the WAL folder on the second disk of a set (POWERCUT_DIR_2/pg_wal), which
// initdb links from pgdata/pg_wal.
inline constexpr char kPostgresWalDiskDir[] = "pg_wal";

// initdb in `dir`/pgdata with `settings` appended to postgresql.conf (with wal_disk, the WAL in
// POWERCUT_DIR_2/pg_wal: InvalidArgument before anything is created when that is not set), then
// the server and one connection with the commits table created: a Session that commits one row
// per transaction.
absl::StatusOr<std::unique_ptr<DatabaseWorkload::Session>> OpenPostgres(
    const std::string& dir, const PostgresSettings& settings);

// The server started on the crash image (crash recovery), amcheck, every row read back; notes
// say what was found instead of rows (no set-up, no table, a stale postmaster.pid removed). When
// pgdata/pg_wal is a link (the run's --wal-disk), the link is pointed at POWERCUT_DIR_2/pg_wal
// as this check mounts it (docs/workloads.md, "postgres run --wal-disk"); InvalidArgument when
// POWERCUT_DIR_2 is not set, DataLoss when the WAL folder is not there.
absl::StatusOr<std::vector<DatabaseWorkload::Record>> ReadBackPostgres(
    const std::string& dir, std::vector<std::string>& notes);

}  // namespace powercut::workloads
