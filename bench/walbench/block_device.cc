#include "bench/walbench/block_device.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace powercut::walbench {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

// The file's contents, trimmed; nullopt when it cannot be read.
std::optional<std::string> ReadSmallFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream buffer;
  buffer << in.rdbuf();
  return std::string(Trim(buffer.str()));
}

std::optional<uint64_t> ReadNumber(const std::filesystem::path& path) {
  auto text = ReadSmallFile(path);
  if (!text) return std::nullopt;
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || end != text->data() + text->size()) return std::nullopt;
  return value;
}

}  // namespace

absl::StatusOr<BlockStat> ParseBlockStat(std::string_view text, std::string_view source) {
  std::vector<uint64_t> fields;
  std::string_view rest = text;
  while (true) {
    rest = Trim(rest);
    if (rest.empty()) break;
    size_t end = rest.find_first_of(" \t\n");
    std::string_view token = rest.substr(0, end);
    uint64_t value = 0;
    auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    if (ec != std::errc() || ptr != token.data() + token.size()) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: field {} is '{}', not a number; expected the 11-17 counters of a block stat file",
          source, fields.size() + 1, token));
    }
    fields.push_back(value);
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end);
  }
  if (fields.size() < 11) {
    return absl::InvalidArgumentError(
        fmt::format("{}: {} fields, expected at least 11 (Documentation/block/stat.rst)", source,
                    fields.size()));
  }
  BlockStat stat;
  stat.write_ios = fields[4];
  stat.write_sectors = fields[6];
  if (fields.size() >= 17) {
    stat.flush_ios = fields[15];
    stat.flush_ticks_ms = fields[16];
  }
  return stat;
}

WriteCache ParseWriteCache(std::string_view text) {
  text = Trim(text);
  if (text == "write back") return WriteCache::kWriteBack;
  if (text == "write through") return WriteCache::kWriteThrough;
  return WriteCache::kUnknown;
}

std::string_view WriteCacheName(WriteCache cache) {
  switch (cache) {
    case WriteCache::kWriteBack:
      return "write back";
    case WriteCache::kWriteThrough:
      return "write through";
    case WriteCache::kUnknown:
      return "unknown";
  }
  return "unknown";
}

std::string FsTypeName(int64_t f_type) {
  switch (static_cast<uint64_t>(f_type)) {
    case 0xEF53:
      return "ext4";
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    case 0x01021994:
      return "tmpfs";
    case 0x858458F6:
      return "ramfs";
    case 0x794C7630:
      return "overlayfs";
    case 0x01021997:
      return "9p";
    case 0x6969:
      return "nfs";
    case 0xF2F52010:
      return "f2fs";
    case 0x65735546:
      return "fuse";
    default:
      return fmt::format("0x{:x}", static_cast<uint64_t>(f_type));
  }
}

absl::StatusOr<DeviceFacts> DescribeDeviceUnder(const std::string& path,
                                                const std::string& sysfs_root) {
  DeviceFacts facts;
  facts.path = path;
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(fmt::format("stat({}): {}", path, std::strerror(errno)));
  }
  struct statfs fs;
  if (statfs(path.c_str(), &fs) == 0) facts.fs_type = FsTypeName(fs.f_type);

  const unsigned maj = major(st.st_dev);
  const unsigned min = minor(st.st_dev);
  namespace fsys = std::filesystem;
  const fsys::path link = fsys::path(sysfs_root) / "dev/block" / fmt::format("{}:{}", maj, min);
  std::error_code ec;
  fsys::path device_dir = fsys::canonical(link, ec);
  if (ec || maj == 0) {
    facts.no_device_reason = fmt::format(
        "no block device under {} ({} file system, st_dev {}:{} has no {}): device flushes "
        "cannot be counted here",
        path, facts.fs_type.empty() ? "unknown" : facts.fs_type, maj, min, link.string());
    return facts;
  }
  facts.has_block_device = true;
  facts.device = device_dir.filename().string();
  fsys::path disk_dir = device_dir;
  if (fsys::exists(device_dir / "partition")) disk_dir = device_dir.parent_path();
  facts.disk = disk_dir.filename().string();
  facts.stat_path = (disk_dir / "stat").string();
  const fsys::path queue = disk_dir / "queue";
  if (auto text = ReadSmallFile(queue / "write_cache")) facts.write_cache = ParseWriteCache(*text);
  if (auto v = ReadNumber(queue / "fua")) facts.fua = *v != 0;
  if (auto v = ReadNumber(queue / "rotational")) facts.rotational = *v != 0;
  if (auto v = ReadNumber(queue / "logical_block_size")) {
    facts.logical_block_size = static_cast<uint32_t>(*v);
  }
  if (auto v = ReadNumber(queue / "physical_block_size")) {
    facts.physical_block_size = static_cast<uint32_t>(*v);
  }
  return facts;
}

absl::StatusOr<BlockStat> ReadBlockStat(const DeviceFacts& facts) {
  if (!facts.has_block_device) {
    return absl::FailedPreconditionError(facts.no_device_reason);
  }
  auto text = ReadSmallFile(facts.stat_path);
  if (!text) {
    return absl::UnavailableError(
        fmt::format("cannot read {}: {}", facts.stat_path, std::strerror(errno)));
  }
  return ParseBlockStat(*text, facts.stat_path);
}

}  // namespace powercut::walbench
