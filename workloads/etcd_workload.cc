// The etcd workload: etcd 3.4 as Debian ships it (etcd-server), a single member, one put per
// commit, a real server in the guest (docs/your-database.md), in the DatabaseWorkload shape
// (database_workload.h).
//
// Run: etcd as the etcd user, data in POWERCUT_DIR/etcd, listening for clients and its (unused)
// peer port only on unix sockets in a private folder (etcd names unix sockets host:port relative
// to its working folder, so it runs there: unix://localhost:2379). It is started in the
// foreground with NOTIFY_SOCKET: etcd says READY=1 once it is the leader and serves clients
// (etcdmain's notifySystemd). Its own bootstrap (member/wal, member/snap/db) is then synced and
// the marker etcd.ready written, so a crash state cut during the bootstrap counts as "nothing
// committed" (like initdb for postgres) when etcd cannot start on it. The marker is the set-up's,
// not etcd's: a data disk that ignores flushes may drop it while the WAL on an honest disk keeps
// every put, so without it the check still asks etcd when a WAL is there (ReadBack). For
// id 1..count: PUT commit:<id> <payload> through the v3 HTTP gateway (POST /v3/kv/put, JSON with
// base64 key and value), acked once the 200 reply arrived; etcd answers only after the entry is in
// its WAL, fdatasynced. The server is killed at the end (SIGKILL: the cut is what is tested).
//
// Check: etcd started on the crash image (it replays its WAL into the backend), one range read
// of commit: to commit; (POST /v3/kv/range), have/corrupt per key, the server killed. A server
// that cannot start on the image is DataLoss quoting its log.
//
// --wal-disk: the WAL in POWERCUT_DIR_2/etcd/wal (--wal-dir; the second disk of `powercut run
// --disks 2`), the rest in POWERCUT_DIR/etcd. The check passes --wal-dir again, with the second
// disk as it is mounted then, whenever POWERCUT_DIR_2/etcd exists and member/wal does not.
//
// Why the HTTP gateway and not etcdctl: etcdctl is a Go program of 20 MB started per put, which
// costs about a second under TCG; the gateway is one small request over the unix socket.
// HTTP/1.0 and one connection per request: the reply ends at EOF (no chunked bodies to parse).
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "base/status_macros.h"
#include "workloads/ack_channel.h"
#include "workloads/database_workload.h"
#include "workloads/server_process.h"

