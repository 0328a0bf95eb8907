// The redis workload: Redis 7 (Debian's redis-server) with the append-only file, one SET per
// commit, a real server in the guest (docs/your-database.md), in the DatabaseWorkload shape
// (database_workload.h).
//
// Run: redis-server as the redis user, data in POWERCUT_DIR/redis (appendonly yes, appenddirname
// appendonlydir, no RDB snapshots), listening only on a unix socket in a private folder under
// /tmp (port 0). It is started in the foreground with --supervised systemd and NOTIFY_SOCKET
// pointing at our own datagram socket, so "READY=1" says it accepts commands (no polling). For
// id 1..count: SET commit:<id> <payload>, acked once the +OK reply arrived. The server is killed
// at the end (SIGKILL: the cut is what is tested; a clean shutdown would rewrite files).
//
// Check: the same server on the crash image (it loads the AOF; a truncated tail is loaded up to
// the last whole command, aof-load-truncated yes, Redis' default), KEYS commit:*, GET each,
// have/corrupt per key. A server that cannot load the image is DataLoss quoting its log.
//
// The client is a few lines of RESP over the socket: hiredis' headers (libhiredis-dev) would be
// one more package for three commands.
#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/process.h"
#include "base/status_macros.h"
#include "workloads/database_workload.h"
#include "workloads/server_process.h"

namespace powercut::workloads {
namespace {

constexpr char kRedisDataDir[] = "redis";

constexpr char kRedisInstallHint[] = "install Debian's redis-server (apt-get install redis-server)";
constexpr char kRedisKeyPrefix[] = "commit:";
// How long the server may take to say READY=1 (loading an AOF of a few hundred commands takes
// milliseconds natively, well under a second under TCG) and to answer one command.
constexpr auto kStartTimeout = std::chrono::seconds(60);
constexpr auto kReplyTimeout = std::chrono::seconds(60);

// One reply of the RESP protocol, as far as SET, GET and KEYS need: simple string, error,
// integer, bulk string (null: nullopt), array of bulk strings.
struct Reply {
  char type = 0;
  std::optional<std::string> text;
  std::vector<std::optional<std::string>> items;
};

class RedisClient {
 public:
  static absl::StatusOr<RedisClient> Connect(const std::string& socket_path) {
    ASSIGN_OR_RETURN(UnixStream stream, UnixStream::Connect(socket_path, kReplyTimeout));
    return RedisClient(std::move(stream));
  }

  // Sends one command and reads its reply; a -ERR reply is an error with Redis' words.
  absl::StatusOr<Reply> Call(const std::vector<std::string>& args) {
    std::string out = fmt::format("*{}\r\n", args.size());
    for (const std::string& a : args) out += fmt::format("${}\r\n{}\r\n", a.size(), a);
    RETURN_IF_ERROR(stream_.SendAll(out));
    ASSIGN_OR_RETURN(Reply reply, ReadReply());
    if (reply.type == '-') {
      return absl::InternalError(fmt::format("redis {}: {}", args[0], reply.text.value_or("")));
    }
    return reply;
  }

 private:
  explicit RedisClient(UnixStream stream) : stream_(std::move(stream)) {}

