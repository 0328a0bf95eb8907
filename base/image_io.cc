#include "base/image_io.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "base/status_macros.h"
#include "fmt/format.h"

namespace powercut {
namespace {

absl::Status Errno(const std::string& what, const std::string& path) {
  int err = errno;
  return absl::Status(absl::ErrnoToStatusCode(err),
                      fmt::format("{}({}): {}", what, path, std::strerror(err)));
}

}  // namespace

absl::Status PwriteFull(int fd, const uint8_t* data, size_t size, uint64_t offset,
                        const std::string& path) {
  while (size > 0) {
    ssize_t n = ::pwrite(fd, data, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("pwrite", path);
    }
    if (n == 0) return absl::DataLossError(fmt::format("pwrite({}): no progress", path));
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

absl::Status PreadFull(int fd, uint8_t* data, size_t size, uint64_t offset,
                       const std::string& path) {
  while (size > 0) {
    ssize_t n = ::pread(fd, data, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("pread", path);
    }
    if (n == 0) {
      return absl::OutOfRangeError(
          fmt::format("pread({}): end of file at byte {} ({} bytes short)", path, offset, size));
    }
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

absl::Status ZeroRange(int fd, uint64_t offset, uint64_t length, const std::string& path) {
  if (length == 0) return absl::OkStatus();
  if (::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                  static_cast<off_t>(length)) == 0) {
    return absl::OkStatus();
  }
  std::vector<uint8_t> zeros(std::min<uint64_t>(length, 1 << 20), 0);
  while (length > 0) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(length, zeros.size()));
    RETURN_IF_ERROR(PwriteFull(fd, zeros.data(), n, offset, path));
    offset += n;
    length -= n;
  }
  return absl::OkStatus();
}

absl::Status CopyRangeOnto(int src_fd, uint64_t src_offset, int dst_fd, uint64_t dst_offset,
                           uint64_t length, const std::string& src, const std::string& dst) {
  const uint64_t end = src_offset + length;
  uint64_t pos = src_offset;
  auto to_dst = [&](uint64_t at) { return at - src_offset + dst_offset; };
  while (pos < end) {
    off_t data = ::lseek(src_fd, static_cast<off_t>(pos), SEEK_DATA);
    if (data < 0 && errno != ENXIO) return Errno("lseek SEEK_DATA", src);
    if (data < 0 || static_cast<uint64_t>(data) >= end) {  // only a hole remains
      RETURN_IF_ERROR(ZeroRange(dst_fd, to_dst(pos), end - pos, dst));
      break;
    }
    RETURN_IF_ERROR(ZeroRange(dst_fd, to_dst(pos), static_cast<uint64_t>(data) - pos, dst));
    off_t hole = ::lseek(src_fd, data, SEEK_HOLE);
    if (hole < 0) return Errno("lseek SEEK_HOLE", src);
    const uint64_t stop = std::min<uint64_t>(static_cast<uint64_t>(hole), end);
    loff_t in = data;
    loff_t out = static_cast<loff_t>(to_dst(static_cast<uint64_t>(data)));
    uint64_t remaining = stop - static_cast<uint64_t>(data);
    while (remaining > 0) {
      ssize_t n = ::copy_file_range(src_fd, &in, dst_fd, &out, remaining, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EXDEV || errno == EOPNOTSUPP || errno == ENOSYS || errno == EINVAL)) {
        // Across file systems (a work folder on another file system than the recording, e.g.
        // TMPDIR elsewhere) the kernel refuses: copy through a buffer.
        std::vector<uint8_t> buf(std::min<uint64_t>(remaining, 1 << 20));
        while (remaining > 0) {
          const size_t chunk = static_cast<size_t>(std::min<uint64_t>(remaining, buf.size()));
          RETURN_IF_ERROR(PreadFull(src_fd, buf.data(), chunk, static_cast<uint64_t>(in), src));
          RETURN_IF_ERROR(PwriteFull(dst_fd, buf.data(), chunk, static_cast<uint64_t>(out), dst));
          in += static_cast<loff_t>(chunk);
          out += static_cast<loff_t>(chunk);
          remaining -= chunk;
        }
        break;
      }
      if (n < 0) return Errno(fmt::format("copy_file_range to {} from", dst), src);
      if (n == 0) break;
      remaining -= static_cast<uint64_t>(n);
    }
    pos = stop;
  }
  return absl::OkStatus();
}

absl::Status CopyOnto(int src_fd, int dst_fd, uint64_t size, const std::string& src,
                      const std::string& dst) {
  return CopyRangeOnto(src_fd, 0, dst_fd, 0, size, src, dst);
}

absl::Status CopySparse(const std::string& src, const std::string& dst) {
  int in = ::open(src.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return Errno("open", src);
  struct stat st;
  if (::fstat(in, &st) != 0) {
    absl::Status s = Errno("fstat", src);
    ::close(in);
    return s;
  }
  int out = ::open(dst.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) {
    absl::Status s = Errno("open", dst);
    ::close(in);
    return s;
  }
  absl::Status s;
  if (::ftruncate(out, st.st_size) != 0) {
    s = Errno("ftruncate", dst);
  } else {
    s = CopyOnto(in, out, static_cast<uint64_t>(st.st_size), src, dst);
  }
  ::close(in);
  if (::close(out) != 0 && s.ok()) s = Errno("close", dst);
  return s;
}

absl::StatusOr<uint64_t> FileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Errno("stat", path);
  return static_cast<uint64_t>(st.st_size);
}

absl::StatusOr<std::unique_ptr<ReadOnlyMap>> ReadOnlyMap::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno("open", path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    absl::Status s = Errno("fstat", path);
    ::close(fd);
    return s;
  }
  const uint8_t* data = nullptr;
  if (st.st_size > 0) {
    void* m = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
      absl::Status s = Errno("mmap", path);
      ::close(fd);
      return s;
    }
    data = static_cast<const uint8_t*>(m);
  }
  ::close(fd);
  return std::unique_ptr<ReadOnlyMap>(new ReadOnlyMap(data, static_cast<uint64_t>(st.st_size)));
}

ReadOnlyMap::~ReadOnlyMap() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(fmt::format("cannot read {}", path));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

absl::Status PublishFile(const std::string& path, std::string_view data) {
  const std::string tmp = fmt::format("{}.tmp-{}", path, ::getpid());
  std::error_code ec;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out.good()) {
      std::filesystem::remove(tmp, ec);
      return absl::InternalError(fmt::format("cannot write {} (disk full?)", tmp));
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return absl::InternalError(fmt::format("cannot publish {}: {}", path, ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace powercut
