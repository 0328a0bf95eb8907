// `powercut fstest report`: a finding written the way a file-system mailing list expects it
// (docs/fstest.md, "A report for the file system's maintainers"), from a `powercut fstest repro`
// bundle:
//   REPORT.md   the shrunk workload, what its point promised and what the crash state showed
//               (expected vs found), the kernels, file systems and options where it fails and
//               where it passes, and the trace excerpt around the violated acknowledgement: the
//               writes that were neither FUA nor followed by a FLUSH when it was given;
//   repro.c     the workload as a standalone C program (the same bytes, the same system calls),
//               which also reads a dm-log-writes log back and prints, per acknowledgement, the
//               writes not yet durable on a drive with a volatile cache;
//   repro.sh    loop devices, mkfs, dm-log-writes, the program, the log's verdict: only the
//               kernel, a C compiler, dmsetup and the file system's mkfs are needed.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/fstest/workload.h"
#include "harness/product/matrix/matrix.h"

namespace powercut::product {

// One place the minimal workload ran: a cell of a `fstest run` report and one cache model.
struct FsTestReportRun {
  std::string kernel;  // the guest's `uname -r`
  std::string fs;
  std::string profile = "default";  // harness/product/fstest_profiles.h
  // All of them: the profile's and the user's.
  std::string mkfs_options, mount_options;
  std::string cache;
  bool ran = false;
  bool violates = false;
  std::string why;  // the first violation's, or why it could not run
};

// Every cell and model of `report` (a `fstest run` of the minimal workload) as runs.
std::vector<FsTestReportRun> ReportRuns(const MatrixReport& report);

struct FsTestReport {
  std::string markdown;   // REPORT.md
  std::string c_program;  // repro.c
  std::string shell;      // repro.sh
};

// The report of the `fstest repro` bundle `bundle` (fstest-repro.json, workload.fst,
// recording/trace.log and output.txt), with `runs` as where it fails and passes.
absl::StatusOr<FsTestReport> MakeFsTestReport(const std::string& bundle,
                                              const std::vector<FsTestReportRun>& runs);

// Writes REPORT.md, repro.c, repro.sh and workload.fst into `dir`.
absl::Status WriteFsTestReport(const FsTestReport& report, const fstest::Workload& workload,
                               const std::string& dir);

// The workload as a C program (`repro run DIR [MARK-COMMAND]`, `repro log LOGDEV`).
std::string ReproducerC(const fstest::Workload& workload);

// The shell script that records the program with dm-log-writes on loop devices.
std::string ReproducerShell(const std::string& fs, const std::string& mkfs_options,
                            const std::string& mount_options);

}  // namespace powercut::product
