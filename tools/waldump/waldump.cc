// waldump: prints what a WAL directory holds: its segments, every record (LSN, size, synced LSN,
// checksum state), where and why each segment's chain of records stops, the tail classification
// and the damage recovery sees. Optionally repairs a torn tail.
//
// Exit codes: 0 the log is clean or has a torn tail; 1 it is corrupt (or --repair was refused);
// 2 it cannot be read (missing directory, foreign file, unreadable segment header, bad flags).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/main_guard.h"
#include "recovery/recovery.h"
#include "recovery/repair.h"
#include "wal/segment_reader.h"

namespace powercut {
namespace {

using nlohmann::json;

json RecordJson(const wal::RecordLocation& record) {
  return json{{"offset", record.offset},
              {"lsn", record.header.lsn},
              {"length", record.header.length},
              {"synced_lsn", record.header.synced_lsn},
              {"type", record.header.type == wal::RecordType::kSeal ? "seal" : "data"},
              {"checksum", "ok"}};
}

// Everything waldump shows about one segment.
absl::StatusOr<json> DescribeSegment(const recovery::RecoveryResult& result, size_t index,
                                     bool with_records) {
  const recovery::SegmentSummary& summary = result.segments[index];
  json segment{{"name", summary.name}, {"file_size", summary.file_size}};
  if (!summary.header_ok) {
    segment["header_error"] = summary.header_error;
    return segment;
  }
  auto reader = wal::SegmentReader::Open(nullptr, result.dir + "/" + summary.name);
  if (!reader.ok()) return reader.status();
  const wal::SegmentHeader& header = (*reader)->header();
  segment["first_lsn"] = header.first_lsn;
  segment["log_id"] = fmt::format("{:#018x}", header.log_id);
  segment["salt"] = fmt::format("{:#018x}", header.segment_salt);
  segment["segment_size"] = header.segment_size;
  segment["block_size"] = header.block_size;
  json records = json::array();
  auto chain = (*reader)->ScanAll([&](const wal::RecordLocation& record, auto) {
    if (with_records) records.push_back(RecordJson(record));
  });
  if (!chain.ok()) return chain.status();
  segment["records"] = std::move(records);
  segment["data_records"] = chain->data_records;
  segment["chain_end"] = chain->end_offset;
  segment["stop"] = std::string(wal::ScanStopName(chain->stop));
  segment["next_lsn"] = chain->next_lsn;
  if (!wal::IsNormalStop(chain->stop) || chain->stop == wal::ScanStop::kZero) {
    json later = json::array();
    uint64_t later_count = 0;
    auto probe =
        (*reader)->ProbeTail(chain->end_offset, 0, [&](const wal::RecordLocation& r, auto) {
          ++later_count;
          if (with_records) later.push_back(RecordJson(r));
        });
    if (!probe.ok()) return probe.status();
    segment["rest_all_zero"] = probe->all_zero;
    if (!probe->all_zero) segment["first_nonzero_after_chain"] = probe->first_nonzero;
    segment["records_after_stop"] = std::move(later);
    segment["records_after_stop_count"] = later_count;
  }
  return segment;
}

json ResultJson(const recovery::RecoveryResult& result) {
  json damage = json::array();
  for (const recovery::Damage& d : result.damage) {
    damage.push_back(json{{"segment", d.segment},
                          {"offset", d.offset},
                          {"first_lsn", d.first_lsn},
                          {"next_found_lsn", d.next_found_lsn},
                          {"reason", d.reason}});
  }
  json out{{"tail", std::string(recovery::TailStateName(result.tail))},
           {"records", result.records.size()},
           {"first_lsn", result.first_lsn},
           {"last_lsn", result.last_lsn()},
           {"next_lsn", result.next_lsn},
           {"tail_segment", result.tail_segment},
           {"tail_offset", result.tail_offset},
           {"dropped_records", result.dropped_records},
           {"damage", std::move(damage)},
           {"temp_files", result.temp_files}};
  if (!result.corruption_evidence.empty()) out["corruption_evidence"] = result.corruption_evidence;
  return out;
}

void PrintRecord(const json& r, std::string_view note = "") {
  fmt::print("  {:>12} {:>10} {:>8} {:>10} {:>5} {}{}\n", r["offset"].get<uint64_t>(),
             r["lsn"].get<uint64_t>(), r["length"].get<uint64_t>(), r["synced_lsn"].get<uint64_t>(),
             r["type"].get<std::string>(), r["checksum"].get<std::string>(), note);
}

void PrintText(const std::string& dir, const json& segments, const json& summary) {
  fmt::print("WAL directory {}: {} segment(s)\n", dir, segments.size());
  for (const json& s : segments) {
    if (s.contains("header_error")) {
      fmt::print("\nsegment {} ({} bytes): unreadable header: {}\n", s["name"].get<std::string>(),
                 s["file_size"].get<uint64_t>(), s["header_error"].get<std::string>());
      continue;
    }
    fmt::print("\nsegment {}  first LSN {}  log id {}  salt {}  size {} (file {})  block {}\n",
               s["name"].get<std::string>(), s["first_lsn"].get<uint64_t>(),
               s["log_id"].get<std::string>(), s["salt"].get<std::string>(),
               s["segment_size"].get<uint64_t>(), s["file_size"].get<uint64_t>(),
               s["block_size"].get<uint64_t>());
    if (!s["records"].empty()) {
      fmt::print("  {:>12} {:>10} {:>8} {:>10} {:>5} {}\n", "offset", "LSN", "length", "synced",
                 "type", "checksum");
    }
    for (const json& r : s["records"]) PrintRecord(r);
    fmt::print("  chain: {} data records, stops at offset {}: {}",
               s["data_records"].get<uint64_t>(), s["chain_end"].get<uint64_t>(),
               s["stop"].get<std::string>());
    if (s.contains("rest_all_zero")) {
      fmt::print("{}", s["rest_all_zero"].get<bool>()
                           ? " (only zeros follow)"
                           : fmt::format(" (non-zero bytes from offset {})",
                                         s["first_nonzero_after_chain"].get<uint64_t>()));
    }
    fmt::print("\n");
    if (s.contains("records_after_stop_count") &&
        s["records_after_stop_count"].get<uint64_t>() > 0) {
      fmt::print("  {} valid record(s) of this segment's salt after the stop:\n",
                 s["records_after_stop_count"].get<uint64_t>());
      for (const json& r : s["records_after_stop"]) PrintRecord(r, "  (after the stop)");
    }
  }
  fmt::print("\ntail: {}\n", summary["tail"].get<std::string>());
  fmt::print("records: {} (LSN {}..{}), the log continues at LSN {} in {} offset {}\n",
             summary["records"].get<uint64_t>(), summary["first_lsn"].get<uint64_t>(),
             summary["last_lsn"].get<uint64_t>(), summary["next_lsn"].get<uint64_t>(),
             summary["tail_segment"].get<std::string>(), summary["tail_offset"].get<uint64_t>());
  for (const json& d : summary["damage"]) {
    fmt::print("damage: {} offset {}, from LSN {}: {}\n", d["segment"].get<std::string>(),
               d["offset"].get<uint64_t>(), d["first_lsn"].get<uint64_t>(),
               d["reason"].get<std::string>());
  }
  if (summary["dropped_records"].get<uint64_t>() > 0) {
    fmt::print("valid records after the end of the log (not recovered): {}\n",
               summary["dropped_records"].get<uint64_t>());
  }
  if (summary.contains("corruption_evidence")) {
    fmt::print("corrupt because: {}\n", summary["corruption_evidence"].get<std::string>());
  }
  for (const json& t : summary["temp_files"]) {
    fmt::print("leftover temp file (ignored): {}\n", t.get<std::string>());
  }
}

int Main(int argc, char** argv) {
  CLI::App app{"waldump: show the segments, records, tail and damage of a powercut WAL"};
  std::string dir;
  bool as_json = false, repair = false, no_records = false;
  std::string mode_name = "tolerate-torn-tail";
  app.add_option("dir", dir, "WAL directory")->required();
  app.add_flag("--json", as_json, "print JSON instead of text");
  app.add_flag("--no-records", no_records, "do not list individual records");
  app.add_flag("--repair", repair,
               "cut a torn tail (zero the rest of its segment, remove later segments)");
  app.add_option("--mode", mode_name,
                 "recovery mode for --repair: tolerate-torn-tail (refuses a corrupt log) or "
                 "point-in-time (cuts at the first damage)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  absl::StatusOr<recovery::Mode> mode = recovery::ParseMode(mode_name);
  if (!mode.ok()) {
    std::cerr << "waldump: " << mode.status().message() << "\n";
    return 2;
  }

  // Point-in-time never fails because of damage, so every log that can be read is described.
  recovery::RecoverOptions options;
  options.mode = recovery::Mode::kPointInTime;
  options.keep_payloads = false;
  absl::StatusOr<recovery::RecoveryResult> result = recovery::Recover(dir, options);
  if (!result.ok()) {
    std::cerr << "waldump: cannot read the log: " << result.status().message() << "\n";
    return 2;
  }
  json segments = json::array();
  for (size_t i = 0; i < result->segments.size(); ++i) {
    absl::StatusOr<json> segment = DescribeSegment(*result, i, !no_records);
    if (!segment.ok()) {
      std::cerr << "waldump: " << segment.status().message() << "\n";
      return 2;
    }
    segments.push_back(std::move(*segment));
  }
  json summary = ResultJson(*result);
  int exit_code = result->tail == recovery::TailState::kCorrupt ? 1 : 0;

  json repair_json;
  if (repair) {
    if (result->tail == recovery::TailState::kCorrupt && *mode != recovery::Mode::kPointInTime) {
      std::cerr << "waldump: not repairing: the log is corrupt (" << result->damage[0].reason
                << "); pass --mode point-in-time to cut it at the first damage and drop what "
                   "follows\n";
      exit_code = 1;
    } else {
      absl::StatusOr<recovery::RepairReport> report = recovery::Repair(*result);
      if (!report.ok()) {
        std::cerr << "waldump: repair failed: " << report.status().message() << "\n";
        return 2;
      }
      repair_json = json{{"zeroed_bytes", report->zeroed_bytes}, {"removed", report->removed}};
    }
  }

  if (as_json) {
    json out{{"dir", dir}, {"segments", std::move(segments)}, {"summary", std::move(summary)}};
    if (!repair_json.is_null()) out["repair"] = repair_json;
    std::cout << out.dump(2) << "\n";
  } else {
    PrintText(dir, segments, summary);
    if (!repair_json.is_null()) {
      fmt::print("repair: zeroed {} bytes, removed {} file(s)\n",
                 repair_json["zeroed_bytes"].get<uint64_t>(), repair_json["removed"].size());
    }
  }
  return exit_code;
}

}  // namespace
}  // namespace powercut

int main(int argc, char** argv) {
  // Exit 2: the log could not be read.
  return powercut::RunMainGuarded("waldump", 2, [&] { return powercut::Main(argc, argv); });
}
