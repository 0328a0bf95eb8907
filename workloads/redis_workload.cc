#include "workloads/redis_workload.h"

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
#include "workloads/payload.h"
#include "workloads/server_process.h"
#include "workloads/workload.h"

namespace powercut::workloads {
namespace {

constexpr char kInstallHint[] = "install Debian's redis-server (apt-get install redis-server)";
constexpr char kKeyPrefix[] = "commit:";
// How long the server may take to say READY=1 (loading an AOF of a few hundred commands takes
// milliseconds natively, well under a second under TCG) and to answer one command.
constexpr auto kStartTimeout = std::chrono::seconds(60);
constexpr int kReplyTimeoutSeconds = 60;

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&&) = delete;
  Fd(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

absl::StatusOr<sockaddr_un> UnixAddress(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(fmt::format("socket path too long: {}", path));
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

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
    Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) return absl::InternalError(fmt::format("socket: {}", std::strerror(errno)));
    ASSIGN_OR_RETURN(sockaddr_un addr, UnixAddress(socket_path));
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      return absl::UnavailableError(
          fmt::format("connect {}: {}", socket_path, std::strerror(errno)));
    }
    timeval tv{.tv_sec = kReplyTimeoutSeconds, .tv_usec = 0};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return RedisClient(std::move(fd));
  }

  // Sends one command and reads its reply; a -ERR reply is an error with Redis' words.
  absl::StatusOr<Reply> Call(const std::vector<std::string>& args) {
    std::string out = fmt::format("*{}\r\n", args.size());
    for (const std::string& a : args) out += fmt::format("${}\r\n{}\r\n", a.size(), a);
    for (size_t done = 0; done < out.size();) {
      const ssize_t n = ::send(fd_.get(), out.data() + done, out.size() - done, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        return absl::UnavailableError(fmt::format("send to redis: {}", std::strerror(errno)));
      }
      done += static_cast<size_t>(n);
    }
    ASSIGN_OR_RETURN(Reply reply, ReadReply());
    if (reply.type == '-') {
      return absl::InternalError(fmt::format("redis {}: {}", args[0], reply.text.value_or("")));
    }
    return reply;
  }

 private:
  explicit RedisClient(Fd fd) : fd_(std::move(fd)) {}

  absl::Status Fill() {
    char buf[65536];
    for (;;) {
      const ssize_t n = ::recv(fd_.get(), buf, sizeof(buf), 0);
      if (n > 0) {
        in_.append(buf, static_cast<size_t>(n));
        return absl::OkStatus();
      }
      if (n == 0) return absl::UnavailableError("redis closed the connection");
      if (errno == EINTR) continue;
      return absl::UnavailableError(fmt::format("recv from redis: {}", std::strerror(errno)));
    }
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

  Fd fd_;
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
  return FindProgram({"/usr/bin/redis-server"}, kInstallHint);
}

}  // namespace

absl::Status RunRedis(const std::string& dir, const RedisOptions& o, AckChannel& acks) {
  if (o.count == 0) return absl::InvalidArgumentError("--count must be at least 1");
  if (o.appendfsync != "always" && o.appendfsync != "everysec" && o.appendfsync != "no") {
    return absl::InvalidArgumentError(
        fmt::format("--appendfsync {}: expected always, everysec or no", o.appendfsync));
  }
  ASSIGN_OR_RETURN(const std::string binary, RedisBinary());
  ASSIGN_OR_RETURN(const ServiceAccount account, ServiceAccountFor("redis", "redis-server"));
  const std::string data = fmt::format("{}/{}", dir, kRedisDataDir);
  if (::access(data.c_str(), F_OK) == 0) {
    return absl::InvalidArgumentError(fmt::format(
        "{} already exists: the redis workload needs a fresh POWERCUT_DIR (remove it)", data));
  }
  RETURN_IF_ERROR(MakeOwnedFolder(data, account));
  // Our set-up (the data folder) is durable before the server starts: what Redis then creates
  // is Redis' to make durable.
  RETURN_IF_ERROR(SyncFileSystem(data));
  ASSIGN_OR_RETURN(PrivateFolder folder, PrivateFolder::Create("redis", account));
  ASSIGN_OR_RETURN(const std::string reachable, ReachableByAccount(account, dir, folder.path()));
  ASSIGN_OR_RETURN(std::unique_ptr<NotifiedServer> server,
                   StartRedis(binary, account, fmt::format("{}/{}", reachable, kRedisDataDir),
                              folder.path(), o.appendfsync, absl::StatusCode::kInternal));
  ASSIGN_OR_RETURN(RedisClient client, RedisClient::Connect(folder.path() + "/redis.sock"));
  for (uint64_t id = 1; id <= o.count; ++id) {
    const std::string id_text = std::to_string(id);
    const std::string payload = MakePayload(id_text, FillerSize(o.seed, id, o.value_size));
    absl::StatusOr<Reply> reply = client.Call({"SET", kKeyPrefix + id_text, payload});
    if (!reply.ok()) {
      return absl::Status(reply.status().code(),
                          fmt::format("SET id {}: {}; stopped, no further acks", id,
                                      std::string(reply.status().message())));
    }
    if (reply->type != '+' || reply->text != "OK") {
      return absl::InternalError(fmt::format("SET id {}: unexpected reply '{}{}'", id, reply->type,
                                             reply->text.value_or("")));
    }
    RETURN_IF_ERROR(acks.Ack(id_text));
  }
  return absl::OkStatus();
}

