// The catalog of built-in workload configurations: for each one, its run and check commands and
// the verdict the barrier's documented semantics predict under each cache model
// (docs/workloads.md, "Expected verdicts"). `powercut-workload list` prints it, and the tester
// links it (tools/powercut hands it to harness/product), so the matrix and its tests take
// commands and expectations from one place instead of copying strings.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected_verdict.h"
#include "wal/barrier.h"

namespace powercut::workloads {

// What a configuration is expected to do under each model (base/expected_verdict.h; printed
// with ExpectedVerdictName): survives (no acked commit lost, checker exits 0, no corrupt), loses
// (some crash state loses acked commits) or may-lose (depends on timing the tester may or may not
// hit, e.g. only the last ack).
using Expectation = ExpectedVerdict;

struct WorkloadConfig {
  std::string name;                   // e.g. "xlog-append-fdatasync", "sqlite-wal-normal"
  std::string workload;               // "xlog", "rocksdb", "sqlite", "wal"
  std::string setting;                // the barrier or durability setting under test
  std::vector<std::string> run_args;  // after "<workload> run"
  Expectation process_crash = Expectation::kSurvives;
  Expectation cache_off = Expectation::kLoses;
  Expectation cache_on = Expectation::kLoses;
  Expectation cache_lying = Expectation::kLoses;
  // Where a file system differs, by a property of the file-system table (harness/fs/, which the
  // tester applies; this room names no file system); absent: the same as above. The cache-off
  // verdict where an overwrite goes out of place (overwrites_out_of_place: btrfs), and the
  // cache-on verdict where an O_DIRECT|O_DSYNC overwrite may be acked unflushed
  // (direct_dsync_overwrite_may_skip_flush: f2fs).
  std::optional<Expectation> cache_off_out_of_place;
  std::optional<Expectation> cache_on_dsync_unflushed;
  // On a failing disk (`--flakey`, docs/live-cuts.md): writes fail with EIO after some acks
  // (a program that fences at a failed barrier survives), or are silently dropped (no program
  // can tell: an ack whose writes came after the switch is lost; a fast program may have
  // written everything before it, as the WAL's group commit did in the faults preset).
  Expectation error_writes = Expectation::kSurvives;
  Expectation drop_writes = Expectation::kMayLose;
  // Where the expectation comes from: the database's own documentation (section and URL) and
  // what it promises, for the database workloads; "" for the barrier workloads, whose
  // expectations follow docs/barriers.md.
  std::string documented;
  // Recorded disks (`powercut run --disks N`): 2 for the workloads whose log and data live on
  // different disks (twodisk, rocksdb/postgres/etcd --wal-disk); they run only in `--preset
  // multidisk`.
  uint32_t disks = 1;
};

// Every configuration of the four workloads (io_uring only when compiled in): each workload's
// CatalogEntries() (workloads/workload.h), in the order xlog, wal, rocksdb, sqlite.
std::vector<WorkloadConfig> Catalog();

// Sets the power-cut verdicts the barrier's documented semantics predict (cache off and on) for a
// write that overwrites preallocated data (xlog overwrite, the WAL's preallocated segments) or
// that extends the file (xlog append).
void ExpectBarrierVerdicts(wal::Barrier barrier, bool extends_file, WorkloadConfig& config);

// "<binary> <workload> run <args> --count N" and "<binary> <workload> check".
std::string RunCommand(const std::string& binary, const WorkloadConfig& config, uint64_t count);
std::string CheckCommand(const std::string& binary, const WorkloadConfig& config);

}  // namespace powercut::workloads
