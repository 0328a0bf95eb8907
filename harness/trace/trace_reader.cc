#include "harness/trace/trace_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fmt/format.h"

namespace powercut::harness {
namespace {

bool AllZero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

// Why a block is not a well-formed entry, or "" if it is.
std::string EntryProblem(const uint8_t* block, uint32_t ss, const EntryHeader& h) {
  if (h.flags & ~kKnownFlags) {
    return fmt::format("unknown flags 0x{:x} (known: FLUSH=1 FUA=2 DISCARD=4 MARK=8 METADATA=16)",
                       h.flags);
  }
  if (h.flags & kFlagMark) {
    if (h.data_len > MaxMarkBytes(ss)) {
      return fmt::format("mark of {} bytes is longer than the {} a {}-byte entry block holds",
                         h.data_len, MaxMarkBytes(ss), ss);
    }
    if (h.nr_sectors != 0) return fmt::format("mark with {} data sectors", h.nr_sectors);
    const uint8_t* text = block + kEntryHeaderBytes;
    if (std::memchr(text, 0, h.data_len) != nullptr) return "mark text contains a NUL byte";
    if (!AllZero(text + h.data_len, ss - kEntryHeaderBytes - h.data_len)) {
      return "non-zero bytes after the mark text";
    }
    return "";
  }
  if (h.flags == 0 && h.nr_sectors == 0) return "all-zero entry (no flags, no sectors)";
  if (h.data_len != 0) return fmt::format("data_len {} on a non-mark entry", h.data_len);
  if (!AllZero(block + kEntryHeaderBytes, ss - kEntryHeaderBytes)) {
    return "non-zero padding after the entry header";
  }
  if ((h.flags & kFlagFlush) == 0 && h.nr_sectors == 0) {
    return "write or discard of zero sectors";
  }
  if (h.nr_sectors > (uint64_t{1} << 40) / ss) {
    return fmt::format("{} sectors is not a plausible request size", h.nr_sectors);
  }
  return "";
}

// Reads a dm-log-writes log: the superblock, then entry blocks until the log ends, is cut, or
// holds a block that is not an entry. One parser a log; Parse() is its one use.
class TraceParser {
 public:
  TraceParser(absl::Span<const uint8_t> log, const TraceReadOptions& options)
      : log_(log), options_(options), name_(options.name) {}

  absl::StatusOr<Trace> Parse() {
    if (absl::Status s = ReadSuperblock(); !s.ok()) return s;
    if (absl::Status s = ReadEntries(); !s.ok()) return s;
    NoteEntryCountMismatch();
    t_.hash = hasher_.Digest();
    return std::move(t_);
  }

 private:
  // Checks the superblock at byte 0 and takes the sector size and entry count from it.
  absl::Status ReadSuperblock() {
    if (log_.size() < kSuperBytes) {
      return absl::InvalidArgumentError(
          fmt::format("trace {}: {} bytes is too short for the {}-byte superblock at byte 0: not a "
                      "dm-log-writes log",
                      name_, log_.size(), kSuperBytes));
    }
    const SuperFields super = DecodeSuper(log_.data());
    uint64_t magic = super.magic;
    if (magic != kLogMagic) {
      return absl::InvalidArgumentError(
          fmt::format("trace {}: superblock at byte 0 has magic 0x{:x}, expected 0x{:x}: not a "
                      "dm-log-writes log",
                      name_, magic, kLogMagic));
    }
    uint64_t version = super.version;
    if (version != kLogVersion) {
      return absl::InvalidArgumentError(
          fmt::format("trace {}: superblock at byte 0 has version {}, only version 1 is supported",
                      name_, version));
    }
    t_.super_nr_entries = super.nr_entries;
    ss_ = super.sectorsize;
    if (!ValidSectorSize(ss_)) {
      return absl::InvalidArgumentError(
          fmt::format("trace {}: superblock at byte 0 has sectorsize {}, expected a power of two "
                      "in [512, 65536]",
                      name_, ss_));
    }
    t_.sector_size = ss_;
    t_.disks = options_.disks.count();
    device_sectors_ = options_.device_bytes / ss_;
    return absl::OkStatus();
  }

  // Reads entry after entry; the log's end or a cut stops it with a note, corruption with an
  // error.
  absl::Status ReadEntries() {
    const uint64_t size = log_.size();
    hasher_.UpdateU64(ss_);
    offset_ = ss_;
    if (size < ss_) {
      t_.notes.push_back(
          fmt::format("log is {} bytes, cut inside the {}-byte superblock block; no "
                      "entries",
                      size, ss_));
    }
    for (uint64_t index = 0; offset_ < size; ++index) {
      absl::StatusOr<bool> more = ReadEntry(index);
      if (!more.ok()) return more.status();
      if (!*more) break;
    }
    t_.parsed_bytes = std::max<uint64_t>(offset_, std::min<uint64_t>(size, ss_));
    return absl::OkStatus();
  }

