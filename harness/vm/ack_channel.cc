#include "harness/vm/ack_channel.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/ack_id.h"
#include "base/tsan_mutex.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace powercut::vm {

absl::StatusOr<std::unique_ptr<AckChannel>> AckChannel::Start(const Options& options) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (options.socket_path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(
        fmt::format("ack channel: socket path {} is too long", options.socket_path));
  }
  std::strncpy(addr.sun_path, options.socket_path.c_str(), sizeof(addr.sun_path) - 1);
  std::FILE* log = std::fopen(options.ack_log_path.c_str(), "we");
  if (log == nullptr) {
    return absl::UnavailableError(fmt::format("ack channel: cannot create the ack log {}: {}",
                                              options.ack_log_path, std::strerror(errno)));
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(fd, 1) != 0) {
    std::string err = std::strerror(errno);
    if (fd >= 0) close(fd);
    std::fclose(log);
    return absl::UnavailableError(
        fmt::format("ack channel: cannot listen on {}: {}", options.socket_path, err));
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);  // accept polls; see Serve()
  std::unique_ptr<AckChannel> channel(new AckChannel(options, fd, log));
  channel->thread_ = std::thread([c = channel.get()] { c->Serve(); });
  return channel;
}

AckChannel::~AckChannel() { Stop(); }

void AckChannel::Stop() {
  {
    powercut::MutexLock lock(&mu_);
    stopping_ = true;
  }
  // The thread notices within one poll interval, after draining what was already sent.
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    listen_fd_ = -1;
    unlink(options_.socket_path.c_str());
  }
  if (log_ != nullptr) {
    std::fclose(log_);
    log_ = nullptr;
  }
}

bool AckChannel::stopping() const {
  powercut::MutexLock lock(&mu_);
  return stopping_;
}

std::vector<std::string> AckChannel::acks() const {
  powercut::MutexLock lock(&mu_);
  return acks_;
}

uint64_t AckChannel::invalid_lines() const {
  powercut::MutexLock lock(&mu_);
  return invalid_;
}

absl::Status AckChannel::status() const {
  powercut::MutexLock lock(&mu_);
  return status_;
}

void AckChannel::Serve() {
  constexpr int kPollMs = 100;
  for (;;) {
    pollfd lp{listen_fd_, POLLIN, 0};
    poll(&lp, 1, kPollMs);
    const bool stop = stopping();
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stop) return;
      continue;
    }
    // Read until the peer closes, or until Stop() was called and nothing more is buffered.
    std::string pending;
    char buf[4096];
    for (;;) {
      pollfd p{fd, POLLIN, 0};
      int r = poll(&p, 1, kPollMs);
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) {
        if (stopping()) break;
        continue;
      }
      ssize_t n = read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      pending.append(buf, static_cast<size_t>(n));
      size_t nl;
      while ((nl = pending.find('\n')) != std::string::npos) {
        HandleLine(pending.substr(0, nl));
        pending.erase(0, nl + 1);
      }
    }
    close(fd);
    if (stopping()) return;
  }
}

void AckChannel::HandleLine(const std::string& line) {
  double t_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  nlohmann::json entry;
  uint64_t count = 0;
  std::string event;
  if (line.rfind("ack ", 0) == 0 && IsValidAckId(line.substr(4))) {
    std::string id = line.substr(4);
    absl::Status s =
        options_.recorder != nullptr ? options_.recorder->RecordAck(id) : absl::OkStatus();
    powercut::MutexLock lock(&mu_);
    if (!s.ok() && status_.ok()) status_ = s;
    acks_.push_back(id);
    count = acks_.size();
    entry = {{"id", id},
             {"seq", count},
             {"t_ms", t_ms},
             {"trace_entries", options_.recorder != nullptr ? options_.recorder->entries() : 0}};
  } else if (line.rfind("event ", 0) == 0) {
    event = line.substr(6);
    entry = {{"event", event}, {"t_ms", t_ms}};
  } else {
    powercut::MutexLock lock(&mu_);
    ++invalid_;
    entry = {{"invalid", line.substr(0, 200)}, {"t_ms", t_ms}};
  }
  std::string text = entry.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::fwrite(text.data(), 1, text.size(), log_);
  std::fflush(log_);
  if (count > 0 && options_.on_ack) options_.on_ack(count);
  if (!event.empty() && options_.on_event) options_.on_event(event);
}

}  // namespace powercut::vm