namespace powercut::workloads {
namespace {

constexpr char kEtcdDataDir[] = "etcd";
constexpr char kEtcdReadyFile[] = "etcd.ready";
// With --wal-disk: the WAL in POWERCUT_DIR_2/etcd/wal (the store folder on disk 2 has the same
// name as on disk 1). Without it, etcd keeps the WAL in data-dir/member/wal.
constexpr char kEtcdWalDir[] = "wal";
constexpr char kEtcdDefaultWal[] = "member/wal";
constexpr char kEtcdKeyPrefix[] = "commit:";
constexpr char kKeyEnd[] = "commit;";  // ':' + 1: the range end of every key with the prefix
constexpr char kClientUrl[] = "unix://localhost:2379";
constexpr char kPeerUrl[] = "unix://localhost:2380";
constexpr char kClientSocket[] = "localhost:2379";  // in the server's working folder
constexpr char kEtcdInstallHint[] =
    "install Debian's etcd-server (apt-get install etcd-server etcd-client)";
// Start-up (WAL replay, leader election of one member) and one request: seconds under TCG; a
// minute says "hung".
constexpr auto kTimeout = std::chrono::seconds(60);

absl::StatusOr<std::string> EtcdBinary() {
  return FindProgram({"/usr/bin/etcd"}, kEtcdInstallHint);
}

// etcd in the foreground as `site.account`, in `site.folder` (its unix sockets), logging to
// etcd.log there; `wal_dir` ("" = etcd's default, data-dir/member/wal) is its --wal-dir.
absl::StatusOr<std::unique_ptr<NotifiedServer>> StartEtcd(const std::string& binary,
                                                          const ServerSite& site,
                                                          const std::string& wal_dir,
                                                          absl::StatusCode failure_code) {
  const std::string folder = site.folder.path();
  const std::string log = folder + "/etcd.log";
  // --initial-* only matter for the first start; on a data folder with a WAL etcd restarts the
  // member it holds. `env --chdir`: the sockets land in the private folder.
  std::vector<std::string> argv = {"/usr/bin/env",
                                   "--chdir=" + folder,
                                   binary,
                                   "--name",
                                   "powercut",
                                   "--data-dir",
                                   site.data,
                                   "--listen-client-urls",
                                   kClientUrl,
                                   "--advertise-client-urls",
                                   kClientUrl,
                                   "--listen-peer-urls",
                                   kPeerUrl,
                                   "--initial-advertise-peer-urls",
                                   kPeerUrl,
                                   "--initial-cluster",
                                   fmt::format("powercut={}", kPeerUrl),
                                   "--logger",
                                   "zap",
                                   "--log-outputs",
                                   "stderr"};
  if (!wal_dir.empty()) {
    argv.emplace_back("--wal-dir");
    argv.push_back(wal_dir);
  }
  return NotifiedServer::Start(site.account, argv, folder, log, log,
                               fmt::format("etcd (data {})", site.data), kTimeout, failure_code);
}

// One v3 gateway call: POST `path` with the JSON `body`; the reply's JSON, or an error quoting
// what etcd said.
absl::StatusOr<nlohmann::json> Call(const std::string& folder, const std::string& path,
                                    const nlohmann::json& body) {
  ASSIGN_OR_RETURN(UnixStream stream,
                   UnixStream::Connect(fmt::format("{}/{}", folder, kClientSocket), kTimeout));
  const std::string text = body.dump();
  RETURN_IF_ERROR(stream.SendAll(
      fmt::format("POST {} HTTP/1.0\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                  "Content-Length: {}\r\n\r\n{}",
                  path, text.size(), text)));
  std::string reply;
  for (;;) {
    ASSIGN_OR_RETURN(const size_t n, stream.Receive(reply));
    if (n == 0) break;
  }
  const size_t eol = reply.find("\r\n");
  const size_t body_start = reply.find("\r\n\r\n");
  if (eol == std::string::npos || body_start == std::string::npos) {
    return absl::UnavailableError(
        fmt::format("etcd {}: not an HTTP reply: '{}'", path, reply.substr(0, 200)));
  }
  const std::string status = reply.substr(0, eol);
  const std::string json = reply.substr(body_start + 4);
  if (status.find(" 200 ") == std::string::npos) {
    return absl::InternalError(fmt::format("etcd {}: {}: {}", path, status, json));
  }
  nlohmann::json parsed = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return absl::DataLossError(fmt::format("etcd {}: the reply is not JSON: '{}'", path, json));
  }
  return parsed;
}

// A run: the member on a fresh data folder.
class EtcdSession final : public DatabaseWorkload::Session {
 public:
  // `wal_disk`: the WAL in POWERCUT_DIR_2/etcd/wal (InvalidArgument before anything is created
  // when that is not set).
  static absl::StatusOr<std::unique_ptr<EtcdSession>> Open(const std::string& dir, bool wal_disk) {
    ASSIGN_OR_RETURN(const std::string binary, EtcdBinary());
    std::string dir2;
    if (wal_disk) {
      ASSIGN_OR_RETURN(dir2, RequireSecondDiskDir("--wal-disk"));
    }
    ASSIGN_OR_RETURN(ServerSite site,
                     RunSite(dir, kEtcdDataDir, "etcd", "etcd", "etcd-server", "etcd"));
    std::string wal_dir;
    if (wal_disk) {
      // A folder of the etcd user's own on disk 2: etcd creates its WAL as wal.tmp beside
      // wal and renames it, so it must write the parent.
      ASSIGN_OR_RETURN(const std::string store,
                       SecondDiskStore(site, dir2, kEtcdDataDir, "etcd", /*fresh=*/true));
      wal_dir = fmt::format("{}/{}", store, kEtcdWalDir);
    }
    ASSIGN_OR_RETURN(std::unique_ptr<NotifiedServer> server,
                     StartEtcd(binary, site, wal_dir, absl::StatusCode::kInternal));
    // The bootstrap is the set-up: durable on both disks, and marked finished, before the first
    // commit.
    if (wal_disk) RETURN_IF_ERROR(SyncFileSystem(fmt::format("{}/{}", dir2, kEtcdDataDir)));
    RETURN_IF_ERROR(SyncFileSystem(fmt::format("{}/{}", dir, kEtcdDataDir)));
    RETURN_IF_ERROR(WriteReadyMarker(dir, kEtcdReadyFile));
    return std::unique_ptr<EtcdSession>(new EtcdSession(std::move(site), std::move(server)));
  }

