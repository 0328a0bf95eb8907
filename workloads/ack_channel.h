// The shared half of the workload protocol (docs/protocol.md): where a workload keeps its data
// (POWERCUT_DIR or POWERCUT_DEV) and the channel on which it acknowledges durable commits
// (POWERCUT_ACK_FD).
//
// Guarantees: every ack is one line "ack <id>\n" written with a single write(2), so lines from
// concurrent committers never interleave and a reader never sees half a line (a pipe write of at
// most PIPE_BUF bytes is atomic). Ids are validated (base/ack_id.h, the rules the tester reads
// them by) before anything is written.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "base/ack_id.h"

namespace powercut::workloads {

// Where the workload under test keeps its data. The tester sets exactly one of the two.
struct Target {
  std::string dir;  // POWERCUT_DIR: an existing directory on the file system under test, or "".
  std::string dev;  // POWERCUT_DEV: a block device (or file) used raw, or "".
};

// Reads POWERCUT_DIR / POWERCUT_DEV. Errors are InvalidArgument and say which variable to set.
absl::StatusOr<Target> TargetFromEnvironment();

// OK when the target is a directory; InvalidArgument naming `workload` when it is a raw device
// (workloads that need a file system: rocksdb, sqlite, wal).
absl::Status RequireDir(const Target& target, std::string_view workload);

// POWERCUT_DIR_2, the folder on the second disk of a set (`powercut run --disks 2`,
// docs/protocol.md), or "" when it is not set: for checkers, which look there only when the run
// put something there.
std::string SecondDiskDir();
// POWERCUT_DIR_2, or InvalidArgument (a usage error) saying that `what` (e.g. "the twodisk
// workload", "--wal-disk") needs a second disk and how to record one: for the runs that put
// their log or data there.
absl::StatusOr<std::string> RequireSecondDiskDir(std::string_view what);

class AckChannel {
 public:
  // Opens the channel named by POWERCUT_ACK_FD (a decimal fd, open for writing, inherited from
  // the tester). Errors are InvalidArgument naming the variable and its value.
  static absl::StatusOr<std::unique_ptr<AckChannel>> FromEnvironment();

  // Does not take ownership of `fd`.
  explicit AckChannel(int fd) : fd_(fd) {}
  AckChannel(const AckChannel&) = delete;
  AckChannel& operator=(const AckChannel&) = delete;

  // Writes "ack <id>\n" in one write(2). Thread-safe. A malformed id is InvalidArgument and
  // nothing is written; a failed or short write (e.g. the reader went away: EPIPE) is an error.
  absl::Status Ack(std::string_view id);
  absl::Status Ack(uint64_t id);

  int64_t acks_sent() const;

 private:
  const int fd_;
  mutable absl::Mutex mu_;
  int64_t acks_sent_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace powercut::workloads
