// Commit payloads that verify themselves, shared by the rocksdb, sqlite and wal workloads.
//
// A checker tells from the bytes alone which id a payload belongs to and whether it is intact,
// without knowing the options of the run that wrote it (sizes vary with --seed):
//
//   "<id>|<filler>|<crc32c as 8 lowercase hex digits>"
//
// The filler is lowercase letters generated from the id alone; the CRC32C covers everything
// before the last '|'. Any torn, truncated, stale or foreign payload fails VerifyPayload.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace powercut::workloads {

// The payload of commit `id` with `filler_bytes` bytes of filler. `id` must be a protocol id.
std::string MakePayload(std::string_view id, size_t filler_bytes);

// The id the payload belongs to when it is intact; nullopt when it is damaged or not a payload.
std::optional<std::string> PayloadId(std::string_view payload);

// True when `payload` is an intact payload of commit `id`.
bool VerifyPayload(std::string_view id, std::string_view payload);

// A filler size in [mean/2, mean*3/2], fixed by (seed, id), so runs are reproducible.
size_t FillerSize(uint64_t seed, uint64_t id, size_t mean);

// SplitMix64: a tiny deterministic generator (Steele et al.), used for filler and sizes.
uint64_t SplitMix64(uint64_t& state);

}  // namespace powercut::workloads
