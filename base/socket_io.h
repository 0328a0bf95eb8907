// Writing a whole buffer to a connected socket: the one loop the NBD server, the ack channel and
// the QMP client share. MSG_NOSIGNAL: a peer that went away (qemu killed by a power cut) is an
// error, not a SIGPIPE that ends powercut.
#pragma once

#include <cstddef>

#include "absl/status/status.h"

namespace powercut {

// OK once every byte was sent; Unavailable otherwise, its message the reason ("connection
// closed", or strerror of the failing send) for the caller to prefix with what it was doing.
absl::Status SendAll(int fd, const void* data, size_t size);

}  // namespace powercut
