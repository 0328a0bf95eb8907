// The host end of a guest's QEMU Machine Protocol (QMP) monitor: how a warm guest gets and loses
// its disks while it runs (blockdev-add + device_add, device_del + DEVICE_DELETED + blockdev-del;
// docs/vm.md, "Warm guests").
//
// The host listens on a unix socket before qemu starts and qemu connects to it as a client
// (`-chardev socket,id=qmp,path=SOCK -mon chardev=qmp,mode=control`), the same way as the ack
// channel: no retry loop waiting for qemu to create a socket. One thread uses a QmpClient at a
// time: Execute() reads replies and queues the events that arrive meanwhile; WaitForEvent() takes
// them from that queue first.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace powercut::vm {

// A listening socket for qemu's monitor; Accept() after qemu started gives the client.
class QmpListener {
 public:
  static absl::StatusOr<QmpListener> Listen(const std::string& socket_path);
  QmpListener(QmpListener&& other) noexcept;
  QmpListener(const QmpListener&) = delete;
  ~QmpListener();
  const std::string& socket_path() const { return path_; }

 private:
  friend class QmpClient;
  QmpListener(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

class QmpClient {
 public:
  // Waits up to `timeout` for qemu to connect, reads its greeting and enters command mode
  // (qmp_capabilities).
  static absl::StatusOr<std::unique_ptr<QmpClient>> Accept(QmpListener& listener,
                                                           std::chrono::milliseconds timeout);
  ~QmpClient();

  // Runs one command; its "return" value, or an error quoting qemu's error class and text.
  absl::StatusOr<nlohmann::json> Execute(const std::string& command, const nlohmann::json& args,
                                         std::chrono::milliseconds timeout);
  // Waits for an event named `name` whose "data" has `key` == `value` (an empty key matches any).
  // DeadlineExceeded after `timeout`.
  absl::Status WaitForEvent(const std::string& name, const std::string& key,
                            const std::string& value, std::chrono::milliseconds timeout);

 private:
  explicit QmpClient(int fd) : fd_(fd) {}
  // The next JSON message (reply or event) within the deadline.
  absl::StatusOr<nlohmann::json> ReadMessage(std::chrono::steady_clock::time_point deadline);
  absl::Status Send(const nlohmann::json& message);

  int fd_;
  std::string pending_;                // bytes after the last complete line
  std::deque<nlohmann::json> events_;  // events read while waiting for a reply
};

}  // namespace powercut::vm
