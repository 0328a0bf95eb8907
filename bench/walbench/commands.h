// The `walbench` command line (docs/walbench.md): main.cc is a dispatcher; each subcommand lives in
// its own file and registers itself here, like tools/powercut. A subcommand's callback stores its
// exit code in *exit_code: 0 ok, 1 the bench failed, 2 bad usage.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bench/walbench/bench_dir.h"
#include "bench/walbench/block_device.h"
#include "nlohmann/json.hpp"
#include "wal/barrier.h"

namespace powercut::walbench::cli {

void AddBarriersCommand(CLI::App& app, int* exit_code);  // barriers: barriers_command.cc
void AddCommitCommand(CLI::App& app, int* exit_code);    // commit: commit_command.cc
void AddCacheCommand(CLI::App& app, int* exit_code);     // cache: cache_command.cc

// What the subcommands share (command_support.cc).
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Prints "walbench: <message>" to stderr; returns 2 for InvalidArgument, else 1.
int Fail(const absl::Status& status);

// SCHED_FIFO for this process and the threads it starts (--fifo); warns when it is refused.
void UseFifoScheduling(bool wanted);

// --barriers names to barriers; InvalidArgument naming the flag for an unknown one.
absl::StatusOr<std::vector<wal::Barrier>> ParseBarriers(const std::vector<std::string>& names);

// Writes `contents` to `path`; the error names `flag` (e.g. "--json") and the path.
absl::Status WriteFile(const std::string& path, const std::string& contents, std::string_view flag);

// --json: writes `json` (indented, with a final newline) to `path`; nothing when `path` is empty.
absl::Status WriteJsonIfAsked(const std::string& path, const nlohmann::json& json);

// The scratch directory under `parent` and the facts of the disk under it, printed with the
// warnings a user needs (tmpfs, no block device). A bad --dir is InvalidArgument.
absl::StatusOr<DeviceFacts> PrepareDir(const std::string& parent, std::unique_ptr<BenchDir>* dir);

}  // namespace powercut::walbench::cli
