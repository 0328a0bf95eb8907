#include "harness/trace/trace_writer.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/status_macros.h"
#include "fmt/format.h"

namespace powercut::harness {
namespace {

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::Status(absl::ErrnoToStatusCode(errno),
                      fmt::format("{}({}): {}", what, path, std::strerror(errno)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<TraceWriter>> TraceWriter::Create(const Options& options) {
  if (!ValidSectorSize(options.sector_size)) {
    return absl::InvalidArgumentError(
        fmt::format("trace writer {}: sector size {} is not a power of two in [512, 65536]",
                    options.path, options.sector_size));
  }
  int fd = ::open(options.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("open", options.path);
  std::unique_ptr<TraceWriter> writer(new TraceWriter(options.path, fd, options.sector_size));
  RETURN_IF_ERROR(writer->WriteSuper());
  return writer;
}

TraceWriter::TraceWriter(std::string path, int fd, uint32_t sector_size)
    : path_(std::move(path)), fd_(fd), sector_size_(sector_size), next_offset_(sector_size) {}

TraceWriter::~TraceWriter() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status TraceWriter::PwriteAll(const uint8_t* data, size_t size, uint64_t offset,
                                    const char* what) {
  while (size > 0) {
    ssize_t n = ::pwrite(fd_, data, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno(fmt::format("pwrite {}", what), path_);
    }
    if (n == 0) return absl::DataLossError(fmt::format("pwrite {}({}): no progress", what, path_));
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

absl::Status TraceWriter::WriteSuper() {
  std::vector<uint8_t> block(sector_size_);
  EncodeSuper(entries_, sector_size_, block.data());
  return PwriteAll(block.data(), block.size(), 0, "superblock");
}

absl::Status TraceWriter::Append(EntryHeader header, std::string_view mark,
                                 absl::Span<const uint8_t> data) {
  if (finished_) {
    return absl::FailedPreconditionError(fmt::format("trace {}: append after Finish", path_));
  }
  if (header.flags & kFlagMark) {
    if (mark.size() > MaxMarkBytes(sector_size_)) {
      return absl::InvalidArgumentError(
          fmt::format("trace {}: mark of {} bytes exceeds the {} a {}-byte entry block holds",
                      path_, mark.size(), MaxMarkBytes(sector_size_), sector_size_));
    }
    header.data_len = mark.size();
  }
  const uint64_t expected = LoggedDataBytes(header, sector_size_);
  if (data.size() != expected) {
    return absl::InvalidArgumentError(
        fmt::format("trace {}: entry {} carries {} data bytes, its header says {}", path_, entries_,
                    data.size(), expected));
  }
  std::vector<uint8_t> block(sector_size_);
  EncodeEntry(header, mark, sector_size_, block.data());
  // One pwritev for header + data: the entry reaches the file whole or (on a crash) cut, which
  // the reader tolerates.
  iovec iov[2] = {{block.data(), block.size()}, {const_cast<uint8_t*>(data.data()), data.size()}};
  size_t total = block.size() + data.size();
  ssize_t n = ::pwritev(fd_, iov, data.empty() ? 1 : 2, static_cast<off_t>(next_offset_));
  if (n < 0) return Errno("pwritev entry", path_);
  if (static_cast<size_t>(n) != total) {
    // Short write: finish the remainder the simple way.
    std::vector<uint8_t> all(block);
    all.insert(all.end(), data.begin(), data.end());
    RETURN_IF_ERROR(PwriteAll(all.data() + n, total - static_cast<size_t>(n),
                              next_offset_ + static_cast<uint64_t>(n), "entry"));
  }
  next_offset_ += total;
  ++entries_;
  if (header.flags & (kFlagFua | kFlagMark)) RETURN_IF_ERROR(WriteSuper());
  return absl::OkStatus();
}

absl::Status TraceWriter::Finish() {
  if (finished_) return absl::OkStatus();
  RETURN_IF_ERROR(WriteSuper());
  if (::fsync(fd_) != 0) return Errno("fsync", path_);
  finished_ = true;
  return absl::OkStatus();
}

}  // namespace powercut::harness
