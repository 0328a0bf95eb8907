// Renders a CheckReport (docs/report.md): JSON (schema "powercut-report/1"), JUnit XML (one test
// case per workload x cache model; a failure names the first violating state and its rebuild
// command) and a summary table for stdout.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "harness/check/engine.h"
#include "nlohmann/json.hpp"

namespace powercut::harness {

nlohmann::json ReportToJson(const CheckReport& report);
std::string ReportToJunit(const CheckReport& report);
std::string ReportSummaryTable(const CheckReport& report);

// Several disks (a cluster's nodes): each one's file system, size, writes, flushes and FUA writes,
// and its log where one was kept. The JSON is an array of {disk (or node): K, fs, bytes, writes,
// flushes, fua, log?, log_bytes?}, null for no disks; FromJson reads it back (an error names what
// is wrong). The text is one line a disk ("node 2 (ext4, 512 MiB): 40 writes, 12 flushes, 0
// FUA", sizes in MiB where whole), "" for none.
nlohmann::json DiskSummariesToJson(const std::vector<DiskSummary>& disks, SetMember member);
absl::StatusOr<std::vector<DiskSummary>> DiskSummariesFromJson(const nlohmann::json& j,
                                                               SetMember member);
std::string DisksText(const std::vector<DiskSummary>& disks, SetMember member);

// A model's states for the tables: "N" when every planned state was judged, "NofM*" when it
// stopped at its first violation after N of M, "NofM~" when the budget ran out.
std::string StatesText(const ModelResult& m);
// A model's largest loss for the tables: "16" when it is the worst its plan allows (every state
// judged), "≥16" when the check stopped before (a lower bound).
std::string LostText(uint64_t lost_acks_max, bool exact);
// The tables' legend line(s) for those markers; "" when no model stopped early.
std::string StatesLegend(const std::vector<ModelResult>& results);

// Writes `text` to `path` (via a temporary file and rename); the error names the path.
absl::Status WriteTextFile(const std::string& path, const std::string& text);

}  // namespace powercut::harness
