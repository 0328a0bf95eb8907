// The lmdb workload: LMDB (Debian's liblmdb), one put per write transaction, linked in (LMDB is
// a library, not a server: no account, no socket), in the DatabaseWorkload shape
// (database_workload.h).
//
// Run: mdb_env_open on POWERCUT_DIR/lmdb with the flags under test (none, MDB_NOSYNC or
// MDB_NOMETASYNC), then for id 1..count: mdb_txn_begin; mdb_put(id, payload); mdb_txn_commit,
// acked once the commit returned. Check: the environment opened as a restarted program would
// (LMDB has no recovery step: it picks the newer of its two meta pages), every entry read,
// have/corrupt per key. What lmdb.h promises for each flag is in the catalog entries.
#include <fmt/format.h>
#include <lmdb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "workloads/database_workload.h"
#include "workloads/server_process.h"

namespace powercut::workloads {
namespace {

constexpr char kLmdbDir[] = "lmdb";

// The map (the largest the database may grow): 64 MiB holds far more than any run commits; the
// file itself grows only as pages are used.
constexpr size_t kMapSize = size_t{64} << 20;

struct CloseEnv {
  void operator()(MDB_env* env) const { mdb_env_close(env); }
};
using Env = std::unique_ptr<MDB_env, CloseEnv>;

absl::Status LmdbError(int rc, std::string_view what, const std::string& path) {
  std::string message = fmt::format("lmdb {} on {}: {}", what, path, mdb_strerror(rc));
  if (rc == MDB_INVALID || rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND ||
      rc == MDB_VERSION_MISMATCH || rc == EIO) {
    return absl::DataLossError(message);
  }
  return absl::InternalError(message);
}

unsigned int FlagsFor(const std::string& sync) {
  if (sync == "nosync") return MDB_NOSYNC;
  if (sync == "nometasync") return MDB_NOMETASYNC;
  return 0;
}

absl::StatusOr<Env> OpenEnv(const std::string& path, unsigned int flags) {
  MDB_env* raw = nullptr;
  if (int rc = mdb_env_create(&raw); rc != 0) return LmdbError(rc, "mdb_env_create", path);
  Env env(raw);
  if (int rc = mdb_env_set_mapsize(env.get(), kMapSize); rc != 0) {
    return LmdbError(rc, "mdb_env_set_mapsize", path);
  }
  if (int rc = mdb_env_open(env.get(), path.c_str(), flags, 0644); rc != 0) {
    return LmdbError(rc, "mdb_env_open", path);
  }
  return env;
}

MDB_val Val(const std::string& s) {
  return MDB_val{.mv_size = s.size(), .mv_data = const_cast<char*>(s.data())};
}

// A run: the environment open with the flags under test.
class LmdbSession final : public DatabaseWorkload::Session {
 public:
  LmdbSession(Env env, std::string path) : env_(std::move(env)), path_(std::move(path)) {}

  absl::Status Commit(const std::string& id, const std::string& value) override {
    MDB_txn* txn = nullptr;
    if (int rc = mdb_txn_begin(env_.get(), nullptr, 0, &txn); rc != 0) {
      return LmdbError(rc, "mdb_txn_begin", path_);
    }
    int rc = dbi_open_ ? 0 : mdb_dbi_open(txn, nullptr, 0, &dbi_);
    MDB_val key = Val(id);
    MDB_val val = Val(value);
    if (rc == 0) rc = mdb_put(txn, dbi_, &key, &val, 0);
    if (rc != 0) {
      mdb_txn_abort(txn);
      return LmdbError(rc, "mdb_put", path_);
    }
    if (rc = mdb_txn_commit(txn); rc != 0) return LmdbError(rc, "mdb_txn_commit", path_);
    dbi_open_ = true;
    return absl::OkStatus();
  }

