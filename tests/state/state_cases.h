// The commands of the data-driven cases under tests/state/testdata/ (the language:
// tests/state/README.md). One StateCases holds the trace the file's last `trace` command built
// (a dm-log-writes log written by the real TraceWriter, read back by the real TraceFile, a zero
// base image and a manifest), and runs every other command against it through the real cache
// models, state generator, state plan, working image and state ids.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "harness/state/cache_model.h"
#include "harness/state/state_generator.h"
#include "harness/state/working_image.h"
#include "harness/trace/disk_layout.h"
#include "harness/trace/trace_reader.h"
#include "tests/harness_testing.h"
#include "tests/state/datadriven.h"

namespace powercut::harness {

class StateCases {
 public:
  // The case's actual output; an error when the case cannot run (unknown command or argument).
  absl::StatusOr<std::string> Run(const powercut::testing::TestCase& c);

 private:
  absl::StatusOr<std::string> Trace(const powercut::testing::TestCase& c);
  // The trace's entries as the reader reads them, in the input's syntax.
  std::string ListEntries() const;
  absl::StatusOr<std::string> View(const powercut::testing::TestCase& c);
  absl::StatusOr<std::string> States(const powercut::testing::TestCase& c);
  absl::StatusOr<std::string> Count(const powercut::testing::TestCase& c);
  absl::StatusOr<std::string> Points(const powercut::testing::TestCase& c);
  absl::StatusOr<std::string> Ids(const powercut::testing::TestCase& c);
  absl::StatusOr<std::string> Materialize(const powercut::testing::TestCase& c);
  absl::StatusOr<std::string> Hashes(const powercut::testing::TestCase& c);
  absl::StatusOr<std::string> Plan(const powercut::testing::TestCase& c);
  absl::StatusOr<std::string> Contain(const powercut::testing::TestCase& c);
  absl::StatusOr<std::string> Seeded(const powercut::testing::TestCase& c);

  absl::Status NeedTrace(const powercut::testing::TestCase& c) const;
  // The model of `model=` (+ `window=`, `atomic=`), the atomic unit resolved.
  absl::StatusOr<CacheModel> ModelOf(const powercut::testing::TestCase& c,
                                     const std::string& key = "model") const;
  // What the commands about one point take: model=, the state options, point=, seed=.
  struct PointArgs {
    CacheModel model;
    StateOptions options;
    uint64_t point = 0;
    uint64_t seed = 1;
  };
  absl::StatusOr<PointArgs> PointArgsOf(const powercut::testing::TestCase& c) const;
  // The image of the current working image: per disk, the first byte of each logical sector
  // ('.' for zero), physical sectors separated by a space, disks by '|'.
  std::string SignatureOf(const std::string& path) const;
  // Makes image_ a working image of granule `granule` (min(logical sector, atomic unit)).
  absl::Status UseGranule(uint32_t granule);
  // Every state at `point` (in the generator's order) with its image and content hash.
  struct Built {
    std::string image;
    Hash128 hash;
    std::string id;  // without "pc1_<trace hash>_"
  };
  absl::StatusOr<std::vector<Built>> Build(uint64_t point, const CacheModel& model,
                                           const StateOptions& options, uint64_t seed);

  std::unique_ptr<testing::TempDir> dir_;
  std::string log_, base_;
  uint32_t logical_ = 512;
  uint32_t physical_ = 512;
  uint64_t sectors_ = 0;  // per disk
  DiskLayout layout_;
  std::unique_ptr<TraceFile> file_;
  std::unique_ptr<TraceIndex> index_;
  std::unique_ptr<WorkingImage> image_;
  uint32_t image_granule_ = 0;
};

}  // namespace powercut::harness
