#include "bench/walbench/barrier_report.h"

#include <fmt/format.h>

#include <algorithm>

namespace powercut::walbench {
namespace {

std::string OptionalBool(const std::optional<bool>& value) {
  if (!value.has_value()) return "?";
  return *value ? "1" : "0";
}

nlohmann::json OptionalNumber(const std::optional<double>& value) {
  if (!value.has_value()) return nullptr;
  return *value;
}

nlohmann::json OptionalJsonBool(const std::optional<bool>& value) {
  if (!value.has_value()) return nullptr;
  return *value;
}

}  // namespace

std::string FormatDeviceFacts(const DeviceFacts& facts) {
  if (!facts.has_block_device) {
    return fmt::format("directory {} ({})\n  {}\n", facts.path, facts.fs_type,
                       facts.no_device_reason);
  }
  return fmt::format(
      "directory {} ({}) on /dev/{} (disk {})\n"
      "  write_cache={}  fua={}  rotational={}  logical_block={} B  physical_block={} B\n",
      facts.path, facts.fs_type, facts.device, facts.disk, WriteCacheName(facts.write_cache),
      OptionalBool(facts.fua), OptionalBool(facts.rotational), facts.logical_block_size,
      facts.physical_block_size);
}

nlohmann::json DeviceFactsToJson(const DeviceFacts& facts) {
  nlohmann::json j;
  j["path"] = facts.path;
  j["fs_type"] = facts.fs_type;
  j["has_block_device"] = facts.has_block_device;
  if (!facts.has_block_device) {
    j["no_device_reason"] = facts.no_device_reason;
    return j;
  }
  j["device"] = facts.device;
  j["disk"] = facts.disk;
  j["write_cache"] = std::string(WriteCacheName(facts.write_cache));
  j["fua"] = OptionalJsonBool(facts.fua);
  j["rotational"] = OptionalJsonBool(facts.rotational);
  j["logical_block_size"] = facts.logical_block_size;
  j["physical_block_size"] = facts.physical_block_size;
  return j;
}

std::string FormatBarrierTable(const std::vector<BarrierCell>& cells) {
  std::string out =
      fmt::format("{:<16} {:<9} {:>6} {:>10} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8}  {}\n", "barrier",
                  "workload", "bytes", "ops/s", "p50_us", "p99_us", "p99.9_us", "sync/op",
                  "flush/op", "flush_ms", "verdict");
  for (const BarrierCell& cell : cells) {
    if (!cell.error.empty()) {
      out += fmt::format("{:<16} {:<9} {:>6}  skipped: {}\n", wal::BarrierName(cell.barrier),
                         WorkloadName(cell.workload), cell.op_bytes, cell.error);
      continue;
    }
    const std::string flushes = cell.device_flushes_per_op
                                    ? fmt::format("{:.2f}", *cell.device_flushes_per_op)
                                    : std::string("-");
    const std::string flush_ms =
        cell.device_flush_ms ? fmt::format("{:.2f}", *cell.device_flush_ms) : std::string("-");
    out += fmt::format(
        "{:<16} {:<9} {:>6} {:>10.0f} {:>9.1f} {:>9.1f} {:>9.1f} {:>8.2f} {:>8} {:>8}  {}\n",
        wal::BarrierName(cell.barrier), WorkloadName(cell.workload), cell.op_bytes,
        cell.ops_per_sec, cell.latency.p50_us, cell.latency.p99_us, cell.latency.p999_us,
        cell.barrier_calls_per_op, flushes, flush_ms,
        cell.findings.empty() ? "" : VerdictName(cell.findings.front().verdict));
  }
  // Cell-specific findings worth a line, then each verdict's meaning once.
  std::string notes;
  std::vector<Verdict> seen;
  for (const BarrierCell& cell : cells) {
    for (const Finding& finding : cell.findings) {
      if (std::find(seen.begin(), seen.end(), finding.verdict) == seen.end()) {
        seen.push_back(finding.verdict);
      }
      // These say the same for every cell: their meaning is printed once below.
      if (finding.verdict == Verdict::kPlausible ||
          finding.verdict == Verdict::kNotDurableByDesign ||
          finding.verdict == Verdict::kNoDevice) {
        continue;
      }
      notes += fmt::format("- {} {} {} B: {}\n", wal::BarrierName(cell.barrier),
                           WorkloadName(cell.workload), cell.op_bytes, finding.text);
    }
  }
  if (!notes.empty()) out += "\nfindings:\n" + notes;
  if (!seen.empty()) {
    out += "\nverdicts:\n";
    for (Verdict verdict : seen) {
      out += fmt::format("- {}: {}\n", VerdictName(verdict), VerdictExplanation(verdict));
    }
  }
  return out;
}

nlohmann::json BarrierResultsToJson(const DeviceFacts& facts,
                                    const std::vector<BarrierCell>& cells) {
  nlohmann::json j;
  j["device"] = DeviceFactsToJson(facts);
  j["cells"] = nlohmann::json::array();
  for (const BarrierCell& cell : cells) {
    nlohmann::json c;
    c["barrier"] = std::string(wal::BarrierName(cell.barrier));
    c["workload"] = std::string(WorkloadName(cell.workload));
    c["op_bytes"] = cell.op_bytes;
    if (!cell.error.empty()) {
      c["skipped"] = cell.error;
      j["cells"].push_back(std::move(c));
      continue;
    }
    c["ops"] = cell.ops;
    c["seconds"] = cell.seconds;
    c["ops_per_sec"] = cell.ops_per_sec;
    c["p50_us"] = cell.latency.p50_us;
    c["p99_us"] = cell.latency.p99_us;
    c["p999_us"] = cell.latency.p999_us;
    c["barrier_calls_per_op"] = cell.barrier_calls_per_op;
    c["device_flushes_per_op"] = OptionalNumber(cell.device_flushes_per_op);
    c["device_writes_per_op"] = OptionalNumber(cell.device_writes_per_op);
    c["device_flush_ms"] = OptionalNumber(cell.device_flush_ms);
    c["verdict"] =
        cell.findings.empty() ? "unknown" : std::string(VerdictName(cell.findings.front().verdict));
    nlohmann::json findings = nlohmann::json::array();
    for (const Finding& finding : cell.findings) {
      findings.push_back(
          {{"verdict", std::string(VerdictName(finding.verdict))}, {"text", finding.text}});
    }
    c["findings"] = std::move(findings);
    j["cells"].push_back(std::move(c));
  }
  return j;
}

}  // namespace powercut::walbench
