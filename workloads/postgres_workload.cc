#include "workloads/postgres_workload.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <libpq-fe.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "wal/crc32c.h"
#include "workloads/payload.h"
#include "workloads/server_process.h"
#include "workloads/workload.h"

namespace powercut::workloads {
namespace {

constexpr char kInstallHint[] =
    "install Debian's postgresql-15 (apt-get install postgresql-15), or set POWERCUT_PG_BIN to the "
    "folder holding initdb and postgres";
// How long the server may take to accept connections (or to stop). Crash recovery of a few
// hundred commits takes well under a second natively and a few seconds under TCG; a minute says
// "hung", not "slow".
constexpr std::chrono::seconds kServerTimeout(60);

absl::StatusOr<std::string> BinDir(const std::string& option) {
  std::vector<std::string> candidates;
  if (!option.empty()) {
    candidates.push_back(option);
  } else if (const char* env = std::getenv("POWERCUT_PG_BIN"); env != nullptr && *env != '\0') {
    candidates.push_back(env);
  } else {
    candidates.push_back("/usr/lib/postgresql/15/bin");
  }
  for (const std::string& c : candidates) {
    if (::access((c + "/postgres").c_str(), X_OK) == 0 &&
        ::access((c + "/initdb").c_str(), X_OK) == 0) {
      return c;
    }
  }
  return absl::NotFoundError(
      fmt::format("no initdb and postgres in {}: {}", candidates.front(), kInstallHint));
}

struct FinishConn {
  void operator()(PGconn* c) const { PQfinish(c); }
};
using Conn = std::unique_ptr<PGconn, FinishConn>;
struct ClearResult {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ClearResult>;

// The postmaster in the foreground (not pg_ctl, which detaches it: a killed workload must take
// its server with it, as the power cut does), listening only on a unix socket in `folder`, its
// log in `folder`/server.log. READY=1 on NOTIFY_SOCKET (Debian builds PostgreSQL with systemd
// support) comes once crash recovery is done and connections are accepted.
struct Server {
  std::unique_ptr<NotifiedServer> process;
  std::string folder;
  std::string log() const { return folder + "/server.log"; }
  std::string conninfo() const {
    return fmt::format("host={} dbname=postgres user=postgres connect_timeout=60", folder);
  }
  // SIGINT: fast shutdown, a clean one (the run's end and the checker's). Not SIGQUIT
  // (immediate): it drops the WAL of asynchronous commits still in shared memory, so a run with
  // synchronous_commit=off that ended normally lost every row (caught by the clean-run test).
  absl::Status Stop(int signal) { return process->Stop(signal, kServerTimeout); }
};

// `extra` are more -c settings of this start only (the checker's fsync=off).
absl::StatusOr<Server> StartServer(const std::string& bin, const ServiceAccount& account,
                                   const std::string& data, const std::string& folder,
                                   absl::StatusCode failure_code,
                                   const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv = {bin + "/postgres",  "-D", data, "-k", folder, "-c",
                                   "listen_addresses="};
  for (const std::string& e : extra) {
    argv.push_back("-c");
    argv.push_back(e);
  }
  Server server{.folder = folder};
  ASSIGN_OR_RETURN(server.process,
                   NotifiedServer::Start(account, argv, folder, server.log(), server.log(),
                                         fmt::format("the PostgreSQL server on {}", data),
                                         kServerTimeout, failure_code));
  return server;
}

absl::StatusOr<Conn> Connect(const Server& server, absl::StatusCode failure_code) {
  Conn conn(PQconnectdb(server.conninfo().c_str()));
  if (conn == nullptr) return absl::ResourceExhaustedError("PQconnectdb: out of memory");
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    return absl::Status(
        failure_code,
        fmt::format("cannot connect to the PostgreSQL server ({}): {}; its log:\n{}",
                    server.conninfo(), PQerrorMessage(conn.get()), FileTail(server.log(), 10)));
  }
  // NOTICEs ("extension already exists, skipping") would reach stderr through libpq's default
  // processor: errors come back as results, and the notices say nothing the checker needs.
  PQsetNoticeProcessor(
      conn.get(), [](void*, const char*) {}, nullptr);
  return conn;
}

// Runs `sql` with text parameters; OK when the result status is `expected`.
absl::StatusOr<Result> Exec(PGconn* conn, const std::string& sql,
                            const std::vector<std::string>& params = {},
                            ExecStatusType expected = PGRES_COMMAND_OK,
                            absl::StatusCode failure_code = absl::StatusCode::kInternal) {
  std::vector<const char*> values;
  for (const std::string& p : params) values.push_back(p.c_str());
  Result r(PQexecParams(conn, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(),
                        nullptr, nullptr, 0));
  if (r == nullptr || PQresultStatus(r.get()) != expected) {
    std::string message = r == nullptr ? PQerrorMessage(conn) : PQresultErrorMessage(r.get());
    while (!message.empty() && message.back() == '\n') message.pop_back();
    return absl::Status(failure_code, fmt::format("PostgreSQL '{}': {}", sql, message));
  }
  return r;
}

int64_t Checksum(std::string_view payload) { return crc32c::Value(payload); }

absl::Status AppendSettings(const std::string& conf, const PostgresOptions& o) {
  std::ofstream out(conf, std::ios::app);
  // The settings under test, then a small server for a 1-CPU, ~700 MB guest on a disk of a few
  // hundred MB: few connections, small buffers, 1 MB WAL segments (initdb --wal-segsize=1) and
  // no archiving.
  out << "\n# powercut postgres workload (docs/your-database.md)\n"
      << "synchronous_commit = " << o.synchronous_commit << "\n"
      << "fsync = " << o.fsync << "\n"
      << "full_page_writes = " << o.full_page_writes << "\n"
      << "max_connections = 10\n"
      << "shared_buffers = 16MB\n"
      << "min_wal_size = 4MB\n"
      << "max_wal_size = 32MB\n"
      << "log_min_messages = warning\n";
  out.close();
  if (!out) return absl::InternalError(fmt::format("cannot append the settings to {}", conf));
  return absl::OkStatus();
}

absl::Status WriteReadyFile(const std::string& dir) {
  const std::string path = fmt::format("{}/{}", dir, kPostgresReadyFile);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(fmt::format("create {}: {}", path, std::strerror(errno)));
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return absl::DataLossError(fmt::format("fsync {}: {}", path, std::strerror(errno)));
  return SyncFileSystem(dir);
}

}  // namespace

absl::Status RunPostgres(const std::string& dir, const PostgresOptions& o, AckChannel& acks) {
  if (o.count == 0) return absl::InvalidArgumentError("--count must be at least 1");
  for (const auto& [name, value] : {std::pair{"--synchronous-commit", o.synchronous_commit},
                                    {"--fsync", o.fsync},
                                    {"--full-page-writes", o.full_page_writes}}) {
    if (value != "on" && value != "off") {
      return absl::InvalidArgumentError(fmt::format("{} {}: expected on or off", name, value));
    }
  }
  ASSIGN_OR_RETURN(const std::string bin, BinDir(o.bin_dir));
  ASSIGN_OR_RETURN(const ServiceAccount account, ServiceAccountFor("postgres", "postgresql-15"));
  const std::string data = fmt::format("{}/{}", dir, kPostgresDataDir);
  if (::access(data.c_str(), F_OK) == 0) {
    return absl::InvalidArgumentError(fmt::format(
        "{} already exists: the postgres workload needs a fresh POWERCUT_DIR (remove it)", data));
  }
  RETURN_IF_ERROR(MakeOwnedFolder(data, account));
  ASSIGN_OR_RETURN(PrivateFolder sockets, PrivateFolder::Create("pg", account));
  // initdb and the server reach the data folder through this path.
  ASSIGN_OR_RETURN(const std::string reachable, ReachableByAccount(account, dir, sockets.path()));
  const std::string server_data = fmt::format("{}/{}", reachable, kPostgresDataDir);

  // -N: initdb's own per-file fsyncs cost minutes under TCG; one syncfs below does the same.
  ASSIGN_OR_RETURN(CommandResult init, RunAs(account,
                                             {bin + "/initdb", "-D", server_data, "-N", "-U",
                                              "postgres", "--auth=trust", "--no-instructions", "-E",
                                              "UTF8", "--locale=C", "--wal-segsize=1"},
                                             sockets.path()));
  if (init.exit_code != 0) {
    return absl::InternalError(fmt::format("initdb -D {} failed (exit {}):\n{}", data,
                                           init.exit_code, LastLines(init.output, 15)));
  }
  RETURN_IF_ERROR(AppendSettings(data + "/postgresql.conf", o));
  RETURN_IF_ERROR(SyncFileSystem(data));
  RETURN_IF_ERROR(WriteReadyFile(dir));

  ASSIGN_OR_RETURN(Server server, StartServer(bin, account, server_data, sockets.path(),
                                              absl::StatusCode::kInternal));
  ASSIGN_OR_RETURN(Conn conn, Connect(server, absl::StatusCode::kInternal));
  RETURN_IF_ERROR(
      Exec(conn.get(),
           "CREATE TABLE commits (id bigint PRIMARY KEY, payload text NOT NULL, checksum bigint "
           "NOT NULL)")
          .status());
  for (uint64_t id = 1; id <= o.count; ++id) {
    const std::string id_text = std::to_string(id);
    const std::string payload = MakePayload(id_text, FillerSize(o.seed, id, o.value_size));
    absl::Status status = Exec(conn.get(), "BEGIN").status();
    if (status.ok()) {
      status = Exec(conn.get(), "INSERT INTO commits (id, payload, checksum) VALUES ($1, $2, $3)",
                    {id_text, payload, std::to_string(Checksum(payload))})
                   .status();
    }
    if (status.ok()) status = Exec(conn.get(), "COMMIT").status();
    if (!status.ok()) {
      return absl::Status(status.code(), fmt::format("id {}: {}; stopped, no further acks", id,
                                                     std::string(status.message())));
    }
    RETURN_IF_ERROR(acks.Ack(id_text));
    if (o.checkpoint_every != 0 && id % o.checkpoint_every == 0) {
      RETURN_IF_ERROR(Exec(conn.get(), "CHECKPOINT").status());
    }
  }
  conn.reset();
  return server.Stop(SIGINT);
}

absl::StatusOr<CheckResult> CheckPostgres(const std::string& dir) {
  CheckResult result;
  const std::string data = fmt::format("{}/{}", dir, kPostgresDataDir);
  if (::access(fmt::format("{}/{}", dir, kPostgresReadyFile).c_str(), F_OK) != 0) {
    result.notes.push_back(
        fmt::format("no {}/{}: the set-up (initdb) never finished, nothing was committed", dir,
                    kPostgresReadyFile));
    return result;
  }
  if (OnReadOnlyMount(dir)) {
    return absl::InvalidArgumentError(fmt::format(
        "{} is on a read-only mount: PostgreSQL's crash recovery writes; mount the crash image "
        "read-write",
        dir));
  }
  ASSIGN_OR_RETURN(const std::string bin, BinDir(""));
  ASSIGN_OR_RETURN(const ServiceAccount account, ServiceAccountFor("postgres", "postgresql-15"));
  struct stat st;
  if (::stat(data.c_str(), &st) != 0) {
    return absl::DataLossError(fmt::format("{} is gone although {} says initdb finished: {}", data,
                                           kPostgresReadyFile, std::strerror(errno)));
  }
  if (st.st_uid != account.uid) {
    return absl::FailedPreconditionError(
        fmt::format("{} belongs to uid {}, but the server would run as uid {}: run the checker as "
                    "root (it switches to the postgres user) or as the owner",
                    data, st.st_uid, account.uid));
  }
  // The crashed server's postmaster.pid names a process of the machine that lost power; on this
  // one that pid may belong to anything, and the postmaster would refuse to start. A machine
  // booting after the cut has no such process either, so the file is stale by definition.
  const std::string pid_file = data + "/postmaster.pid";
  if (::unlink(pid_file.c_str()) == 0) {
    result.notes.push_back("removed the crashed server's postmaster.pid (stale after a power cut)");
  }
  ASSIGN_OR_RETURN(PrivateFolder sockets, PrivateFolder::Create("pgcheck", account));
  ASSIGN_OR_RETURN(const std::string reachable, ReachableByAccount(account, dir, sockets.path()));
  const std::string server_data = fmt::format("{}/{}", reachable, kPostgresDataDir);
  // From here on, a server that fails is the image's fault: DataLoss, quoting the server's log.
  // fsync=off for this start only: before crash recovery the server fsyncs every file of the
  // data folder (recovery_init_sync_method), 4 s of the 4.5 s a check took on the host, and the
  // crash image is scratch: nothing the checker's server writes needs to survive a crash. Redo
  // itself is the same with or without it.
  ASSIGN_OR_RETURN(Server server, StartServer(bin, account, server_data, sockets.path(),
                                              absl::StatusCode::kDataLoss, {"fsync=off"}));
  ASSIGN_OR_RETURN(Conn conn, Connect(server, absl::StatusCode::kDataLoss));
  constexpr auto kLoss = absl::StatusCode::kDataLoss;
  ASSIGN_OR_RETURN(Result table, Exec(conn.get(), "SELECT to_regclass('public.commits')", {},
                                      PGRES_TUPLES_OK, kLoss));
  if (PQgetisnull(table.get(), 0, 0)) {
    result.notes.emplace_back("no commits table yet: nothing was committed");
    conn.reset();
    RETURN_IF_ERROR(server.Stop(SIGINT));
    return result;
  }
  // amcheck: every heap tuple has its index entry (heapallindexed), the B-tree is ordered, and
  // verify_heapam finds no damaged tuple or page. Documented for torn pages without
  // full_page_writes (https://www.postgresql.org/docs/15/amcheck.html).
  RETURN_IF_ERROR(Exec(conn.get(), "CREATE EXTENSION IF NOT EXISTS amcheck").status());
  RETURN_IF_ERROR(
      Exec(conn.get(), "SELECT bt_index_check('commits_pkey', true)", {}, PGRES_TUPLES_OK, kLoss)
          .status());
  ASSIGN_OR_RETURN(Result heap, Exec(conn.get(),
                                     "SELECT blkno, offnum, msg FROM verify_heapam('commits', "
                                     "check_toast => true)",
                                     {}, PGRES_TUPLES_OK, kLoss));
  if (PQntuples(heap.get()) > 0) {
    std::string problems;
    for (int i = 0; i < PQntuples(heap.get()) && i < 10; ++i) {
      problems += fmt::format("\n  block {} offset {}: {}", PQgetvalue(heap.get(), i, 0),
                              PQgetvalue(heap.get(), i, 1), PQgetvalue(heap.get(), i, 2));
    }
    return absl::DataLossError(fmt::format("amcheck verify_heapam('commits') found {} problems:{}",
                                           PQntuples(heap.get()), problems));
  }
  ASSIGN_OR_RETURN(Result rows,
                   Exec(conn.get(), "SELECT id, payload, checksum FROM commits ORDER BY id", {},
                        PGRES_TUPLES_OK, kLoss));
  for (int i = 0; i < PQntuples(rows.get()); ++i) {
    const std::string id = PQgetvalue(rows.get(), i, 0);
    const std::string payload = PQgetvalue(rows.get(), i, 1);
    const std::string checksum = PQgetvalue(rows.get(), i, 2);
    if (VerifyPayload(id, payload) && checksum == std::to_string(Checksum(payload))) {
      result.have.push_back(id);
    } else {
      result.corrupt.push_back(id);
      result.notes.push_back(fmt::format("row {}: payload or checksum does not verify", id));
    }
  }
  conn.reset();
  RETURN_IF_ERROR(server.Stop(SIGINT));
  return result;
}

namespace {

constexpr char kRuntimeConfigWal[] =
    "PostgreSQL 15 docs, 20.5 Write Ahead Log "
    "(https://www.postgresql.org/docs/15/runtime-config-wal.html)";
constexpr char kWalReliability[] =
    "PostgreSQL 15 docs, 30.1 Reliability "
    "(https://www.postgresql.org/docs/15/wal-reliability.html)";

class PostgresWorkload final : public StoreWorkload<PostgresOptions, RunPostgres, CheckPostgres> {
 public:
  WorkloadHelp help() const override {
    return {"postgres", "PostgreSQL 15 server, one row per transaction",
            "initdb, start the server as postgres, commit and ack --count rows",
            "start the server on the image (crash recovery), amcheck, print have per row"};
  }
  void AddOptions(CLI::App& run, CLI::App& /*check*/) override {
    for (auto [flag, value, help] :
         {std::tuple{"--synchronous-commit", &options_.synchronous_commit, "synchronous_commit"},
          {"--fsync", &options_.fsync, "fsync"},
          {"--full-page-writes", &options_.full_page_writes, "full_page_writes"}}) {
      run.add_option(flag, *value, fmt::format("{}: on or off", help))
          ->capture_default_str()
          ->check(CLI::IsMember({"on", "off"}));
    }
    run.add_option("--checkpoint-every", options_.checkpoint_every,
                   "CHECKPOINT after every N commits (0: never): data pages are overwritten "
                   "between commits, which torn-page tests need")
        ->capture_default_str();
    run.add_option("--pg-bin", options_.bin_dir,
                   "folder of initdb and postgres (default $POWERCUT_PG_BIN, else "
                   "/usr/lib/postgresql/15/bin)");
    AddCountOption(run, options_.count, "rows (transactions)");
    AddPayloadOptions(run, options_.value_size, options_.seed, "payload");
  }
  std::vector<WorkloadConfig> CatalogEntries() const override {
    std::vector<WorkloadConfig> entries;
    WorkloadConfig on{.name = "postgres-sync-on",
                      .workload = "postgres",
                      .setting = "synchronous_commit=on",
                      .run_args = {"--synchronous-commit", "on"}};
    on.cache_off = on.cache_on = Expectation::kSurvives;
    on.documented = fmt::format(
        "{}, synchronous_commit: 'on' reports success only after the transaction's WAL is "
        "flushed to durable storage; {}: a drive cache that does not honour flushes (lying) "
        "loses committed transactions",
        kRuntimeConfigWal, kWalReliability);
    entries.push_back(on);

    WorkloadConfig off{.name = "postgres-sync-off",
                       .workload = "postgres",
                       .setting = "synchronous_commit=off",
                       .run_args = {"--synchronous-commit", "off"}};
    // WAL of an asynchronous commit waits in shared memory for the WAL writer: a crash of the
    // server (here: the workload killed, its postmaster with it) loses it too.
    off.process_crash = Expectation::kLoses;
    off.documented = fmt::format(
        "{}, synchronous_commit: with 'off' there can be a delay (at most three times "
        "wal_writer_delay) between reporting success and the transaction being safe: recent "
        "transactions may be lost, the database stays consistent",
        kRuntimeConfigWal);
    entries.push_back(off);

    WorkloadConfig nofsync{.name = "postgres-fsync-off",
                           .workload = "postgres",
                           .setting = "fsync=off",
                           .run_args = {"--fsync", "off"}};
    nofsync.documented = fmt::format(
        "{}, fsync: with fsync off the server never forces updates to disk; after an operating "
        "system crash or power cut data may be lost or corrupted unrecoverably",
        kRuntimeConfigWal);
    entries.push_back(nofsync);

    // Torn 8 KiB pages need a checkpoint to overwrite data pages, hence --checkpoint-every.
    WorkloadConfig nofpw{.name = "postgres-fpw-off",
                         .workload = "postgres",
                         .setting = "full_page_writes=off",
                         .run_args = {"--full-page-writes", "off", "--checkpoint-every", "3"}};
    nofpw.cache_off = nofpw.cache_on = Expectation::kMayLose;
    nofpw.documented = fmt::format(
        "{}, full_page_writes: turning it off 'might lead to either unrecoverable data "
        "corruption, or silent data corruption, after a system failure' (a page torn by a "
        "partial write); amcheck (heap and index agree) is the check. May, not must: a torn "
        "page needs a cut inside a checkpoint's writes",
        kRuntimeConfigWal);
    entries.push_back(nofpw);
    return entries;
  }
};

}  // namespace

std::unique_ptr<Workload> MakePostgresWorkload() { return std::make_unique<PostgresWorkload>(); }

}  // namespace powercut::workloads
