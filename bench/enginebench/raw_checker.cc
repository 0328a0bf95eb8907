// enginebench-checker: the benchmark's checker. Reads the first 4 MiB of $POWERCUT_DEV (the
// scenario's "checker that reads 4 MiB"), or up to the end of the log when it is longer, and prints
// `have <id>` for the intact raw-log records from block 0 on. Deliberately lean (libc + xxhash
// only): its start-up time is part of what the benchmark measures.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "harness/trace/raw_log_format.h"

int main() {
  using namespace powercut::harness;
  const char* dev = std::getenv("POWERCUT_DEV");
  if (dev == nullptr) {
    std::fprintf(stderr, "enginebench-checker: POWERCUT_DEV is not set\n");
    return 2;
  }
  int fd = ::open(dev, O_RDONLY);
  if (fd < 0) {
    std::perror(dev);
    return 2;
  }
  // 4 MiB in 64 KiB reads into one reused buffer (no page faults for a fresh 4 MiB buffer).
  constexpr size_t kRead = 4 << 20;
  constexpr size_t kChunk = 64 << 10;
  std::vector<uint8_t> buf(kChunk);
  uint64_t id = 0;
  bool intact = true;
  // At least 4 MiB, and on to the end of the log like a recovery would (traces of more than 1,024
  // commits: --commits).
  for (size_t offset = 0; offset < kRead || intact; offset += kChunk) {
    ssize_t n = ::pread(fd, buf.data(), buf.size(), static_cast<off_t>(offset));
    if (n < 0) {
      std::perror(dev);
      return 2;
    }
    for (size_t b = 0; intact && b + kRawLogBlock <= static_cast<size_t>(n); b += kRawLogBlock) {
      intact = IsRawLogRecord(buf.data() + b, id);
      if (intact) std::printf("have %llu\n", static_cast<unsigned long long>(id++));
    }
    if (static_cast<size_t>(n) < kChunk) break;
  }
  ::close(fd);
  return 0;
}
