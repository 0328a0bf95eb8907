// powercut-workload: the built-in workloads of the crash tester and their checkers.
//
//   powercut-workload <workload> run [options]    commits, acking each on POWERCUT_ACK_FD
//   powercut-workload <workload> check            prints have/corrupt lines for a crash image
//
// Exit codes (docs/protocol.md): 0 success; 1 the workload failed (a write or barrier error: it
// stopped acking) or the checker found a store that does not open/recover; 2 bad usage or
// environment (missing POWERCUT_* variable, bad option, non-empty target).
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <climits>
#include <csignal>
#include <cstdio>
#include <exception>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wal/barrier.h"
#include "workloads/ack_channel.h"
#include "workloads/catalog.h"
#include "workloads/check_result.h"
#include "workloads/rocksdb_workload.h"
#include "workloads/sqlite_workload.h"
#include "workloads/wal_workload.h"
#include "workloads/xlog_workload.h"

namespace powercut::workloads {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

int ExitCodeFor(const absl::Status& status) {
  if (status.ok()) return kExitOk;
  return status.code() == absl::StatusCode::kInvalidArgument ? kExitUsage : kExitFailed;
}

int Report(const std::string& name, const absl::Status& status) {
  if (!status.ok()) {
    fmt::print(stderr, "powercut-workload {}: {}\n", name, std::string(status.message()));
  }
  return ExitCodeFor(status);
}

// Validates the environment (target, then ack channel) and runs `body`.
int RunForm(const std::string& name,
            const std::function<absl::Status(const Target&, AckChannel&)>& body) {
  absl::StatusOr<Target> target = TargetFromEnvironment();
  if (!target.ok()) return Report(name, target.status());
  absl::StatusOr<std::unique_ptr<AckChannel>> acks = AckChannel::FromEnvironment();
  if (!acks.ok()) return Report(name, acks.status());
  return Report(name, body(*target, **acks));
}

int CheckForm(const std::string& name,
              const std::function<absl::StatusOr<CheckResult>(const Target&)>& body) {
  absl::StatusOr<Target> target = TargetFromEnvironment();
  if (!target.ok()) return Report(name, target.status());
  absl::StatusOr<CheckResult> result = body(*target);
  if (!result.ok()) return Report(name, result.status());
  result->Print(name, stdout, stderr);
  return kExitOk;
}

// The absolute path of this binary, so that listed commands run from any directory.
std::string SelfPath(const char* argv0) {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return argv0;
  return std::string(buf, static_cast<size_t>(n));
}

int List(const std::string& binary, uint64_t count, bool json) {
  const std::vector<WorkloadConfig> catalog = Catalog();
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const WorkloadConfig& c : catalog) {
      nlohmann::json by_fs = nlohmann::json::object();
      for (const auto& [fs, e] : c.cache_off_by_fs) by_fs[fs] = {{"off", ExpectationName(e)}};
      out.push_back({{"name", c.name},
                     {"workload", c.workload},
                     {"setting", c.setting},
                     {"run", RunCommand(binary, c, count)},
                     {"check", CheckCommand(binary, c)},
                     {"expect",
                      {{"process_crash", ExpectationName(c.process_crash)},
                       {"off", ExpectationName(c.cache_off)},
                       {"on", ExpectationName(c.cache_on)},
                       {"lying", ExpectationName(c.cache_lying)}}},
                     {"expect_by_fs", by_fs}});
    }
    fmt::print("{}\n", out.dump(2));
    return kExitOk;
  }
  fmt::print("{:<28} {:<9} {:<9} {:<9} {:<9} {}\n", "NAME", "PROCESS", "OFF", "ON", "LYING", "RUN");
  for (const WorkloadConfig& c : catalog) {
    fmt::print("{:<28} {:<9} {:<9} {:<9} {:<9} {}\n", c.name, ExpectationName(c.process_crash),
               ExpectationName(c.cache_off), ExpectationName(c.cache_on),
               ExpectationName(c.cache_lying), RunCommand(binary, c, count));
  }
  return kExitOk;
}

CLI::Option* AddBarrier(CLI::App* app, std::string& barrier) {
  std::string names;
  for (wal::Barrier b : wal::AllBarriers()) {
    names += names.empty() ? "" : ", ";
    names += std::string(wal::BarrierName(b));
  }
  return app->add_option("--barrier", barrier, "durability barrier: " + names)
      ->capture_default_str();
}

