// The host end of the guest agent's virtio-serial port: a unix socket that qemu connects to.
// Every line `ack <id>` is validated (the workload protocol's id grammar), recorded as the mark
// `ack:<id>` in the trace (Recorder::RecordAck) and appended to a JSON-lines ack log:
//   {"id":"7","seq":1,"t_ms":1234.5,"trace_entries":42}
// t_ms is milliseconds since the channel started; trace_entries is the trace length after the mark.
// Lines `event <text>` are logged as {"event":"<text>","t_ms":...}; anything else is counted as
// invalid and logged as {"invalid":"<line>"}.
//
// Order: the guest agent relays an ack after the workload wrote it, so after the workload's
// barrier returned; every request the guest saw complete was recorded before its reply (see
// NbdServer), hence before the ack reaches this channel. The mark may land after requests that
// completed later than the ack was sent; that only makes the oracle's claim weaker, never wrong.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "harness/trace/recorder.h"

namespace powercut::vm {

class AckChannel {
 public:
  struct Options {
    std::string socket_path;
    std::string ack_log_path;               // JSON lines
    harness::Recorder* recorder = nullptr;  // may be null
    // Called on the channel's thread after each ack was recorded, with the number of acks so far.
    std::function<void(uint64_t acks)> on_ack;
    // Called on the channel's thread for each `event <text>` line.
    std::function<void(const std::string& text)> on_event;
  };

  static absl::StatusOr<std::unique_ptr<AckChannel>> Start(const Options& options);
  ~AckChannel();

  // Stops accepting, reads what the peer already sent (up to a quiet poll interval of 100 ms),
  // closes the socket and joins the thread. Idempotent.
  void Stop();

  std::vector<std::string> acks() const;
  uint64_t invalid_lines() const;
  absl::Status status() const;

 private:
  AckChannel(Options options, int listen_fd, std::FILE* log)
      : options_(std::move(options)), listen_fd_(listen_fd), log_(log) {}
  void Serve();
  bool stopping() const;
  void HandleLine(const std::string& line);

  const Options options_;
  int listen_fd_;
  std::FILE* log_;
  std::thread thread_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();

  mutable absl::Mutex mu_;  // locked with wal/tsan_mutex.h's helpers (TSan)
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::string> acks_ ABSL_GUARDED_BY(mu_);
  uint64_t invalid_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace powercut::vm
