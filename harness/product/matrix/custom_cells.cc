#include "harness/product/matrix/custom_cells.h"

#include <fstream>
#include <set>

#include "fmt/format.h"
#include "harness/cluster/cluster.h"
#include "harness/fs/file_system.h"

namespace powercut::product {
namespace {

absl::Status Bad(const std::string& source, size_t i, const std::string& what) {
  return absl::InvalidArgumentError(fmt::format("{}: cell {}: {}", source, i + 1, what));
}

}  // namespace

absl::StatusOr<std::vector<CustomCell>> ParseCustomCells(const nlohmann::json& j,
                                                         const std::string& source) {
  const nlohmann::json* list = &j;
  if (j.is_object() && j.contains("cells")) list = &j.at("cells");
  if (!list->is_array()) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: expected {{\"cells\": [...]}} or an array of cells (docs/run.md, custom cells)",
        source));
  }
  std::vector<CustomCell> cells;
  std::set<std::string> names;
  for (size_t i = 0; i < list->size(); ++i) {
    const nlohmann::json& c = (*list)[i];
    if (!c.is_object()) return Bad(source, i, "expected an object");
    try {
      CustomCell cell;
      cell.name = c.value("name", "");
      cell.workload = c.value("workload", "");
      cell.checker = c.value("checker", "");
      if (c.contains("fs")) {
        absl::StatusOr<harness::FsKind> kind =
            harness::ParseFsKind(c.at("fs").get<std::string>(), "\"fs\"");
        if (!kind.ok()) return Bad(source, i, std::string(kind.status().message()));
        cell.fs = *kind;
      }
      cell.timeout_s = c.value("timeout", 0);
      cell.max_acks = c.value("max_acks", uint64_t{0});
      cell.checker_timeout_s = c.value("checker_timeout", 0.0);
      cell.nodes = c.value("nodes", 0U);
      cell.node_command = c.value("node", "");
      if (cell.name.empty() ||
          cell.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                      "0123456789_.-") != std::string::npos) {
        return Bad(source, i,
                   fmt::format("\"name\" '{}': give a name of [A-Za-z0-9_.-]", cell.name));
      }
      if (!names.insert(cell.name).second) {
        return Bad(source, i, fmt::format("the name '{}' is used twice", cell.name));
      }
      if (cell.workload.empty() || cell.checker.empty()) {
        return Bad(source, i,
                   fmt::format("'{}' needs both \"workload\" and \"checker\" commands", cell.name));
      }
      if (cell.timeout_s < 0) return Bad(source, i, "\"timeout\" must be positive");
      if (cell.nodes != 0 || !cell.node_command.empty()) {
        if (absl::Status s = cluster::ValidateNodeCount(cell.nodes); !s.ok()) {
          return Bad(source, i, fmt::format("\"nodes\": {}", std::string(s.message())));
        }
        if (cell.node_command.empty()) {
          return Bad(source, i,
                     fmt::format("'{}' has \"nodes\" but no \"node\" command: the server each "
                                 "node runs in the foreground (docs/cluster.md)",
                                 cell.name));
        }
      }
      if (c.contains("expect")) {
        const nlohmann::json& e = c.at("expect");
        if (!e.is_object()) return Bad(source, i, "\"expect\" must be an object");
        nlohmann::json verdicts = e;
        if (e.contains("error")) {
          absl::StatusOr<RunError> kind = ParseRunError(e.at("error").get<std::string>());
          if (!kind.ok()) {
            return Bad(source, i, "\"expect\": " + std::string(kind.status().message()));
          }
          cell.expect.error = *kind;
          verdicts.erase("error");
        }
        absl::StatusOr<ExpectedVerdicts> models = ExpectedVerdictsFromJson(verdicts);
        if (!models.ok()) {
          return Bad(source, i, "\"expect\": " + std::string(models.status().message()));
        }
        cell.expect.models = *std::move(models);
      }
      cells.push_back(std::move(cell));
    } catch (const nlohmann::json::exception& e) {
      return Bad(source, i, e.what());
    }
  }
  return cells;
}

absl::StatusOr<std::vector<CustomCell>> LoadCustomCells(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(fmt::format("--cells {}: cannot open the file", path));
  }
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::InvalidArgumentError(fmt::format("--cells {}: not valid JSON", path));
  }
  return ParseCustomCells(j, "--cells " + path);
}

nlohmann::json CustomCellToJson(const CustomCell& c) {
  nlohmann::json j = {{"name", c.name},
                      {"workload", c.workload},
                      {"checker", c.checker},
                      {"fs", harness::FsName(c.fs)},
                      {"timeout", c.timeout_s},
                      {"max_acks", c.max_acks},
                      {"checker_timeout", c.checker_timeout_s},
                      {"expect", c.expect.ToJson()}};
  if (c.nodes > 0) {  // only then: the reports of other cells stay as they were
    j["nodes"] = c.nodes;
    j["node"] = c.node_command;
  }
  return j;
}

}  // namespace powercut::product
