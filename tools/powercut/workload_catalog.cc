#include "tools/powercut/workload_catalog.h"

#include <string>

#include "harness/fs/file_system.h"
#include "workloads/catalog.h"

namespace powercut::cli {

std::map<std::string, product::CellExpect> LinkedWorkloadCatalog() {
  std::map<std::string, product::CellExpect> out;
  for (const workloads::WorkloadConfig& config : workloads::Catalog()) {
    product::CellExpect& expect = out[config.name];
    expect.models["off"] = workloads::ExpectationName(config.cache_off);
    expect.models["on"] = workloads::ExpectationName(config.cache_on);
    expect.models["lying"] = workloads::ExpectationName(config.cache_lying);
    // A live cut is a power cut of a drive whose cache honours flushes: cache on's verdict where
    // that is survival; where cache on loses, a few seeded cuts may or may not hit a losing
    // state (the replay searches them; a cut is one sample).
    expect.models[product::kLiveCutModel] = workloads::ExpectationName(
        config.cache_on == workloads::Expectation::kSurvives ? workloads::Expectation::kSurvives
                                                             : workloads::Expectation::kMayLose);
    expect.models["error_writes"] = workloads::ExpectationName(config.error_writes);
    expect.models["drop_writes"] = workloads::ExpectationName(config.drop_writes);
    for (const harness::FileSystem& fs : harness::AllFileSystems()) {
      if (fs.overwrites_out_of_place && config.cache_off_out_of_place) {
        expect.by_fs[fs.name]["off"] = workloads::ExpectationName(*config.cache_off_out_of_place);
      }
      if (fs.direct_dsync_overwrite_may_skip_flush && config.cache_on_dsync_unflushed) {
        expect.by_fs[fs.name]["on"] = workloads::ExpectationName(*config.cache_on_dsync_unflushed);
      }
    }
  }
  return out;
}

}  // namespace powercut::cli
