#include "harness/vm/devices/nbd_server.h"

#include <endian.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/status_macros.h"
#include "base/tsan_mutex.h"
#include "fmt/format.h"
#include "harness/vm/devices/nbd_protocol.h"

namespace powercut::vm {

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
  absl::StatusOr<int> fd = NbdListen(options.socket_path);
  if (!fd.ok()) {
    close(image_fd);
    return fd.status();
  }
  std::unique_ptr<NbdServer> server(new NbdServer(options, *fd, image_fd, bytes));
  server->listener_.Start([s = server.get()](int client) { return s->Serve(client); });
  return server;
}

NbdServer::~NbdServer() {
  Stop();
  if (image_fd_ >= 0) close(image_fd_);
}

void NbdServer::Stop() { listener_.Stop(); }

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

bool NbdServer::Serve(int fd) {
  absl::Status s = ServeConnection(fd);
  // cut_ is set on this thread (Transmission), so reading it after the connection is exact.
  if (cut()) {
    // The power is off: execute nothing more. The connection stays open (the client sees
    // neither a reply nor a hang-up) until Stop().
    listener_.WaitForStop();
    return false;
  }
  // A closed connection is how every session ends (the guest powered off or was killed).
  if (!s.ok() && !absl::IsUnavailable(s)) NoteError(s);
  return true;
}

absl::Status NbdServer::ServeConnection(int fd) {
  bool go = false;
  RETURN_IF_ERROR(Handshake(fd, &go));
  if (!go) return absl::OkStatus();
  return Transmission(fd);
}

absl::Status NbdServer::Handshake(int fd, bool* go) { return NbdHandshake(fd, export_bytes_, go); }

