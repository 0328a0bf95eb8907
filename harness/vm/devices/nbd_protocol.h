// The NBD protocol as powercut's block servers speak it (nbd_server.h: the recording device;
// state_server.h: crash states served to a checking guest): the fixed-newstyle handshake with
// one unnamed export advertising FLUSH and FUA, transmission requests, simple replies
// (https://github.com/NetworkBlockDevice/nbd/blob/master/doc/proto.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace powercut::vm {

inline constexpr uint16_t kNbdCmdRead = 0;
inline constexpr uint16_t kNbdCmdWrite = 1;
inline constexpr uint16_t kNbdCmdDisc = 2;
inline constexpr uint16_t kNbdCmdFlush = 3;
inline constexpr uint16_t kNbdCmdFlagFua = 1;
inline constexpr uint32_t kNbdEio = 5;
inline constexpr uint32_t kNbdEinval = 22;
inline constexpr uint32_t kNbdMaxRequestBytes = 32u << 20;

// A listening unix socket at `path` (a clear error when the path is too long or taken).
absl::StatusOr<int> NbdListen(const std::string& path);

// The listening side the recorder and the state server share: a thread that accepts one client
// at a time on a listening socket (from NbdListen) and hands it to the server, and Stop(), which
// shuts the listener and the current connection down, joins the thread, closes the listener and
// removes the socket file.
class NbdListener {
 public:
  // Serves one accepted connection; false ends the serving thread. The listener closes `fd`
  // afterwards, so until `serve` returns, Stop() can shut the connection down.
  using ServeFn = std::function<bool(int fd)>;

  NbdListener(int listen_fd, std::string socket_path)
      : listen_fd_(listen_fd), socket_path_(std::move(socket_path)) {}
  ~NbdListener() { Stop(); }
  NbdListener(const NbdListener&) = delete;
  NbdListener& operator=(const NbdListener&) = delete;

  // Starts the serving thread (once).
  void Start(ServeFn serve);
  // Stops serving and joins the thread. Idempotent.
  void Stop();
  // Blocks until Stop() was called: a serve function that must keep its connection open, neither
  // replying nor hanging up, until the server stops (the recorder after a power cut).
  void WaitForStop();

 private:
  void Serve(const ServeFn& serve);
  // The next client, published in connection_fd_; -1 when stopping or the listener failed.
  int Accept();

  int listen_fd_;
  const std::string socket_path_;
  std::thread thread_;
  // Locked with base/tsan_mutex.h's helpers, so TSan sees the edges of Debian's prebuilt Abseil.
  absl::Mutex mu_;
  absl::CondVar stop_cv_;  // signalled when stopping_ becomes true
  int connection_fd_ ABSL_GUARDED_BY(mu_) = -1;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

// Exact reads and writes on the connection; a closed connection is Unavailable.
absl::Status NbdReadExact(int fd, void* buf, size_t n);
absl::Status NbdWriteExact(int fd, const void* buf, size_t n);
// pread/pwrite of exactly n bytes; a read past the end of a sparse file yields zeros.
absl::Status PReadAll(int fd, uint8_t* data, size_t n, uint64_t offset);
absl::Status PWriteAll(int fd, const uint8_t* data, size_t n, uint64_t offset);

// The server's side of the handshake for an export of `export_bytes`; `go` is set when the
// client entered transmission (false: it aborted).
absl::Status NbdHandshake(int fd, uint64_t export_bytes, bool* go);

struct NbdRequest {
  uint16_t flags = 0;
  uint16_t type = 0;
  uint64_t handle = 0;  // opaque: echoed as is
  uint64_t offset = 0;
  uint32_t length = 0;
  // Whether [offset, offset + length) lies in the export and length is at most the maximum.
  bool InRange(uint64_t export_bytes) const {
    return length <= kNbdMaxRequestBytes && offset <= export_bytes &&
           length <= export_bytes - offset;
  }
};
// One request header; InvalidArgument on a bad magic.
absl::Status ReadNbdRequest(int fd, NbdRequest* request);
// A simple reply, then `data` (the payload of a successful read; may be null).
absl::Status SendNbdReply(int fd, uint64_t handle, uint32_t error, const uint8_t* data,
                          size_t length);

}  // namespace powercut::vm
