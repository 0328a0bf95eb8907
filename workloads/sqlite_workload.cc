#include "workloads/sqlite_workload.h"

#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "wal/crc32c.h"
#include "workloads/payload.h"
#include "workloads/workload.h"

namespace powercut::workloads {
namespace {

struct CloseDb {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using Db = std::unique_ptr<sqlite3, CloseDb>;

struct FinalizeStmt {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};
using Stmt = std::unique_ptr<sqlite3_stmt, FinalizeStmt>;

std::string DbPath(const std::string& dir) { return fmt::format("{}/{}", dir, kSqliteFileName); }

absl::Status SqliteError(sqlite3* db, std::string_view what, const std::string& path) {
  const int code = sqlite3_extended_errcode(db);
  std::string message =
      fmt::format("sqlite {} on {}: {} ({})", what, path, sqlite3_errmsg(db), sqlite3_errstr(code));
  const int primary = code & 0xff;
  if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB || primary == SQLITE_IOERR ||
      primary == SQLITE_FULL) {
    return absl::DataLossError(message);
  }
  return absl::InternalError(message);
}

absl::StatusOr<Db> OpenDb(const std::string& path, int flags) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) {
    if (db == nullptr) return absl::ResourceExhaustedError("sqlite3_open_v2: out of memory");
    return SqliteError(db.get(), "open", path);
  }
  sqlite3_extended_result_codes(db.get(), 1);
  return db;
}

absl::StatusOr<Stmt> Prepare(sqlite3* db, std::string_view sql, const std::string& path) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &raw, nullptr) !=
      SQLITE_OK) {
    return SqliteError(db, fmt::format("prepare '{}'", sql), path);
  }
  return Stmt(raw);
}

// Runs `sql` and returns the first column of every row as text.
absl::StatusOr<std::vector<std::string>> Query(sqlite3* db, std::string_view sql,
                                               const std::string& path) {
  ASSIGN_OR_RETURN(Stmt stmt, Prepare(db, sql, path));
  std::vector<std::string> rows;
  for (;;) {
    const int rc = sqlite3_step(stmt.get());
    if (rc == SQLITE_DONE) return rows;
    if (rc != SQLITE_ROW) return SqliteError(db, fmt::format("'{}'", sql), path);
    const unsigned char* text = sqlite3_column_text(stmt.get(), 0);
    rows.emplace_back(text == nullptr ? "" : reinterpret_cast<const char*>(text));
  }
}

absl::Status Step(sqlite3* db, sqlite3_stmt* stmt, std::string_view what, const std::string& path) {
  const int rc = sqlite3_step(stmt);
  sqlite3_reset(stmt);
  if (rc != SQLITE_DONE) return SqliteError(db, what, path);
  return absl::OkStatus();
}

// Percent-escapes the characters that end or escape a path in an SQLite URI filename.
std::string UriEscape(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    } else {
      out.push_back(c);
    }
  }
  return out;
}

int64_t Checksum(std::string_view payload) { return crc32c::Value(payload); }

}  // namespace