  absl::Status Fill() {
    ASSIGN_OR_RETURN(const size_t n, stream_.Receive(in_));
    if (n == 0) return absl::UnavailableError("redis closed the connection");
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> Line() {
    for (;;) {
      const size_t end = in_.find("\r\n", pos_);
      if (end != std::string::npos) {
        std::string line = in_.substr(pos_, end - pos_);
        pos_ = end + 2;
        return line;
      }
      RETURN_IF_ERROR(Fill());
    }
  }
  absl::StatusOr<std::string> Bytes(size_t n) {
    while (in_.size() - pos_ < n + 2) RETURN_IF_ERROR(Fill());
    std::string data = in_.substr(pos_, n);
    pos_ += n + 2;
    return data;
  }
  absl::StatusOr<std::optional<std::string>> Bulk(const std::string& header) {
    const long long n = std::atoll(header.c_str() + 1);
    if (n < 0) return std::optional<std::string>();
    ASSIGN_OR_RETURN(std::string data, Bytes(static_cast<size_t>(n)));
    return std::optional<std::string>(std::move(data));
  }
  absl::StatusOr<Reply> ReadReply() {
    ASSIGN_OR_RETURN(std::string header, Line());
    if (header.empty()) return absl::DataLossError("redis sent an empty reply line");
    Reply reply{.type = header[0]};
    switch (header[0]) {
      case '+':
      case '-':
      case ':':
        reply.text = header.substr(1);
        break;
      case '$': {
        ASSIGN_OR_RETURN(reply.text, Bulk(header));
        break;
      }
      case '*': {
        const long long n = std::atoll(header.c_str() + 1);
        for (long long i = 0; i < n; ++i) {
          ASSIGN_OR_RETURN(std::string item, Line());
          if (item.empty() || item[0] != '$') {
            return absl::DataLossError(
                fmt::format("redis array item '{}' is not a bulk string", item));
          }
          ASSIGN_OR_RETURN(std::optional<std::string> value, Bulk(item));
          reply.items.push_back(std::move(value));
        }
        break;
      }
      default:
        return absl::DataLossError(fmt::format("redis reply '{}' is not RESP", header));
    }
    if (pos_ > 65536) {
      in_.erase(0, pos_);
      pos_ = 0;
    }
    return reply;
  }

  UnixStream stream_;
  std::string in_;
  size_t pos_ = 0;
};

// redis-server in the foreground, as `account`, data in `data`, socket and log in `folder`
// (--supervised systemd: READY=1 once it loaded the AOF and accepts clients).
absl::StatusOr<std::unique_ptr<NotifiedServer>> StartRedis(
    const std::string& binary, const ServiceAccount& account, const std::string& data,
    const std::string& folder, const std::string& appendfsync, absl::StatusCode failure_code) {
  return NotifiedServer::Start(account,
                               {binary,
                                "--port",
                                "0",
                                "--unixsocket",
                                folder + "/redis.sock",
                                "--unixsocketperm",
                                "700",
                                "--dir",
                                data,
                                "--appendonly",
                                "yes",
                                "--appendfsync",
                                appendfsync,
                                "--appenddirname",
                                "appendonlydir",
                                "--save",
                                "",
                                "--daemonize",
                                "no",
                                "--supervised",
                                "systemd",
                                "--logfile",
                                folder + "/redis.log"},
                               folder, folder + "/stdout.log", folder + "/redis.log",
                               fmt::format("redis-server (data {})", data), kStartTimeout,
                               failure_code);
}

absl::StatusOr<std::string> RedisBinary() {
  return FindProgram({"/usr/bin/redis-server"}, kRedisInstallHint);
}

// A run: the server on a fresh data folder and one client connection.
class RedisSession final : public DatabaseWorkload::Session {
 public:
  static absl::StatusOr<std::unique_ptr<RedisSession>> Open(const std::string& dir,
                                                            const std::string& appendfsync) {
    ASSIGN_OR_RETURN(const std::string binary, RedisBinary());
    ASSIGN_OR_RETURN(ServerSite site,
                     RunSite(dir, kRedisDataDir, "redis", "redis", "redis-server", "redis"));
    ASSIGN_OR_RETURN(std::unique_ptr<NotifiedServer> server,
                     StartRedis(binary, site.account, site.data, site.folder.path(), appendfsync,
                                absl::StatusCode::kInternal));
    ASSIGN_OR_RETURN(RedisClient client, RedisClient::Connect(site.folder.path() + "/redis.sock"));
    return std::unique_ptr<RedisSession>(
        new RedisSession(std::move(site), std::move(server), std::move(client)));
  }

  absl::Status Commit(const std::string& id, const std::string& value) override {
    ASSIGN_OR_RETURN(Reply reply, client_.Call({"SET", kRedisKeyPrefix + id, value}));
    if (reply.type != '+' || reply.text != "OK") {
      return absl::InternalError(
          fmt::format("SET: unexpected reply '{}{}'", reply.type, reply.text.value_or("")));
    }
    return absl::OkStatus();
  }
  // No Finish: the server is killed when the session dies (SIGKILL: the cut is what is tested;
  // a clean shutdown would rewrite files).

