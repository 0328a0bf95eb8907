#include "harness/vm/machine/qmp.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/socket_io.h"
#include "base/status_macros.h"
#include "fmt/format.h"

namespace powercut::vm {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

int RemainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

}  // namespace

absl::StatusOr<QmpListener> QmpListener::Listen(const std::string& socket_path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(fmt::format("QMP: socket path {} is too long", socket_path));
  }
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof(addr.sun_path) - 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(fd, 1) != 0) {
    std::string err = std::strerror(errno);
    if (fd >= 0) close(fd);
    return absl::UnavailableError(fmt::format("QMP: cannot listen on {}: {}", socket_path, err));
  }
  return QmpListener(fd, socket_path);
}

QmpListener::QmpListener(QmpListener&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)) {
  o.fd_ = -1;
}

QmpListener::~QmpListener() {
  if (fd_ >= 0) {
    close(fd_);
    unlink(path_.c_str());
  }
}

absl::StatusOr<std::unique_ptr<QmpClient>> QmpClient::Accept(QmpListener& listener,
                                                             std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  int fd = -1;
  while (fd < 0) {
    pollfd p{listener.fd_, POLLIN, 0};
    int r = poll(&p, 1, RemainingMs(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      return absl::DeadlineExceededError(fmt::format("QMP: qemu did not connect to {} within {} ms",
                                                     listener.path_, timeout.count()));
    }
    fd = accept4(listener.fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0 && errno != EAGAIN && errno != EINTR) {
      return absl::UnavailableError(fmt::format("QMP: accept: {}", std::strerror(errno)));
    }
  }
  std::unique_ptr<QmpClient> client(new QmpClient(fd));
  ASSIGN_OR_RETURN(json greeting, client->ReadMessage(deadline));
  if (!greeting.contains("QMP")) {
    return absl::InternalError(fmt::format("QMP: unexpected greeting {}", greeting.dump()));
  }
  RETURN_IF_ERROR(client->Execute("qmp_capabilities", json::object(), timeout).status());
  return client;
}

QmpClient::~QmpClient() {
  if (fd_ >= 0) close(fd_);
}

absl::Status QmpClient::Send(const json& message) {
  std::string text = message.dump() + "\n";
  if (absl::Status s = SendAll(fd_, text.data(), text.size()); !s.ok()) {
    return absl::UnavailableError(
        fmt::format("QMP: the monitor connection broke: {}", std::string(s.message())));
  }
  return absl::OkStatus();
}

absl::StatusOr<json> QmpClient::ReadMessage(Clock::time_point deadline) {
  for (;;) {
    size_t nl = pending_.find('\n');
    if (nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded()) {
        return absl::InternalError(fmt::format("QMP: not JSON: {}", line.substr(0, 200)));
      }
      return j;
    }
    pollfd p{fd_, POLLIN, 0};
    int r = poll(&p, 1, RemainingMs(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return absl::DeadlineExceededError("QMP: no reply from qemu in time");
    char buf[4096];
    ssize_t n = read(fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError("QMP: qemu closed the monitor (it exited)");
    pending_.append(buf, static_cast<size_t>(n));
  }
}

absl::StatusOr<json> QmpClient::Execute(const std::string& command, const json& args,
                                        std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  json message = {{"execute", command}};
  if (!args.empty()) message["arguments"] = args;
  RETURN_IF_ERROR(Send(message));
  for (;;) {
    absl::StatusOr<json> m = ReadMessage(deadline);
    if (!m.ok()) {
      return absl::Status(m.status().code(),
                          fmt::format("{} ({})", std::string(m.status().message()), command));
    }
    if (m->contains("event")) {
      events_.push_back(std::move(*m));
      continue;
    }
    if (m->contains("error")) {
      const json& e = (*m)["error"];
      return absl::FailedPreconditionError(
          fmt::format("QMP {}: {}: {}", command, e.value("class", "?"), e.value("desc", "?")));
    }
    if (m->contains("return")) return (*m)["return"];
  }
}

absl::Status QmpClient::WaitForEvent(const std::string& name, const std::string& key,
                                     const std::string& value, std::chrono::milliseconds timeout) {
  auto matches = [&](const json& e) {
    if (e.value("event", "") != name) return false;
    if (key.empty()) return true;
    const json data = e.value("data", json::object());
    return data.contains(key) && data[key].is_string() && data[key].get<std::string>() == value;
  };
  for (auto it = events_.begin(); it != events_.end(); ++it) {
    if (matches(*it)) {
      events_.erase(it);
      return absl::OkStatus();
    }
  }
  const Clock::time_point deadline = Clock::now() + timeout;
  for (;;) {
    absl::StatusOr<json> m = ReadMessage(deadline);
    if (!m.ok()) {
      return absl::Status(m.status().code(), fmt::format("waiting for the {} event: {}", name,
                                                         std::string(m.status().message())));
    }
    if (matches(*m)) return absl::OkStatus();
    if (m->contains("event")) events_.push_back(std::move(*m));
  }
}

}  // namespace powercut::vm