int Main(int argc, char** argv) {
  // A tester that stops reading acks must surface as an error on write, not kill us silently.
  std::signal(SIGPIPE, SIG_IGN);

  CLI::App app{
      "powercut-workload: built-in crash-test workloads. Each has a 'run' form (needs "
      "POWERCUT_DIR or POWERCUT_DEV, and POWERCUT_ACK_FD) and a 'check' form (prints 'have <id>' "
      "per intact commit). See docs/protocol.md and docs/workloads.md."};
  app.require_subcommand(1);

  // list
  CLI::App* list = app.add_subcommand(
      "list", "print every configuration: run/check commands and expected verdicts");
  bool list_json = false;
  uint64_t list_count = 200;
  list->add_flag("--json", list_json, "JSON instead of a table");
  list->add_option("--count", list_count, "--count in the printed run commands")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);

  // xlog
  CLI::App* xlog = app.add_subcommand("xlog", "the 2001 xlog test: 4 KiB writes + barrier");
  xlog->require_subcommand(1);
  CLI::App* xlog_run = xlog->add_subcommand("run", "write, barrier and ack --count blocks");
  CLI::App* xlog_check = xlog->add_subcommand("check", "print have/corrupt for the xlog file");
  XlogOptions xlog_options;
  std::string xlog_barrier = "fdatasync";
  AddBarrier(xlog_run, xlog_barrier);
  xlog_run->add_flag("--append", xlog_options.append,
                     "append 4 KiB blocks instead of rewriting one block");
  xlog_run->add_option("--count", xlog_options.count, "blocks to write")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  xlog_run->add_option("--seed", xlog_options.seed, "seed of the block contents")
      ->capture_default_str();

  // rocksdb
  CLI::App* rocks = app.add_subcommand("rocksdb", "RocksDB Put, one key per commit");
  rocks->require_subcommand(1);
  CLI::App* rocks_run = rocks->add_subcommand("run", "Put and ack --count keys");
  CLI::App* rocks_check = rocks->add_subcommand("check", "reopen the DB, print have per key");
  RocksDbOptions rocks_options;
  rocks_run->add_option("--sync", rocks_options.sync, "WriteOptions.sync (true|false)")
      ->capture_default_str();
  rocks_run->add_flag("--disable-wal", rocks_options.disable_wal, "WriteOptions.disableWAL");
  rocks_run->add_option("--count", rocks_options.count, "keys to put")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  rocks_run->add_option("--threads", rocks_options.threads, "concurrent writers")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  rocks_run->add_option("--value-size", rocks_options.value_size, "mean value size in bytes")
      ->capture_default_str();
  rocks_run->add_option("--seed", rocks_options.seed, "seed of the value sizes")
      ->capture_default_str();

  // sqlite
  CLI::App* sqlite = app.add_subcommand("sqlite", "SQLite, one row per transaction");
  sqlite->require_subcommand(1);
  CLI::App* sqlite_run = sqlite->add_subcommand("run", "insert, commit and ack --count rows");
  CLI::App* sqlite_check =
      sqlite->add_subcommand("check", "integrity_check, then print have per row");
  SqliteOptions sqlite_options;
  sqlite_run->add_option("--journal", sqlite_options.journal, "journal_mode: wal or delete")
      ->capture_default_str()
      ->check(CLI::IsMember({"wal", "delete"}));
  sqlite_run
      ->add_option("--synchronous", sqlite_options.synchronous,
                   "synchronous: extra, full, normal, off")
      ->capture_default_str()
      ->check(CLI::IsMember({"extra", "full", "normal", "off"}));
  sqlite_run->add_option("--count", sqlite_options.count, "rows (transactions)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sqlite_run->add_option("--value-size", sqlite_options.value_size, "mean payload size in bytes")
      ->capture_default_str();
  sqlite_run->add_option("--seed", sqlite_options.seed, "seed of the payload sizes")
      ->capture_default_str();

  // wal
  CLI::App* wal_app = app.add_subcommand("wal", "the project's WAL, T committers, group commit");
  wal_app->require_subcommand(1);
  CLI::App* wal_run = wal_app->add_subcommand("run", "commit and ack --count records");
  CLI::App* wal_check = wal_app->add_subcommand("check", "run recovery, print have per record");
  WalWorkloadOptions wal_options;
  std::string wal_barrier = "fdatasync";
  AddBarrier(wal_run, wal_barrier);
  wal_run->add_option("--count", wal_options.count, "records to commit")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  wal_run->add_option("--threads", wal_options.threads, "concurrent committers")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  wal_run->add_option("--value-size", wal_options.value_size, "mean payload size in bytes")
      ->capture_default_str();
  wal_run->add_option("--seed", wal_options.seed, "seed of the payload sizes")
      ->capture_default_str();
  wal_run->add_option("--segment-bytes", wal_options.segment_bytes, "segment size in bytes")
      ->capture_default_str();
  wal_run
      ->add_option("--max-batch-wait-us", wal_options.max_batch_wait_us,
                   "how long a group-commit leader waits for more committers")
      ->capture_default_str();
  std::string wal_mode = "tolerate-torn-tail";
  wal_check
      ->add_option("--mode", wal_mode,
                   "recovery mode: tolerate-torn-tail, point-in-time, absolute, salvage")
      ->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }

  if (*list) return List(SelfPath(argv[0]), list_count, list_json);
  if (*xlog_run) {
    return RunForm("xlog run", [&](const Target& target, AckChannel& acks) -> absl::Status {
      absl::StatusOr<wal::Barrier> barrier = wal::ParseBarrier(xlog_barrier);
      if (!barrier.ok()) return barrier.status();
      xlog_options.barrier = *barrier;
      return RunXlog(target, xlog_options, acks);
    });
  }
  if (*xlog_check) return CheckForm("xlog check", CheckXlog);
  if (*rocks_run) {
    return RunForm("rocksdb run", [&](const Target& target, AckChannel& acks) -> absl::Status {
      if (absl::Status s = RequireDir(target, "rocksdb"); !s.ok()) return s;
      return RunRocksDb(target.dir, rocks_options, acks);
    });
  }
  if (*rocks_check) {
    return CheckForm("rocksdb check", [](const Target& target) -> absl::StatusOr<CheckResult> {
      if (absl::Status s = RequireDir(target, "rocksdb"); !s.ok()) return s;
      return CheckRocksDb(target.dir);
    });
  }
  if (*sqlite_run) {
    return RunForm("sqlite run", [&](const Target& target, AckChannel& acks) -> absl::Status {
      if (absl::Status s = RequireDir(target, "sqlite"); !s.ok()) return s;
      return RunSqlite(target.dir, sqlite_options, acks);
    });
  }
  if (*sqlite_check) {
    return CheckForm("sqlite check", [](const Target& target) -> absl::StatusOr<CheckResult> {
      if (absl::Status s = RequireDir(target, "sqlite"); !s.ok()) return s;
      return CheckSqlite(target.dir);
    });
  }
  if (*wal_run) {
    return RunForm("wal run", [&](const Target& target, AckChannel& acks) -> absl::Status {
      if (absl::Status s = RequireDir(target, "wal"); !s.ok()) return s;
      absl::StatusOr<wal::Barrier> barrier = wal::ParseBarrier(wal_barrier);
      if (!barrier.ok()) return barrier.status();
      wal_options.barrier = *barrier;
      return RunWal(target.dir, wal_options, acks);
    });
  }
  if (*wal_check) {
    return CheckForm("wal check", [&](const Target& target) -> absl::StatusOr<CheckResult> {
      if (absl::Status s = RequireDir(target, "wal"); !s.ok()) return s;
      absl::StatusOr<recovery::Mode> mode = recovery::ParseMode(wal_mode);
      if (!mode.ok()) return absl::InvalidArgumentError(std::string(mode.status().message()));
      return CheckWal(target.dir, *mode);
    });
  }
  return kExitUsage;
}

}  // namespace
}  // namespace powercut::workloads

int main(int argc, char** argv) {
  // Library APIs report errors as absl::Status; this only catches what the standard library or
  // CLI11 may still throw (e.g. std::bad_alloc), so that it becomes a message, not an abort.
  try {
    return powercut::workloads::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "powercut-workload: %s\n", e.what());
    return 1;
  }
}
