#include "tools/powercut/workload_catalog.h"

#include <string>

#include "harness/fs/file_system.h"
#include "workloads/catalog.h"

namespace powercut::cli {

std::map<std::string, product::CellExpect> LinkedWorkloadCatalog() {
  using product::ModelKind;
  std::map<std::string, product::CellExpect> out;
  for (const workloads::WorkloadConfig& config : workloads::Catalog()) {
    product::CellExpect& expect = out[config.name];
    expect.models[ModelKind::kOff] = config.cache_off;
    expect.models[ModelKind::kOn] = config.cache_on;
    expect.models[ModelKind::kLying] = config.cache_lying;
    // A live cut is a power cut of a drive whose cache honours flushes: cache on's verdict where
    // that is survival; where cache on loses, a few seeded cuts may or may not hit a losing
    // state (the replay searches them; a cut is one sample).
    expect.models[ModelKind::kLive] = config.cache_on == ExpectedVerdict::kSurvives
                                          ? ExpectedVerdict::kSurvives
                                          : ExpectedVerdict::kMayLose;
    expect.models[ModelKind::kErrorWrites] = config.error_writes;
    expect.models[ModelKind::kDropWrites] = config.drop_writes;
    for (const harness::FileSystem& fs : harness::AllFileSystems()) {
      if (fs.overwrites_out_of_place && config.cache_off_out_of_place) {
        expect.by_fs[fs.kind][ModelKind::kOff] = *config.cache_off_out_of_place;
      }
      if (fs.direct_dsync_overwrite_may_skip_flush && config.cache_on_dsync_unflushed) {
        expect.by_fs[fs.kind][ModelKind::kOn] = *config.cache_on_dsync_unflushed;
      }
    }
  }
  return out;
}

}  // namespace powercut::cli
