#include "harness/product/matrix/builtin.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include "base/install_layout.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/fs/file_system.h"
#include "nlohmann/json.hpp"

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

// The catalog the program handed in (SetBuiltinCatalog).
BuiltinCatalog& LinkedCatalog() {
  static auto* catalog = new BuiltinCatalog();
  return *catalog;
}

}  // namespace

std::vector<std::string> BuiltinWorkloads() {
  return {"xlog",         "xlog-append", "wal",  "rocksdb", "sqlite-wal",      "sqlite-delete",
          "postgres",     "redis",       "lmdb", "etcd",    "rocksdb-waldisk", "postgres-waldisk",
          "etcd-waldisk", "twodisk"};
}

absl::StatusOr<std::vector<std::string>> BuiltinSettings(const std::string& workload) {
  if (workload == "xlog-append") {
    std::vector<std::string> settings = Barriers();
    settings.emplace_back("ackfirst");  // the known-bad control: ack before the fdatasync
    return settings;
  }
  if (workload == "xlog" || workload == "wal") return Barriers();
  if (workload == "rocksdb") return std::vector<std::string>{"sync", "nosync", "nowal"};
  if (workload == "sqlite-wal" || workload == "sqlite-delete") {
    return std::vector<std::string>{"full", "extra", "normal", "off"};
  }
  // The databases as they ship (docs/your-database.md); the settings name the catalog entries
  // "<workload>-<setting>" (workloads/postgres_workload.cc, redis_workload.cc, lmdb_workload.cc,
  // etcd_workload.cc).
  if (workload == "postgres") {
    return std::vector<std::string>{"sync-on", "sync-off", "fsync-off", "fpw-off"};
  }
  if (workload == "redis") return std::vector<std::string>{"always", "everysec", "no"};
  if (workload == "lmdb") return std::vector<std::string>{"default", "nosync", "nometasync"};
  if (workload == "etcd") return std::vector<std::string>{"default"};
  // Two recorded disks (`--preset multidisk`, docs/run.md "Several disks").
  if (workload == "rocksdb-waldisk") return std::vector<std::string>{"sync"};
  if (workload == "postgres-waldisk") return std::vector<std::string>{"sync-on"};
  if (workload == "etcd-waldisk") return std::vector<std::string>{"default"};
  if (workload == "twodisk") return std::vector<std::string>{"fdatasync", "direct", "buffered"};
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
    cell.run_args = setting == "ackfirst" ? "--barrier fdatasync" : "--barrier " + setting;
    if (workload == "xlog-append") cell.run_args += " --append";
    if (setting == "ackfirst") cell.run_args += " --ack-first";
    if (workload == "wal") cell.run_args += " --threads 4";
  } else if (workload == "rocksdb-waldisk") {
    cell.kind = "rocksdb";
    cell.run_args = "--sync true --threads 4 --wal-disk";
    cell.disks = 2;
  } else if (workload == "postgres-waldisk") {
    cell.kind = "postgres";
    cell.run_args = "--synchronous-commit on --wal-disk";
    cell.disks = 2;
  } else if (workload == "etcd-waldisk") {
    cell.kind = "etcd";
    cell.run_args = "--wal-disk";
    cell.disks = 2;
  } else if (workload == "twodisk") {
    cell.kind = "twodisk";
    cell.run_args = "--data " + setting;
    cell.disks = 2;
  } else if (workload == "rocksdb") {
    cell.kind = "rocksdb";
    cell.run_args = setting == "sync"     ? "--sync true"
                    : setting == "nosync" ? "--sync false"
                                          : "--sync false --disable-wal";
  } else if (workload == "postgres") {
    cell.kind = "postgres";
    cell.run_args = setting == "sync-on"    ? "--synchronous-commit on"
                    : setting == "sync-off" ? "--synchronous-commit off"
                    : setting == "fsync-off"
                        ? "--fsync off"
                        // Torn pages need checkpoints that overwrite data pages between commits.
                        : "--full-page-writes off --checkpoint-every 3";
  } else if (workload == "redis") {
    cell.kind = "redis";
    cell.run_args = "--appendfsync " + setting;
  } else if (workload == "lmdb") {
    cell.kind = "lmdb";
    cell.run_args = "--sync " + setting;
  } else if (workload == "etcd") {
    cell.kind = "etcd";  // one setting: the defaults, nothing to pass
  } else {
    cell.kind = "sqlite";
    cell.run_args = fmt::format("--journal {} --synchronous {}",
                                workload == "sqlite-wal" ? "wal" : "delete", setting);
  }
  return cell;
}

std::string BuiltinProgram(const std::string& binary, const BuiltinCell& cell) {
  if (cell.kind != "rocksdb" && cell.kind != "postgres") return binary;
  if (binary.find('/') == std::string::npos) return binary;
  const std::string clients = InstallLayout::Of(binary).Find("powercut-workload-clients");
  return ::access(clients.c_str(), X_OK) == 0 ? clients : binary;
}

