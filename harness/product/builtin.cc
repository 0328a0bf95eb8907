#include "harness/product/builtin.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>

#include "fmt/format.h"

namespace powercut::product {
namespace {

const std::vector<std::string>& Barriers() {
  static const std::vector<std::string> kBarriers = {"fdatasync", "fsync",           "odsync",
                                                     "rwf_dsync", "direct_dsync",    "none",
                                                     "direct",    "sync_file_range", "io_uring"};
  return kBarriers;
}

bool Executable(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::vector<std::string> BuiltinWorkloads() {
  return {"xlog", "xlog-append", "wal", "rocksdb", "sqlite-wal", "sqlite-delete"};
}

absl::StatusOr<std::vector<std::string>> BuiltinSettings(const std::string& workload) {
  if (workload == "xlog" || workload == "xlog-append" || workload == "wal") return Barriers();
  if (workload == "rocksdb") return std::vector<std::string>{"sync", "nosync", "nowal"};
  if (workload == "sqlite-wal" || workload == "sqlite-delete") {
    return std::vector<std::string>{"full", "extra", "normal", "off"};
  }
  return absl::InvalidArgumentError(
      fmt::format("unknown workload '{}': built-in workloads are {} (or test your own program "
                  "with `powercut run --workload CMD --checker CMD`)",
                  workload, fmt::join(BuiltinWorkloads(), ", ")));
}

absl::StatusOr<BuiltinCell> LookupBuiltin(const std::string& workload, const std::string& setting) {
  auto settings = BuiltinSettings(workload);
  if (!settings.ok()) return settings.status();
  bool known = false;
  for (const auto& s : *settings) known = known || s == setting;
  if (!known) {
    return absl::InvalidArgumentError(
        fmt::format("workload '{}' has no setting '{}': expected one of {}", workload, setting,
                    fmt::join(*settings, ", ")));
  }
  BuiltinCell cell{.workload = workload, .setting = setting};
  if (workload == "xlog" || workload == "xlog-append" || workload == "wal") {
    cell.kind = workload == "wal" ? "wal" : "xlog";
    cell.run_args = "--barrier " + setting;
    if (workload == "xlog-append") cell.run_args += " --append";
    if (workload == "wal") cell.run_args += " --threads 4";
  } else if (workload == "rocksdb") {
    cell.kind = "rocksdb";
    cell.run_args = setting == "sync"     ? "--sync true"
                    : setting == "nosync" ? "--sync false"
                                          : "--sync false --disable-wal";
  } else {
    cell.kind = "sqlite";
    cell.run_args = fmt::format("--journal {} --synchronous {}",
                                workload == "sqlite-wal" ? "wal" : "delete", setting);
  }
  return cell;
}

std::string BuiltinRunCommand(const std::string& binary, const BuiltinCell& cell, uint64_t count,
                              uint64_t seed) {
  return fmt::format("{} {} run {} --count {} --seed {}", binary, cell.kind, cell.run_args, count,
                     seed);
}

std::string BuiltinCheckCommand(const std::string& binary, const BuiltinCell& cell) {
  return fmt::format("{} {} check", binary, cell.kind);
}

std::string AgentHint(const std::string& self) {
  std::filesystem::path p = std::filesystem::path(self).parent_path() / ".." / ".." / "harness" /
                            "vm" / "powercut-vm-agent";
  return Executable(p.string()) ? std::filesystem::weakly_canonical(p).string() : "";
}

std::string SelfPath() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "powercut";
  return std::string(buf, static_cast<size_t>(n));
}

absl::StatusOr<std::string> FindWorkloadBinary(const std::string& hint, const std::string& self) {
  if (!hint.empty()) {
    if (Executable(hint)) return std::filesystem::absolute(hint).string();
    return absl::NotFoundError(fmt::format("--workload-binary {}: not an executable file", hint));
  }
  if (const char* env = std::getenv("POWERCUT_WORKLOAD"); env != nullptr && *env != '\0') {
    if (Executable(env)) return std::filesystem::absolute(env).string();
    return absl::NotFoundError(fmt::format("$POWERCUT_WORKLOAD={}: not an executable file", env));
  }
  std::filesystem::path dir = std::filesystem::path(self).parent_path();
  for (const auto& candidate :
       {dir / "powercut-workload", dir / ".." / "workloads" / "powercut-workload"}) {
    if (Executable(candidate.string())) {
      return std::filesystem::weakly_canonical(candidate).string();
    }
  }
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::string p = path;
    size_t start = 0;
    while (start <= p.size()) {
      size_t colon = p.find(':', start);
      std::string d =
          p.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (!d.empty() && Executable(d + "/powercut-workload")) return d + "/powercut-workload";
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  return absl::NotFoundError(fmt::format(
      "cannot find powercut-workload (looked next to {}, in ../workloads/ and on PATH): build "
      "the target powercut-workload, or pass --workload-binary PATH or set POWERCUT_WORKLOAD",
      self));
}

}  // namespace powercut::product
