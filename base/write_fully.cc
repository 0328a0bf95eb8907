#include "base/write_fully.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fmt/format.h"

namespace powercut {

absl::Status WriteFully(int fd, std::string_view text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::DataLossError(fmt::format("write: {}", std::strerror(errno)));
    if (n == 0) return absl::DataLossError("write: no progress (0 bytes written)");
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace powercut
