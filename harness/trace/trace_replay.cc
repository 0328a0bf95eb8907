#include "harness/trace/trace_replay.h"

#include <fcntl.h>
#include <unistd.h>

#include "base/image_io.h"
#include "base/status_macros.h"
#include "fmt/format.h"

namespace powercut::harness {

absl::StatusOr<uint64_t> ReplayTrace(const TraceFile& file, const std::string& base,
                                     const std::string& out, const ReplayOptions& options) {
  const Trace& trace = file.trace();
  if (options.end_entry && options.end_mark) {
    return absl::InvalidArgumentError("replay: give --end-entry or --end-mark, not both");
  }
  uint64_t count = trace.entries.size();
  if (options.end_entry) {
    if (*options.end_entry >= trace.entries.size()) {
      return absl::OutOfRangeError(
          fmt::format("replay: --end-entry {} but trace {} has entries 0..{}", *options.end_entry,
                      file.path(), static_cast<int64_t>(trace.entries.size()) - 1));
    }
    count = *options.end_entry + 1;
  } else if (options.end_mark) {
    bool found = false;
    for (const TraceEntry& e : trace.entries) {
      if (e.is_mark() && e.mark == *options.end_mark) {
        count = e.index + 1;
        found = true;
        break;
      }
    }
    if (!found) {
      return absl::NotFoundError(
          fmt::format("replay: trace {} has no mark \"{}\" (see `powercut "
                      "trace show {}` for its marks)",
                      file.path(), *options.end_mark, file.path()));
    }
  }
  ASSIGN_OR_RETURN(uint64_t base_bytes, FileSize(base));
  RETURN_IF_ERROR(CopySparse(base, out));
  int fd = ::open(out.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return absl::InternalError(fmt::format("replay: cannot open {}", out));
  const uint64_t ss = trace.sector_size;
  absl::Status status;
  for (uint64_t i = 0; i < count && status.ok(); ++i) {
    const TraceEntry& e = trace.entries[i];
    if (!e.changes_content()) continue;
    uint64_t offset = e.header.sector * ss;
    uint64_t length = e.header.nr_sectors * ss;
    if (offset + length > base_bytes) {
      status = absl::OutOfRangeError(fmt::format(
          "replay: entry {} at byte {} of trace {} writes bytes [{}, {}) beyond the {}-byte base "
          "image {}",
          e.index, e.log_offset, file.path(), offset, offset + length, base_bytes, base));
      break;
    }
    if (e.is_discard()) {
      status = ZeroRange(fd, offset, length, out);
    } else {
      auto data = file.data(e);
      status = PwriteFull(fd, data.data(), data.size(), offset, out);
    }
  }
  if (status.ok() && ::fsync(fd) != 0) status = absl::InternalError("replay: fsync " + out);
  ::close(fd);
  RETURN_IF_ERROR(status);
  return count;
}

}  // namespace powercut::harness
