#include "workloads/lmdb_workload.h"

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
#include "workloads/payload.h"
#include "workloads/server_process.h"
#include "workloads/workload.h"

namespace powercut::workloads {
namespace {

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

}  // namespace

absl::Status RunLmdb(const std::string& dir, const LmdbOptions& o, AckChannel& acks) {
  if (o.count == 0) return absl::InvalidArgumentError("--count must be at least 1");
  if (o.sync != "default" && o.sync != "nosync" && o.sync != "nometasync") {
    return absl::InvalidArgumentError(
        fmt::format("--sync {}: expected default, nosync or nometasync", o.sync));
  }
  const std::string path = fmt::format("{}/{}", dir, kLmdbDir);
  if (::mkdir(path.c_str(), 0755) != 0) {
    if (errno == EEXIST) {
      return absl::InvalidArgumentError(fmt::format(
          "{} already exists: the lmdb workload needs a fresh POWERCUT_DIR (remove it)", path));
    }
    return absl::InternalError(fmt::format("mkdir {}: {}", path, std::strerror(errno)));
  }
  // The folder is our set-up: durable before LMDB creates its files in it.
  RETURN_IF_ERROR(SyncFileSystem(path));
  ASSIGN_OR_RETURN(Env env, OpenEnv(path, FlagsFor(o.sync)));
  MDB_dbi dbi = 0;
  for (uint64_t id = 1; id <= o.count; ++id) {
    const std::string id_text = std::to_string(id);
    const std::string payload = MakePayload(id_text, FillerSize(o.seed, id, o.value_size));
    MDB_txn* txn = nullptr;
    if (int rc = mdb_txn_begin(env.get(), nullptr, 0, &txn); rc != 0) {
      return LmdbError(rc, fmt::format("mdb_txn_begin id {}", id), path);
    }
    int rc = id == 1 ? mdb_dbi_open(txn, nullptr, 0, &dbi) : 0;
    MDB_val key = Val(id_text);
    MDB_val value = Val(payload);
    if (rc == 0) rc = mdb_put(txn, dbi, &key, &value, 0);
    if (rc != 0) {
      mdb_txn_abort(txn);
      return LmdbError(rc, fmt::format("mdb_put id {} (stopped, no further acks)", id), path);
    }
    if (rc = mdb_txn_commit(txn); rc != 0) {
      return LmdbError(rc, fmt::format("mdb_txn_commit id {} (stopped, no further acks)", id),
                       path);
    }
    RETURN_IF_ERROR(acks.Ack(id_text));
  }
  return absl::OkStatus();
}

absl::StatusOr<CheckResult> CheckLmdb(const std::string& dir) {
  CheckResult result;
  const std::string path = fmt::format("{}/{}", dir, kLmdbDir);
  struct stat st;
  if (::stat((path + "/data.mdb").c_str(), &st) != 0 || st.st_size == 0) {
    result.notes.push_back(fmt::format("no {}/data.mdb (or empty): nothing was committed", path));
    return result;
  }
  // Opened as the restarted program would (it rewrites lock.mdb); read-only when the image is.
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
    const std::string id(static_cast<const char*>(key.mv_data), key.mv_size);
    const std::string payload(static_cast<const char*>(value.mv_data), value.mv_size);
    if (VerifyPayload(id, payload)) {
      result.have.push_back(id);
    } else {
      result.corrupt.push_back(id);
      result.notes.push_back(fmt::format("key {}: the value does not verify", id));
    }
  }
  mdb_cursor_close(cursor);
  mdb_txn_abort(txn);
  if (rc != MDB_NOTFOUND) return LmdbError(rc, "read every entry", path);
  return result;
}

namespace {

constexpr char kLmdbDocs[] =
    "lmdb.h (liblmdb-dev 0.9.24), mdb_env_open() flags "
    "(http://www.lmdb.tech/doc/group__mdb.html#ga32a193c6bf4d7d5c5d579e71f22e9340)";

class LmdbWorkload final : public StoreWorkload<LmdbOptions, RunLmdb, CheckLmdb> {
 public:
  WorkloadHelp help() const override {
    return {"lmdb", "LMDB, one put per write transaction", "commit and ack --count puts",
            "open the environment, print have per key"};
  }
  void AddOptions(CLI::App& run, CLI::App& /*check*/) override {
    run.add_option("--sync", options_.sync,
                   "mdb_env_open flags: default (none), nosync (MDB_NOSYNC), nometasync "
                   "(MDB_NOMETASYNC)")
        ->capture_default_str()
        ->check(CLI::IsMember({"default", "nosync", "nometasync"}));
    AddCountOption(run, options_.count, "puts (transactions)");
    AddPayloadOptions(run, options_.value_size, options_.seed, "value");
  }
  std::vector<WorkloadConfig> CatalogEntries() const override {
    std::vector<WorkloadConfig> entries;
    WorkloadConfig def{.name = "lmdb-default",
                       .workload = "lmdb",
                       .setting = "flags 0",
                       .run_args = {"--sync", "default"}};
    def.cache_off = def.cache_on = Expectation::kSurvives;
    def.documented = fmt::format(
        "{}: without MDB_NOSYNC / MDB_NOMETASYNC, mdb_txn_commit flushes the data and then the "
        "meta page before it returns (full ACID)",
        kLmdbDocs);
    entries.push_back(def);
    WorkloadConfig nosync{.name = "lmdb-nosync",
                          .workload = "lmdb",
                          .setting = "MDB_NOSYNC",
                          .run_args = {"--sync", "nosync"}};
    nosync.documented = fmt::format(
        "{}, MDB_NOSYNC: 'Don't flush system buffers to disk when committing a transaction. "
        "This optimization means a system crash can corrupt the database or lose the last "
        "transactions if buffers are not yet flushed to disk'",
        kLmdbDocs);
    entries.push_back(nosync);
    WorkloadConfig nometa{.name = "lmdb-nometasync",
                          .workload = "lmdb",
                          .setting = "MDB_NOMETASYNC",
                          .run_args = {"--sync", "nometasync"}};
    nometa.documented = fmt::format(
        "{}, MDB_NOMETASYNC: 'omit the metadata flush ... This optimization maintains database "
        "integrity, but a system crash may undo the last committed transaction'",
        kLmdbDocs);
    entries.push_back(nometa);
    return entries;
  }
};

}  // namespace

std::unique_ptr<Workload> MakeLmdbWorkload() { return std::make_unique<LmdbWorkload>(); }

}  // namespace powercut::workloads
