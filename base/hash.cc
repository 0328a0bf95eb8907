#include "base/hash.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "fmt/format.h"
#include "xxhash.h"

namespace powercut {

std::string Hash128::Hex() const { return fmt::format("{:016x}{:016x}", high, low); }

Hash128 HashBytes(absl::Span<const uint8_t> data) {
  XXH128_hash_t h = XXH3_128bits(data.data(), data.size());
  return Hash128{h.high64, h.low64};
}

absl::StatusOr<Hash128> HashFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  auto fail = [&](const char* call) {
    int err = errno;
    if (fd >= 0) ::close(fd);
    return absl::Status(absl::ErrnoToStatusCode(err),
                        fmt::format("{}({}) to hash it: {}", call, path, std::strerror(err)));
  };
  if (fd < 0) return fail("open");
  struct stat st;
  if (::fstat(fd, &st) != 0) return fail("fstat");
  Hasher hasher;
  std::vector<uint8_t> buf(1 << 20);
  if (!S_ISREG(st.st_mode)) {
    // A pipe or a device: read to the end.
    for (;;) {
      ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return fail("read");
      if (n == 0) break;
      hasher.Update(buf.data(), static_cast<size_t>(n));
    }
    ::close(fd);
    return hasher.Digest();
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  // Disk images are mostly holes (a 512 MiB ext4 image holds a few hundred KiB of data): a hole
  // is hashed from a buffer of zeros instead of being read, which gives the same digest.
  static const std::vector<uint8_t> zeros(1 << 20, 0);
  uint64_t pos = 0;
  while (pos < size) {
    off_t data = ::lseek(fd, static_cast<off_t>(pos), SEEK_DATA);
    uint64_t data_at = size;
    if (data >= 0) {
      data_at = static_cast<uint64_t>(data);
    } else if (errno != ENXIO) {
      data_at = pos;  // SEEK_DATA unsupported: read everything
    }
    for (; pos < data_at; pos += std::min<uint64_t>(zeros.size(), data_at - pos)) {
      hasher.Update(zeros.data(), std::min<uint64_t>(zeros.size(), data_at - pos));
    }
    if (pos >= size) break;
    off_t hole = ::lseek(fd, static_cast<off_t>(pos), SEEK_HOLE);
    const uint64_t hole_at = hole >= 0 ? static_cast<uint64_t>(hole) : size;
    while (pos < hole_at) {
      ssize_t n = ::pread(fd, buf.data(), std::min<uint64_t>(buf.size(), hole_at - pos),
                          static_cast<off_t>(pos));
      if (n < 0) {
        if (errno == EINTR) continue;
        return fail("read");
      }
      if (n == 0) {
        pos = size;  // the file shrank while hashed: hash what was there
        break;
      }
      hasher.Update(buf.data(), static_cast<size_t>(n));
      pos += static_cast<uint64_t>(n);
    }
  }
  ::close(fd);
  return hasher.Digest();
}

Hasher::Hasher() : state_(XXH3_createState()) {
  XXH3_128bits_reset(static_cast<XXH3_state_t*>(state_));
}
Hasher::~Hasher() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }
void Hasher::Update(const void* data, size_t size) {
  XXH3_128bits_update(static_cast<XXH3_state_t*>(state_), data, size);
}
void Hasher::UpdateU64(uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
  Update(b, 8);
}
Hash128 Hasher::Digest() const {
  XXH128_hash_t h = XXH3_128bits_digest(static_cast<XXH3_state_t*>(state_));
  return Hash128{h.high64, h.low64};
}

}  // namespace powercut
