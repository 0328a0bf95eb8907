// The bytes a workload writes: deterministic, derived from the file's path, the byte's offset and
// the workload's write counter, so the oracle knows every byte and a person reading a crash image
// can tell which write left a block there.
//
// The file is cut into 32-byte chunks at offsets multiple of 32; the chunk at offset O written by
// the N-th write (1-based, counted over the whole workload) to path P reads
//   "w0003 0000008000 4f1c2a9e      \n"
// (N in 4 digits, O in 10 hex digits, the first 8 hex digits of the XXH3 of P, spaces, newline).
// A write of [off, off + len) stores the bytes of those chunks that fall in the range, so an
// unaligned write is a slice of the same pattern.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace powercut::fstest {

// The `length` bytes at [offset, offset + length) of write number `counter` to `path`.
std::string ContentFor(std::string_view path, uint64_t counter, uint64_t offset, uint64_t length);

}  // namespace powercut::fstest
