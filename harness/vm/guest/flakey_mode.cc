#include "harness/vm/guest/flakey_mode.h"

#include <string>

#include "fmt/format.h"

namespace powercut::vm {

std::string_view FlakeyModeName(FlakeyMode mode) {
  switch (mode) {
    case FlakeyMode::kErrorWrites:
      return "error_writes";
    case FlakeyMode::kDropWrites:
      return "drop_writes";
  }
  return "?";
}

absl::StatusOr<FlakeyMode> ParseFlakeyMode(std::string_view name, std::string_view what) {
  for (FlakeyMode m : {FlakeyMode::kErrorWrites, FlakeyMode::kDropWrites}) {
    if (name == FlakeyModeName(m)) return m;
  }
  return absl::InvalidArgumentError(
      fmt::format("{} \"{}\": not a failing disk's mode; expected {} (writes fail with EIO / are "
                  "silently lost)",
                  what, std::string(name), kFlakeyModeChoices));
}

}  // namespace powercut::vm
