// Renders a CheckReport (docs/report.md): JSON (schema "powercut-report/1"), JUnit XML (one test
// case per workload x cache model; a failure names the first violating state and its rebuild
// command) and a summary table for stdout.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "harness/check/engine.h"
#include "nlohmann/json.hpp"

namespace powercut::harness {

nlohmann::json ReportToJson(const CheckReport& report);
std::string ReportToJunit(const CheckReport& report);
std::string ReportSummaryTable(const CheckReport& report);

// Writes `text` to `path` (via a temporary file and rename); the error names the path.
absl::Status WriteTextFile(const std::string& path, const std::string& text);

}  // namespace powercut::harness
