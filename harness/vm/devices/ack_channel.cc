#include "harness/vm/devices/ack_channel.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/ack_id.h"
#include "base/socket_io.h"
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
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(fd, 1) != 0) {
    std::string err = std::strerror(errno);
    if (fd >= 0) close(fd);
    return absl::UnavailableError(
        fmt::format("ack channel: cannot listen on {}: {}", options.socket_path, err));
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);  // accept polls; see Serve()
  std::unique_ptr<AckChannel> channel(new AckChannel(options, fd));
  {
    powercut::MutexLock lock(&channel->sink_mu_);
    if (absl::Status s = channel->OpenSink(options); !s.ok()) {
      close(fd);
      unlink(options.socket_path.c_str());
      return s;
    }
  }
  channel->thread_ = std::thread([c = channel.get()] { c->Serve(); });
  return channel;
}

AckChannel::~AckChannel() { Stop(); }

absl::Status AckChannel::OpenSink(const Options& sink) {
  if (log_ != nullptr) std::fclose(log_);
  log_ = nullptr;
  sink_ = sink;
  if (!sink.ack_log_path.empty()) {
    log_ = std::fopen(sink.ack_log_path.c_str(), "we");
    if (log_ == nullptr) {
      return absl::UnavailableError(fmt::format("ack channel: cannot create the ack log {}: {}",
                                                sink.ack_log_path, std::strerror(errno)));
    }
  }
  powercut::MutexLock lock(&mu_);
  acks_.clear();
  invalid_ = 0;
  status_ = absl::OkStatus();
  return absl::OkStatus();
}

absl::Status AckChannel::BeginJob(uint64_t job, const Options& sink) {
  powercut::MutexLock lock(&sink_mu_);
  job_ = job;
  in_job_ = true;
  return OpenSink(sink);
}

void AckChannel::EndJob() {
  powercut::MutexLock lock(&sink_mu_);
  in_job_ = false;
  Options initial = options_;
  initial.ack_log_path.clear();  // the first sink's log was the first run's
  (void)OpenSink(initial);
}

absl::Status AckChannel::Send(const std::string& line) {
  powercut::MutexLock lock(&mu_);
  if (peer_fd_ < 0) return absl::UnavailableError("ack channel: the guest is not connected");
  std::string text = line + "\n";
  if (absl::Status s = SendAll(peer_fd_, text.data(), text.size()); !s.ok()) {
    return absl::UnavailableError(
        fmt::format("ack channel: writing to the guest failed: {}", std::string(s.message())));
  }
  return absl::OkStatus();
}

bool AckChannel::WaitForPeerClose(std::chrono::milliseconds timeout) {
  const absl::Time deadline = absl::Now() + absl::FromChrono(timeout);
  powercut::MutexLock lock(&mu_);
  while (!peer_closed_) {
    if (powercut::WaitWithTimeout(&peer_cv_, &mu_, deadline - absl::Now())) break;
  }
  return peer_closed_;
}

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
  powercut::MutexLock lock(&sink_mu_);
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

uint64_t AckChannel::stale_lines() const {
  powercut::MutexLock lock(&mu_);
  return stale_;
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
    {
      powercut::MutexLock lock(&mu_);
      peer_fd_ = fd;
      peer_closed_ = false;
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
    {
      powercut::MutexLock lock(&mu_);
      peer_fd_ = -1;
      peer_closed_ = true;
      peer_cv_.SignalAll();
    }
    close(fd);
    if (stopping()) return;
  }
}

void AckChannel::HandleLine(const std::string& line) {
  powercut::MutexLock lock(&sink_mu_);
  if (line.rfind("job ", 0) == 0) {
    // "job <N> <rest>": <rest> is job N's; any other job's line is stale.
    const size_t space = line.find(' ', 4);
    const std::string number = line.substr(4, space == std::string::npos ? space : space - 4);
    const bool current = in_job_ && !number.empty() &&
                         number.find_first_not_of("0123456789") == std::string::npos &&
                         number == std::to_string(job_);
    if (!current || space == std::string::npos) {
      {
        powercut::MutexLock counts(&mu_);
        ++stale_;
      }
      if (log_ != nullptr) {
        std::string text = nlohmann::json{{"stale", line.substr(0, 200)}}.dump(
                               -1, ' ', false, nlohmann::json::error_handler_t::replace) +
                           "\n";
        std::fwrite(text.data(), 1, text.size(), log_);
        std::fflush(log_);
      }
      return;
    }
    HandleJobLine(line.substr(space + 1));
    return;
  }
  HandleJobLine(line);
}

void AckChannel::HandleJobLine(const std::string& line) {
  double t_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  nlohmann::json entry;
  uint64_t count = 0;
  std::string event;
  if (line.rfind("ack ", 0) == 0 && IsValidAckId(line.substr(4))) {
    std::string id = line.substr(4);
    absl::Status s = sink_.recorder != nullptr ? sink_.recorder->RecordAck(id) : absl::OkStatus();
    powercut::MutexLock lock(&mu_);
    if (!s.ok() && status_.ok()) status_ = s;
    acks_.push_back(id);
    count = acks_.size();
    entry = {{"id", id},
             {"seq", count},
             {"t_ms", t_ms},
             {"trace_entries", sink_.recorder != nullptr ? sink_.recorder->entries() : 0}};
  } else if (line.rfind("event ", 0) == 0) {
    event = line.substr(6);
    // A check's whole result (GuestResultToLine) is the caller's; the log keeps its size.
    if (event.rfind("job-result ", 0) == 0) {
      entry = {{"event", "job-result"}, {"bytes", event.size()}, {"t_ms", t_ms}};
    } else {
      entry = {{"event", event}, {"t_ms", t_ms}};
    }
  } else {
    powercut::MutexLock lock(&mu_);
    ++invalid_;
    entry = {{"invalid", line.substr(0, 200)}, {"t_ms", t_ms}};
  }
  std::string text = entry.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (log_ != nullptr) {
    std::fwrite(text.data(), 1, text.size(), log_);
    std::fflush(log_);
  }
  if (count > 0 && sink_.confirm_acks) {
    // The mark is in the trace: the agent may let the workload run on.
    (void)Send(fmt::format("job {} acked {}", job_, line.substr(4)));
  }
  if (count > 0 && sink_.on_ack) sink_.on_ack(count);
  if (!event.empty() && sink_.on_event) sink_.on_event(event);
}

}  // namespace powercut::vm
