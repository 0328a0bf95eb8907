// The twodisk workload: a program whose log and data live on different disks (issue 24's control
// programs; docs/workloads.md, "twodisk"). Each commit writes a log record on disk 1
// (POWERCUT_DIR) and makes it durable with fdatasync, then writes the commit's data block on
// disk 2 (POWERCUT_DIR_2) the way --data says, then acks:
//
//   fdatasync   pwrite + fdatasync on disk 2: correct on every honest disk
//   direct      O_DIRECT pwrite, no flush on disk 2: the data sits in disk 2's volatile cache
//   buffered    pwrite into the page cache, never synced: nothing of it is on disk 2 at the ack
//
// Both files are preallocated (zeros written and synced, 64 commits ahead; folders synced at
// creation), so every commit overwrites data in place: no metadata is needed to read it back (the
// design brief's barrier table). Check: commit <id> is had when its log record and its data block
// both read back whole.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "fmt/format.h"
#include "workloads/ack_channel.h"
#include "workloads/payload.h"
#include "workloads/workload.h"

namespace powercut::workloads {
namespace {

constexpr size_t kBlock = 4096;
constexpr char kLogName[] = "twodisk.log";
constexpr char kDataName[] = "twodisk.data";

struct TwoDiskOptions {
  std::string data = "fdatasync";  // fdatasync | direct | buffered
  uint64_t count = 10;
  uint64_t seed = 1;
};

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::InternalError(fmt::format("twodisk: {} {}: {}", what, path, std::strerror(errno)));
}

// One block of `kind` ("log" or "dat") for commit `id`: the payload (workloads/payload.h) padded
// with zeros.
std::vector<uint8_t> Block(const std::string& kind, uint64_t id, uint64_t seed) {
  std::vector<uint8_t> block(kBlock, 0);
  const std::string text =
      MakePayload(fmt::format("{}-{}", kind, id), FillerSize(seed, id, kBlock / 2));
  std::memcpy(block.data(), text.data(), std::min(text.size(), kBlock - 1));
  return block;
}

bool BlockVerifies(const std::string& kind, uint64_t id, const uint8_t* block) {
  const std::string text(reinterpret_cast<const char*>(block),
                         strnlen(reinterpret_cast<const char*>(block), kBlock));
  return VerifyPayload(fmt::format("{}-{}", kind, id), text);
}

// Files grow by this many zeroed, synced blocks at a time, so a commit always overwrites.
constexpr uint64_t kChunkBlocks = 64;

// Creates `path` (synced with its folder): the first chunk of zeros.
absl::Status Create(const std::string& dir, const std::string& path, int* fd) {
  *fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (*fd < 0) return Errno("create", path);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const bool synced = dfd >= 0 && ::fsync(dfd) == 0;
  if (dfd >= 0) ::close(dfd);
  return synced ? absl::OkStatus() : Errno("fsync the folder", dir);
}

// Makes blocks [0, blocks) of `fd` hold data (zeros where never written), synced: a commit's
// write then changes no metadata (the design brief: preallocate by writing zeros).
absl::Status Grow(int fd, const std::string& path, uint64_t from, uint64_t blocks) {
  std::vector<uint8_t> zeros(kBlock, 0);
  for (uint64_t i = from; i < blocks; ++i) {
    if (::pwrite(fd, zeros.data(), kBlock, static_cast<off_t>(i * kBlock)) !=
        static_cast<ssize_t>(kBlock)) {
      return Errno("preallocate", path);
    }
  }
  return ::fsync(fd) == 0 ? absl::OkStatus() : Errno("fsync", path);
}

absl::Status RunTwoDisk(const std::string& dir, const TwoDiskOptions& o, AckChannel& acks) {
  if (o.data != "fdatasync" && o.data != "direct" && o.data != "buffered") {
    return absl::InvalidArgumentError(
        fmt::format("--data {}: expected fdatasync, direct or buffered", o.data));
  }
  if (o.count == 0) return absl::InvalidArgumentError("--count must be at least 1");
  ASSIGN_OR_RETURN(const std::string dir2, RequireSecondDiskDir("the twodisk workload"));
  const std::string log_path = fmt::format("{}/{}", dir, kLogName);
  const std::string data_path = fmt::format("{}/{}", dir2, kDataName);
  int log_fd = -1;
  int data_fd = -1;
  absl::Status status = Create(dir, log_path, &log_fd);
  if (status.ok()) status = Create(dir2, data_path, &data_fd);
  // The data file's own descriptor for the commits: O_DIRECT with --data direct.
  int data_io = status.ok() ? ::open(data_path.c_str(),
                                     O_WRONLY | O_CLOEXEC | (o.data == "direct" ? O_DIRECT : 0))
                            : -1;
  if (status.ok() && data_io < 0) status = Errno("open", data_path);
  // O_DIRECT needs an aligned buffer.
  std::unique_ptr<uint8_t, decltype(&std::free)> aligned(
      static_cast<uint8_t*>(std::aligned_alloc(kBlock, kBlock)), &std::free);
  uint64_t allocated = 0;  // blocks that hold synced zeros or data
  for (uint64_t id = 1; id <= o.count && status.ok(); ++id) {
    const off_t at = static_cast<off_t>(id * kBlock);
    if (id >= allocated) {
      const uint64_t blocks = std::min(o.count + 1, allocated + kChunkBlocks);
      status = Grow(log_fd, log_path, allocated, blocks);
      if (status.ok()) status = Grow(data_fd, data_path, allocated, blocks);
      if (!status.ok()) break;
      allocated = blocks;
    }
    std::vector<uint8_t> log = Block("log", id, o.seed);
    if (::pwrite(log_fd, log.data(), kBlock, at) != static_cast<ssize_t>(kBlock) ||
        ::fdatasync(log_fd) != 0) {
      status = Errno("log write + fdatasync", log_path);
      break;
    }
    std::vector<uint8_t> data = Block("dat", id, o.seed);
    std::memcpy(aligned.get(), data.data(), kBlock);
    if (::pwrite(data_io, aligned.get(), kBlock, at) != static_cast<ssize_t>(kBlock) ||
        (o.data == "fdatasync" && ::fdatasync(data_io) != 0)) {
      status = Errno("data write", data_path);
      break;
    }
    status = acks.Ack(std::to_string(id));
  }
  for (int fd : {log_fd, data_fd, data_io}) {
    if (fd >= 0) ::close(fd);
  }
  return status;
}

absl::StatusOr<CheckResult> CheckTwoDisk(const std::string& dir) {
  CheckResult result;
  ASSIGN_OR_RETURN(const std::string dir2, RequireSecondDiskDir("the twodisk workload"));
  const std::string log_path = fmt::format("{}/{}", dir, kLogName);
  const std::string data_path = fmt::format("{}/{}", dir2, kDataName);
  int log_fd = ::open(log_path.c_str(), O_RDONLY | O_CLOEXEC);
  int data_fd = ::open(data_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (log_fd < 0 || data_fd < 0) {
    // Created and synced before the first commit: missing means nothing was committed.
    result.notes.push_back(fmt::format("{} or {} does not exist: no commit", log_path, data_path));
    if (log_fd >= 0) ::close(log_fd);
    if (data_fd >= 0) ::close(data_fd);
    return result;
  }
  std::vector<uint8_t> log(kBlock), data(kBlock);
  for (uint64_t id = 1;; ++id) {
    const off_t at = static_cast<off_t>(id * kBlock);
    if (::pread(log_fd, log.data(), kBlock, at) != static_cast<ssize_t>(kBlock)) break;
    if (::pread(data_fd, data.data(), kBlock, at) != static_cast<ssize_t>(kBlock)) break;
    const bool log_ok = BlockVerifies("log", id, log.data());
    const bool data_ok = BlockVerifies("dat", id, data.data());
    if (log_ok && data_ok) {
      result.have.push_back(std::to_string(id));
    } else if (log_ok) {
      result.notes.push_back(fmt::format("commit {}: log record on disk 1, no data on disk 2", id));
    }
  }
  ::close(log_fd);
  ::close(data_fd);
  return result;
}

class TwoDiskWorkload final : public StoreWorkload<TwoDiskOptions, RunTwoDisk, CheckTwoDisk> {
 public:
  WorkloadHelp help() const override {
    return {"twodisk", "log on disk 1, data on disk 2 (powercut run --disks 2)",
            "per commit: log record + fdatasync on disk 1, data block on disk 2 (--data), ack",
            "have <id> when both the log record and the data block read back"};
  }
  void AddOptions(CLI::App& run, CLI::App& /*check*/) override {
    run.add_option("--data", options_.data,
                   "how the data reaches disk 2: fdatasync, direct (O_DIRECT, no flush) or "
                   "buffered (never synced)")
        ->capture_default_str();
    AddCountOption(run, options_.count, "commits");
    run.add_option("--seed", options_.seed, "payload seed")->capture_default_str();
  }
  std::vector<WorkloadConfig> CatalogEntries() const override {
    return {{.name = "twodisk-fdatasync",
             .workload = "twodisk",
             .setting = "fdatasync",
             .run_args = {"--data", "fdatasync"},
             .cache_off = Expectation::kSurvives,
             .cache_on = Expectation::kSurvives,
             .disks = 2},
            {.name = "twodisk-direct",
             .workload = "twodisk",
             .setting = "direct",
             .run_args = {"--data", "direct"},
             .cache_off = Expectation::kSurvives,
             .disks = 2},
            {.name = "twodisk-buffered",
             .workload = "twodisk",
             .setting = "buffered",
             .run_args = {"--data", "buffered"},
             .disks = 2}};
  }
};

}  // namespace

std::unique_ptr<Workload> MakeTwoDiskWorkload() { return std::make_unique<TwoDiskWorkload>(); }

}  // namespace powercut::workloads
