#include "harness/vm/devices/state_server.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/status_macros.h"
#include "base/tsan_mutex.h"
#include "fmt/format.h"
#include "harness/vm/devices/nbd_protocol.h"

namespace powercut::vm {

absl::StatusOr<std::unique_ptr<StateServer>> StateServer::Start(const Options& options) {
  if (options.image_fd < 0 || options.image_bytes == 0 || options.image_bytes % kPage != 0 ||
      options.image_offset % kPage != 0) {
    return absl::InvalidArgumentError(fmt::format(
        "state server: the image has {} bytes at offset {}; serving it needs a non-empty "
        "multiple of {} at a multiple of it",
        options.image_bytes, options.image_offset, kPage));
  }
  ASSIGN_OR_RETURN(int fd, NbdListen(options.socket_path));
  std::unique_ptr<StateServer> server(new StateServer(options, fd));
  {
    powercut::MutexLock lock(&server->mu_);
    server->image_fd_ = options.image_fd;
    server->image_offset_ = options.image_offset;
  }
  server->listener_.Start([s = server.get()](int client) { return s->Serve(client); });
  return server;
}

StateServer::~StateServer() { Stop(); }

void StateServer::Stop() { listener_.Stop(); }

std::string StateServer::TokenFor(uint64_t generation) {
  return fmt::format("powercut-state {}\n", generation);
}

void StateServer::ServeState(uint64_t generation) {
  powercut::MutexLock lock(&mu_);
  overlay_.clear();
  generation_ = generation;
  refused_ = 0;
  sealed_ = false;
}

absl::Status StateServer::UseImage(int image_fd, uint64_t image_bytes, uint64_t image_offset) {
  powercut::MutexLock lock(&mu_);
  if (image_bytes != options_.image_bytes) {
    return absl::FailedPreconditionError(fmt::format(
        "state server: an image of {} bytes on a disk of {}", image_bytes, options_.image_bytes));
  }
  if (!sealed_) return absl::FailedPreconditionError("state server: a state is being served");
  if (image_offset % kPage != 0) {
    return absl::InvalidArgumentError(
        fmt::format("state server: offset {} is not a multiple of {}", image_offset, kPage));
  }
  image_fd_ = image_fd;
  image_offset_ = image_offset;
  overlay_.clear();
  return absl::OkStatus();
}

void StateServer::Seal() {
  powercut::MutexLock lock(&mu_);
  sealed_ = true;
}

uint64_t StateServer::refused_writes() const {
  powercut::MutexLock lock(&mu_);
  return refused_;
}

uint64_t StateServer::overlay_pages() const {
  powercut::MutexLock lock(&mu_);
  return overlay_.size();
}

absl::Status StateServer::status() const {
  powercut::MutexLock lock(&mu_);
  return status_;
}

bool StateServer::Serve(int fd) {
  bool go = false;
  absl::Status s = NbdHandshake(fd, export_bytes(), &go);
  if (s.ok() && go) s = Transmission(fd);
  powercut::MutexLock lock(&mu_);
  if (!s.ok() && !absl::IsUnavailable(s) && status_.ok()) status_ = s;
  return true;
}

absl::Status StateServer::ReadPage(uint64_t page, uint8_t* out) {
  if (auto it = overlay_.find(page); it != overlay_.end()) {
    std::memcpy(out, it->second->data(), kPage);
    return absl::OkStatus();
  }
  if (page * kPage >= options_.image_bytes) {  // the state block
    std::memset(out, 0, kPage);
    const std::string token = TokenFor(generation_);
    std::memcpy(out, token.data(), token.size());
    return absl::OkStatus();
  }
  return PReadAll(image_fd_, out, kPage, image_offset_ + page * kPage);
}

absl::Status StateServer::Read(uint64_t offset, uint8_t* out, size_t length) {
  powercut::MutexLock lock(&mu_);
  Page page{};
  while (length > 0) {
    const uint64_t index = offset / kPage;
    const size_t within = offset % kPage;
    const size_t n = std::min<size_t>(length, kPage - within);
    if (within == 0 && n == kPage) {
      RETURN_IF_ERROR(ReadPage(index, out));
    } else {
      RETURN_IF_ERROR(ReadPage(index, page.data()));
      std::memcpy(out, page.data() + within, n);
    }
    out += n;
    offset += n;
    length -= n;
  }
  return absl::OkStatus();
}

absl::Status StateServer::Write(uint64_t offset, const uint8_t* data, size_t length) {
  powercut::MutexLock lock(&mu_);
  if (sealed_) {
    ++refused_;
    return absl::FailedPreconditionError("write while sealed");
  }
  while (length > 0) {
    const uint64_t index = offset / kPage;
    const size_t within = offset % kPage;
    const size_t n = std::min<size_t>(length, kPage - within);
    auto it = overlay_.find(index);
    if (it == overlay_.end()) {
      // A partial page starts from what the page reads now (before it is in the overlay).
      auto page = std::make_unique<Page>();
      if (n != kPage) RETURN_IF_ERROR(ReadPage(index, page->data()));
      it = overlay_.emplace(index, std::move(page)).first;
    }
    std::memcpy(it->second->data() + within, data, n);
    data += n;
    offset += n;
    length -= n;
  }
  return absl::OkStatus();
}

absl::Status StateServer::Transmission(int fd) {
  std::vector<uint8_t> buf;
  const uint64_t bytes = export_bytes();
  for (;;) {
    NbdRequest r;
    RETURN_IF_ERROR(ReadNbdRequest(fd, &r));
    if (r.type == kNbdCmdDisc) return absl::OkStatus();
    uint32_t error = 0;
    if (r.type == kNbdCmdWrite) {
      if (r.length > kNbdMaxRequestBytes) return absl::InvalidArgumentError("nbd: write too large");
      buf.resize(r.length);
      RETURN_IF_ERROR(NbdReadExact(fd, buf.data(), r.length));
      if (!r.InRange(bytes)) {
        error = kNbdEinval;
      } else if (!Write(r.offset, buf.data(), r.length).ok()) {
        error = kNbdEio;
      }
    } else if (r.type == kNbdCmdRead) {
      if (!r.InRange(bytes)) {
        error = kNbdEinval;
      } else {
        buf.resize(r.length);
        absl::Status s = Read(r.offset, buf.data(), r.length);
        if (!s.ok()) {
          error = kNbdEio;
          powercut::MutexLock lock(&mu_);
          if (status_.ok()) status_ = s;
        }
      }
    } else if (r.type != kNbdCmdFlush) {
      error = kNbdEinval;  // trim, write-zeroes, block status: not advertised
    }
    RETURN_IF_ERROR(SendNbdReply(
        fd, r.handle, error, r.type == kNbdCmdRead && error == 0 ? buf.data() : nullptr, r.length));
  }
}

}  // namespace powercut::vm