  absl::Status Commit(const std::string& id, const std::string& value) override {
    return Call(site_.folder.path(), "/v3/kv/put",
                {{"key", absl::Base64Escape(kEtcdKeyPrefix + id)},
                 {"value", absl::Base64Escape(value)}})
        .status();
  }
  // No Finish: the member is killed when the session dies.

 private:
  EtcdSession(ServerSite site, std::unique_ptr<NotifiedServer> server)
      : site_(std::move(site)), server_(std::move(server)) {}
  ServerSite site_;  // destroyed last: the server must be gone before its folder goes
  std::unique_ptr<NotifiedServer> server_;
};

constexpr char kEtcdDocs[] =
    "etcd 3.4 docs, 'etcd API guarantees', Durability "
    "(https://etcd.io/docs/v3.4/learning/api_guarantees/)";
constexpr char kEtcdConfiguration[] =
    "etcd 3.4 docs, 'Configuration flags', Member flags "
    "(https://etcd.io/docs/v3.4/op-guide/configuration/)";
constexpr char kEtcdHardware[] =
    "etcd 3.4 docs, 'Hardware recommendations', Disks "
    "(https://etcd.io/docs/v3.4/op-guide/hardware/)";

class EtcdWorkload final : public DatabaseWorkload {
 public:
  EtcdWorkload() : DatabaseWorkload("keys (puts)", "value") {}
  WorkloadHelp help() const override {
    return {"etcd", "etcd 3.4, a single member, one put per commit",
            "start etcd as etcd, put and ack --count keys (v3 HTTP gateway)",
            "start etcd on the image (replays its WAL), print have per key"};
  }
  std::vector<WorkloadConfig> CatalogEntries() const override {
    return {Entry("etcd-default", "single member, defaults", {}, Expectation::kSurvives,
                  fmt::format(
                      "{}: 'Any completed operations are durable'; an operation is complete when "
                      "the client has the server's response, after it was committed through "
                      "consensus and permanently stored. {}: every request is written down to disk "
                      "(the member fdatasyncs its WAL before it answers), so a cache that ignores "
                      "flushes (lying) loses acknowledged puts",
                      kEtcdDocs, kEtcdHardware)),
            WalDiskEntry()};
  }

 protected:
  // --wal-dir on its own disk (`--preset multidisk`): the member fdatasyncs its WAL (disk 2)
  // before it answers, and its backend (disk 1) is rebuilt from the WAL after a cut; so every
  // acked put is durable on honest disks, and a disk that ignores flushes may lose it.
  WorkloadConfig WalDiskEntry() const {
    WorkloadConfig c = Entry(
        "etcd-waldisk-default", "single member, --wal-dir on disk 2", {"--wal-disk"},
        Expectation::kSurvives,
        fmt::format("{}, --wal-dir: 'etcd will write the WAL files to the walDir rather than the "
                    "dataDir. This allows a dedicated disk to be used'; {}: 'Any completed "
                    "operations are durable'; {}: a cache that ignores flushes (lying) loses "
                    "acknowledged puts",
                    kEtcdConfiguration, kEtcdDocs, kEtcdHardware));
    c.disks = 2;
    return c;
  }
  void AddSettings(CLI::App& run) override {
    run.add_flag("--wal-disk", wal_disk_,
                 "--wal-dir on the second disk: $POWERCUT_DIR_2/etcd/wal (powercut run --disks 2)");
  }
  absl::StatusOr<std::unique_ptr<Session>> Open(const std::string& dir) override {
    return EtcdSession::Open(dir, wal_disk_);
  }
  // No etcd.ready: the bootstrap never finished, or a disk that ignores flushes dropped the
  // marker (it is the set-up's, not etcd's). With no WAL either, nothing was committed; with a
  // WAL, etcd says what it has, and a member that cannot start is "nothing committed" (no acked
  // put can be behind an unfinished bootstrap). With the marker, a member that cannot start on
  // the image is DataLoss quoting its log.
  absl::StatusOr<std::vector<Record>> ReadBack(const std::string& dir,
                                               std::vector<std::string>& notes) override {
    if (::access(fmt::format("{}/{}", dir, kEtcdReadyFile).c_str(), F_OK) == 0) {
      return ReadMember(dir, notes);
    }
    const std::string dir2 = SecondDiskDir();
    const bool any_wal =
        ::access(fmt::format("{}/{}/{}", dir, kEtcdDataDir, kEtcdDefaultWal).c_str(), F_OK) == 0 ||
        (!dir2.empty() &&
         ::access(fmt::format("{}/{}/{}", dir2, kEtcdDataDir, kEtcdWalDir).c_str(), F_OK) == 0);
    notes.push_back(fmt::format(
        "no {}/{}: etcd's bootstrap never finished{}", dir, kEtcdReadyFile,
        any_wal ? " or the marker was dropped; reading what etcd has" : ", nothing was committed"));
    if (!any_wal) return std::vector<Record>();
    absl::StatusOr<std::vector<Record>> records = ReadMember(dir, notes);
    if (records.ok()) return records;
    notes.push_back(fmt::format("etcd did not start on it ({}): nothing was committed",
                                std::string(records.status().message()).substr(0, 200)));
    return std::vector<Record>();
  }

