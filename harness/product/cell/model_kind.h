// The rows of a cell (CellModel, harness/product/cell/cell_result.h): a replay under one of the
// three cache models (harness/state/cache_model.h), or a fault mode (docs/live-cuts.md): live power
// cuts, or a failing disk that errors or drops writes. Expectations (CellExpect) are keyed by it,
// so a name is read once, where a catalog, a --cells file, `--expect` or a report is read.
#pragma once

#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "harness/state/cache_model.h"
#include "harness/vm/guest/flakey_mode.h"

namespace powercut::product {

enum class ModelKind { kOff, kOn, kLying, kLive, kNodeCut, kErrorWrites, kDropWrites };

// For help texts and errors.
inline constexpr std::string_view kModelKindChoices =
    "off, on, lying, live, node-cut, error_writes or drop_writes";

// "off", "on", "lying" (harness::CacheModeName), "live", "node-cut", "error_writes",
// "drop_writes".
std::string_view ModelKindName(ModelKind kind);
// The inverse of ModelKindName; anything else is an error that lists the valid names.
absl::StatusOr<ModelKind> ParseModelKind(std::string_view name);

ModelKind ModelKindOf(harness::CacheMode mode);
// The kind of a replay under `model`; none for a set whose disks have different models
// ("1=on,2=lying"), which no catalog entry names.
std::optional<ModelKind> ModelKindOf(const harness::CacheModel& model);
// The row of a failing disk's run: kErrorWrites or kDropWrites.
ModelKind ModelKindOf(vm::FlakeyMode mode);

}  // namespace powercut::product
