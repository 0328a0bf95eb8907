#include "harness/vm/devices/nbd_protocol.h"

#include <endian.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "base/socket_io.h"
#include "base/status_macros.h"
#include "base/tsan_mutex.h"
#include "fmt/format.h"

namespace powercut::vm {
namespace {

// The NBD protocol (https://github.com/NetworkBlockDevice/nbd/blob/master/doc/proto.md).
constexpr uint64_t kNbdMagic = 0x4e42444d41474943ULL;  // "NBDMAGIC"
constexpr uint64_t kOptMagic = 0x49484156454F5054ULL;  // "IHAVEOPT"
constexpr uint64_t kRepMagic = 0x3e889045565a9ULL;
constexpr uint32_t kRequestMagic = 0x25609513;
constexpr uint32_t kSimpleReplyMagic = 0x67446698;

constexpr uint16_t kFlagFixedNewstyle = 1;
constexpr uint16_t kFlagNoZeroes = 2;
constexpr uint32_t kClientFlagNoZeroes = 2;

constexpr uint32_t kOptExportName = 1;
constexpr uint32_t kOptAbort = 2;
constexpr uint32_t kOptList = 3;
constexpr uint32_t kOptInfo = 6;
constexpr uint32_t kOptGo = 7;

constexpr uint32_t kRepAck = 1;
constexpr uint32_t kRepServer = 2;
constexpr uint32_t kRepInfo = 3;
constexpr uint32_t kRepErrUnsup = 0x80000001;
constexpr uint32_t kRepErrInvalid = 0x80000003;

constexpr uint16_t kInfoExport = 0;
constexpr uint16_t kInfoBlockSize = 3;

constexpr uint16_t kTransHasFlags = 1;
constexpr uint16_t kTransSendFlush = 4;
constexpr uint16_t kTransSendFua = 8;

void Put16(std::string& s, uint16_t v) {
  v = htobe16(v);
  s.append(reinterpret_cast<const char*>(&v), 2);
}
void Put32(std::string& s, uint32_t v) {
  v = htobe32(v);
  s.append(reinterpret_cast<const char*>(&v), 4);
}
void Put64(std::string& s, uint64_t v) {
  v = htobe64(v);
  s.append(reinterpret_cast<const char*>(&v), 8);
}

absl::Status SendOptionReply(int fd, uint32_t option, uint32_t type, const std::string& data) {
  std::string s;
  Put64(s, kRepMagic);
  Put32(s, option);
  Put32(s, type);
  Put32(s, static_cast<uint32_t>(data.size()));
  s += data;
  return NbdWriteExact(fd, s.data(), s.size());
}

}  // namespace

absl::StatusOr<int> NbdListen(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(fmt::format(
        "nbd server: socket path {} is too long for a unix socket; use a shorter run folder",
        path));
  }
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(fd, 4) != 0) {
    std::string err = std::strerror(errno);
    if (fd >= 0) close(fd);
    return absl::UnavailableError(fmt::format("nbd server: cannot listen on {}: {}", path, err));
  }
  return fd;
}

void NbdListener::Start(ServeFn serve) {
  thread_ = std::thread([this, serve = std::move(serve)] { Serve(serve); });
}

void NbdListener::Stop() {
  {
    powercut::MutexLock lock(&mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    stop_cv_.SignalAll();
    if (connection_fd_ >= 0) shutdown(connection_fd_, SHUT_RDWR);
  }
  if (listen_fd_ >= 0) shutdown(listen_fd_, SHUT_RDWR);
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    listen_fd_ = -1;
    unlink(socket_path_.c_str());
  }
}

void NbdListener::WaitForStop() {
  powercut::MutexLock lock(&mu_);
  while (!stopping_) powercut::Wait(&stop_cv_, &mu_);
}

void NbdListener::Serve(const ServeFn& serve) {
  for (;;) {
    const int fd = Accept();
    if (fd < 0) return;
    const bool more = serve(fd);
    {
      powercut::MutexLock lock(&mu_);
      connection_fd_ = -1;
    }
    close(fd);
    if (!more) return;
  }
}

int NbdListener::Accept() {
  for (;;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    powercut::MutexLock lock(&mu_);
    if (stopping_) {
      if (fd >= 0) close(fd);
      return -1;
    }
    if (fd < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    connection_fd_ = fd;
    return fd;
  }
}

absl::Status NbdReadExact(int fd, void* buf, size_t n) {
  auto* p = static_cast<uint8_t*>(buf);
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return absl::UnavailableError("nbd: connection closed");
    p += r;
    n -= static_cast<size_t>(r);
  }
  return absl::OkStatus();
}

absl::Status NbdWriteExact(int fd, const void* buf, size_t n) {
  if (!SendAll(fd, buf, n).ok()) return absl::UnavailableError("nbd: connection closed");
  return absl::OkStatus();
}

