#include "harness/trace/raw_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/trace/trace_format.h"

namespace powercut::harness {
absl::Status WriteRawLog(Recorder& recorder, uint64_t commits, RawLogBarrier barrier) {
  for (uint64_t i = 0; i < commits; ++i) {
    std::vector<uint8_t> block = RawLogRecord(i);
    std::string id = std::to_string(i);
    if (barrier == RawLogBarrier::kAckBeforeWrite) RETURN_IF_ERROR(recorder.RecordAck(id));
    RETURN_IF_ERROR(recorder.RecordWrite(i * kRawLogBlock, block, barrier == RawLogBarrier::kFua));
    if (barrier == RawLogBarrier::kFlushBeforeAck) RETURN_IF_ERROR(recorder.RecordFlush());
    if (barrier != RawLogBarrier::kAckBeforeWrite) RETURN_IF_ERROR(recorder.RecordAck(id));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint64_t>> ScanRawLog(const std::string& device,
                                                 uint64_t min_read_bytes) {
  int fd = ::open(device.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(fmt::format("raw log: open({}): {}", device, std::strerror(errno)));
  }
  std::vector<uint64_t> ids;
  std::vector<uint8_t> block(kRawLogBlock);
  uint64_t offset = 0;
  bool valid = true;
  while (true) {
    ssize_t n = ::pread(fd, block.data(), block.size(), static_cast<off_t>(offset));
    if (n != static_cast<ssize_t>(block.size())) break;
    offset += block.size();
    if (valid) {
      valid = IsRawLogRecord(block.data(), ids.size());
      if (valid) ids.push_back(ids.size());
    }
    if (!valid && offset >= min_read_bytes) break;
  }
  ::close(fd);
  return ids;
}

int RawLogCheckerMain(uint64_t min_read_bytes) {
  const char* dev = std::getenv("POWERCUT_DEV");
  if (dev == nullptr) {
    std::fprintf(stderr,
                 "raw log checker: POWERCUT_DEV is not set (run it from powercut check "
                 "--fs raw)\n");
    return 2;
  }
  auto ids = ScanRawLog(dev, min_read_bytes);
  if (!ids.ok()) {
    std::fprintf(stderr, "raw log checker: %s\n", std::string(ids.status().message()).c_str());
    return 2;
  }
  std::string out;
  for (uint64_t id : *ids) out += fmt::format("have {}\n", id);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace powercut::harness