absl::StatusOr<CheckResult> CheckRedis(const std::string& dir) {
  CheckResult result;
  const std::string data = fmt::format("{}/{}", dir, kRedisDataDir);
  if (::access(data.c_str(), F_OK) != 0) {
    result.notes.push_back(fmt::format("no {}: nothing was committed", data));
    return result;
  }
  if (OnReadOnlyMount(dir)) {
    return absl::InvalidArgumentError(fmt::format(
        "{} is on a read-only mount: redis-server writes its AOF manifest when it loads; mount "
        "the crash image read-write",
        dir));
  }
  ASSIGN_OR_RETURN(const std::string binary, RedisBinary());
  ASSIGN_OR_RETURN(const ServiceAccount account, ServiceAccountFor("redis", "redis-server"));
  ASSIGN_OR_RETURN(PrivateFolder folder, PrivateFolder::Create("redischeck", account));
  ASSIGN_OR_RETURN(const std::string reachable, ReachableByAccount(account, dir, folder.path()));
  // appendfsync no: the checker's server needs no durability on the scratch image.
  ASSIGN_OR_RETURN(std::unique_ptr<NotifiedServer> server,
                   StartRedis(binary, account, fmt::format("{}/{}", reachable, kRedisDataDir),
                              folder.path(), "no", absl::StatusCode::kDataLoss));
  ASSIGN_OR_RETURN(RedisClient client, RedisClient::Connect(folder.path() + "/redis.sock"));
  ASSIGN_OR_RETURN(Reply keys, client.Call({"KEYS", std::string(kKeyPrefix) + "*"}));
  for (const std::optional<std::string>& key : keys.items) {
    if (!key.has_value()) continue;
    const std::string id = key->substr(std::strlen(kKeyPrefix));
    ASSIGN_OR_RETURN(Reply value, client.Call({"GET", *key}));
    if (value.text.has_value() && VerifyPayload(id, *value.text)) {
      result.have.push_back(id);
    } else {
      result.corrupt.push_back(id);
      result.notes.push_back(fmt::format("key {}: the value does not verify", *key));
    }
  }
  return result;
}

namespace {

constexpr char kPersistenceDocs[] =
    "redis.io, Redis persistence, 'How durable is the append only file?' "
    "(https://redis.io/docs/latest/operate/oss_and_stack/management/persistence/)";

class RedisWorkload final : public StoreWorkload<RedisOptions, RunRedis, CheckRedis> {
 public:
  WorkloadHelp help() const override {
    return {"redis", "Redis 7 append-only file, one SET per commit",
            "start redis-server as redis, SET and ack --count keys",
            "start redis-server on the image (loads the AOF), print have per key"};
  }
  void AddOptions(CLI::App& run, CLI::App& /*check*/) override {
    run.add_option("--appendfsync", options_.appendfsync, "appendfsync: always, everysec or no")
        ->capture_default_str()
        ->check(CLI::IsMember({"always", "everysec", "no"}));
    AddCountOption(run, options_.count, "keys (commands)");
    AddPayloadOptions(run, options_.value_size, options_.seed, "value");
  }
  std::vector<WorkloadConfig> CatalogEntries() const override {
    std::vector<WorkloadConfig> entries;
    WorkloadConfig always{.name = "redis-always",
                          .workload = "redis",
                          .setting = "appendonly yes, appendfsync always",
                          .run_args = {"--appendfsync", "always"}};
    always.cache_off = always.cache_on = Expectation::kSurvives;
    always.documented = fmt::format(
        "{}: 'appendfsync always: fsync every time new commands are appended to the AOF. Very "
        "very slow, very safe' (the write and fsync happen before the reply is sent)",
        kPersistenceDocs);
    entries.push_back(always);
    WorkloadConfig everysec{.name = "redis-everysec",
                            .workload = "redis",
                            .setting = "appendonly yes, appendfsync everysec",
                            .run_args = {"--appendfsync", "everysec"}};
    everysec.documented = fmt::format(
        "{}: 'appendfsync everysec: fsync every second ... you may lose 1 second of data if "
        "there is a disaster'",
        kPersistenceDocs);
    entries.push_back(everysec);
    WorkloadConfig no{.name = "redis-no",
                      .workload = "redis",
                      .setting = "appendonly yes, appendfsync no",
                      .run_args = {"--appendfsync", "no"}};
    no.documented = fmt::format(
        "{}: 'appendfsync no: Never fsync, just put your data in the hands of the Operating "
        "System'",
        kPersistenceDocs);
    entries.push_back(no);
    return entries;
  }
};

}  // namespace

std::unique_ptr<Workload> MakeRedisWorkload() { return std::make_unique<RedisWorkload>(); }

}  // namespace powercut::workloads