absl::Status PWriteAll(int fd, const uint8_t* data, size_t n, uint64_t offset) {
  while (n > 0) {
    ssize_t r = pwrite(fd, data, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return absl::InternalError(fmt::format("pwrite: {}", std::strerror(errno)));
    data += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
  return absl::OkStatus();
}

absl::Status PReadAll(int fd, uint8_t* data, size_t n, uint64_t offset) {
  while (n > 0) {
    ssize_t r = pread(fd, data, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return absl::InternalError(fmt::format("pread: {}", std::strerror(errno)));
    if (r == 0) {  // sparse end of file
      std::memset(data, 0, n);
      return absl::OkStatus();
    }
    data += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
  return absl::OkStatus();
}

absl::Status NbdHandshake(int fd, uint64_t export_bytes_, bool* go) {
  std::string hello;
  Put64(hello, kNbdMagic);
  Put64(hello, kOptMagic);
  Put16(hello, kFlagFixedNewstyle | kFlagNoZeroes);
  RETURN_IF_ERROR(NbdWriteExact(fd, hello.data(), hello.size()));
  uint32_t client_flags;
  RETURN_IF_ERROR(NbdReadExact(fd, &client_flags, 4));
  client_flags = be32toh(client_flags);
  const bool no_zeroes = (client_flags & kClientFlagNoZeroes) != 0;
  const uint16_t trans_flags = kTransHasFlags | kTransSendFlush | kTransSendFua;

  for (;;) {
    uint64_t magic;
    uint32_t option, length;
    RETURN_IF_ERROR(NbdReadExact(fd, &magic, 8));
    RETURN_IF_ERROR(NbdReadExact(fd, &option, 4));
    RETURN_IF_ERROR(NbdReadExact(fd, &length, 4));
    option = be32toh(option);
    length = be32toh(length);
    if (be64toh(magic) != kOptMagic || length > 65536) {
      return absl::InvalidArgumentError("nbd: bad option header from the client");
    }
    std::string data(length, '\0');
    RETURN_IF_ERROR(NbdReadExact(fd, data.data(), length));
    switch (option) {
      case kOptExportName: {
        std::string reply;
        Put64(reply, export_bytes_);
        Put16(reply, trans_flags);
        if (!no_zeroes) reply.append(124, '\0');
        RETURN_IF_ERROR(NbdWriteExact(fd, reply.data(), reply.size()));
        *go = true;
        return absl::OkStatus();
      }
      case kOptAbort:
        RETURN_IF_ERROR(SendOptionReply(fd, option, kRepAck, ""));
        return absl::OkStatus();
      case kOptList: {
        std::string name;
        Put32(name, 0);  // the one export has the empty name
        RETURN_IF_ERROR(SendOptionReply(fd, option, kRepServer, name));
        RETURN_IF_ERROR(SendOptionReply(fd, option, kRepAck, ""));
        break;
      }
      case kOptInfo:
      case kOptGo: {
        if (length < 6) {
          RETURN_IF_ERROR(SendOptionReply(fd, option, kRepErrInvalid, ""));
          break;
        }
        std::string info;
        Put16(info, kInfoExport);
        Put64(info, export_bytes_);
        Put16(info, trans_flags);
        RETURN_IF_ERROR(SendOptionReply(fd, option, kRepInfo, info));
        std::string sizes;
        Put16(sizes, kInfoBlockSize);
        Put32(sizes, 1);                    // minimum
        Put32(sizes, 4096);                 // preferred
        Put32(sizes, kNbdMaxRequestBytes);  // maximum
        RETURN_IF_ERROR(SendOptionReply(fd, option, kRepInfo, sizes));
        RETURN_IF_ERROR(SendOptionReply(fd, option, kRepAck, ""));
        if (option == kOptGo) {
          *go = true;
          return absl::OkStatus();
        }
        break;
      }
      default:
        // Structured replies, meta contexts, TLS: not offered; the client falls back.
        RETURN_IF_ERROR(SendOptionReply(fd, option, kRepErrUnsup, ""));
        break;
    }
  }
}

absl::Status ReadNbdRequest(int fd, NbdRequest* r) {
  uint8_t header[28];
  RETURN_IF_ERROR(NbdReadExact(fd, header, sizeof header));
  uint32_t magic;
  std::memcpy(&magic, header, 4);
  std::memcpy(&r->flags, header + 4, 2);
  std::memcpy(&r->type, header + 6, 2);
  std::memcpy(&r->handle, header + 8, 8);
  std::memcpy(&r->offset, header + 16, 8);
  std::memcpy(&r->length, header + 24, 4);
  r->flags = be16toh(r->flags);
  r->type = be16toh(r->type);
  r->offset = be64toh(r->offset);
  r->length = be32toh(r->length);
  if (be32toh(magic) != kRequestMagic) return absl::InvalidArgumentError("nbd: bad request magic");
  return absl::OkStatus();
}

absl::Status SendNbdReply(int fd, uint64_t handle, uint32_t error, const uint8_t* data,
                          size_t length) {
  std::string reply;
  Put32(reply, kSimpleReplyMagic);
  Put32(reply, error);
  reply.append(reinterpret_cast<const char*>(&handle), 8);
  RETURN_IF_ERROR(NbdWriteExact(fd, reply.data(), reply.size()));
  if (data != nullptr && length > 0) RETURN_IF_ERROR(NbdWriteExact(fd, data, length));
  return absl::OkStatus();
}

}  // namespace powercut::vm
