// CRC32C throughput (wal/crc32c.h, ISA-L's crc32_iscsi).
#include <benchmark/benchmark.h>

#include <vector>

#include "wal/crc32c.h"

namespace powercut::crc32c {
namespace {

void BM_Crc32cValue(benchmark::State& state) {
  std::vector<uint8_t> data(static_cast<size_t>(state.range(0)));
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 31);
  for (auto _ : state) {
    benchmark::DoNotOptimize(Value(data.data(), data.size()));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(data.size()));
}
BENCHMARK(BM_Crc32cValue)->Arg(32)->Arg(4096)->Arg(65536);

}  // namespace
}  // namespace powercut::crc32c