 private:
  // etcd started on the image, every commit: key read back, the member killed.
  static absl::StatusOr<std::vector<Record>> ReadMember(const std::string& dir,
                                                        std::vector<std::string>& notes) {
    std::vector<Record> records;
    ASSIGN_OR_RETURN(const std::string binary, EtcdBinary());
    ASSIGN_OR_RETURN(ServerSite site,
                     CheckSite(dir, kEtcdDataDir, "etcd", "etcd-server", "etcdcheck"));
    ASSIGN_OR_RETURN(const std::string wal_dir, WalDiskDir(dir, site, notes));
    ASSIGN_OR_RETURN(std::unique_ptr<NotifiedServer> server,
                     StartEtcd(binary, site, wal_dir, absl::StatusCode::kDataLoss));
    absl::StatusOr<nlohmann::json> range = Call(
        site.folder.path(), "/v3/kv/range",
        {{"key", absl::Base64Escape(kEtcdKeyPrefix)}, {"range_end", absl::Base64Escape(kKeyEnd)}});
    if (!range.ok()) {
      return absl::DataLossError(fmt::format(
          "{}; its log:\n{}", std::string(range.status().message()), server->LogTail()));
    }
    for (const nlohmann::json& kv : range->value("kvs", nlohmann::json::array())) {
      std::string key, value;
      const bool decoded = absl::Base64Unescape(kv.value("key", ""), &key) &&
                           absl::Base64Unescape(kv.value("value", ""), &value) &&
                           key.rfind(kEtcdKeyPrefix, 0) == 0;
      if (!decoded) {
        return absl::DataLossError(
            fmt::format("etcd returned a key-value it cannot have: {}", kv.dump()));
      }
      records.push_back({.id = key.substr(std::strlen(kEtcdKeyPrefix)), .value = value});
    }
    return records;
  }

  // The --wal-dir the check starts etcd with: "" when the WAL is where etcd keeps it by default
  // (data-dir/member/wal, or neither folder is there: etcd decides, as before), else the run's
  // --wal-disk folder POWERCUT_DIR_2/etcd/wal as this check's server reaches it. A flag, not a
  // path stored on the disks, so the check mounting disk 2 elsewhere than the run needs nothing
  // more. DataLoss when the store folder is on disk 2 but its WAL is not.
  static absl::StatusOr<std::string> WalDiskDir(const std::string& dir, const ServerSite& site,
                                                std::vector<std::string>& notes) {
    const std::string dir2 = SecondDiskDir();
    const std::string default_wal = fmt::format("{}/{}/{}", dir, kEtcdDataDir, kEtcdDefaultWal);
    if (::access(default_wal.c_str(), F_OK) == 0 || dir2.empty()) return std::string();
    absl::StatusOr<std::string> store =
        SecondDiskStore(site, dir2, kEtcdDataDir, "etcd", /*fresh=*/false);
    if (absl::IsNotFound(store.status())) return std::string();
    if (!store.ok()) return store.status();
    const std::string wal = fmt::format("{}/{}/{}", dir2, kEtcdDataDir, kEtcdWalDir);
    if (::access(wal.c_str(), F_OK) != 0) {
      return absl::DataLossError(fmt::format(
          "the WAL is gone: no {} although {} says etcd's bootstrap finished with its WAL there",
          wal, kEtcdReadyFile));
    }
    notes.push_back(fmt::format("WAL directory {} (--wal-dir)", wal));
    return fmt::format("{}/{}", *store, kEtcdWalDir);
  }

  bool wal_disk_ = false;
};

}  // namespace

std::unique_ptr<Workload> MakeEtcdWorkload() { return std::make_unique<EtcdWorkload>(); }

}  // namespace powercut::workloads