absl::Status NbdServer::Transmission(int fd) {
  std::vector<uint8_t> buf;
  for (;;) {
    NbdRequest request;
    RETURN_IF_ERROR(ReadNbdRequest(fd, &request));
    const uint16_t flags = request.flags;
    const uint16_t type = request.type;
    const uint64_t offset = request.offset;
    const uint32_t length = request.length;
    if (type == kNbdCmdDisc) return absl::OkStatus();

    uint32_t error = 0;
    bool in_range = request.InRange(export_bytes_);
    if (type == kNbdCmdWrite) {
      // The payload follows the header whatever we think of it.
      if (length > kNbdMaxRequestBytes) return absl::InvalidArgumentError("nbd: write too large");
      buf.resize(length);
      RETURN_IF_ERROR(NbdReadExact(fd, buf.data(), length));
    }
    if (type == kNbdCmdRead || type == kNbdCmdWrite) {
      if (!in_range) error = kNbdEinval;
    }
    if (error == 0 && type == kNbdCmdWrite) {
      const bool fua = (flags & kNbdCmdFlagFua) != 0;
      UndoRecord undo{offset, std::vector<uint8_t>(length), {}, fua, true};
      absl::Status s = PReadAll(image_fd_, undo.old_data.data(), length, offset);
      if (s.ok()) s = PWriteAll(image_fd_, buf.data(), length, offset);
      if (s.ok() && options_.recorder != nullptr) {
        s = options_.recorder->RecordDiskWrite(options_.disk, offset,
                                               absl::MakeConstSpan(buf.data(), length), fua);
      }
      if (!s.ok()) {
        NoteError(absl::InternalError(fmt::format("nbd server: write at {} on {}: {}", offset,
                                                  options_.image_path, std::string(s.message()))));
        error = kNbdEio;
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
    } else if (error == 0 && type == kNbdCmdFlush) {
      absl::Status s = options_.recorder != nullptr
                           ? options_.recorder->RecordDiskFlush(options_.disk)
                           : absl::OkStatus();
      if (!s.ok()) {
        NoteError(s);
        error = kNbdEio;
      } else {
        powercut::MutexLock lock(&mu_);
        ++requests_;
        ++flushes_;
        for (auto& u : undo_) u.volatile_ = false;
        while (undo_.size() > options_.lying_window) undo_.pop_front();
      }
    } else if (error == 0 && type == kNbdCmdRead) {
      buf.resize(length);
      if (!PReadAll(image_fd_, buf.data(), length, offset).ok()) error = kNbdEio;
      powercut::MutexLock lock(&mu_);
      ++requests_;
    } else if (type != kNbdCmdRead && type != kNbdCmdWrite && type != kNbdCmdFlush) {
      error = kNbdEinval;  // trim, write-zeroes, block status: not advertised
    }

    RETURN_IF_ERROR(SendNbdReply(fd, request.handle, error,
                                 type == kNbdCmdRead && error == 0 ? buf.data() : nullptr, length));
  }
}

absl::StatusOr<PowerCutReport> NbdServer::ApplyPowerCut(const harness::CacheModel& model,
                                                        uint64_t seed, bool may_tear) {
  Stop();
  powercut::MutexLock lock(&mu_);
  return CutLocked(model, seed, may_tear);
}

absl::StatusOr<PowerCutReport> NbdServer::ApplyNodeCut(const harness::CacheModel& model,
                                                       uint64_t seed) {
  powercut::MutexLock lock(&mu_);
  return CutLocked(model, seed, /*may_tear=*/true);
}

absl::StatusOr<PowerCutReport> NbdServer::CutLocked(const harness::CacheModel& model, uint64_t seed,
                                                    bool may_tear) {
  PowerCutReport report;
  report.model = model;
  report.seed = seed;
  if (model.mode == harness::CacheMode::kOff) {
    undo_.clear();
    return report;
  }
  const size_t first = FirstCandidate(model);
  // Back to the state before the suffix: undo newest first.
  for (size_t i = undo_.size(); i > first; --i) {
    const UndoRecord& u = undo_[i - 1];
    RETURN_IF_ERROR(PWriteAll(image_fd_, u.old_data.data(), u.old_data.size(), u.offset));
  }
  // Then replay the chosen subset in completion order.
  std::mt19937_64 rng(seed);
  report.atomic_unit = model.atomic_unit != 0      ? model.atomic_unit
                       : options_.atomic_unit != 0 ? options_.atomic_unit
                                                   : 4096;
  bool torn_one = !may_tear;
  for (size_t i = first; i < undo_.size(); ++i) {
    RETURN_IF_ERROR(ReplayCandidate(undo_[i], model, &rng, &torn_one, &report));
  }
  if (fsync(image_fd_) != 0) {
    return absl::InternalError(
        fmt::format("power cut: fsync {}: {}", options_.image_path, std::strerror(errno)));
  }
  // What the drive kept is on its media now; after a node cut its cache starts empty.
  undo_.clear();
  return report;
}

size_t NbdServer::FirstCandidate(const harness::CacheModel& model) const {
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
  return first;
}

absl::Status NbdServer::ReplayCandidate(const UndoRecord& u, const harness::CacheModel& model,
                                        std::mt19937_64* rng, bool* torn_one,
                                        PowerCutReport* report) const {
  ++report->candidates;
  CutDecision d{
      .offset = u.offset, .bytes = u.new_data.size(), .fua = u.fua, .flushed = !u.volatile_};
  if (u.fua && model.mode == harness::CacheMode::kOn) {
    ++report->kept;
    report->decisions.push_back(d);
    return PWriteAll(image_fd_, u.new_data.data(), u.new_data.size(), u.offset);
  }
  const uint32_t unit = report->atomic_unit;
  const uint64_t end = u.offset + u.new_data.size();
  const uint64_t units = u.new_data.empty() ? 0 : (end - 1) / unit - u.offset / unit + 1;
  uint64_t draw = (*rng)() % 3;
  if (draw == 2 && (*torn_one || units > 64)) draw = (*rng)() % 2;  // one torn write at most
  switch (draw) {
    case 0:
      ++report->dropped;
      d.fate = CutDecision::Fate::kDropped;
      break;
    case 1:
      ++report->kept;
      RETURN_IF_ERROR(PWriteAll(image_fd_, u.new_data.data(), u.new_data.size(), u.offset));
      break;
    default:
      ++report->torn;
      *torn_one = true;
      d.fate = CutDecision::Fate::kTorn;
      RETURN_IF_ERROR(TearWrite(u, unit, rng, &d));
      break;
  }
  report->decisions.push_back(d);
  return absl::OkStatus();
}

absl::Status NbdServer::TearWrite(const UndoRecord& u, uint32_t unit, std::mt19937_64* rng,
                                  CutDecision* d) const {
  // Each atomic unit (aligned on the device) survives or not on its own.
  const uint64_t end = u.offset + u.new_data.size();
  uint64_t pos = u.offset;
  for (uint64_t k = 0; pos < end; ++k) {
    uint64_t next = std::min<uint64_t>(end, (pos / unit + 1) * unit);
    if ((*rng)() % 2 == 0) {
      d->units_kept |= uint64_t{1} << k;
      RETURN_IF_ERROR(PWriteAll(image_fd_, u.new_data.data() + (pos - u.offset), next - pos, pos));
    }
    pos = next;
  }
  return absl::OkStatus();
}

}  // namespace powercut::vm
