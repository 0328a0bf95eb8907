#include "recovery/recovery.h"

#include <fmt/format.h>

#include <array>
#include <map>
#include <memory>
#include <utility>

#include "base/status_macros.h"
#include "recovery/log_directory.h"

namespace powercut::recovery {
namespace {

constexpr std::array<std::pair<Mode, std::string_view>, 4> kModeNames = {{
    {Mode::kTolerateTornTail, "tolerate-torn-tail"},
    {Mode::kPointInTime, "point-in-time"},
    {Mode::kAbsolute, "absolute"},
    {Mode::kSalvage, "salvage"},
}};

// Where the valid prefix of the log ends, and why.
struct Cut {
  size_t segment = 0;  // index of the segment holding the end of the valid prefix
  uint64_t offset = 0;
  wal::Lsn lsn = 0;  // first LSN not in the prefix
  std::string reason;
  // An inconsistency no crash of a correct writer produces (an LSN overlap, a gap after a seal,
  // an unreadable segment header): corrupt whatever the synced LSNs say.
  bool structural = false;
};

// A valid record found after the cut.
struct LaterRecord {
  std::string payload;
  size_t segment = 0;
  uint64_t offset = 0;
};

std::string StopReason(const wal::ChainScan& scan, const wal::SegmentReader& reader) {
  switch (scan.stop) {
    case wal::ScanStop::kZero:
      return "zero-filled space followed by non-zero bytes";
    case wal::ScanStop::kTruncated:
      return fmt::format("record LSN {} is cut short by the end of the file (file size {})",
                         scan.next_lsn, reader.file_size());
    case wal::ScanStop::kBadHeader:
      return fmt::format("no valid record header where record LSN {} should start", scan.next_lsn);
    case wal::ScanStop::kBadChecksum:
      return fmt::format("checksum mismatch where record LSN {} should be", scan.next_lsn);
    case wal::ScanStop::kLsnMismatch:
      return fmt::format("a valid record with another LSN where record LSN {} should be",
                         scan.next_lsn);
    case wal::ScanStop::kEndOfSegment:
    case wal::ScanStop::kSeal:
      break;
  }
  return std::string(wal::ScanStopName(scan.stop));
}

std::string HeaderAdvice(const absl::Status& status) {
  if (status.code() == absl::StatusCode::kFailedPrecondition) {
    return "it was written by another WAL format version: read it with the powercut build that "
           "wrote it";
  }
  return "its header is damaged, so none of its records can be trusted: recover with mode "
         "salvage to read the other segments, or move the file out of the directory";
}

}  // namespace

std::string_view ModeName(Mode mode) {
  for (const auto& [m, name] : kModeNames) {
    if (m == mode) return name;
  }
  return "unknown";
}

absl::StatusOr<Mode> ParseMode(std::string_view name) {
  for (const auto& [m, mode_name] : kModeNames) {
    if (mode_name == name) return m;
  }
  return absl::InvalidArgumentError(fmt::format(
      "unknown recovery mode '{}'; expected tolerate-torn-tail, point-in-time, absolute or "
      "salvage",
      name));
}

const std::vector<Mode>& AllModes() {
  static const auto* modes = new std::vector<Mode>{Mode::kTolerateTornTail, Mode::kPointInTime,
                                                   Mode::kAbsolute, Mode::kSalvage};
  return *modes;
}

std::string_view TailStateName(TailState tail) {
  switch (tail) {
    case TailState::kClean:
      return "clean";
    case TailState::kTorn:
      return "torn";
    case TailState::kCorrupt:
      return "corrupt";
  }
  return "unknown";
}

std::string RecoveryResult::Summary() const {
  std::string out = fmt::format("{}, {} records", TailStateName(tail), record_count);
  if (record_count > 0) out += fmt::format(" (LSN {}..{})", first_record_lsn, last_record_lsn);
  if (tail != TailState::kClean && !damage.empty()) {
    out += fmt::format(", log ends at {} offset {} (LSN {}): {}", damage[0].segment,
                       damage[0].offset, damage[0].first_lsn, damage[0].reason);
  }
  if (dropped_records > 0) out += fmt::format(", {} later records dropped", dropped_records);
  if (mode == Mode::kSalvage && damage.size() > 1) {
    out += fmt::format(", {} holes", damage.size());
  }
  return out;
}

absl::StatusOr<RecoveryResult> Recover(const std::string& dir, const RecoverOptions& options) {
  return Recover(dir, options, nullptr);
}

absl::StatusOr<RecoveryResult> Recover(const std::string& dir, const RecoverOptions& options,
                                       const RecordVisitor& visit) {
  wal::Env* env = options.env != nullptr ? options.env : wal::Env::Default();
  const bool salvage = options.mode == Mode::kSalvage;
  ASSIGN_OR_RETURN(const LogDirectory log, ListLogDirectory(env, dir));

  RecoveryResult result;
  result.dir = dir;
  result.mode = options.mode;
  result.temp_files = log.temp_files;
  if (log.segments.empty()) return result;

  // Open every segment and check its header against its name and the log.
  std::vector<std::unique_ptr<wal::SegmentReader>> readers;
  std::optional<uint64_t> log_id;
  for (const SegmentFile& file : log.segments) {
    SegmentSummary summary;
    summary.name = file.name;
    absl::StatusOr<std::unique_ptr<wal::SegmentReader>> reader =
        wal::SegmentReader::Open(env, file.path, options.read_chunk_bytes);
    absl::Status problem;
    if (!reader.ok()) {
      problem = absl::Status(reader.status().code(),
                             fmt::format("{}; {}", std::string(reader.status().message()),
                                         HeaderAdvice(reader.status())));
    } else if ((*reader)->header().first_lsn != file.first_lsn) {
      problem = absl::DataLossError(fmt::format(
          "{}: the header says the segment starts at LSN {} but its name says LSN {}: the file was "
          "renamed or its header overwritten; move it out of the directory, or recover with mode "
          "salvage",
          file.path, (*reader)->header().first_lsn, file.first_lsn));
    } else if (log_id.has_value() && (*reader)->header().log_id != *log_id) {
      problem = absl::DataLossError(fmt::format(
          "{}: belongs to another log (log id {:#x}, the segments before it have {:#x}): move "
          "it out of the directory",
          file.path, (*reader)->header().log_id, *log_id));
    }
    if (!problem.ok()) {
      if (!salvage) return problem;
      summary.header_error = std::string(problem.message());
      readers.push_back(nullptr);
    } else {
      if (!log_id.has_value()) log_id = (*reader)->header().log_id;
      summary.header_ok = true;
      summary.header = (*reader)->header();
      summary.file_size = (*reader)->file_size();
      readers.push_back(std::move(*reader));
    }
    if (summary.file_size == 0) {
      absl::StatusOr<uint64_t> size = env->FileSize(file.path);
      if (size.ok()) summary.file_size = *size;
    }
    result.segments.push_back(std::move(summary));
  }

  // The visitor's first error; later records are skipped and the scan stops after the segment.
  absl::Status visit_error;
  const auto keep = [&](wal::Lsn lsn, absl::Span<const uint8_t> payload) {
    if (result.record_count == 0) result.first_record_lsn = lsn;
    ++result.record_count;
    result.last_record_lsn = lsn;
    if (visit) {
      if (visit_error.ok()) visit_error = visit(lsn, payload);
      return;
    }
    RecoveredRecord record;
    record.lsn = lsn;
    if (options.keep_payloads) {
      record.payload.assign(reinterpret_cast<const char*>(payload.data()), payload.size());
    }
    result.records.push_back(std::move(record));
  };

  // Phase 1: walk the dense chain from the first segment until its first break.
  std::optional<Cut> cut;
  wal::Lsn expected = log.segments[0].first_lsn;
  result.first_lsn = expected;
  bool previous_sealed = false;
  for (size_t i = 0; i < readers.size() && !cut.has_value(); ++i) {
    wal::SegmentReader* reader = readers[i].get();
    const wal::Lsn first = log.segments[i].first_lsn;
    if (reader == nullptr) {  // salvage: an unreadable segment
      cut = Cut{i == 0 ? 0 : i - 1, i == 0 ? 0 : result.segments[i - 1].chain_end, expected,
                fmt::format("{}: {}", log.segments[i].name, result.segments[i].header_error),
                /*structural=*/true};
      break;
    }
    if (i > 0 && first != expected) {
      const bool overlap = first < expected;
      cut = Cut{i - 1, result.segments[i - 1].chain_end, expected,
                overlap ? fmt::format("{} starts at LSN {}, but the segment before it already "
                                      "holds records up to LSN {}",
                                      log.segments[i].name, first, expected - 1)
                        : fmt::format("LSN gap: {} starts at LSN {}, but the log before it ends at "
                                      "LSN {} (a missing segment or lost records)",
                                      log.segments[i].name, first, expected - 1),
                /*structural=*/overlap || previous_sealed};
      break;
    }
    ASSIGN_OR_RETURN(
        const wal::ChainScan chain,
        reader->ScanAll([&](const wal::RecordLocation& record, absl::Span<const uint8_t> payload) {
          if (record.header.type == wal::RecordType::kData) {
            keep(record.header.lsn, payload);
          }
        }));
    if (!visit_error.ok()) return visit_error;
    SegmentSummary& summary = result.segments[i];
    summary.scanned = true;
    summary.chain_end = chain.end_offset;
    summary.chain_records = chain.data_records;
    summary.stop = chain.stop;
    expected = chain.next_lsn;
    previous_sealed = chain.stop == wal::ScanStop::kSeal;
    result.tail_segment_index = i;
    result.tail_offset = chain.end_offset;
    if (chain.stop == wal::ScanStop::kSeal || chain.stop == wal::ScanStop::kEndOfSegment) {
      continue;
    }
    if (chain.stop == wal::ScanStop::kZero) {
      ASSIGN_OR_RETURN(const bool zero, reader->IsZeroFrom(chain.end_offset));
      if (zero) continue;
    }
    cut = Cut{i, chain.end_offset, chain.next_lsn, StopReason(chain, *reader), false};
  }

  if (!cut.has_value()) {
    result.tail = TailState::kClean;
    result.next_lsn = expected;
    result.tail_segment = log.segments[*result.tail_segment_index].name;
    return result;
  }

  // Phase 2: everything after the cut. Valid records there decide torn vs corrupt (their synced
  // LSN), are counted as dropped, or (salvage) are kept.
  const wal::Lsn cut_lsn = cut->lsn;
  std::map<wal::Lsn, LaterRecord> later;
  std::string evidence;
  size_t current_segment = 0;
  const wal::RecordCallback collect = [&](const wal::RecordLocation& record,
                                          absl::Span<const uint8_t> payload) {
    if (record.header.synced_lsn >= cut_lsn && evidence.empty()) {
      evidence = fmt::format(
          "record LSN {} at {} offset {} was written after everything up to LSN {} had passed a "
          "barrier (its synced LSN), yet LSN {} is lost",
          record.header.lsn, log.segments[current_segment].name, record.offset,
          record.header.synced_lsn, cut_lsn);
    }
    if (record.header.type != wal::RecordType::kData || later.contains(record.header.lsn)) return;
    LaterRecord& kept = later[record.header.lsn];
    kept.segment = current_segment;
    kept.offset = record.offset;
    if (salvage && (options.keep_payloads || visit)) {
      kept.payload.assign(reinterpret_cast<const char*>(payload.data()), payload.size());
    }
  };
  for (size_t i = cut->segment; i < readers.size(); ++i) {
    if (readers[i] == nullptr) continue;
    current_segment = i;
    const uint64_t from =
        i == cut->segment && result.segments[i].scanned ? cut->offset : wal::kSegmentHeaderSize;
    ASSIGN_OR_RETURN(const wal::TailProbe probe, readers[i]->ProbeTail(from, cut_lsn, collect));
    (void)probe;
  }

  const bool corrupt = cut->structural || !evidence.empty();
  result.tail = corrupt ? TailState::kCorrupt : TailState::kTorn;
  result.corruption_evidence = cut->structural ? cut->reason : evidence;
  result.next_lsn = cut_lsn;
  result.tail_segment_index = cut->segment;
  result.tail_segment = log.segments[cut->segment].name;
  result.tail_offset = cut->offset;
  Damage first_damage{log.segments[cut->segment].name, cut->offset, cut_lsn,
                      later.empty() ? 0 : later.begin()->first, cut->reason};
  result.damage.push_back(first_damage);

  if (salvage) {
    wal::Lsn previous = result.record_count == 0 ? cut_lsn - 1 : result.last_record_lsn;
    bool first_hole = true;
    for (auto& [lsn, record] : later) {
      if (lsn > previous + 1 && !first_hole) {
        result.damage.push_back(
            Damage{log.segments[record.segment].name, record.offset, previous + 1, lsn,
                   fmt::format("LSNs {}..{} not found", previous + 1, lsn - 1)});
      }
      first_hole = false;
      if (visit) {
        const auto* data = reinterpret_cast<const uint8_t*>(record.payload.data());
        keep(lsn, absl::MakeConstSpan(data, record.payload.size()));
        if (!visit_error.ok()) return visit_error;
      } else {
        if (result.record_count == 0) result.first_record_lsn = lsn;
        ++result.record_count;
        result.last_record_lsn = lsn;
        result.records.push_back(RecoveredRecord{lsn, std::move(record.payload)});
      }
      previous = lsn;
    }
    return result;
  }
  result.dropped_records = later.size();

  const std::string where =
      fmt::format("{}/{} offset {} (LSN {})", dir, result.tail_segment, cut->offset, cut_lsn);
  if (options.mode == Mode::kTolerateTornTail && corrupt) {
    return absl::DataLossError(fmt::format(
        "WAL is corrupt at {}: {}; {}. This is not the torn tail of a crash. Recover with mode "
        "point-in-time to keep the {} records before it, or salvage to keep every readable record",
        where, cut->reason, result.corruption_evidence, result.record_count));
  }
  if (options.mode == Mode::kAbsolute) {
    return absl::DataLossError(fmt::format(
        "WAL is not clean ({} tail) at {}: {}; mode absolute accepts no damage. Recover with mode "
        "tolerate-torn-tail (the default) to accept a torn tail",
        TailStateName(result.tail), where, cut->reason));
  }
  return result;
}

}  // namespace powercut::recovery
