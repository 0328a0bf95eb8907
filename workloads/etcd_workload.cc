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
// committed" (like initdb for postgres). For id 1..count: PUT commit:<id> <payload> through the
// v3 HTTP gateway (POST /v3/kv/put, JSON with base64 key and value), acked once the 200 reply
// arrived; etcd answers only after the entry is in its WAL, fdatasynced. The server is killed at
// the end (SIGKILL: the cut is what is tested).
//
// Check: etcd started on the crash image (it replays its WAL into the backend), one range read
// of commit: to commit; (POST /v3/kv/range), have/corrupt per key, the server killed. A server
// that cannot start on the image is DataLoss quoting its log.
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
#include "workloads/database_workload.h"
#include "workloads/server_process.h"

namespace powercut::workloads {
namespace {

constexpr char kEtcdDataDir[] = "etcd";
constexpr char kEtcdReadyFile[] = "etcd.ready";
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
// etcd.log there.
absl::StatusOr<std::unique_ptr<NotifiedServer>> StartEtcd(const std::string& binary,
                                                          const ServerSite& site,
                                                          absl::StatusCode failure_code) {
  const std::string folder = site.folder.path();
  const std::string log = folder + "/etcd.log";
  // --initial-* only matter for the first start; on a data folder with a WAL etcd restarts the
  // member it holds. `env --chdir`: the sockets land in the private folder.
  return NotifiedServer::Start(site.account,
                               {"/usr/bin/env",
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
                                "stderr"},
                               folder, log, log, fmt::format("etcd (data {})", site.data), kTimeout,
                               failure_code);
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
  static absl::StatusOr<std::unique_ptr<EtcdSession>> Open(const std::string& dir) {
    ASSIGN_OR_RETURN(const std::string binary, EtcdBinary());
    ASSIGN_OR_RETURN(ServerSite site,
                     RunSite(dir, kEtcdDataDir, "etcd", "etcd", "etcd-server", "etcd"));
    ASSIGN_OR_RETURN(std::unique_ptr<NotifiedServer> server,
                     StartEtcd(binary, site, absl::StatusCode::kInternal));
    // The bootstrap is the set-up: durable, and marked finished, before the first commit.
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
    return {Entry(
        "etcd-default", "single member, defaults", {}, Expectation::kSurvives,
        fmt::format("{}: 'Any completed operations are durable'; an operation is complete when "
                    "the client has the server's response, after it was committed through "
                    "consensus and permanently stored. {}: every request is written down to disk "
                    "(the member fdatasyncs its WAL before it answers), so a cache that ignores "
                    "flushes (lying) loses acknowledged puts",
                    kEtcdDocs, kEtcdHardware))};
  }

 protected:
  void AddSettings(CLI::App& /*run*/) override {}
  absl::StatusOr<std::unique_ptr<Session>> Open(const std::string& dir) override {
    return EtcdSession::Open(dir);
  }
  // No etcd.ready: the bootstrap never finished, nothing was committed. A member that cannot
  // start on the image is DataLoss quoting its log.
  absl::StatusOr<std::vector<Record>> ReadBack(const std::string& dir,
                                               std::vector<std::string>& notes) override {
    std::vector<Record> records;
    if (::access(fmt::format("{}/{}", dir, kEtcdReadyFile).c_str(), F_OK) != 0) {
      notes.push_back(fmt::format(
          "no {}/{}: etcd's bootstrap never finished, nothing was committed", dir, kEtcdReadyFile));
      return records;
    }
    ASSIGN_OR_RETURN(const std::string binary, EtcdBinary());
    ASSIGN_OR_RETURN(ServerSite site,
                     CheckSite(dir, kEtcdDataDir, "etcd", "etcd-server", "etcdcheck"));
    ASSIGN_OR_RETURN(std::unique_ptr<NotifiedServer> server,
                     StartEtcd(binary, site, absl::StatusCode::kDataLoss));
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
};

}  // namespace

std::unique_ptr<Workload> MakeEtcdWorkload() { return std::make_unique<EtcdWorkload>(); }

}  // namespace powercut::workloads
