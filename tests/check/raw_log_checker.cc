// A checker command for the raw-device log workload (harness/trace/raw_log.h): prints
// `have <id>` for every intact record from block 0 up to the first block that is not the next
// record, and exits 0; exits 2 with a message when $POWERCUT_DEV is missing or cannot be read.
//
// The engine tests start it once per crash state (hundreds per test). It is built from the
// header-only record format alone (libc and xxhash, none of the project's libraries), so the
// sanitizer builds can leave it uninstrumented (CMakeLists.txt): what they check is the engine
// that starts it. A ThreadSanitizer start cost ~0.1 s of CPU, three quarters of those tests' time
// (docs/results.md, "CI time").
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "harness/trace/raw_log_format.h"

int main() {
  using powercut::harness::IsRawLogRecord;
  using powercut::harness::kRawLogBlock;
  const char* dev = std::getenv("POWERCUT_DEV");
  if (dev == nullptr) {
    std::fprintf(stderr,
                 "raw log checker: POWERCUT_DEV is not set (run it from powercut check "
                 "--fs raw)\n");
    return 2;
  }
  const int fd = ::open(dev, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::fprintf(stderr, "raw log checker: raw log: open(%s): %s\n", dev, std::strerror(errno));
    return 2;
  }
  std::vector<uint8_t> block(kRawLogBlock);
  uint64_t id = 0;
  for (off_t offset = 0;; offset += kRawLogBlock) {
    const ssize_t n = ::pread(fd, block.data(), block.size(), offset);
    if (n != static_cast<ssize_t>(block.size()) || !IsRawLogRecord(block.data(), id)) break;
    std::printf("have %llu\n", static_cast<unsigned long long>(id++));
  }
  ::close(fd);
  return 0;
}
