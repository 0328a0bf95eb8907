#include "base/hash.h"

#include <fcntl.h>
#include <unistd.h>

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
  if (fd < 0) {
    return absl::Status(absl::ErrnoToStatusCode(errno),
                        fmt::format("open({}) to hash it: {}", path, std::strerror(errno)));
  }
  Hasher hasher;
  std::vector<uint8_t> buf(1 << 20);
  while (true) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return absl::Status(absl::ErrnoToStatusCode(err),
                          fmt::format("read({}) to hash it: {}", path, std::strerror(err)));
    }
    if (n == 0) break;
    hasher.Update(buf.data(), static_cast<size_t>(n));
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
