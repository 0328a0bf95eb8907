#include "workloads/xlog_workload.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "workloads/workload.h"
#include "workloads/xlog_barrier.h"
#include "workloads/xlog_format.h"

namespace powercut::workloads {
namespace {

using wal::Barrier;
using xlog::AlignedBlock;
using xlog::BarrierWriter;
using xlog::ErrnoError;
using xlog::Fd;
using xlog::Fsync;
using xlog::FsyncDir;
using xlog::NewAlignedBlock;
using xlog::PwriteAll;

// Number of data blocks set up (and zeroed) before the run: the overwrite block, or on a raw
// device every block the append variant will write, so that stale bytes never look like data.
uint64_t BlocksToZero(const Target& target, const XlogOptions& options) {
  if (!options.append) return 1;
  return target.dev.empty() ? 0 : options.count;
}

absl::Status WriteZeros(int fd, uint64_t first_block, uint64_t blocks, const std::string& path) {
  std::vector<uint8_t> zeros(256 * kXlogBlockSize, 0);
  const uint64_t per_write = zeros.size() / kXlogBlockSize;
  for (uint64_t b = 0; b < blocks; b += per_write) {
    const uint64_t n = std::min(per_write, blocks - b);
    RETURN_IF_ERROR(
        PwriteAll(fd, zeros.data(), n * kXlogBlockSize, (first_block + b) * kXlogBlockSize, path));
  }
  return absl::OkStatus();
}

// Creates the store durably: afterwards the header is on stable storage (for every barrier mode:
// setup is not a commit) and no data block looks written.
absl::StatusOr<std::string> SetUp(const Target& target, const XlogOptions& options) {
  AlignedBlock header = NewAlignedBlock();
  EncodeXlogHeader({options.append ? XlogVariant::kAppend : XlogVariant::kOverwrite,
                    XlogNonce(options.seed), options.count},
                   header.get());
  const uint64_t zero_blocks = BlocksToZero(target, options);
  if (!target.dev.empty()) {
    Fd fd(::open(target.dev.c_str(), O_WRONLY | O_CLOEXEC));
    if (fd.get() < 0) return ErrnoError("open", target.dev, errno);
    const off_t device_bytes = ::lseek(fd.get(), 0, SEEK_END);
    if (device_bytes < 0) return ErrnoError("lseek", target.dev, errno);
    const uint64_t needed_blocks = 1 + (options.append ? options.count : 1);
    if (static_cast<uint64_t>(device_bytes) < needed_blocks * kXlogBlockSize) {
      return absl::InvalidArgumentError(fmt::format(
          "{} holds {} bytes; --count {} needs {} bytes: use a smaller --count or a larger device",
          target.dev, device_bytes, options.count, needed_blocks * kXlogBlockSize));
    }
    // Zeros first and durable, so that a crash during setup never pairs a new header with stale
    // blocks of an earlier run.
    RETURN_IF_ERROR(WriteZeros(fd.get(), 1, zero_blocks, target.dev));
    RETURN_IF_ERROR(Fsync(fd.get(), target.dev));
    RETURN_IF_ERROR(PwriteAll(fd.get(), header.get(), kXlogBlockSize, 0, target.dev));
    RETURN_IF_ERROR(Fsync(fd.get(), target.dev));
    RETURN_IF_ERROR(fd.Close(target.dev));
    return target.dev;
  }
  const std::string path = fmt::format("{}/{}", target.dir, kXlogFileName);
  const std::string tmp = path + ".tmp";
  if (::access(path.c_str(), F_OK) == 0) {
    return absl::InvalidArgumentError(fmt::format(
        "{} already exists: the xlog workload needs a fresh POWERCUT_DIR (remove the file)", path));
  }
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) return ErrnoError("open", tmp, errno);
  RETURN_IF_ERROR(PwriteAll(fd.get(), header.get(), kXlogBlockSize, 0, tmp));
  RETURN_IF_ERROR(WriteZeros(fd.get(), 1, zero_blocks, tmp));
  RETURN_IF_ERROR(Fsync(fd.get(), tmp));
  RETURN_IF_ERROR(fd.Close(tmp));
  if (::rename(tmp.c_str(), path.c_str()) != 0) return ErrnoError("rename", tmp, errno);
  RETURN_IF_ERROR(FsyncDir(target.dir));
  return path;
}

// Reads kXlogBlockSize bytes of block `index`; bytes past the end read as zeros.
absl::Status ReadBlock(int fd, uint64_t index, uint8_t* out, const std::string& path) {
  std::memset(out, 0, kXlogBlockSize);
  size_t done = 0;
  while (done < kXlogBlockSize) {
    ssize_t n = ::pread(fd, out + done, kXlogBlockSize - done,
                        static_cast<off_t>(index * kXlogBlockSize + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("pread", path, errno);
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

void CheckOverwrite(const XlogBlockScan& scan, CheckResult& result) {
  switch (scan.state) {
    case XlogBlockState::kZero:
      result.notes.emplace_back("data block is zero: no write reached the disk");
      return;
    case XlogBlockState::kIntact:
      for (uint64_t s = 1; s <= scan.seq; ++s) result.have.push_back(std::to_string(s));
      return;
    case XlogBlockState::kTorn:
      // Every valid sector holds a version >= oldest_seq; if all sectors are valid, every commit
      // up to oldest_seq is still reflected in every sector, but the block itself is damaged.
      if (scan.valid_sectors == kXlogSectorsPerBlock) {
        for (uint64_t s = 1; s <= scan.oldest_seq; ++s) result.have.push_back(std::to_string(s));
      }
      result.corrupt.push_back(std::to_string(scan.seq));
      result.notes.push_back(fmt::format("data block {}", scan.Describe()));
      return;
    case XlogBlockState::kGarbage:
      return;  // Reported by the caller as unrecoverable.
  }
}

}  // namespace

absl::Status RunXlog(const Target& target, const XlogOptions& options, AckChannel& acks) {
  if (options.count == 0) return absl::InvalidArgumentError("--count must be at least 1");
  if (options.ack_first && options.barrier != Barrier::kFdatasync &&
      options.barrier != Barrier::kFsync) {
    return absl::InvalidArgumentError(
        fmt::format("--ack-first acks between the write and its barrier: it needs --barrier "
                    "fdatasync or fsync, not {}",
                    wal::BarrierName(options.barrier)));
  }
  ASSIGN_OR_RETURN(const std::string path, SetUp(target, options));
  BarrierWriter writer(options.barrier, path);
  RETURN_IF_ERROR(writer.Open());
  AlignedBlock block = NewAlignedBlock();
  const uint64_t nonce = XlogNonce(options.seed);
  for (uint64_t seq = 1; seq <= options.count; ++seq) {
    EncodeXlogBlock(nonce, seq, block.get());
    const uint64_t index = options.append ? seq : 1;
    absl::Status status;
    if (options.ack_first) {
      // The known-bad control: the ack goes out while the record is only in the page cache.
      status = writer.WriteWithoutBarrier(block.get(), index * kXlogBlockSize);
      if (status.ok()) {
        RETURN_IF_ERROR(acks.Ack(seq));
        status = writer.Sync();
      }
    } else {
      status = writer.Write(block.get(), index * kXlogBlockSize);
    }
    if (!status.ok()) {
      return absl::Status(
          status.code(),
          fmt::format("xlog seq {} ({}): {}; stopped, no further acks", seq,
                      wal::BarrierName(options.barrier), std::string(status.message())));
    }
    if (!options.ack_first) RETURN_IF_ERROR(acks.Ack(seq));
  }
  return writer.Close();
}

absl::StatusOr<CheckResult> CheckXlog(const Target& target) {
  CheckResult result;
  const bool raw = !target.dev.empty();
  const std::string path = raw ? target.dev : fmt::format("{}/{}", target.dir, kXlogFileName);
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT && !raw) {
      result.notes.push_back(fmt::format("{} does not exist: nothing was committed", path));
      return result;
    }
    return ErrnoError("open", path, errno);
  }
  AlignedBlock block = NewAlignedBlock();
  RETURN_IF_ERROR(ReadBlock(fd.get(), 0, block.get(), path));
  std::optional<XlogHeader> header = DecodeXlogHeader(block.get());
  if (!header.has_value()) {
    if (raw) {
      // On a raw device the header is the last step of setup: without it nothing was committed.
      result.notes.push_back(fmt::format("{}: no xlog header: nothing was set up", path));
      return result;
    }
    return absl::DataLossError(fmt::format(
        "{}: the header block is damaged, but the file is only renamed into place after its "
        "header was fsynced: the store cannot be opened",
        path));
  }
  const uint64_t nonce = header->nonce;
  if (header->variant == XlogVariant::kOverwrite) {
    RETURN_IF_ERROR(ReadBlock(fd.get(), 1, block.get(), path));
    XlogBlockScan scan = ScanXlogBlock(block.get(), nonce);
    if (scan.state == XlogBlockState::kGarbage) {
      return absl::DataLossError(fmt::format(
          "{}: data block 1 holds no valid sector of this run: the store cannot be read", path));
    }
    CheckOverwrite(scan, result);
    return result;
  }

  // Append: scan the blocks the run planned (and, for a file, that the file size covers).
  uint64_t blocks = header->count;
  if (!raw) {
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return ErrnoError("fstat", path, errno);
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    const uint64_t in_file = size <= kXlogBlockSize ? 0 : (size - 1) / kXlogBlockSize;
    blocks = std::min(blocks, in_file);
  }
  std::vector<XlogBlockScan> scans;
  scans.reserve(blocks);
  uint64_t last_intact = 0;
  for (uint64_t i = 1; i <= blocks; ++i) {
    RETURN_IF_ERROR(ReadBlock(fd.get(), i, block.get(), path));
    XlogBlockScan scan = ScanXlogBlock(block.get(), nonce);
    // An intact block in the wrong place is not the commit its position claims.
    if (scan.state == XlogBlockState::kIntact && scan.seq != i) scan.state = XlogBlockState::kTorn;
    if (scan.state == XlogBlockState::kIntact) last_intact = i;
    scans.push_back(scan);
  }
  uint64_t tail_damaged = 0;
  for (uint64_t i = 1; i <= blocks; ++i) {
    const XlogBlockScan& scan = scans[i - 1];
    if (scan.state == XlogBlockState::kIntact) {
      result.have.push_back(std::to_string(i));
    } else if (i < last_intact) {
      // A later block is intact, so this one was written before it: damage inside the log.
      result.corrupt.push_back(std::to_string(i));
      result.notes.push_back(
          fmt::format("block {} (before intact block {}): {}", i, last_intact, scan.Describe()));
    } else if (scan.state != XlogBlockState::kZero) {
      ++tail_damaged;
    }
  }
  if (tail_damaged > 0) {
    result.notes.push_back(fmt::format(
        "{} damaged block(s) after the last intact block {}: a torn tail (writes in flight at the "
        "cut), not a violation",
        tail_damaged, last_intact));
  }
  return result;
}

namespace {

class XlogWorkload final : public Workload {
 public:
  WorkloadHelp help() const override {
    return {"xlog", "the 2001 xlog test: 4 KiB writes + barrier",
            "write, barrier and ack --count blocks", "print have/corrupt for the xlog file"};
  }
  void AddOptions(CLI::App& run, CLI::App& /*check*/) override {
    AddBarrierOption(run, barrier_);
    run.add_flag("--append", options_.append, "append 4 KiB blocks instead of rewriting one block");
    run.add_flag("--ack-first", options_.ack_first,
                 "known-bad control: ack each block before its fdatasync/fsync (after the write)");
    AddCountOption(run, options_.count, "blocks to write");
    run.add_option("--seed", options_.seed, "seed of the block contents")->capture_default_str();
  }
  absl::Status Run(const Target& target, AckChannel& acks) override {
    absl::StatusOr<wal::Barrier> barrier = wal::ParseBarrier(barrier_);
    if (!barrier.ok()) return barrier.status();
    options_.barrier = *barrier;
    return RunXlog(target, options_, acks);
  }
  absl::StatusOr<CheckResult> Check(const Target& target) override { return CheckXlog(target); }
  // One configuration per barrier, overwriting one block, then the same appending, then the
  // ack-before-sync control.
  std::vector<WorkloadConfig> CatalogEntries() const override {
    std::vector<WorkloadConfig> entries;
    for (const bool append : {false, true}) {
      for (wal::Barrier barrier : wal::AllBarriers()) {
        const std::string name(wal::BarrierName(barrier));
        WorkloadConfig c{.name = (append ? "xlog-append-" : "xlog-") + name,
                         .workload = "xlog",
                         .setting = name,
                         .run_args = {"--barrier", name}};
        if (append) c.run_args.emplace_back("--append");
        ExpectBarrierVerdicts(barrier, /*extends_file=*/append, c);
        entries.push_back(c);
      }
    }
    // The known-bad control: ack before the fdatasync. The record is in the page cache when it
    // is acked (a process crash keeps it), but a power cut right after the ack loses it under
    // every cache model: with the cache off the write has not even been issued to the disk.
    entries.push_back({.name = "xlog-append-ackfirst",
                       .workload = "xlog",
                       .setting = "ackfirst",
                       .run_args = {"--barrier", "fdatasync", "--append", "--ack-first"}});
    return entries;
  }

 private:
  XlogOptions options_;
  std::string barrier_ = "fdatasync";
};

}  // namespace

std::unique_ptr<Workload> MakeXlogWorkload() { return std::make_unique<XlogWorkload>(); }

}  // namespace powercut::workloads