 private:
  Env env_;
  std::string path_;
  MDB_dbi dbi_ = 0;
  bool dbi_open_ = false;
};

constexpr char kLmdbDocs[] =
    "lmdb.h (liblmdb-dev 0.9.24), mdb_env_open() flags "
    "(http://www.lmdb.tech/doc/group__mdb.html#ga32a193c6bf4d7d5c5d579e71f22e9340)";

class LmdbWorkload final : public DatabaseWorkload {
 public:
  LmdbWorkload() : DatabaseWorkload("puts (transactions)", "value") {}
  WorkloadHelp help() const override {
    return {"lmdb", "LMDB, one put per write transaction", "commit and ack --count puts",
            "open the environment, print have per key"};
  }
  std::vector<WorkloadConfig> CatalogEntries() const override {
    return {
        Entry("lmdb-default", "flags 0", {"--sync", "default"}, Expectation::kSurvives,
              fmt::format("{}: without MDB_NOSYNC / MDB_NOMETASYNC, mdb_txn_commit flushes the "
                          "data and then the meta page before it returns (full ACID)",
                          kLmdbDocs)),
        Entry("lmdb-nosync", "MDB_NOSYNC", {"--sync", "nosync"}, Expectation::kLoses,
              fmt::format("{}, MDB_NOSYNC: 'Don't flush system buffers to disk when committing a "
                          "transaction. This optimization means a system crash can corrupt the "
                          "database or lose the last transactions if buffers are not yet flushed "
                          "to disk'",
                          kLmdbDocs)),
        Entry("lmdb-nometasync", "MDB_NOMETASYNC", {"--sync", "nometasync"}, Expectation::kLoses,
              fmt::format("{}, MDB_NOMETASYNC: 'omit the metadata flush ... This optimization "
                          "maintains database integrity, but a system crash may undo the last "
                          "committed transaction'",
                          kLmdbDocs))};
  }

 protected:
  void AddSettings(CLI::App& run) override {
    run.add_option("--sync", sync_,
                   "mdb_env_open flags: default (none), nosync (MDB_NOSYNC), nometasync "
                   "(MDB_NOMETASYNC)")
        ->capture_default_str()
        ->check(CLI::IsMember({"default", "nosync", "nometasync"}));
  }
  absl::StatusOr<std::unique_ptr<Session>> Open(const std::string& dir) override {
    // The folder is our set-up: durable before LMDB creates its files in it.
    RETURN_IF_ERROR(MakeFreshStoreFolder(dir, kLmdbDir, "lmdb", ServiceAccount{}));
    const std::string path = fmt::format("{}/{}", dir, kLmdbDir);
    ASSIGN_OR_RETURN(Env env, OpenEnv(path, FlagsFor(sync_)));
    return std::make_unique<LmdbSession>(std::move(env), path);
  }
  // No POWERCUT_DIR/lmdb/data.mdb: nothing was committed. An environment LMDB refuses to open
  // (bad meta pages: MDB_INVALID, MDB_CORRUPTED) is DataLoss with LMDB's words. Opened as the
  // restarted program would (LMDB has no recovery step: it picks the newer of its two meta
  // pages; it rewrites lock.mdb), read-only when the image is.
  absl::StatusOr<std::vector<Record>> ReadBack(const std::string& dir,
                                               std::vector<std::string>& notes) override {
    std::vector<Record> records;
    const std::string path = fmt::format("{}/{}", dir, kLmdbDir);
    struct stat st;
    if (::stat((path + "/data.mdb").c_str(), &st) != 0 || st.st_size == 0) {
      notes.push_back(fmt::format("no {}/data.mdb (or empty): nothing was committed", path));
      return records;
    }
    const unsigned int flags = OnReadOnlyMount(path) ? MDB_RDONLY | MDB_NOLOCK : 0;
    ASSIGN_OR_RETURN(Env env, OpenEnv(path, flags));
    MDB_txn* txn = nullptr;
    if (int rc = mdb_txn_begin(env.get(), nullptr, MDB_RDONLY, &txn); rc != 0) {
      return LmdbError(rc, "mdb_txn_begin (read)", path);
    }
    MDB_dbi dbi = 0;
    MDB_cursor* cursor = nullptr;
    int rc = mdb_dbi_open(txn, nullptr, 0, &dbi);
    if (rc == 0) rc = mdb_cursor_open(txn, dbi, &cursor);
    if (rc != 0) {
      mdb_txn_abort(txn);
      return LmdbError(rc, "open the main database", path);
    }
    MDB_val key, value;
    for (rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)) {
      records.push_back(
          {.id = std::string(static_cast<const char*>(key.mv_data), key.mv_size),
           .value = std::string(static_cast<const char*>(value.mv_data), value.mv_size)});
    }
    mdb_cursor_close(cursor);
    mdb_txn_abort(txn);
    if (rc != MDB_NOTFOUND) return LmdbError(rc, "read every entry", path);
    return records;
  }

 private:
  std::string sync_ = "default";
};

}  // namespace

std::unique_ptr<Workload> MakeLmdbWorkload() { return std::make_unique<LmdbWorkload>(); }

}  // namespace powercut::workloads