  // Reads the entry at offset_ and moves past it: true to go on, false at the log's end.
  absl::StatusOr<bool> ReadEntry(uint64_t index) {
    const uint64_t size = log_.size();
    const uint64_t offset = offset_;
    const bool claimed = index < t_.super_nr_entries;
    if (size - offset < ss_) {
      t_.notes.push_back(fmt::format(
          "log cut inside the block of entry {} at byte {} ({} of {} bytes present): read the {} "
          "whole entries before it",
          index, offset, size - offset, ss_, index));
      return false;
    }
    const uint8_t* block = log_.data() + offset;
    EntryHeader h = DecodeEntryHeader(block);
    std::string problem = EntryProblem(block, ss_, h);
    if (!problem.empty()) {
      if (claimed) {
        return absl::DataLossError(fmt::format(
            "trace {}: entry {} at byte {}: {} (the superblock says {} entries): the log is "
            "corrupt",
            name_, index, offset, problem, t_.super_nr_entries));
      }
      // Past what the superblock promises, a malformed block is the end of the log (e.g. the
      // zeroed rest of a log device).
      if (!AllZero(block, ss_)) {
        t_.notes.push_back(
            fmt::format("stopped at byte {}: the block after the last entry is not an entry ({})",
                        offset, problem));
      }
      return false;
    }
    if (device_sectors_ != 0 && !(h.flags & kFlagMark) &&
        (h.sector > device_sectors_ || h.nr_sectors > device_sectors_ - h.sector)) {
      return absl::OutOfRangeError(fmt::format(
          "trace {}: entry {} at byte {}: sectors [{}, {}) lie beyond the device's {} "
          "sectors of {} "
          "bytes: wrong base image or block size",
          name_, index, offset, h.sector, h.sector + h.nr_sectors, device_sectors_, ss_));
    }
    const uint64_t data_bytes = LoggedDataBytes(h, ss_);
    if (data_bytes > size - offset - ss_) {
      t_.notes.push_back(fmt::format(
          "log cut inside the data of entry {} at byte {} ({} of {} data bytes present): read the "
          "{} whole entries before it",
          index, offset, size - offset - ss_, data_bytes, index));
      return false;
    }
    absl::StatusOr<TraceEntry> e = MakeEntry(index, block, h);
    if (!e.ok()) return e.status();
    hasher_.Update(block, ss_ + data_bytes);
    t_.entries.push_back(*std::move(e));
    offset_ += ss_ + data_bytes;
    return true;
  }

  // The entry at offset_, with the disk of a set it lies in.
  absl::StatusOr<TraceEntry> MakeEntry(uint64_t index, const uint8_t* block,
                                       const EntryHeader& h) const {
    TraceEntry e;
    if (options_.disks.several() && !(h.flags & kFlagMark)) {
      const uint64_t byte = h.sector * ss_;
      const uint64_t length = h.nr_sectors * ss_;
      e.disk = options_.disks.DiskAt(byte);
      if (e.disk == options_.disks.count() || !options_.disks.Inside(e.disk, byte, length)) {
        return absl::OutOfRangeError(fmt::format(
            "trace {}: entry {} at byte {}: bytes [{}, {}) lie in no disk of the set of {} (or "
            "across two): wrong manifest `disks`",
            name_, index, offset_, byte, byte + length, options_.disks.count()));
      }
    }
    e.index = index;
    e.log_offset = offset_;
    e.header = h;
    e.data_offset = offset_ + ss_;
    if (h.flags & kFlagMark) {
      e.mark.assign(reinterpret_cast<const char*>(block + kEntryHeaderBytes), h.data_len);
    }
    return e;
  }

  // The superblock's count is rewritten only now and then; a difference is a note, not an error.
  void NoteEntryCountMismatch() {
    if (t_.entries.size() > t_.super_nr_entries) {
      t_.notes.push_back(fmt::format(
          "superblock says {} entries but {} whole entries follow (the kernel rewrites the "
          "superblock only after FUA and MARK entries): read all {}",
          t_.super_nr_entries, t_.entries.size(), t_.entries.size()));
    } else if (t_.entries.size() < t_.super_nr_entries) {
      t_.notes.push_back(fmt::format("superblock says {} entries but only {} are present",
                                     t_.super_nr_entries, t_.entries.size()));
    }
  }

  absl::Span<const uint8_t> log_;
  const TraceReadOptions& options_;
  const std::string& name_;
  uint32_t ss_ = 0;
  uint64_t device_sectors_ = 0;
  uint64_t offset_ = 0;
  Hasher hasher_;
  Trace t_;
};

}  // namespace

absl::StatusOr<Trace> ParseTrace(absl::Span<const uint8_t> log, const TraceReadOptions& options) {
  return TraceParser(log, options).Parse();
}

absl::StatusOr<std::unique_ptr<TraceFile>> TraceFile::Open(const std::string& path,
                                                           TraceReadOptions options) {
  if (options.name == "log") options.name = path;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::Status(absl::ErrnoToStatusCode(errno),
                        fmt::format("trace {}: cannot open it: {}", path, std::strerror(errno)));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return absl::Status(absl::ErrnoToStatusCode(err),
                        fmt::format("trace {}: fstat: {}", path, std::strerror(err)));
  }
  size_t size = static_cast<size_t>(st.st_size);
  const uint8_t* map = nullptr;
  if (size > 0) {
    void* m = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return absl::Status(absl::ErrnoToStatusCode(err),
                          fmt::format("trace {}: mmap: {}", path, std::strerror(err)));
    }
    map = static_cast<const uint8_t*>(m);
  }
  ::close(fd);
  auto trace = ParseTrace(absl::MakeConstSpan(map, size), options);
  if (!trace.ok()) {
    if (map != nullptr) ::munmap(const_cast<uint8_t*>(map), size);
    return trace.status();
  }
  return std::unique_ptr<TraceFile>(new TraceFile(path, map, size, *std::move(trace)));
}

TraceFile::~TraceFile() {
  if (map_ != nullptr) ::munmap(const_cast<uint8_t*>(map_), size_);
}

absl::Span<const uint8_t> TraceFile::data(const TraceEntry& entry) const {
  return absl::MakeConstSpan(map_ + entry.data_offset,
                             LoggedDataBytes(entry.header, trace_.sector_size));
}

}  // namespace powercut::harness
