// The sqlite workload: SQLite (libsqlite3-dev), one row per transaction.
//
// Commit i is BEGIN IMMEDIATE; INSERT (i, payload, crc32c(payload)); COMMIT, acked once COMMIT
// returns. journal_mode (wal | delete) and synchronous (extra | full | normal | off) are the
// settings under test: WAL+NORMAL, for example, is documented by SQLite to lose the last
// transactions on a power cut but never to corrupt the database; DELETE+FULL does not fsync the
// directory after unlinking the journal (the commit point), EXTRA does. docs/workloads.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "workloads/ack_channel.h"
#include "workloads/check_result.h"

namespace powercut::workloads {

// The database file the workload creates inside POWERCUT_DIR.
inline constexpr char kSqliteFileName[] = "sqlite.db";

struct SqliteOptions {
  std::string journal = "wal";       // journal_mode: "wal" or "delete"
  std::string synchronous = "full";  // "extra", "full", "normal" or "off"
  uint64_t count = 1000;
  size_t value_size = 100;
  uint64_t seed = 1;
};

// Creates the database (InvalidArgument if it exists), sets the pragmas (verifying that SQLite
// accepted the journal mode), creates the table, then commits and acks ids 1..count. The first
// failed statement stops the run and is returned; its id is never acked.
absl::Status RunSqlite(const std::string& dir, const SqliteOptions& options, AckChannel& acks);

// Opens the database read-write (so a hot journal rolls back and the WAL is replayed), runs
// PRAGMA integrity_check (anything but "ok" is DataLoss with SQLite's words), then prints have
// for each row whose payload and checksum verify, corrupt for each that does not. No database
// file or no table yet: nothing was committed (no have lines, OK).
absl::StatusOr<CheckResult> CheckSqlite(const std::string& dir);

}  // namespace powercut::workloads
