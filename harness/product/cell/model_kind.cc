#include "harness/product/cell/model_kind.h"

#include <string>

#include "fmt/format.h"

namespace powercut::product {

std::string_view ModelKindName(ModelKind kind) {
  switch (kind) {
    case ModelKind::kOff:
      return harness::CacheModeName(harness::CacheMode::kOff);
    case ModelKind::kOn:
      return harness::CacheModeName(harness::CacheMode::kOn);
    case ModelKind::kLying:
      return harness::CacheModeName(harness::CacheMode::kLying);
    case ModelKind::kLive:
      return "live";
    case ModelKind::kNodeCut:
      return "node-cut";
    case ModelKind::kErrorWrites:
      return vm::FlakeyModeName(vm::FlakeyMode::kErrorWrites);
    case ModelKind::kDropWrites:
      return vm::FlakeyModeName(vm::FlakeyMode::kDropWrites);
  }
  return "?";
}

absl::StatusOr<ModelKind> ParseModelKind(std::string_view name) {
  for (ModelKind k : {ModelKind::kOff, ModelKind::kOn, ModelKind::kLying, ModelKind::kLive,
                      ModelKind::kNodeCut, ModelKind::kErrorWrites, ModelKind::kDropWrites}) {
    if (name == ModelKindName(k)) return k;
  }
  return absl::InvalidArgumentError(
      fmt::format("\"{}\" is not a model: {}", std::string(name), kModelKindChoices));
}

ModelKind ModelKindOf(harness::CacheMode mode) {
  switch (mode) {
    case harness::CacheMode::kOff:
      return ModelKind::kOff;
    case harness::CacheMode::kOn:
      return ModelKind::kOn;
    case harness::CacheMode::kLying:
      return ModelKind::kLying;
  }
  return ModelKind::kOff;
}

ModelKind ModelKindOf(vm::FlakeyMode mode) {
  switch (mode) {
    case vm::FlakeyMode::kErrorWrites:
      return ModelKind::kErrorWrites;
    case vm::FlakeyMode::kDropWrites:
      return ModelKind::kDropWrites;
  }
  return ModelKind::kErrorWrites;
}

std::optional<ModelKind> ModelKindOf(const harness::CacheModel& model) {
  if (!model.disk_modes.empty()) return std::nullopt;
  return ModelKindOf(model.mode);
}

}  // namespace powercut::product
