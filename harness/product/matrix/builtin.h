// The built-in workloads of `powercut matrix`: each (workload, setting) maps to a run and a check
// command of the `powercut-workload` binary (docs/workloads.md). The names are the matrix's
// vocabulary: `--workloads xlog,rocksdb --barriers fdatasync,sync`.
//
//   workload       settings (the --barriers values that apply to it)
//   xlog           none fdatasync fsync odsync rwf_dsync direct_dsync direct sync_file_range
//   io_uring xlog-append    the same barriers, append variant wal            the same barriers, the
//   project's WAL with 4 committers rocksdb        sync nosync nowal sqlite-wal     extra full
//   normal off        (journal_mode=WAL) sqlite-delete  extra full normal off (journal_mode=DELETE)
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/product/cell/cell_result.h"

namespace powercut::product {

struct BuiltinCell {
  std::string workload;  // e.g. "xlog"
  std::string setting;   // e.g. "fdatasync"
  std::string run_args;  // after "<binary> <kind> run"
  std::string kind;      // the powercut-workload subcommand: xlog, wal, rocksdb, sqlite
  uint32_t disks = 1;    // recorded disks (RunOptions::disks): 2 for twodisk and the *-waldisk
};

// Every workload name, in matrix order.
std::vector<std::string> BuiltinWorkloads();
// The settings a workload accepts, in matrix order (the defaults when --barriers is empty).
absl::StatusOr<std::vector<std::string>> BuiltinSettings(const std::string& workload);
// Fails naming the unknown workload or setting and listing the valid ones.
absl::StatusOr<BuiltinCell> LookupBuiltin(const std::string& workload, const std::string& setting);

// The program that runs `cell`: for the kinds whose client libraries live in
// powercut-workload-clients (rocksdb, postgres; workloads/README.md, "Two binaries") that binary
// when it is where the layout of `binary` puts it (base/install_layout.h), so that a check in a TCG
// guest does not first start powercut-workload only to be handed over (~0.25 s a state); else
// `binary` itself (which hands over, or is a user's own --workload-binary).
std::string BuiltinProgram(const std::string& binary, const BuiltinCell& cell);

std::string BuiltinRunCommand(const std::string& binary, const BuiltinCell& cell, uint64_t count,
                              uint64_t seed);
std::string BuiltinCheckCommand(const std::string& binary, const BuiltinCell& cell);

// The workload catalog's expected verdicts, keyed "<workload>-<setting>" (e.g.
// "xlog-append-fdatasync"). harness/ never depends on workloads/: the program that links both
// (tools/powercut) hands the catalog of workloads/catalog.h in at start-up, so the catalog of the
// binary that runs the cells is the one source of truth, linked rather than read from a pipe.
using BuiltinCatalog = std::function<std::map<std::string, CellExpect>()>;
void SetBuiltinCatalog(BuiltinCatalog catalog);

// The expected verdict of every built-in (workload, setting) per cache model, from the catalog
// handed to SetBuiltinCatalog. `binary` is the powercut-workload that runs the cells.
// FailedPrecondition when it is not an executable file or no catalog was handed in.
absl::StatusOr<std::map<std::string, CellExpect>> LoadBuiltinExpectations(
    const std::string& binary);
// The same from the JSON text `powercut-workload list --json` prints; `source` names it in errors.
absl::StatusOr<std::map<std::string, CellExpect>> ParseBuiltinExpectations(
    const std::string& json_text, const std::string& source);

// Finds powercut-workload: `hint` if non-empty (must be executable), else $POWERCUT_WORKLOAD,
// else where the layout of `self` (the running powercut: installed, build tree or a loose folder,
// base/install_layout.h) puts it, else, for a loose folder only, on PATH. The error says how to
// point at it.
absl::StatusOr<std::string> FindWorkloadBinary(const std::string& hint, const std::string& self);

}  // namespace powercut::product
