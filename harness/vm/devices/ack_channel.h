// The host end of the guest agent's virtio-serial port: a unix socket that qemu connects to.
// Every line `ack <id>` is validated (the workload protocol's id grammar), recorded as the mark
// `ack:<id>` in the trace (Recorder::RecordAck) and appended to a JSON-lines ack log:
//   {"id":"7","seq":1,"t_ms":1234.5,"trace_entries":42}
// t_ms is milliseconds since the channel started; trace_entries is the trace length after the mark.
// Lines `event <text>` are logged as {"event":"<text>","t_ms":...}; anything else is counted as
// invalid and logged as {"invalid":"<line>"}.
//
// Jobs (a warm guest records one job after another over the same port): a line prefixed
// `job <N> ` belongs to job N. Between BeginJob(N) and EndJob() the channel hands job N's lines to
// that job's sink (its recorder, ack log and callbacks) and counts every line of another job as
// stale (logged, never recorded): an ack of cell 1 can never become a mark in cell 2's trace.
// Unprefixed lines go to the current sink (the Options' one when no job runs). The host can also
// write lines to the guest (Send: the next job's number).
//
// Order: the guest agent relays an ack after the workload wrote it, so after the workload's
// barrier returned; every request the guest saw complete was recorded before its reply (see
// NbdServer), hence before the ack reaches this channel. The mark may land after requests that
// completed later than the ack was sent; that only makes the oracle's claim weaker, never wrong
// for a program's commits. A workload whose crash point must sit exactly at its ack (`powercut
// fstest`: a later operation in the trace before the mark would change the tree the point
// promised) asks for synchronous acks (RunSpec::sync_acks): the channel answers each recorded ack
// with `job <N> acked <id>`, and the agent holds the workload until it arrives
// (docs/protocol.md, POWERCUT_ACK_SYNC_FD).
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
    std::string ack_log_path;               // JSON lines ("" = no log)
    harness::Recorder* recorder = nullptr;  // may be null
    // Called on the channel's thread after each ack was recorded, with the number of acks so far.
    std::function<void(uint64_t acks)> on_ack;
    // Called on the channel's thread for each `event <text>` line.
    std::function<void(const std::string& text)> on_event;
    // Answer each ack of the job, once recorded, with `job <N> acked <id>` (synchronous acks).
    bool confirm_acks = false;
  };

  static absl::StatusOr<std::unique_ptr<AckChannel>> Start(const Options& options);
  ~AckChannel();

  // Stops accepting, reads what the peer already sent (up to a quiet poll interval of 100 ms),
  // closes the socket and joins the thread. Idempotent.
  void Stop();

  // Job `job`'s lines go to `sink` from now on (its ack log is created; acks and counts start
  // from zero). The sink's socket_path is unused.
  absl::Status BeginJob(uint64_t job, const Options& sink);
  // Job lines after this are stale; once it returns, no callback of the job runs any more and its
  // recorder is not used again. Unprefixed lines go to the Options' sink again.
  void EndJob();
  // Writes `line` + "\n" to the guest (fails while no guest is connected).
  absl::Status Send(const std::string& line);
  // Waits until the guest closed its end (qemu exited), so every line it sent was handled.
  bool WaitForPeerClose(std::chrono::milliseconds timeout);

  std::vector<std::string> acks() const;
  uint64_t invalid_lines() const;
  uint64_t stale_lines() const;  // lines of another job than the current one
  absl::Status status() const;

 private:
  AckChannel(Options options, int listen_fd)
      : options_(std::move(options)), listen_fd_(listen_fd) {}
  void Serve();
  bool stopping() const;
  void HandleLine(const std::string& line);
  // The sink's part of a line (after any job prefix).
  void HandleJobLine(const std::string& line) ABSL_EXCLUSIVE_LOCKS_REQUIRED(sink_mu_);
  absl::Status OpenSink(const Options& sink) ABSL_EXCLUSIVE_LOCKS_REQUIRED(sink_mu_);

  const Options options_;
  int listen_fd_;
  std::thread thread_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();

  // Held while a line is handled and while the sink changes (both with base/tsan_mutex.h).
  absl::Mutex sink_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  Options sink_ ABSL_GUARDED_BY(sink_mu_);
  std::FILE* log_ ABSL_GUARDED_BY(sink_mu_) = nullptr;
  uint64_t job_ ABSL_GUARDED_BY(sink_mu_) = 0;  // 0: no job runs
  bool in_job_ ABSL_GUARDED_BY(sink_mu_) = false;

  mutable absl::Mutex mu_;  // locked with base/tsan_mutex.h's helpers (TSan)
  absl::CondVar peer_cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int peer_fd_ ABSL_GUARDED_BY(mu_) = -1;  // the connected guest, while connected
  bool peer_closed_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::string> acks_ ABSL_GUARDED_BY(mu_);
  uint64_t invalid_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t stale_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace powercut::vm
