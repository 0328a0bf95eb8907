#include "harness/vm/nbd_server.h"

#include <endian.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/status_macros.h"
#include "base/tsan_mutex.h"
#include "fmt/format.h"
#include "harness/vm/socket_io.h"

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

constexpr uint16_t kCmdRead = 0;
constexpr uint16_t kCmdWrite = 1;
constexpr uint16_t kCmdDisc = 2;
constexpr uint16_t kCmdFlush = 3;
constexpr uint16_t kCmdFlagFua = 1;

constexpr uint32_t kEio = 5;
constexpr uint32_t kEinval = 22;
constexpr uint32_t kMaxRequestBytes = 32u << 20;

absl::Status ReadExact(int fd, void* buf, size_t n) {
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

absl::Status WriteExact(int fd, const void* buf, size_t n) {
  if (!SendAll(fd, buf, n).ok()) return absl::UnavailableError("nbd: connection closed");
  return absl::OkStatus();
}

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
  return WriteExact(fd, s.data(), s.size());
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

}  // namespace

absl::StatusOr<std::unique_ptr<NbdServer>> NbdServer::Start(const Options& options) {
  int image_fd = open(options.image_path.c_str(), O_RDWR | O_CLOEXEC);
  if (image_fd < 0) {
    return absl::NotFoundError(fmt::format("nbd server: cannot open image {}: {}",
                                           options.image_path, std::strerror(errno)));
  }
  struct stat st {};
  fstat(image_fd, &st);
  uint64_t bytes = static_cast<uint64_t>(st.st_size);
  if (bytes == 0 || bytes % 512 != 0) {
    close(image_fd);
    return absl::InvalidArgumentError(
        fmt::format("nbd server: image {} has {} bytes; it must be a non-empty multiple of 512",
                    options.image_path, bytes));
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (options.socket_path.size() >= sizeof(addr.sun_path)) {
    close(image_fd);
    return absl::InvalidArgumentError(fmt::format(
        "nbd server: socket path {} is too long for a unix socket; use a shorter run folder",
        options.socket_path));
  }
  std::strncpy(addr.sun_path, options.socket_path.c_str(), sizeof(addr.sun_path) - 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(fd, 4) != 0) {
    std::string err = std::strerror(errno);
    if (fd >= 0) close(fd);
    close(image_fd);
    return absl::UnavailableError(
        fmt::format("nbd server: cannot listen on {}: {}", options.socket_path, err));
  }
  std::unique_ptr<NbdServer> server(new NbdServer(options, fd, image_fd, bytes));
  server->thread_ = std::thread([s = server.get()] { s->Serve(); });
  return server;
}

NbdServer::~NbdServer() {
  Stop();
  if (image_fd_ >= 0) close(image_fd_);
}

void NbdServer::Stop() {
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
    unlink(options_.socket_path.c_str());
  }
}

absl::Status NbdServer::status() const {
  powercut::MutexLock lock(&mu_);
  return status_;
}

uint64_t NbdServer::requests() const {
  powercut::MutexLock lock(&mu_);
  return requests_;
}

uint64_t NbdServer::flushes() const {
  powercut::MutexLock lock(&mu_);
  return flushes_;
}

void NbdServer::ArmCut(uint64_t writes, std::function<void()> on_cut) {
  powercut::MutexLock lock(&mu_);
  if (cut_) return;
  cut_countdown_ = std::max<uint64_t>(1, writes);
  on_cut_ = std::move(on_cut);
}

bool NbdServer::cut() const {
  powercut::MutexLock lock(&mu_);
  return cut_;
}

void NbdServer::NoteError(const absl::Status& s) {
  powercut::MutexLock lock(&mu_);
  if (status_.ok()) status_ = s;
}

void NbdServer::Serve() {
  for (;;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    {
      powercut::MutexLock lock(&mu_);
      if (stopping_) {
        if (fd >= 0) close(fd);
        return;
      }
      if (fd < 0) {
        if (errno == EINTR) continue;
        return;
      }
      connection_fd_ = fd;
    }
    absl::Status s = ServeConnection(fd);
    {
      powercut::MutexLock lock(&mu_);
      if (cut_) {
        // The power is off: execute nothing more. The connection stays open (the client sees
        // neither a reply nor a hang-up) until Stop().
        while (!stopping_) powercut::Wait(&stop_cv_, &mu_);
        connection_fd_ = -1;
        close(fd);
        return;
      }
      connection_fd_ = -1;
    }
    close(fd);
    // A closed connection is how every session ends (the guest powered off or was killed).
    if (!s.ok() && !absl::IsUnavailable(s)) NoteError(s);
  }
}

absl::Status NbdServer::ServeConnection(int fd) {
  bool go = false;
  RETURN_IF_ERROR(Handshake(fd, &go));
  if (!go) return absl::OkStatus();
  return Transmission(fd);
}

