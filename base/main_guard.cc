#include "base/main_guard.h"

#include <cstdio>
#include <exception>

namespace powercut {

int RunMainGuarded(std::string_view program, int failure_exit_code, absl::FunctionRef<int()> main) {
  try {
    return main();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%.*s: unexpected error: %s\n", static_cast<int>(program.size()),
                 program.data(), e.what());
  } catch (...) {
    std::fprintf(stderr, "%.*s: unexpected error\n", static_cast<int>(program.size()),
                 program.data());
  }
  return failure_exit_code;
}

}  // namespace powercut
