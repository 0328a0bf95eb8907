#include "workloads/ack_channel.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include "base/tsan_mutex.h"

namespace powercut::workloads {
namespace {

std::string_view GetEnv(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string_view() : std::string_view(value);
}

}  // namespace

absl::StatusOr<Target> TargetFromEnvironment() {
  Target target{std::string(GetEnv("POWERCUT_DIR")), std::string(GetEnv("POWERCUT_DEV"))};
  if (target.dir.empty() && target.dev.empty()) {
    return absl::InvalidArgumentError(
        "neither POWERCUT_DIR nor POWERCUT_DEV is set: set POWERCUT_DIR to a directory on the "
        "file system under test (or POWERCUT_DEV to a raw block device)");
  }
  if (!target.dir.empty() && !target.dev.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("both POWERCUT_DIR ({}) and POWERCUT_DEV ({}) are set: set only one",
                    target.dir, target.dev));
  }
  struct stat st;
  if (!target.dir.empty()) {
    if (::stat(target.dir.c_str(), &st) != 0) {
      return absl::InvalidArgumentError(
          fmt::format("POWERCUT_DIR={}: {}: create it first", target.dir, std::strerror(errno)));
    }
    if (!S_ISDIR(st.st_mode)) {
      return absl::InvalidArgumentError(
          fmt::format("POWERCUT_DIR={} is not a directory", target.dir));
    }
  } else if (::stat(target.dev.c_str(), &st) != 0) {
    return absl::InvalidArgumentError(
        fmt::format("POWERCUT_DEV={}: {}", target.dev, std::strerror(errno)));
  }
  return target;
}

absl::Status RequireDir(const Target& target, std::string_view workload) {
  if (!target.dir.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(fmt::format(
      "the {} workload needs a file system: set POWERCUT_DIR (POWERCUT_DEV={} is a raw device)",
      workload, target.dev));
}

std::string SecondDiskDir() { return std::string(GetEnv("POWERCUT_DIR_2")); }

absl::StatusOr<std::string> RequireSecondDiskDir(std::string_view what) {
  std::string dir = SecondDiskDir();
  if (dir.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("{} needs a second disk, but POWERCUT_DIR_2 is not set: record with "
                    "`powercut run --disks 2` (or set POWERCUT_DIR_2 to a folder on the second "
                    "disk)",
                    what));
  }
  return dir;
}

absl::StatusOr<std::unique_ptr<AckChannel>> AckChannel::FromEnvironment() {
  std::string_view text = GetEnv("POWERCUT_ACK_FD");
  if (text.empty()) {
    return absl::InvalidArgumentError(
        "POWERCUT_ACK_FD is not set: the tester passes the number of an inherited file "
        "descriptor on which the workload writes 'ack <id>' lines (e.g. POWERCUT_ACK_FD=1 to "
        "print them)");
  }
  int fd = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), fd);
  if (ec != std::errc() || end != text.data() + text.size() || fd < 0) {
    return absl::InvalidArgumentError(fmt::format(
        "POWERCUT_ACK_FD={} is not a file descriptor number (expected a decimal integer >= 0)",
        text));
  }
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) {
    return absl::InvalidArgumentError(fmt::format(
        "POWERCUT_ACK_FD={}: not an open file descriptor ({}): the tester must keep it open "
        "across exec",
        fd, std::strerror(errno)));
  }
  if ((flags & O_ACCMODE) == O_RDONLY) {
    return absl::InvalidArgumentError(fmt::format(
        "POWERCUT_ACK_FD={}: the descriptor is open read-only; it must be writable", fd));
  }
  return std::make_unique<AckChannel>(fd);
}

absl::Status AckChannel::Ack(std::string_view id) {
  if (!IsValidAckId(id)) {
    return absl::InvalidArgumentError(fmt::format(
        "malformed id '{}': ids are 1 to {} characters of [A-Za-z0-9_.:-]", id, kMaxAckIdBytes));
  }
  const std::string line = fmt::format("ack {}\n", id);
  MutexLock lock(&mu_);
  ssize_t n;
  do {
    n = ::write(fd_, line.data(), line.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    return absl::UnavailableError(
        fmt::format("write(POWERCUT_ACK_FD={}) for 'ack {}': {}", fd_, id, std::strerror(errno)));
  }
  if (static_cast<size_t>(n) != line.size()) {
    return absl::UnavailableError(
        fmt::format("write(POWERCUT_ACK_FD={}) for 'ack {}': short write ({} of {} bytes)", fd_, id,
                    n, line.size()));
  }
  ++acks_sent_;
  return absl::OkStatus();
}

absl::Status AckChannel::Ack(uint64_t id) { return Ack(std::to_string(id)); }

int64_t AckChannel::acks_sent() const {
  MutexLock lock(&mu_);
  return acks_sent_;
}

}  // namespace powercut::workloads
