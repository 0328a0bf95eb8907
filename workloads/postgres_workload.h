// The postgres workload: PostgreSQL 15 as Debian ships it (postgresql-15), one row per
// transaction, a real server in the guest (docs/your-database.md explains every step).
//
// Run: initdb in POWERCUT_DIR/pgdata as the postgres user (-N, then one syncfs, then the marker
// file pgdata.ready, synced: the set-up is durable before the first commit and the checker can
// tell a finished set-up from one cut short), the settings under test appended to
// postgresql.conf, the postmaster started in the foreground on a unix socket in a private folder
// under /tmp (listen_addresses=''), then for id 1..count: BEGIN; INSERT (id, payload, crc32c);
// COMMIT, acked once COMMIT returned. The server is stopped cleanly (SIGINT, fast shutdown): an
// immediate one would drop asynchronous commits that a normal end keeps.
//
// Check: the server started on the crash image (crash recovery replays the WAL), amcheck
// (bt_index_check with heapallindexed, verify_heapam: heap and index agree), then have/corrupt
// per row. A server that cannot start on the image is DataLoss quoting its log.
//
// libpq (libpq-dev), not psql: one connection for the whole run instead of a process per
// statement (under TCG a process start costs tens of milliseconds), parameters bound as values
// instead of quoted into SQL text, and errors as PGresult fields.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "workloads/ack_channel.h"
#include "workloads/check_result.h"

namespace powercut::workloads {

inline constexpr char kPostgresDataDir[] = "pgdata";
inline constexpr char kPostgresReadyFile[] = "pgdata.ready";

struct PostgresOptions {
  std::string synchronous_commit = "on";  // "on" or "off"
  std::string fsync = "on";               // "on" or "off"
  std::string full_page_writes = "on";    // "on" or "off"
  uint64_t checkpoint_every = 0;          // CHECKPOINT after every N commits (0: never)
  uint64_t count = 100;
  size_t value_size = 100;
  uint64_t seed = 1;
  std::string bin_dir;  // "" = $POWERCUT_PG_BIN, else /usr/lib/postgresql/15/bin
};

absl::Status RunPostgres(const std::string& dir, const PostgresOptions& options, AckChannel& acks);

// Starts the server on the image with crash recovery, checks heap and index, lists the rows,
// stops the server. No pgdata.ready: the set-up never finished, nothing was committed (OK).
absl::StatusOr<CheckResult> CheckPostgres(const std::string& dir);

}  // namespace powercut::workloads
