// The postgres workload: PostgreSQL 15 as Debian ships it (postgresql-15), one row per
// transaction, a real server in the guest (docs/your-database.md explains every step), in the
// DatabaseWorkload shape (database_workload.h).
//
// Run: initdb in POWERCUT_DIR/pgdata as the postgres user (-N, then one syncfs, then the marker
// file pgdata.ready, synced: the set-up is durable before the first commit and the checker can
// tell a finished set-up from one cut short), the settings under test appended to
// postgresql.conf, the postmaster started in the foreground on a unix socket in a private folder
// under /tmp (listen_addresses=''), then for id 1..count: BEGIN; INSERT (id, payload, crc32c);
// COMMIT, acked once COMMIT returned. The server is stopped cleanly (SIGINT, fast shutdown): an
// immediate one would drop asynchronous commits that a normal end keeps.
//
// --wal-disk: initdb --waldir puts the WAL in POWERCUT_DIR_2/pg_wal (the second disk of
// `powercut run --disks 2`) and links it from pgdata/pg_wal; the checker points that link at the
// second disk as the check mounts it (postgres_client.h, ReadBackPostgres).
//
// Check: the server started on the crash image (crash recovery replays the WAL), amcheck
// (bt_index_check with heapallindexed, verify_heapam: heap and index agree), then have/corrupt
// per row. A server that cannot start on the image is DataLoss quoting its log.
//
// The libpq half (the run's session, the checker's read-back) is postgres_client.cc.
#include <fmt/format.h>

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "workloads/database_workload.h"
#include "workloads/postgres_client.h"

namespace powercut::workloads {
namespace {

constexpr char kRuntimeConfigWal[] =
    "PostgreSQL 15 docs, 20.5 Write Ahead Log "
    "(https://www.postgresql.org/docs/15/runtime-config-wal.html)";
constexpr char kWalInternals[] =
    "PostgreSQL 15 docs, 30.6 WAL Internals "
    "(https://www.postgresql.org/docs/15/wal-internals.html)";
constexpr char kWalReliability[] =
    "PostgreSQL 15 docs, 30.1 Reliability "
    "(https://www.postgresql.org/docs/15/wal-reliability.html)";

class PostgresWorkload final : public DatabaseWorkload {
 public:
  PostgresWorkload() : DatabaseWorkload("rows (transactions)", "payload") {}
  WorkloadHelp help() const override {
    return {"postgres", "PostgreSQL 15 server, one row per transaction",
            "initdb, start the server as postgres, commit and ack --count rows",
            "start the server on the image (crash recovery), amcheck, print have per row"};
  }
  std::vector<WorkloadConfig> CatalogEntries() const override {
    std::vector<WorkloadConfig> entries;
    entries.push_back(Entry(
        "postgres-sync-on", "synchronous_commit=on", {"--synchronous-commit", "on"},
        Expectation::kSurvives,
        fmt::format("{}, synchronous_commit: 'on' reports success only after the transaction's "
                    "WAL is flushed to durable storage; {}: a drive cache that does not honour "
                    "flushes (lying) loses committed transactions",
                    kRuntimeConfigWal, kWalReliability)));
    WorkloadConfig off = Entry(
        "postgres-sync-off", "synchronous_commit=off", {"--synchronous-commit", "off"},
        Expectation::kLoses,
        fmt::format("{}, synchronous_commit: with 'off' there can be a delay (at most three times "
                    "wal_writer_delay) between reporting success and the transaction being safe: "
                    "recent transactions may be lost, the database stays consistent",
                    kRuntimeConfigWal));
    // WAL of an asynchronous commit waits in shared memory for the WAL writer: a crash of the
    // server (here: the workload killed, its postmaster with it) loses it too.
    off.process_crash = Expectation::kLoses;
    entries.push_back(off);
    entries.push_back(Entry(
        "postgres-fsync-off", "fsync=off", {"--fsync", "off"}, Expectation::kLoses,
        fmt::format("{}, fsync: with fsync off the server never forces updates to disk; after an "
                    "operating system crash or power cut data may be lost or corrupted "
                    "unrecoverably",
                    kRuntimeConfigWal)));
    // Torn 8 KiB pages need a checkpoint to overwrite data pages, hence --checkpoint-every.
    entries.push_back(Entry(
        "postgres-fpw-off", "full_page_writes=off",
        {"--full-page-writes", "off", "--checkpoint-every", "3"}, Expectation::kMayLose,
        fmt::format("{}, full_page_writes: turning it off 'might lead to either unrecoverable data "
                    "corruption, or silent data corruption, after a system failure' (a page torn "
                    "by a partial write); amcheck (heap and index agree) is the check. May, not "
                    "must: a torn page needs a cut inside a checkpoint's writes",
                    kRuntimeConfigWal)));
    // pg_wal on its own disk (`--preset multidisk`): a commit returns once its WAL is flushed
    // on disk 2, and the data files (disk 1) are written only at checkpoints, which fsync them
    // before the WAL that redoes them may be recycled; so every acked row is durable on honest
    // disks, and a disk that ignores flushes (either one) may lose it.
    WorkloadConfig wal_disk = Entry(
        "postgres-waldisk-sync-on", "synchronous_commit=on, pg_wal on disk 2",
        {"--synchronous-commit", "on", "--wal-disk"}, Expectation::kSurvives,
        fmt::format("{}: 'it is advantageous if the log is located on a different disk from the "
                    "main database files' (pg_wal moved, or initdb --waldir, and linked from the "
                    "data folder); {}, synchronous_commit: 'on' reports success only after the "
                    "WAL is flushed to durable storage; {}: a cache that does not honour flushes "
                    "loses committed transactions",
                    kWalInternals, kRuntimeConfigWal, kWalReliability));
    wal_disk.disks = 2;
    entries.push_back(wal_disk);
    return entries;
  }

 protected:
  void AddSettings(CLI::App& run) override {
    for (auto [flag, value, help] :
         {std::tuple{"--synchronous-commit", &settings_.synchronous_commit, "synchronous_commit"},
          {"--fsync", &settings_.fsync, "fsync"},
          {"--full-page-writes", &settings_.full_page_writes, "full_page_writes"}}) {
      run.add_option(flag, *value, fmt::format("{}: on or off", help))
          ->capture_default_str()
          ->check(CLI::IsMember({"on", "off"}));
    }
    run.add_option("--checkpoint-every", settings_.checkpoint_every,
                   "CHECKPOINT after every N commits (0: never): data pages are overwritten "
                   "between commits, which torn-page tests need")
        ->capture_default_str();
    run.add_flag("--wal-disk", settings_.wal_disk,
                 "the WAL on the second disk: initdb --waldir $POWERCUT_DIR_2/pg_wal (powercut run "
                 "--disks 2)");
    run.add_option("--pg-bin", settings_.bin_dir,
                   "folder of initdb and postgres (default $POWERCUT_PG_BIN, else "
                   "/usr/lib/postgresql/15/bin)");
  }
  absl::StatusOr<std::unique_ptr<Session>> Open(const std::string& dir) override {
    return OpenPostgres(dir, settings_);
  }
  absl::StatusOr<std::vector<Record>> ReadBack(const std::string& dir,
                                               std::vector<std::string>& notes) override {
    return ReadBackPostgres(dir, notes);
  }

 private:
  PostgresSettings settings_;
};

}  // namespace

std::unique_ptr<Workload> MakePostgresWorkload() { return std::make_unique<PostgresWorkload>(); }

}  // namespace powercut::workloads
