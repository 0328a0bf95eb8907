// walbench: what each durability barrier costs on this disk, whether the disk can be honouring it,
// and how the WAL's group commit compares with RocksDB and with the device's floor.
// See docs/walbench.md. One file per subcommand (commands.h):
//
//   walbench barriers [--dir D] [--barriers a,b] [--workloads w] [--op-bytes 512,4096] [--json F]
//   walbench commit   [--dir D] [--engines wal,rocksdb,bare] [--threads 1,2,...] [--barriers b]
//                     [--record-bytes 128,4096] [--seconds S] [--reps N] [--json F] [--svg F]
//   walbench cache    [--local] [--dir D] [--mib N] [--seconds S] [--reps N] [--json F]
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "base/main_guard.h"
#include "bench/walbench/commands.h"

namespace {

int Main(int argc, char** argv) {
  namespace cli = powercut::walbench::cli;
  CLI::App app{
      "walbench: the cost of durability barriers, group commit against RocksDB and the "
      "bare device, and the drive-cache effect (docs/walbench.md)"};
  app.require_subcommand(1);
  int exit_code = cli::kExitUsage;
  cli::AddBarriersCommand(app, &exit_code);
  cli::AddCommitCommand(app, &exit_code);
  cli::AddCacheCommand(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  return powercut::RunMainGuarded("walbench", powercut::walbench::cli::kExitFailure,
                                  [&] { return Main(argc, argv); });
}
