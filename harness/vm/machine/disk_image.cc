#include "harness/vm/machine/disk_image.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
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

std::vector<std::string> SplitOptions(const std::string& options) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < options.size()) {
    while (i < options.size() && (options[i] == ' ' || options[i] == '\t')) ++i;
    const size_t start = i;
    while (i < options.size() && options[i] != ' ' && options[i] != '\t') ++i;
    if (i > start) out.push_back(options.substr(start, i - start));
  }
  return out;
}

absl::StatusOr<std::string> MakeFileSystem(harness::FsKind fs,
                                           const harness::DiskGeometry& geometry,
                                           const std::string& image, const std::string& options) {
  RETURN_IF_ERROR(RequireRegularFile(image, "mkfs"));
  const harness::FileSystem& table = harness::FileSystemOf(fs);
  const std::vector<std::string> argv =
      table.MkfsArgv(geometry.physical_sector, SplitOptions(options));
  if (argv.empty()) return std::string();
  RETURN_IF_ERROR(RunCommandOrError(fmt::format("mkfs: making {} on {} (is {} installed? package "
                                                "{}, tools/install-deps.sh)",
                                                table.name, image, argv[0], table.package),
                                    harness::WithImage(argv, image))
                      .status());
  return harness::ShellJoin(argv);
}

absl::StatusOr<uint32_t> FileSystemBlockSize(harness::FsKind fs, const std::string& image) {
  const harness::FileSystem& table = harness::FileSystemOf(fs);
  if (table.raw()) return 0;
  const harness::ToolReading& reading = table.block_size_reading;
  const std::vector<std::string> argv = harness::WithImage(reading.argv, image);
  const std::string& field = reading.prefix;
  const std::string step =
      fmt::format("reading the block size of {} on {}", harness::FsName(fs), image);
  ASSIGN_OR_RETURN(const std::string text, RunCommandOrError(step, argv));
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    const std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.rfind(field, 0) != 0) continue;
    size_t at = field.size();
    if (!reading.value_after.empty()) {
      const size_t after = line.rfind(reading.value_after);
      if (after == std::string::npos || after < at) continue;
      at = after + reading.value_after.size();
    }
    uint64_t value = std::strtoull(line.c_str() + at, nullptr, 10);
    if (reading.log2) value = value < 32 ? uint64_t{1} << value : 0;
    if (value >= 512 && value <= 65536 && (value & (value - 1)) == 0) {
      return static_cast<uint32_t>(value);
    }
  }
  return absl::InternalError(fmt::format("{}: no \"{}\" line with a power of two in `{}`'s output",
                                         step, field, harness::ShellJoin(argv)));
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
