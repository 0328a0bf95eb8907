// The one guard every program's main() runs its real main under.
//
// Library APIs report errors as absl::Status; what may still throw is the standard library
// (std::bad_alloc, std::filesystem), JSON, CLI11 or RocksDB's C++ API. Whatever escapes becomes
// "<program>: unexpected error: <what>" on stderr and the program's own failure exit code, never
// std::terminate's abort (which a CI log shows as a core dump with no reason).
#pragma once

#include <string_view>

#include "absl/functional/function_ref.h"

namespace powercut {

// Returns what `main` returns, or `failure_exit_code` when it throws.
int RunMainGuarded(std::string_view program, int failure_exit_code, absl::FunctionRef<int()> main);

}  // namespace powercut
