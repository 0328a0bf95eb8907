// EncodeRecord / DecodeRecord throughput (wal/record_format.h): the CPU cost of framing a record,
// CRC32C included, per byte of payload.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "wal/record_format.h"

namespace powercut::wal {
namespace {

void BM_EncodeRecord(benchmark::State& state) {
  const std::vector<uint8_t> payload(static_cast<size_t>(state.range(0)), 0x5A);
  std::string out;
  out.reserve(payload.size() + kRecordHeaderSize);
  RecordHeader header;
  header.length = static_cast<uint32_t>(payload.size());
  for (auto _ : state) {
    out.clear();
    ++header.lsn;
    EncodeRecord(0x1234567890abcdefull, header, payload, &out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(payload.size() + kRecordHeaderSize));
}
BENCHMARK(BM_EncodeRecord)->Arg(128)->Arg(4096)->Arg(65536);

void BM_DecodeRecord(benchmark::State& state) {
  const std::vector<uint8_t> payload(static_cast<size_t>(state.range(0)), 0x5A);
  std::string encoded;
  RecordHeader header;
  header.length = static_cast<uint32_t>(payload.size());
  header.lsn = 7;
  header.synced_lsn = 6;
  EncodeRecord(42, header, payload, &encoded);
  const auto bytes =
      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(encoded.data()), encoded.size());
  for (auto _ : state) {
    DecodedRecord record = DecodeRecord(42, bytes, 1 << 30);
    if (record.outcome != DecodeOutcome::kOk) {
      state.SkipWithError("a freshly encoded record did not decode");
      break;
    }
    benchmark::DoNotOptimize(record.payload.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(encoded.size()));
}
BENCHMARK(BM_DecodeRecord)->Arg(128)->Arg(4096)->Arg(65536);

}  // namespace
}  // namespace powercut::wal