absl::Status RunSqlite(const std::string& dir, const SqliteOptions& options, AckChannel& acks) {
  if (options.count == 0) return absl::InvalidArgumentError("--count must be at least 1");
  if (options.journal != "wal" && options.journal != "delete") {
    return absl::InvalidArgumentError(
        fmt::format("--journal {}: expected wal or delete", options.journal));
  }
  if (options.synchronous != "extra" && options.synchronous != "full" &&
      options.synchronous != "normal" && options.synchronous != "off") {
    return absl::InvalidArgumentError(
        fmt::format("--synchronous {}: expected extra, full, normal or off", options.synchronous));
  }
  const std::string path = DbPath(dir);
  if (::access(path.c_str(), F_OK) == 0) {
    return absl::InvalidArgumentError(fmt::format(
        "{} already exists: the sqlite workload needs a fresh POWERCUT_DIR (remove it)", path));
  }
  ASSIGN_OR_RETURN(Db db, OpenDb(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
  ASSIGN_OR_RETURN(std::vector<std::string> mode,
                   Query(db.get(), fmt::format("PRAGMA journal_mode={}", options.journal), path));
  if (mode.size() != 1 || mode[0] != options.journal) {
    return absl::InternalError(fmt::format("sqlite on {}: journal_mode={} was not accepted ({})",
                                           path, options.journal,
                                           mode.empty() ? std::string("no answer") : mode[0]));
  }
  RETURN_IF_ERROR(
      Query(db.get(), fmt::format("PRAGMA synchronous={}", options.synchronous), path).status());
  RETURN_IF_ERROR(Query(db.get(),
                        "CREATE TABLE commits (id INTEGER PRIMARY KEY, payload BLOB NOT NULL, "
                        "checksum INTEGER NOT NULL)",
                        path)
                      .status());

  ASSIGN_OR_RETURN(Stmt begin, Prepare(db.get(), "BEGIN IMMEDIATE", path));
  ASSIGN_OR_RETURN(
      Stmt insert,
      Prepare(db.get(), "INSERT INTO commits (id, payload, checksum) VALUES (?, ?, ?)", path));
  ASSIGN_OR_RETURN(Stmt commit, Prepare(db.get(), "COMMIT", path));
  for (uint64_t id = 1; id <= options.count; ++id) {
    const std::string id_text = std::to_string(id);
    const std::string payload =
        MakePayload(id_text, FillerSize(options.seed, id, options.value_size));
    absl::Status status = Step(db.get(), begin.get(), "BEGIN", path);
    if (status.ok()) {
      sqlite3_bind_int64(insert.get(), 1, static_cast<sqlite3_int64>(id));
      sqlite3_bind_blob(insert.get(), 2, payload.data(), static_cast<int>(payload.size()),
                        SQLITE_TRANSIENT);
      sqlite3_bind_int64(insert.get(), 3, Checksum(payload));
      status = Step(db.get(), insert.get(), fmt::format("INSERT id {}", id), path);
    }
    if (status.ok()) status = Step(db.get(), commit.get(), fmt::format("COMMIT id {}", id), path);
    if (!status.ok()) {
      return absl::Status(status.code(), fmt::format("{}; stopped, no further acks",
                                                     std::string(status.message())));
    }
    RETURN_IF_ERROR(acks.Ack(id_text));
  }
  begin.reset();
  insert.reset();
  commit.reset();
  if (sqlite3_close(db.get()) != SQLITE_OK) return SqliteError(db.get(), "close", path);
  (void)db.release();
  return absl::OkStatus();
}

absl::StatusOr<CheckResult> CheckSqlite(const std::string& dir) {
  CheckResult result;
  const std::string path = DbPath(dir);
  if (::access(path.c_str(), F_OK) != 0) {
    result.notes.push_back(fmt::format("{} does not exist: nothing was committed", path));
    return result;
  }
  // Read-write, so that a hot journal rolls back and the WAL is replayed. On a read-only mount
  // SQLite cannot even open a WAL-mode database normally (it needs the -shm file), so a database
  // that needs no recovery is opened as immutable, and one that does is a usage error.
  std::string open_name = path;
  int open_flags = SQLITE_OPEN_READWRITE;
  if (OnReadOnlyMount(path)) {
    for (const char* suffix : {"-wal", "-journal"}) {
      struct stat st;
      if (::stat((path + suffix).c_str(), &st) == 0 && st.st_size > 0) {
        return absl::InvalidArgumentError(fmt::format(
            "{}{} exists, so the database needs recovery, but {} is on a read-only mount: mount "
            "the crash image read-write",
            path, suffix, dir));
      }
    }
    result.notes.emplace_back(
        "read-only mount, nothing to recover: opening the database immutable");
    open_name = "file:" + UriEscape(path) + "?immutable=1";
    open_flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI;
  }
  ASSIGN_OR_RETURN(Db db, OpenDb(open_name, open_flags));
  absl::StatusOr<std::vector<std::string>> integrity =
      Query(db.get(), "PRAGMA integrity_check", path);
  if (!integrity.ok()) {
    return absl::DataLossError(fmt::format("PRAGMA integrity_check could not run: {}",
                                           std::string(integrity.status().message())));
  }
  if (integrity->size() != 1 || (*integrity)[0] != "ok") {
    std::string problems;
    for (const std::string& row : *integrity) problems += "\n  " + row;
    return absl::DataLossError(
        fmt::format("sqlite {}: PRAGMA integrity_check failed:{}", path, problems));
  }
  ASSIGN_OR_RETURN(
      std::vector<std::string> tables,
      Query(db.get(), "SELECT name FROM sqlite_master WHERE type='table' AND name='commits'",
            path));
  if (tables.empty()) {
    result.notes.push_back(fmt::format("{}: no commits table yet: nothing was committed", path));
    return result;
  }
  ASSIGN_OR_RETURN(
      Stmt select,
      Prepare(db.get(), "SELECT id, payload, checksum FROM commits ORDER BY id", path));
  for (;;) {
    const int rc = sqlite3_step(select.get());
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return SqliteError(db.get(), "SELECT from commits", path);
    const std::string id = std::to_string(sqlite3_column_int64(select.get(), 0));
    const auto* data = static_cast<const char*>(sqlite3_column_blob(select.get(), 1));
    const std::string payload(data == nullptr ? "" : data,
                              static_cast<size_t>(sqlite3_column_bytes(select.get(), 1)));
    const int64_t checksum = sqlite3_column_int64(select.get(), 2);
    if (VerifyPayload(id, payload) && checksum == Checksum(payload)) {
      result.have.push_back(id);
    } else {
      result.corrupt.push_back(id);
      result.notes.push_back(fmt::format("row {}: payload or checksum does not verify", id));
    }
  }
  return result;
}

namespace {

class SqliteWorkload final : public StoreWorkload<SqliteOptions, RunSqlite, CheckSqlite> {
 public:
  WorkloadHelp help() const override {
    return {"sqlite", "SQLite, one row per transaction", "insert, commit and ack --count rows",
            "integrity_check, then print have per row"};
  }
  void AddOptions(CLI::App& run, CLI::App& /*check*/) override {
    run.add_option("--journal", options_.journal, "journal_mode: wal or delete")
        ->capture_default_str()
        ->check(CLI::IsMember({"wal", "delete"}));
    run.add_option("--synchronous", options_.synchronous, "synchronous: extra, full, normal, off")
        ->capture_default_str()
        ->check(CLI::IsMember({"extra", "full", "normal", "off"}));
    AddCountOption(run, options_.count, "rows (transactions)");
    AddPayloadOptions(run, options_.value_size, options_.seed, "payload");
  }
  // Every journal mode x synchronous level, with what SQLite documents for each.
  std::vector<WorkloadConfig> CatalogEntries() const override {
    std::vector<WorkloadConfig> entries;
    for (const char* journal : {"wal", "delete"}) {
      for (const char* sync : {"extra", "full", "normal", "off"}) {
        WorkloadConfig c{.name = fmt::format("sqlite-{}-{}", journal, sync),
                         .workload = "sqlite",
                         .setting = fmt::format("journal_mode={} synchronous={}", journal, sync),
                         .run_args = {"--journal", journal, "--synchronous", sync}};
        const std::string_view s = sync;
        if (std::string_view(journal) == "wal") {
          if (s == "extra" || s == "full") c.cache_off = c.cache_on = Expectation::kSurvives;
        } else if (s == "extra") {
          c.cache_off = c.cache_on = Expectation::kSurvives;
        } else if (s == "full" || s == "normal") {
          // The journal's unlink (the commit point) is not fsynced: only the last ack is at risk.
          c.cache_off = c.cache_on = Expectation::kMayLose;
        }
        if (std::string_view(journal) == "wal" && s == "normal") {
          c.documented =
              "sqlite.org, PRAGMA synchronous (https://www.sqlite.org/pragma.html#pragma_"
              "synchronous): 'WAL mode with synchronous=NORMAL ... A transaction committed in WAL "
              "mode with synchronous=NORMAL might roll back following a power loss or system "
              "crash'; durable across an application crash";
        } else if (std::string_view(journal) == "wal" && (s == "full" || s == "extra")) {
          c.documented =
              "sqlite.org, PRAGMA synchronous (https://www.sqlite.org/pragma.html#pragma_"
              "synchronous): FULL in WAL mode syncs the WAL at every commit: durable across a "
              "power loss";
        }
        entries.push_back(c);
      }
    }
    return entries;
  }
};

}  // namespace

std::unique_ptr<Workload> MakeSqliteWorkload() { return std::make_unique<SqliteWorkload>(); }

}  // namespace powercut::workloads
