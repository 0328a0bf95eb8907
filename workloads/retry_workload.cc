// `powercut-workload retry`: the failing-disk control (docs/live-cuts.md, "Failing disks"). It
// commits one self-verifying 4 KiB record per block of a preallocated file with pwrite +
// fdatasync, and when fdatasync fails it does what the 2018 "fsyncgate" programs did: retries
// fdatasync (every --retry-ms) until it succeeds, then acknowledges. After a writeback error the
// kernel marks the failed pages clean and reports the error once; the retries fail as long as
// the disk fails its cache flushes too, and once it heals the retry succeeds without the data
// ever reaching the disk: on a disk that fails for a window and heals (`powercut run --flakey
// error_writes --flakey-for 1s`), the record whose fdatasync met the failure is acked and lost.
// The right answer is to fence (the WAL does: wal/README.md); this program exists to show that
// the tester catches the wrong one. It is not in the catalog: nothing should be built like it.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "workloads/payload.h"
#include "workloads/workload.h"

namespace powercut::workloads {
namespace {

constexpr size_t kRecord = 4096;
constexpr char kFileName[] = "retry.dat";

absl::Status Errno(const std::string& what) {
  return absl::InternalError(fmt::format("{}: {}", what, std::strerror(errno)));
}

// The record of commit `id`: its payload, zero-padded to one block.
std::string Record(uint64_t id) {
  std::string r = MakePayload(std::to_string(id), 64);
  r.resize(kRecord, '\0');
  return r;
}

struct RetryOptions {
  uint64_t count = 20;
  int pause_ms = 0;
  int max_retries = 1000;
  int retry_ms = 20;  // between retries: a failing disk fails the flush too, until it heals
};

absl::Status RunRetry(const std::string& dir, const RetryOptions& o, AckChannel& acks) {
  if (o.count == 0) return absl::InvalidArgumentError("--count must be at least 1");
  const std::string path = dir + "/" + kFileName;
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("open " + path);
  // Preallocate by writing zeros (not fallocate: unwritten extents make every fdatasync commit
  // metadata), so a commit is a data overwrite and its fdatasync a data flush.
  const std::string zeros(kRecord, '\0');
  for (uint64_t i = 0; i < o.count; ++i) {
    if (pwrite(fd, zeros.data(), kRecord, static_cast<off_t>(i * kRecord)) !=
        static_cast<ssize_t>(kRecord)) {
      return Errno("preallocate " + path);
    }
  }
  if (fsync(fd) != 0) return Errno("fsync " + path);
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0 || fsync(dfd) != 0) return Errno("fsync " + dir);
  close(dfd);
  uint64_t retried = 0;
  for (uint64_t id = 1; id <= o.count; ++id) {
    const std::string r = Record(id);
    if (pwrite(fd, r.data(), kRecord, static_cast<off_t>((id - 1) * kRecord)) !=
        static_cast<ssize_t>(kRecord)) {
      return Errno(fmt::format("pwrite record {}", id));
    }
    int tries = 0;
    while (fdatasync(fd) != 0) {
      // The mistake under test: the error is taken as transient and the barrier retried.
      if (errno != EIO || ++tries > o.max_retries) return Errno(fmt::format("fdatasync {}", id));
      ++retried;
      std::this_thread::sleep_for(std::chrono::milliseconds(o.retry_ms));
    }
    if (absl::Status s = acks.Ack(id); !s.ok()) return s;
    if (o.pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.pause_ms));
  }
  close(fd);
  if (retried > 0) {
    std::fprintf(stderr, "retry: %llu fdatasync retries after EIO\n",
                 static_cast<unsigned long long>(retried));
  }
  return absl::OkStatus();
}

absl::StatusOr<CheckResult> CheckRetry(const std::string& dir) {
  CheckResult result;
  const std::string path = dir + "/" + kFileName;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return result;  // cut before the file existed: nothing committed
    return Errno("open " + path);
  }
  std::string block(kRecord, '\0');
  for (uint64_t id = 1;; ++id) {
    ssize_t n = pread(fd, block.data(), kRecord, static_cast<off_t>((id - 1) * kRecord));
    if (n < 0) {
      close(fd);
      return Errno("read " + path);
    }
    if (n < static_cast<ssize_t>(kRecord)) break;
    if (block.find_first_not_of('\0') == std::string::npos) continue;  // never written
    const std::string want = Record(id);
    if (block == want) {
      result.have.push_back(std::to_string(id));
    } else {
      result.corrupt.push_back(std::to_string(id));
    }
  }
  close(fd);
  return result;
}

class RetryWorkload final : public DirectoryWorkload {
 public:
  WorkloadHelp help() const override {
    return {"retry",
            "control: retries fdatasync after EIO, then acks (the mistake --flakey catches)",
            "commit --count 4 KiB records with pwrite + fdatasync on a preallocated file; "
            "retry fdatasync after EIO, then ack",
            "print have per intact record"};
  }
  void AddOptions(CLI::App& run, CLI::App& /*check*/) override {
    AddCountOption(run, options_.count, "records to commit");
    run.add_option("--pause-ms", options_.pause_ms, "pause between commits (pacing)")
        ->check(CLI::Range(0, 10000));
    run.add_option("--max-retries", options_.max_retries, "fdatasync retries per commit")
        ->check(CLI::Range(1, 1000000));
    run.add_option("--retry-ms", options_.retry_ms, "pause between fdatasync retries")
        ->check(CLI::Range(0, 10000));
  }
  std::vector<WorkloadConfig> CatalogEntries() const override { return {}; }

 protected:
  absl::Status RunIn(const std::string& dir, AckChannel& acks) override {
    return RunRetry(dir, options_, acks);
  }
  absl::StatusOr<CheckResult> CheckIn(const std::string& dir) override { return CheckRetry(dir); }

 private:
  RetryOptions options_;
};

}  // namespace

std::unique_ptr<Workload> MakeRetryWorkload() { return std::make_unique<RetryWorkload>(); }

}  // namespace powercut::workloads
