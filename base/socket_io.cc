#include "base/socket_io.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace powercut {

absl::Status SendAll(int fd, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    ssize_t w = send(fd, p, size, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w == 0) return absl::UnavailableError("connection closed");
    if (w < 0) return absl::UnavailableError(std::strerror(errno));
    p += w;
    size -= static_cast<size_t>(w);
  }
  return absl::OkStatus();
}

}  // namespace powercut
