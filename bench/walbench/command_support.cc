// What walbench's subcommands share: exit codes, scheduling, flag parsing, output files and the
// scratch directory.
#include <fmt/format.h>
#include <sched.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "bench/walbench/barrier_report.h"
#include "bench/walbench/commands.h"

namespace powercut::walbench::cli {

// SCHED_FIFO for this process and the threads it starts: on a busy machine a thread woken by an
// I/O completion otherwise waits for a CPU (up to a scheduler tick, 4 ms here), and the numbers
// measure the scheduler instead of the disk. Threads block on I/O most of the time, so they do
// not starve other work; the kernel's RT throttling caps them anyway.
void UseFifoScheduling(bool wanted) {
  if (!wanted) return;
  sched_param param{};
  param.sched_priority = 1;
  if (sched_setscheduler(0, SCHED_FIFO, &param) != 0) {
    fmt::print(stderr,
               "walbench: --fifo: sched_setscheduler(SCHED_FIFO): {} (needs root or "
               "CAP_SYS_NICE); running with the normal scheduler\n",
               std::strerror(errno));
  }
}

int Fail(const absl::Status& status) {
  fmt::print(stderr, "walbench: {}\n", std::string(status.message()));
  return status.code() == absl::StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
}

absl::StatusOr<std::vector<wal::Barrier>> ParseBarriers(const std::vector<std::string>& names) {
  std::vector<wal::Barrier> barriers;
  for (const std::string& name : names) {
    auto barrier = wal::ParseBarrier(name);
    if (!barrier.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("--barriers: {}", std::string(barrier.status().message())));
    }
    barriers.push_back(*barrier);
  }
  return barriers;
}

absl::Status WriteFile(const std::string& path, const std::string& contents,
                       std::string_view flag) {
  std::ofstream out(path, std::ios::trunc);
  out << contents;
  out.close();
  if (!out) {
    return absl::PermissionDeniedError(
        fmt::format("{} {}: cannot write the file; pass a writable path", flag, path));
  }
  return absl::OkStatus();
}

absl::Status WriteJsonIfAsked(const std::string& path, const nlohmann::json& json) {
  if (path.empty()) return absl::OkStatus();
  return WriteFile(path, json.dump(2) + "\n", "--json");
}

absl::StatusOr<DeviceFacts> PrepareDir(const std::string& parent, std::unique_ptr<BenchDir>* dir) {
  auto created = BenchDir::Create(parent);
  // A bad --dir is a usage error (exit 2), whatever the errno was.
  if (!created.ok()) return absl::InvalidArgumentError(std::string(created.status().message()));
  *dir = std::move(*created);
  auto facts = DescribeDeviceUnder((*dir)->path());
  if (!facts.ok()) return facts.status();
  fmt::print("{}", FormatDeviceFacts(*facts));
  if (facts->fs_type == "tmpfs" || facts->fs_type == "ramfs") {
    fmt::print(
        "warning: {} is on {}: the page cache is the medium, every barrier is nearly free, no "
        "device flush is counted (and before Linux 6.6, O_DIRECT is refused). Pass --dir on a "
        "disk.\n",
        parent, facts->fs_type);
  } else if (!facts->has_block_device) {
    fmt::print("warning: {}\n", facts->no_device_reason);
  }
  return facts;
}

}  // namespace powercut::walbench::cli
