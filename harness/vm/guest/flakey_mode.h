// What a failing disk does (docs/live-cuts.md, "A failing disk"): dm-flakey's error_writes (every
// write fails with EIO) or drop_writes (every write is silently lost). The command line, the
// matrix plan and report files read the name once into this type; the guest agent writes it back
// as dm-flakey's own feature name in the table it loads.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"

namespace powercut::vm {

enum class FlakeyMode { kErrorWrites, kDropWrites };

// For help texts and errors.
inline constexpr std::string_view kFlakeyModeChoices = "error_writes or drop_writes";

// "error_writes", "drop_writes": dm-flakey's feature names, and the one spelling every report,
// job file and flag uses.
std::string_view FlakeyModeName(FlakeyMode mode);
// The inverse of FlakeyModeName; anything else is an error that names it (after `what`, e.g.
// "--flakey") and lists the valid names.
absl::StatusOr<FlakeyMode> ParseFlakeyMode(std::string_view name, std::string_view what);

}  // namespace powercut::vm
