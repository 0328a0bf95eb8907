#include "harness/vm/disk_image.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/process.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/trace/trace_format.h"

namespace powercut::vm {
namespace {

absl::Status RequireRegularFile(const std::string& path, const std::string& step) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(fmt::format("{}: {} does not exist", step, path));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: {} is not a regular file; powercut never writes to block devices", step, path));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CreateSparseImage(const std::string& path, uint64_t bytes) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return RequireRegularFile(path, "creating a disk image");
  }
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::UnavailableError(
        fmt::format("creating disk image {}: {}", path, std::strerror(errno)));
  }
  int rc = ftruncate(fd, static_cast<off_t>(bytes));
  int err = errno;
  close(fd);
  if (rc != 0) {
    return absl::UnavailableError(
        fmt::format("creating disk image {} of {} bytes: {}", path, bytes, std::strerror(err)));
  }
  return absl::OkStatus();
}

uint64_t MinimumImageBytes(const std::string& fs) {
  if (fs == "xfs") return 300ull << 20;
  if (fs == "btrfs") return 128ull << 20;
  return 16ull << 20;
}

absl::Status MakeFileSystem(const std::string& fs, const std::string& image) {
  RETURN_IF_ERROR(RequireRegularFile(image, "mkfs"));
  std::vector<std::string> argv;
  if (fs == "raw") return absl::OkStatus();
  if (fs == "ext4") {
    argv = {"mkfs.ext4", "-F", "-q", image};
  } else if (fs == "xfs") {
    argv = {"mkfs.xfs", "-f", "-q", image};
  } else if (fs == "btrfs") {
    argv = {"mkfs.btrfs", "-f", "-q", image};
  } else {
    return absl::InvalidArgumentError(
        fmt::format("mkfs: unknown file system '{}'; expected ext4, xfs, btrfs or raw", fs));
  }
  auto out = RunCommandOrError(
      fmt::format("mkfs: making {} on {} (is {} installed? tools/install-deps.sh)", fs, image,
                  argv[0]),
      argv);
  return out.status();
}

absl::Status CopySparse(const std::string& from, const std::string& to) {
  RETURN_IF_ERROR(RequireRegularFile(from, "copying a disk image"));
  return RunCommandOrError(fmt::format("copying disk image {} to {}", from, to),
                           {"cp", "--sparse=always", from, to})
      .status();
}

absl::StatusOr<uint64_t> LogWritesUsedBytes(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(fmt::format("dm-log-writes log {}: {}", path, std::strerror(errno)));
  }
  auto fail = [&](const std::string& what) {
    close(fd);
    return absl::DataLossError(fmt::format("dm-log-writes log {}: {}", path, what));
  };
  uint8_t super[harness::kSuperBytes];
  if (pread(fd, super, sizeof super, 0) != static_cast<ssize_t>(sizeof super)) {
    return fail("too short for a superblock");
  }
  const harness::SuperFields fields = harness::DecodeSuper(super);
  if (fields.magic != harness::kLogMagic) {
    return fail("no dm-log-writes superblock (was the target removed cleanly?)");
  }
  uint64_t entries = fields.nr_entries;
  uint32_t sectorsize = fields.sectorsize;
  if (!harness::ValidSectorSize(sectorsize)) return fail("bad sectorsize");
  uint64_t pos = sectorsize;
  std::vector<uint8_t> header(harness::kEntryHeaderBytes);
  for (uint64_t i = 0; i < entries; ++i) {
    if (pread(fd, header.data(), header.size(), static_cast<off_t>(pos)) !=
        static_cast<ssize_t>(header.size())) {
      return fail(fmt::format("entry {} lies beyond the end of the file", i));
    }
    harness::EntryHeader h = harness::DecodeEntryHeader(header.data());
    pos += sectorsize + harness::LoggedDataBytes(h, sectorsize);
  }
  close(fd);
  return pos;
}

}  // namespace powercut::vm
