// Failing runs' recordings kept beside the report, so that every rebuild command printed in the
// table, JSON or HTML still works after the run ended (docs/run.md, "Recordings").
//
// `powercut run` and `powercut matrix` record each workload into a temporary folder that is
// removed when the run ends. When the run (a matrix cell) has violating states, its recording
// (trace.log, its manifest and base.img, sparse) moves into <dir>/<name>/ instead, as long as the
// total stays under a cap; the rebuild commands of the report are rewritten to name it (absolute
// paths). A recording over the cap is dropped and the report says so.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "harness/product/run/run.h"
#include "nlohmann/json.hpp"

namespace powercut::product {

struct RecordingStore {
  // The folder of the kept recordings; "" = a new /var/tmp/powercut-recordings-XXXXXX, made when
  // the first recording is kept.
  std::string dir;
  uint64_t cap_bytes = uint64_t{1} << 30;  // bytes on disk, all recordings together
  uint64_t kept_bytes = 0;
  struct Entry {
    std::string name;  // the run or cell
    std::string path;  // where it is ("" when dropped)
    uint64_t bytes = 0;
    std::string why;  // dropped: why
  };
  std::vector<Entry> kept, dropped;
  // KeepRecording holds it: a matrix checks several cells at once (copies share it).
  std::shared_ptr<absl::Mutex> mu = std::make_shared<absl::Mutex>();

  nlohmann::json ToJson() const;
  // One line for the tables: where, how big, what was dropped; "" when nothing was failing.
  std::string Summary() const;
};

// Moves the recording of `trace` (the trace, its manifest and the base image it names) into
// store->dir/<name with '/' as '_'>/ (a rename, or a sparse copy across file systems) unless the
// cap would be exceeded, and rewrites every rebuild command of out->report (and the timeline) to
// the kept files; a dropped recording's commands say why they cannot work. Sets
// out->recording_dir and out->recording_bytes, or adds a note.
void KeepRecording(const std::string& trace, const std::string& name, const std::string& powercut,
                   RecordingStore* store, RunOutcome* out);

// The store of `--recordings DIR --recordings-cap SIZE`: DIR, else a `recordings` folder beside
// the first of `reports` given (the --html, --json, --junit paths), else "" (a /var/tmp folder).
absl::StatusOr<RecordingStore> RecordingStoreFor(const std::string& dir, const std::string& cap,
                                                 const std::vector<std::string>& reports);

// "1GiB", "512MiB", "100KiB", "4096" (bytes); 0 keeps nothing.
absl::StatusOr<uint64_t> ParseByteSize(const std::string& text, const std::string& flag);
// 1536 -> "1.5 KiB".
std::string FormatBytes(uint64_t bytes);

}  // namespace powercut::product