 private:
  RedisSession(ServerSite site, std::unique_ptr<NotifiedServer> server, RedisClient client)
      : site_(std::move(site)), server_(std::move(server)), client_(std::move(client)) {}
  ServerSite site_;  // destroyed last: the server must be gone before its folder goes
  std::unique_ptr<NotifiedServer> server_;
  RedisClient client_;
};

constexpr char kPersistenceDocs[] =
    "redis.io, Redis persistence, 'How durable is the append only file?' "
    "(https://redis.io/docs/latest/operate/oss_and_stack/management/persistence/)";

class RedisWorkload final : public DatabaseWorkload {
 public:
  RedisWorkload() : DatabaseWorkload("keys (commands)", "value") {}
  WorkloadHelp help() const override {
    return {"redis", "Redis 7 append-only file, one SET per commit",
            "start redis-server as redis, SET and ack --count keys",
            "start redis-server on the image (loads the AOF), print have per key"};
  }
  // A process crash too may lose the last acks under everysec: while the previous second's
  // background fsync still runs, Redis postpones writing the AOF buffer for up to 2 s and replies
  // all the same (flushAppendOnlyFile, "postponed"), so a SET can be acked from Redis' memory
  // alone. Seen in a loaded suite (a SIGKILL after 25 acks lost acks 2-25); idle, every ack was
  // written before its reply.
  WorkloadConfig EverysecEntry() const {
    WorkloadConfig c =
        Entry("redis-everysec", "appendonly yes, appendfsync everysec",
              {"--appendfsync", "everysec"}, Expectation::kLoses,
              fmt::format("{}: 'appendfsync everysec: fsync every second ... you may lose 1 second "
                          "of data if there is a disaster'",
                          kPersistenceDocs));
    c.process_crash = Expectation::kMayLose;
    return c;
  }

  std::vector<WorkloadConfig> CatalogEntries() const override {
    return {
        Entry("redis-always", "appendonly yes, appendfsync always", {"--appendfsync", "always"},
              Expectation::kSurvives,
              fmt::format("{}: 'appendfsync always: fsync every time new commands are appended to "
                          "the AOF. Very very slow, very safe' (the write and fsync happen before "
                          "the reply is sent)",
                          kPersistenceDocs)),
        EverysecEntry(),
        Entry("redis-no", "appendonly yes, appendfsync no", {"--appendfsync", "no"},
              Expectation::kLoses,
              fmt::format("{}: 'appendfsync no: Never fsync, just put your data in the hands of "
                          "the Operating System'",
                          kPersistenceDocs))};
  }

 protected:
  void AddSettings(CLI::App& run) override {
    run.add_option("--appendfsync", appendfsync_, "appendfsync: always, everysec or no")
        ->capture_default_str()
        ->check(CLI::IsMember({"always", "everysec", "no"}));
  }
  absl::StatusOr<std::unique_ptr<Session>> Open(const std::string& dir) override {
    return RedisSession::Open(dir, appendfsync_);
  }
  // No POWERCUT_DIR/redis: nothing was committed. A server that cannot load the image is
  // DataLoss quoting its log.
  absl::StatusOr<std::vector<Record>> ReadBack(const std::string& dir,
                                               std::vector<std::string>& notes) override {
    std::vector<Record> records;
    const std::string data = fmt::format("{}/{}", dir, kRedisDataDir);
    if (::access(data.c_str(), F_OK) != 0) {
      notes.push_back(fmt::format("no {}: nothing was committed", data));
      return records;
    }
    ASSIGN_OR_RETURN(const std::string binary, RedisBinary());
    ASSIGN_OR_RETURN(ServerSite site,
                     CheckSite(dir, kRedisDataDir, "redis", "redis-server", "redischeck"));
    // appendfsync no: the checker's server needs no durability on the scratch image.
    ASSIGN_OR_RETURN(std::unique_ptr<NotifiedServer> server,
                     StartRedis(binary, site.account, site.data, site.folder.path(), "no",
                                absl::StatusCode::kDataLoss));
    ASSIGN_OR_RETURN(RedisClient client, RedisClient::Connect(site.folder.path() + "/redis.sock"));
    ASSIGN_OR_RETURN(Reply keys, client.Call({"KEYS", std::string(kRedisKeyPrefix) + "*"}));
    for (const std::optional<std::string>& key : keys.items) {
      if (!key.has_value()) continue;
      ASSIGN_OR_RETURN(Reply value, client.Call({"GET", *key}));
      records.push_back({.id = key->substr(std::strlen(kRedisKeyPrefix)),
                         .value = value.text.value_or(""),
                         .intact = value.text.has_value()});
    }
    return records;
  }

 private:
  std::string appendfsync_ = "always";
};

}  // namespace

std::unique_ptr<Workload> MakeRedisWorkload() { return std::make_unique<RedisWorkload>(); }

}  // namespace powercut::workloads
