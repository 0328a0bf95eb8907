// The product commands of `powercut` (harness/product/, docs/run.md): run, matrix, merge, repro.
// Each registers its subcommand; exit codes: 0 no violation, 1 violations, 2 could not run or
// bad usage.
#pragma once

#include <functional>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "harness/product/matrix/matrix.h"
#include "harness/product/run/run.h"
#include "nlohmann/json.hpp"

namespace powercut::cli {

void AddRunCommand(CLI::App& app, int* exit_code);     // run
void AddMatrixCommand(CLI::App& app, int* exit_code);  // matrix
void AddMergeCommand(CLI::App& app, int* exit_code);   // merge
void AddReproCommand(CLI::App& app, int* exit_code);   // repro
void AddFsTestCommand(CLI::App& app, int* exit_code);  // fstest list | run | repro

// Registers all five.
inline void AddProductCommands(CLI::App& app, int* exit_code) {
  AddRunCommand(app, exit_code);
  AddMatrixCommand(app, exit_code);
  AddMergeCommand(app, exit_code);
  AddReproCommand(app, exit_code);
  AddFsTestCommand(app, exit_code);
}

// --recordings DIR and --recordings-cap SIZE of `run` and `matrix` (docs/run.md, "Recordings").
void AddRecordingsOptions(CLI::App* command, std::string* dir, std::string* cap);
// --guest-memory MiB, --guest-cpus N, --disk-size SIZE (run and matrix): `disk` is parsed by
// ParseGuestDisk.
void AddGuestSizeOptions(CLI::App* command, product::GuestSize* guest, std::string* disk);
// --kernel PATH (run, matrix, repro): the guest kernel with its modules (vm::OpenUserKernel).
void AddKernelOption(CLI::App* command, std::string* path);
// Fills *bytes from --disk-size ("" keeps the file system's default) (matrix, fstest run).
absl::Status ParseGuestDisk(const std::string& disk, uint64_t* bytes);

// Prints "powercut: <message>" to stderr and returns 2 (could not run).
int CouldNotRun(const std::string& message);

// A finished matrix-shaped run (matrix, fstest run): prints `table` on stdout and the recording
// phases on stderr (unless `quiet`), writes the report files that have a path ("" = not asked
// for; the HTML is drawn only then). Returns product::MatrixExitCode, or 2 when a file could not
// be written.
struct ReportFiles {
  std::string json, junit, html;
  std::function<std::string(const product::MatrixReport&)> html_report;
};
int PrintAndWriteReports(const product::MatrixReport& report, const std::string& table,
                         const nlohmann::json& json, const ReportFiles& files, bool quiet);

}  // namespace powercut::cli
