// The block device under a file, its sysfs facts, and its I/O counters.
//
// walbench counts device flushes per operation from /sys/block/<disk>/stat: since Linux 5.5 that
// file has 17 fields, and fields 16-17 (1-based) are "flush requests completed" and "time spent
// flushing (ms)" (Documentation/block/stat.rst). The counters are device-wide, so other I/O on the
// same disk during a run adds to them: walbench reports them as an upper bound per operation.
//
// Pure parsing (ParseBlockStat, ParseWriteCache) is separate from sysfs access so tests can feed
// it text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace powercut::walbench {

// The counters walbench uses from one read of a stat file.
struct BlockStat {
  uint64_t write_ios = 0;
  uint64_t write_sectors = 0;
  // Absent on kernels before 5.5 (the file has 11 or 15 fields).
  std::optional<uint64_t> flush_ios;
  std::optional<uint64_t> flush_ticks_ms;  // total time spent in flushes
};

// Parses the whitespace-separated fields of /sys/block/<dev>/stat. Fails (naming `source`) when
// there are fewer than 11 fields or a field is not a number.
absl::StatusOr<BlockStat> ParseBlockStat(std::string_view text, std::string_view source);

enum class WriteCache { kUnknown, kWriteBack, kWriteThrough };
// "write back" / "write through" (queue/write_cache); anything else is kUnknown.
WriteCache ParseWriteCache(std::string_view text);
std::string_view WriteCacheName(WriteCache cache);

// What sysfs says about the disk that holds a path.
struct DeviceFacts {
  std::string path;               // the path asked about
  std::string fs_type;            // "ext4", "xfs", "tmpfs", ... (from statfs f_type)
  bool has_block_device = false;  // false for tmpfs, btrfs (anonymous st_dev), overlay, 9p, ...
  std::string no_device_reason;   // why has_block_device is false, in words
  std::string device;             // the device st_dev names, e.g. "vda1" (a partition)
  std::string disk;               // the whole disk whose queue/ and stat walbench reads, e.g. "vda"
  std::string stat_path;          // /sys/block/<disk>/stat
  WriteCache write_cache = WriteCache::kUnknown;
  std::optional<bool> fua;
  std::optional<bool> rotational;
  uint32_t logical_block_size = 0;
  uint32_t physical_block_size = 0;
};

// The name statfs reports for a file system type, e.g. 0xEF53 -> "ext4".
std::string FsTypeName(int64_t f_type);

// Finds the disk under `path` via stat(2) st_dev -> /sys/dev/block/MAJ:MIN (and its parent when
// that is a partition) and reads its queue facts. A path with no block device under it is not an
// error: has_block_device is false and no_device_reason says why. Fails only when `path` cannot be
// stat'ed. `sysfs_root` is "/sys" except in tests.
absl::StatusOr<DeviceFacts> DescribeDeviceUnder(const std::string& path,
                                                const std::string& sysfs_root = "/sys");

// Reads the disk's stat file now.
absl::StatusOr<BlockStat> ReadBlockStat(const DeviceFacts& facts);

}  // namespace powercut::walbench