absl::Status NbdServer::Handshake(int fd, bool* go) {
  std::string hello;
  Put64(hello, kNbdMagic);
  Put64(hello, kOptMagic);
  Put16(hello, kFlagFixedNewstyle | kFlagNoZeroes);
  RETURN_IF_ERROR(WriteExact(fd, hello.data(), hello.size()));
  uint32_t client_flags;
  RETURN_IF_ERROR(ReadExact(fd, &client_flags, 4));
  client_flags = be32toh(client_flags);
  const bool no_zeroes = (client_flags & kClientFlagNoZeroes) != 0;
  const uint16_t trans_flags = kTransHasFlags | kTransSendFlush | kTransSendFua;

  for (;;) {
    uint64_t magic;
    uint32_t option, length;
    RETURN_IF_ERROR(ReadExact(fd, &magic, 8));
    RETURN_IF_ERROR(ReadExact(fd, &option, 4));
    RETURN_IF_ERROR(ReadExact(fd, &length, 4));
    option = be32toh(option);
    length = be32toh(length);
    if (be64toh(magic) != kOptMagic || length > 65536) {
      return absl::InvalidArgumentError("nbd: bad option header from the client");
    }
    std::string data(length, '\0');
    RETURN_IF_ERROR(ReadExact(fd, data.data(), length));
    switch (option) {
      case kOptExportName: {
        std::string reply;
        Put64(reply, export_bytes_);
        Put16(reply, trans_flags);
        if (!no_zeroes) reply.append(124, '\0');
        RETURN_IF_ERROR(WriteExact(fd, reply.data(), reply.size()));
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
        Put32(sizes, 1);                 // minimum
        Put32(sizes, 4096);              // preferred
        Put32(sizes, kMaxRequestBytes);  // maximum
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

absl::Status NbdServer::Transmission(int fd) {
  std::vector<uint8_t> buf;
  for (;;) {
    uint8_t header[28];
    RETURN_IF_ERROR(ReadExact(fd, header, sizeof header));
    uint32_t magic, length;
    uint16_t flags, type;
    uint64_t handle, offset;
    std::memcpy(&magic, header, 4);
    std::memcpy(&flags, header + 4, 2);
    std::memcpy(&type, header + 6, 2);
    std::memcpy(&handle, header + 8, 8);  // opaque: echoed as is
    std::memcpy(&offset, header + 16, 8);
    std::memcpy(&length, header + 24, 4);
    magic = be32toh(magic);
    flags = be16toh(flags);
    type = be16toh(type);
    offset = be64toh(offset);
    length = be32toh(length);
    if (magic != kRequestMagic) return absl::InvalidArgumentError("nbd: bad request magic");
    if (type == kCmdDisc) return absl::OkStatus();

    uint32_t error = 0;
    bool in_range =
        length <= kMaxRequestBytes && offset <= export_bytes_ && length <= export_bytes_ - offset;
    if (type == kCmdWrite) {
      // The payload follows the header whatever we think of it.
      if (length > kMaxRequestBytes) return absl::InvalidArgumentError("nbd: write too large");
      buf.resize(length);
      RETURN_IF_ERROR(ReadExact(fd, buf.data(), length));
    }
    if (type == kCmdRead || type == kCmdWrite) {
      if (!in_range) error = kEinval;
    }
    if (error == 0 && type == kCmdWrite) {
      const bool fua = (flags & kCmdFlagFua) != 0;
      UndoRecord undo{offset, std::vector<uint8_t>(length), {}, fua, true};
      absl::Status s = PReadAll(image_fd_, undo.old_data.data(), length, offset);
      if (s.ok()) s = PWriteAll(image_fd_, buf.data(), length, offset);
      if (s.ok() && options_.recorder != nullptr) {
        s = options_.recorder->RecordWrite(offset, absl::MakeConstSpan(buf.data(), length), fua);
      }
      if (!s.ok()) {
        NoteError(absl::InternalError(fmt::format("nbd server: write at {} on {}: {}", offset,
                                                  options_.image_path, std::string(s.message()))));
        error = kEio;
      } else {
        undo.new_data = buf;
        bool cut_now = false;
        std::function<void()> on_cut;
        {
          powercut::MutexLock lock(&mu_);
          ++requests_;
          undo_.push_back(std::move(undo));
          if (!fua && cut_countdown_ > 0 && --cut_countdown_ == 0) {
            cut_ = cut_now = true;
            on_cut = std::move(on_cut_);
          }
        }
        if (cut_now) {
          if (on_cut) on_cut();
          return absl::CancelledError("nbd: power cut");  // no reply
        }
      }
    } else if (error == 0 && type == kCmdFlush) {
      absl::Status s =
          options_.recorder != nullptr ? options_.recorder->RecordFlush() : absl::OkStatus();
      if (!s.ok()) {
        NoteError(s);
        error = kEio;
      } else {
        powercut::MutexLock lock(&mu_);
        ++requests_;
        ++flushes_;
        for (auto& u : undo_) u.volatile_ = false;
        while (undo_.size() > options_.lying_window) undo_.pop_front();
      }
    } else if (error == 0 && type == kCmdRead) {
      buf.resize(length);
      if (!PReadAll(image_fd_, buf.data(), length, offset).ok()) error = kEio;
      powercut::MutexLock lock(&mu_);
      ++requests_;
    } else if (type != kCmdRead && type != kCmdWrite && type != kCmdFlush) {
      error = kEinval;  // trim, write-zeroes, block status: not advertised
    }

    std::string reply;
    Put32(reply, kSimpleReplyMagic);
    Put32(reply, error);
    reply.append(reinterpret_cast<const char*>(&handle), 8);
    RETURN_IF_ERROR(WriteExact(fd, reply.data(), reply.size()));
    if (type == kCmdRead && error == 0) RETURN_IF_ERROR(WriteExact(fd, buf.data(), length));
  }
}

absl::StatusOr<PowerCutReport> NbdServer::ApplyPowerCut(const harness::CacheModel& model,
                                                        uint64_t seed) {
  Stop();
  PowerCutReport report;
  report.model = model;
  report.seed = seed;
  powercut::MutexLock lock(&mu_);
  if (model.mode == harness::CacheMode::kOff) return report;
  // The writes whose fate is drawn form a suffix of the undo list.
  size_t first = undo_.size();
  if (model.mode == harness::CacheMode::kOn) {
    while (first > 0 && undo_[first - 1].volatile_) --first;
  } else if (model.window_in_bytes) {
    uint64_t bytes = 0;
    while (first > 0 && undo_.size() - first < options_.lying_window && bytes < model.window) {
      --first;
      bytes += undo_[first].new_data.size();
    }
  } else {
    const size_t window = std::min<uint64_t>(model.window, options_.lying_window);
    first = undo_.size() > window ? undo_.size() - window : 0;
  }
  // Back to the state before the suffix: undo newest first.
  for (size_t i = undo_.size(); i > first; --i) {
    const UndoRecord& u = undo_[i - 1];
    RETURN_IF_ERROR(PWriteAll(image_fd_, u.old_data.data(), u.old_data.size(), u.offset));
  }
  // Then replay the chosen subset in completion order.
  std::mt19937_64 rng(seed);
  const uint32_t unit = model.atomic_unit != 0      ? model.atomic_unit
                        : options_.atomic_unit != 0 ? options_.atomic_unit
                                                    : 4096;
  report.atomic_unit = unit;
  bool torn_one = false;
  for (size_t i = first; i < undo_.size(); ++i) {
    const UndoRecord& u = undo_[i];
    ++report.candidates;
    CutDecision d{
        .offset = u.offset, .bytes = u.new_data.size(), .fua = u.fua, .flushed = !u.volatile_};
    if (u.fua && model.mode == harness::CacheMode::kOn) {
      ++report.kept;
      report.decisions.push_back(d);
      RETURN_IF_ERROR(PWriteAll(image_fd_, u.new_data.data(), u.new_data.size(), u.offset));
      continue;
    }
    const uint64_t end = u.offset + u.new_data.size();
    const uint64_t units = u.new_data.empty() ? 0 : (end - 1) / unit - u.offset / unit + 1;
    uint64_t draw = rng() % 3;
    if (draw == 2 && (torn_one || units > 64)) draw = rng() % 2;  // one torn write at most
    switch (draw) {
      case 0:
        ++report.dropped;
        d.fate = CutDecision::Fate::kDropped;
        break;
      case 1:
        ++report.kept;
        RETURN_IF_ERROR(PWriteAll(image_fd_, u.new_data.data(), u.new_data.size(), u.offset));
        break;
      default: {
        ++report.torn;
        torn_one = true;
        d.fate = CutDecision::Fate::kTorn;
        // Each atomic unit (aligned on the device) survives or not on its own.
        uint64_t pos = u.offset;
        for (uint64_t k = 0; pos < end; ++k) {
          uint64_t next = std::min<uint64_t>(end, (pos / unit + 1) * unit);
          if (rng() % 2 == 0) {
            d.units_kept |= uint64_t{1} << k;
            RETURN_IF_ERROR(
                PWriteAll(image_fd_, u.new_data.data() + (pos - u.offset), next - pos, pos));
          }
          pos = next;
        }
        break;
      }
    }
    report.decisions.push_back(d);
  }
  if (fsync(image_fd_) != 0) {
    return absl::InternalError(
        fmt::format("power cut: fsync {}: {}", options_.image_path, std::strerror(errno)));
  }
  undo_.clear();
  return report;
}

}  // namespace powercut::vm
