// LogDirectory: what a WAL directory holds, by file name: segments (in LSN order), leftover
// "*.log.tmp" files of a segment creation or recycling that a crash cut short, and nothing else.
//
// Guarantees: an error names the directory or file and says what to do (a missing directory, a path
// that is not a directory, a foreign file). Segment names are parsed with ParseSegmentFileName, so
// the order is numeric LSN order.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "wal/env.h"
#include "wal/record_format.h"

namespace powercut::recovery {

struct SegmentFile {
  wal::Lsn first_lsn = 0;  // from the name
  std::string name;
  std::string path;
};

struct LogDirectory {
  std::string dir;
  std::vector<SegmentFile> segments;    // ascending first_lsn
  std::vector<std::string> temp_files;  // names of leftover "wal-<20 digits>.log.tmp" files
};

// True for "wal-<20 digits>.log.tmp", the name the WAL creates a segment under before renaming it.
bool IsSegmentTempFileName(const std::string& name);

absl::StatusOr<LogDirectory> ListLogDirectory(wal::Env* env, const std::string& dir);

}  // namespace powercut::recovery
