// OpenPostgres and ReadBackPostgres: the half of the postgres workload that links libpq (and
// through it OpenSSL, GnuTLS, Kerberos, LDAP and SASL). Built into powercut-workload-clients only
// (workloads/README.md, "Two binaries"); what the workload does is in postgres_workload.cc.
//
// libpq (libpq-dev), not psql: one connection for the whole run instead of a process per
// statement (under TCG a process start costs about 0.1 s), parameters bound as values
// instead of quoted into SQL text, and errors as PGresult fields.
#include "workloads/postgres_client.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <libpq-fe.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "wal/crc32c.h"
#include "workloads/ack_channel.h"
#include "workloads/server_process.h"

namespace powercut::workloads {
namespace {

constexpr char kPostgresDataDir[] = "pgdata";
constexpr char kPostgresReadyFile[] = "pgdata.ready";

constexpr char kPostgresInstallHint[] =
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
    candidates.emplace_back(env);
  } else {
    candidates.emplace_back("/usr/lib/postgresql/15/bin");
  }
  for (const std::string& c : candidates) {
    if (::access((c + "/postgres").c_str(), X_OK) == 0 &&
        ::access((c + "/initdb").c_str(), X_OK) == 0) {
      return c;
    }
  }
  return absl::NotFoundError(
      fmt::format("no initdb and postgres in {}: {}", candidates.front(), kPostgresInstallHint));
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
    argv.emplace_back("-c");
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

absl::Status AppendSettings(const std::string& conf, const PostgresSettings& o) {
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

// A run: initdb, the server, one connection.
class PostgresSession final : public DatabaseWorkload::Session {
 public:
  static absl::StatusOr<std::unique_ptr<PostgresSession>> Open(const std::string& dir,
                                                               const PostgresSettings& o) {
    ASSIGN_OR_RETURN(const std::string bin, BinDir(o.bin_dir));
    // Bad input before anything is created: --wal-disk without a second disk.
    std::string dir2;
    if (o.wal_disk) {
      ASSIGN_OR_RETURN(dir2, RequireSecondDiskDir("--wal-disk"));
    }
    ASSIGN_OR_RETURN(ServerSite site,
                     RunSite(dir, kPostgresDataDir, "postgres", "postgres", "postgresql-15", "pg"));
    const std::string data = fmt::format("{}/{}", dir, kPostgresDataDir);
    // -N: initdb's own per-file fsyncs cost minutes under TCG; one syncfs below does the same.
    std::vector<std::string> initdb = {bin + "/initdb",
                                       "-D",
                                       site.data,
                                       "-N",
                                       "-U",
                                       "postgres",
                                       "--auth=trust",
                                       "--no-instructions",
                                       "-E",
                                       "UTF8",
                                       "--locale=C",
                                       "--wal-segsize=1"};
    std::string wal;  // the WAL folder on the second disk, as the server reaches it
    if (o.wal_disk) {
      // initdb fills the empty folder and links pgdata/pg_wal to it (an absolute link: the
      // checker points it at the second disk as it is mounted then).
      ASSIGN_OR_RETURN(wal, SecondDiskStore(site, dir2, kPostgresWalDiskDir, "postgres",
                                            /*fresh=*/true));
      initdb.push_back("--waldir=" + wal);
    }
    ASSIGN_OR_RETURN(CommandResult init, RunAs(site.account, initdb, site.folder.path()));
    if (init.exit_code != 0) {
      return absl::InternalError(fmt::format("initdb -D {} failed (exit {}):\n{}", data,
                                             init.exit_code, LastLines(init.output, 15)));
    }
    RETURN_IF_ERROR(AppendSettings(data + "/postgresql.conf", o));
    // Both disks' set-up durable before the marker (which syncs only the first disk).
    if (!wal.empty()) RETURN_IF_ERROR(SyncFileSystem(wal));
    RETURN_IF_ERROR(SyncFileSystem(data));
    RETURN_IF_ERROR(WriteReadyMarker(dir, kPostgresReadyFile));

    ASSIGN_OR_RETURN(Server server, StartServer(bin, site.account, site.data, site.folder.path(),
                                                absl::StatusCode::kInternal));
    ASSIGN_OR_RETURN(Conn conn, Connect(server, absl::StatusCode::kInternal));
    RETURN_IF_ERROR(Exec(conn.get(),
                         "CREATE TABLE commits (id bigint PRIMARY KEY, payload text NOT NULL, "
                         "checksum bigint NOT NULL)")
                        .status());
    return std::unique_ptr<PostgresSession>(new PostgresSession(
        std::move(site), std::move(server), std::move(conn), o.checkpoint_every));
  }

  absl::Status Commit(const std::string& id, const std::string& value) override {
    // The CHECKPOINT after every N-th ack runs here, before the next commit: the same order
    // in the trace (ack N, checkpoint, commit N+1).
    if (checkpoint_every_ != 0 && commits_ != 0 && commits_ % checkpoint_every_ == 0) {
      RETURN_IF_ERROR(Exec(conn_.get(), "CHECKPOINT").status());
    }
    RETURN_IF_ERROR(Exec(conn_.get(), "BEGIN").status());
    RETURN_IF_ERROR(Exec(conn_.get(),
                         "INSERT INTO commits (id, payload, checksum) VALUES ($1, $2, $3)",
                         {id, value, std::to_string(Checksum(value))})
                        .status());
    RETURN_IF_ERROR(Exec(conn_.get(), "COMMIT").status());
    ++commits_;
    return absl::OkStatus();
  }
  absl::Status Finish() override {
    conn_.reset();
    return server_.Stop(SIGINT);
  }

 private:
  PostgresSession(ServerSite site, Server server, Conn conn, uint64_t checkpoint_every)
      : site_(std::move(site)),
        server_(std::move(server)),
        conn_(std::move(conn)),
        checkpoint_every_(checkpoint_every) {}
  ServerSite site_;  // destroyed last: the server must be gone before its folder goes
  Server server_;
  Conn conn_;
  const uint64_t checkpoint_every_;
  uint64_t commits_ = 0;
};

// A run with --wal-disk left pgdata/pg_wal a link to the WAL folder on the second disk, by the
// absolute path the run's server reached it by (a private folder of the run, gone since). The
// check mounts that disk elsewhere, so the link is pointed at POWERCUT_DIR_2/pg_wal as this
// check's server reaches it, which is what an operator does after moving a WAL disk. The crash
// image is scratch: the link is the only thing changed, and redo reads the same WAL. Returns the
// note saying so, or nothing when pg_wal is a folder (the WAL on the first disk).
absl::StatusOr<std::optional<std::string>> PointWalLinkAtSecondDisk(const std::string& data,
                                                                    const ServerSite& site) {
  const std::string link = data + "/pg_wal";
  struct stat st;
  if (::lstat(link.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return std::nullopt;
  std::string target(PATH_MAX, '\0');
  const ssize_t n = ::readlink(link.c_str(), target.data(), target.size());
  target.resize(n < 0 ? 0 : static_cast<size_t>(n));
  const std::string dir2 = SecondDiskDir();
  if (dir2.empty()) {
    return absl::InvalidArgumentError(fmt::format(
        "{} is a link to {}: the run kept the WAL on a second disk (--wal-disk), but "
        "POWERCUT_DIR_2 is not set: check with `powercut run --disks 2` (or set POWERCUT_DIR_2 to "
        "the folder on the WAL's disk)",
        link, target));
  }
  absl::StatusOr<std::string> wal =
      SecondDiskStore(site, dir2, kPostgresWalDiskDir, "postgres", /*fresh=*/false);
  if (absl::IsNotFound(wal.status())) {
    return absl::DataLossError(fmt::format(
        "the WAL is gone: {} (pgdata/pg_wal links to the second disk, and {} says initdb "
        "finished)",
        std::string(wal.status().message()), kPostgresReadyFile));
  }
  if (!wal.ok()) return wal.status();
  if (::unlink(link.c_str()) != 0 || ::symlink(wal->c_str(), link.c_str()) != 0) {
    return absl::InternalError(fmt::format("point {} at {}: {}", link, *wal, std::strerror(errno)));
  }
  return fmt::format("pg_wal pointed at {}/{} (reached as {}) instead of the run's {}", dir2,
                     kPostgresWalDiskDir, *wal, target);
}

// amcheck: every heap tuple has its index entry (heapallindexed), the B-tree is ordered, and
// verify_heapam finds no damaged tuple or page. Documented for torn pages without
// full_page_writes (https://www.postgresql.org/docs/15/amcheck.html).
absl::Status VerifyCommitsTable(PGconn* conn) {
  constexpr auto kLoss = absl::StatusCode::kDataLoss;
  RETURN_IF_ERROR(Exec(conn, "CREATE EXTENSION IF NOT EXISTS amcheck").status());
  RETURN_IF_ERROR(
      Exec(conn, "SELECT bt_index_check('commits_pkey', true)", {}, PGRES_TUPLES_OK, kLoss)
          .status());
  ASSIGN_OR_RETURN(Result heap, Exec(conn,
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
  return absl::OkStatus();
}

// The commits table's rows, each with whether its payload still matches its checksum.
absl::StatusOr<std::vector<DatabaseWorkload::Record>> ReadCommits(PGconn* conn) {
  constexpr auto kLoss = absl::StatusCode::kDataLoss;
  std::vector<DatabaseWorkload::Record> records;
  ASSIGN_OR_RETURN(Result rows, Exec(conn, "SELECT id, payload, checksum FROM commits ORDER BY id",
                                     {}, PGRES_TUPLES_OK, kLoss));
  for (int i = 0; i < PQntuples(rows.get()); ++i) {
    const std::string payload = PQgetvalue(rows.get(), i, 1);
    records.push_back(
        {.id = PQgetvalue(rows.get(), i, 0),
         .value = payload,
         .intact = PQgetvalue(rows.get(), i, 2) == std::to_string(Checksum(payload))});
  }
  return records;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DatabaseWorkload::Session>> OpenPostgres(
    const std::string& dir, const PostgresSettings& settings) {
  ASSIGN_OR_RETURN(std::unique_ptr<PostgresSession> session, PostgresSession::Open(dir, settings));
  return std::unique_ptr<DatabaseWorkload::Session>(std::move(session));
}

// The server started on the image with crash recovery, heap and index checked (amcheck), every
// row listed, the server stopped. No pgdata.ready: the set-up never finished, nothing was
// committed (no rows).
absl::StatusOr<std::vector<DatabaseWorkload::Record>> ReadBackPostgres(
    const std::string& dir, std::vector<std::string>& notes) {
  std::vector<DatabaseWorkload::Record> records;
  const std::string data = fmt::format("{}/{}", dir, kPostgresDataDir);
  if (::access(fmt::format("{}/{}", dir, kPostgresReadyFile).c_str(), F_OK) != 0) {
    notes.push_back(
        fmt::format("no {}/{}: the set-up (initdb) never finished, nothing was committed", dir,
                    kPostgresReadyFile));
    return records;
  }
  ASSIGN_OR_RETURN(const std::string bin, BinDir(""));
  struct stat st;
  if (::stat(data.c_str(), &st) != 0) {
    return absl::DataLossError(fmt::format("{} is gone although {} says initdb finished: {}", data,
                                           kPostgresReadyFile, std::strerror(errno)));
  }
  ASSIGN_OR_RETURN(ServerSite site,
                   CheckSite(dir, kPostgresDataDir, "postgres", "postgresql-15", "pgcheck"));
  if (st.st_uid != site.account.uid) {
    return absl::FailedPreconditionError(
        fmt::format("{} belongs to uid {}, but the server would run as uid {}: run the checker as "
                    "root (it switches to the postgres user) or as the owner",
                    data, st.st_uid, site.account.uid));
  }
  ASSIGN_OR_RETURN(const std::optional<std::string> wal_note, PointWalLinkAtSecondDisk(data, site));
  if (wal_note.has_value()) notes.push_back(*wal_note);
  // The crashed server's postmaster.pid names a process of the machine that lost power; on this
  // one that pid may belong to anything, and the postmaster would refuse to start. A machine
  // booting after the cut has no such process either, so the file is stale by definition.
  const std::string pid_file = data + "/postmaster.pid";
  if (::unlink(pid_file.c_str()) == 0) {
    notes.emplace_back("removed the crashed server's postmaster.pid (stale after a power cut)");
  }
  // From here on, a server that fails is the image's fault: DataLoss, quoting the server's log.
  // fsync=off for this start only: before crash recovery the server fsyncs every file of the
  // data folder (recovery_init_sync_method), 4 s of the 4.5 s a check took on the host, and the
  // crash image is scratch: nothing the checker's server writes needs to survive a crash. Redo
  // itself is the same with or without it.
  ASSIGN_OR_RETURN(Server server, StartServer(bin, site.account, site.data, site.folder.path(),
                                              absl::StatusCode::kDataLoss, {"fsync=off"}));
  ASSIGN_OR_RETURN(Conn conn, Connect(server, absl::StatusCode::kDataLoss));
  constexpr auto kLoss = absl::StatusCode::kDataLoss;
  ASSIGN_OR_RETURN(Result table, Exec(conn.get(), "SELECT to_regclass('public.commits')", {},
                                      PGRES_TUPLES_OK, kLoss));
  if (PQgetisnull(table.get(), 0, 0)) {
    notes.emplace_back("no commits table yet: nothing was committed");
    conn.reset();
    RETURN_IF_ERROR(server.Stop(SIGINT));
    return records;
  }
  RETURN_IF_ERROR(VerifyCommitsTable(conn.get()));
  ASSIGN_OR_RETURN(records, ReadCommits(conn.get()));
  conn.reset();
  RETURN_IF_ERROR(server.Stop(SIGINT));
  return records;
}

}  // namespace powercut::workloads
