// Writing a whole buffer to a pipe, a character device or a file at its current offset: the one
// loop for short writes and EINTR (sockets use base/socket_io.h's SendAll, which also
// keeps SIGPIPE away; positioned writes use image_io.h's PwriteFull).
#pragma once

#include <string_view>

#include "absl/status/status.h"

namespace powercut {

// OK once every byte of `text` was written to `fd`; DataLoss with strerror otherwise (a closed
// pipe, a full disk), when only part of it may have been written.
absl::Status WriteFully(int fd, std::string_view text);

}  // namespace powercut