std::string BuiltinRunCommand(const std::string& binary, const BuiltinCell& cell, uint64_t count,
                              uint64_t seed) {
  return fmt::format("{} {} run {}--count {} --seed {}", BuiltinProgram(binary, cell), cell.kind,
                     cell.run_args.empty() ? "" : cell.run_args + " ", count, seed);
}

std::string BuiltinCheckCommand(const std::string& binary, const BuiltinCell& cell) {
  return fmt::format("{} {} check", BuiltinProgram(binary, cell), cell.kind);
}

absl::StatusOr<std::map<std::string, CellExpect>> ParseBuiltinExpectations(
    const std::string& text, const std::string& source) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_array()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: expected the JSON array of the workload catalog", source));
  }
  std::map<std::string, CellExpect> out;
  for (const auto& entry : j) {
    if (!entry.is_object() || !entry.contains("name") || !entry.contains("expect") ||
        !entry.at("name").is_string() || !entry.at("expect").is_object()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: an entry without \"name\" and \"expect\": {}", source, entry.dump()));
    }
    const std::string name = entry.at("name").get<std::string>();
    auto read_models = [&](const nlohmann::json& v) -> absl::StatusOr<ExpectedVerdicts> {
      // A process crash is not a replayed model: `powercut-workload` tests it by itself.
      nlohmann::json models = v;
      if (models.is_object()) models.erase("process_crash");
      absl::StatusOr<ExpectedVerdicts> verdicts = ExpectedVerdictsFromJson(models);
      if (!verdicts.ok()) {
        return absl::InvalidArgumentError(
            fmt::format("{}: {}: {}", source, name, std::string(verdicts.status().message())));
      }
      return verdicts;
    };
    CellExpect e;
    ASSIGN_OR_RETURN(e.models, read_models(entry.at("expect")));
    if (entry.contains("expect_by_fs")) {
      const auto& by_fs = entry.at("expect_by_fs");
      if (!by_fs.is_object()) {
        return absl::InvalidArgumentError(
            fmt::format("{}: {}: \"expect_by_fs\" must be an object", source, name));
      }
      for (const auto& [fs, v] : by_fs.items()) {
        absl::StatusOr<harness::FsKind> kind = harness::ParseFsKind(fs, "\"expect_by_fs\"");
        if (!kind.ok()) {
          return absl::InvalidArgumentError(
              fmt::format("{}: {}: {}", source, name, std::string(kind.status().message())));
        }
        ASSIGN_OR_RETURN(e.by_fs[*kind], read_models(v));
      }
    }
    // `powercut-workload list --json` names no file system: a verdict keyed by a property of the
    // file-system table applies to every row that has it.
    const nlohmann::json where = entry.value("expect_where", nlohmann::json::object());
    for (const auto& [property, v] : where.items()) {
      ASSIGN_OR_RETURN(const ExpectedVerdicts models, read_models(v));
      for (const harness::FileSystem& fs : harness::AllFileSystems()) {
        absl::StatusOr<bool> has = harness::HasCatalogProperty(fs, property);
        if (!has.ok()) {
          return absl::InvalidArgumentError(fmt::format("{}: {}: \"expect_where\": {}", source,
                                                        name, std::string(has.status().message())));
        }
        if (*has) e.by_fs[fs.kind].insert(models.begin(), models.end());
      }
    }
    out[name] = std::move(e);
  }
  return out;
}

void SetBuiltinCatalog(BuiltinCatalog catalog) { LinkedCatalog() = std::move(catalog); }

absl::StatusOr<std::map<std::string, CellExpect>> LoadBuiltinExpectations(
    const std::string& binary) {
  if (!Executable(binary)) {
    return absl::FailedPreconditionError(fmt::format(
        "{}: not an executable file: cannot run the built-in cells; rebuild powercut-workload or "
        "pass --no-expect",
        binary));
  }
  if (!LinkedCatalog()) {
    return absl::FailedPreconditionError(
        "no workload catalog was linked into this program (product::SetBuiltinCatalog): cannot "
        "read the expected verdicts; pass --no-expect");
  }
  return LinkedCatalog()();
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
  const InstallLayout layout = InstallLayout::Of(self);
  if (std::string found = layout.Find("powercut-workload"); Executable(found)) return found;
  // Only programs copied into a folder of their own look on PATH: an installed or built powercut
  // runs the powercut-workload it was installed or built with.
  const char* path = std::getenv("PATH");
  if (layout.kind() == InstallLayout::Kind::kLoose && path != nullptr) {
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
      "cannot find powercut-workload for {} (looked at {}, in {}): build the target "
      "powercut-workload or install it with powercut, or pass --workload-binary PATH or set "
      "POWERCUT_WORKLOAD",
      self, layout.Find("powercut-workload"), layout.Describe()));
}

}  // namespace powercut::product
