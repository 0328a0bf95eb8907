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

// Why a segment's header cannot be trusted (OK when it can): it is unreadable, it names another
// first LSN than the file name does, or it belongs to another log than the segments before it
// (`log_id`, once one is known).
absl::Status HeaderProblem(const SegmentFile& file,
                           const absl::StatusOr<std::unique_ptr<wal::SegmentReader>>& reader,
                           const std::optional<uint64_t>& log_id) {
  if (!reader.ok()) {
    return absl::Status(reader.status().code(),
                        fmt::format("{}; {}", std::string(reader.status().message()),
                                    HeaderAdvice(reader.status())));
  }
  if ((*reader)->header().first_lsn != file.first_lsn) {
    return absl::DataLossError(fmt::format(
        "{}: the header says the segment starts at LSN {} but its name says LSN {}: the file was "
        "renamed or its header overwritten; move it out of the directory, or recover with mode "
        "salvage",
        file.path, (*reader)->header().first_lsn, file.first_lsn));
  }
  if (log_id.has_value() && (*reader)->header().log_id != *log_id) {
    return absl::DataLossError(fmt::format(
        "{}: belongs to another log (log id {:#x}, the segments before it have {:#x}): move "
        "it out of the directory",
        file.path, (*reader)->header().log_id, *log_id));
  }
  return absl::OkStatus();
}

// How the walk of the dense chain ended: at a cut, or at the end of the log with the LSN it
// continues with.
struct ChainWalk {
  std::optional<Cut> cut;
  wal::Lsn next_lsn = 0;
};

// What lies after the cut: its valid records by LSN, and the first proof that the region had
// passed a barrier (empty: none, the tail is torn unless the cut is structural).
struct AfterCut {
  std::map<wal::Lsn, LaterRecord> later;
  std::string evidence;
};

// One Recover call: opens the segments, walks the dense chain from the first segment to its
// first break (the cut), reads what lies after the cut to tell a torn tail from a corrupt one,
// and applies the mode (salvage keeps the later records; the others may refuse the damage).
class LogRecovery {
 public:
  LogRecovery(const std::string& dir, const RecoverOptions& options, const RecordVisitor& visit,
              wal::Env* env, LogDirectory log)
      : dir_(dir),
        options_(options),
        visit_(visit),
        env_(env),
        salvage_(options.mode == Mode::kSalvage),
        log_(std::move(log)) {}

  // Call once.
  absl::StatusOr<RecoveryResult> Run() {
    result_.dir = dir_;
    result_.mode = options_.mode;
    result_.temp_files = log_.temp_files;
    if (log_.segments.empty()) return std::move(result_);
    RETURN_IF_ERROR(OpenSegments());
    ASSIGN_OR_RETURN(const ChainWalk walk, WalkChain());
    if (!walk.cut.has_value()) {
      result_.tail = TailState::kClean;
      result_.next_lsn = walk.next_lsn;
      result_.tail_segment = log_.segments[*result_.tail_segment_index].name;
      return std::move(result_);
    }
    const Cut& cut = *walk.cut;
    ASSIGN_OR_RETURN(AfterCut after, ScanAfterCut(cut));
    ClassifyTail(cut, after);
    if (salvage_) {
      RETURN_IF_ERROR(KeepSalvaged(cut, after.later));
      return std::move(result_);
    }
    result_.dropped_records = after.later.size();
    RETURN_IF_ERROR(RefuseDamageTheModeRejects(cut));
    return std::move(result_);
  }

 private:
  // Opens every segment and checks its header against its name and the log. A bad header fails
  // recovery, except in salvage mode, where the segment is left out (a null reader).
  absl::Status OpenSegments() {
    std::optional<uint64_t> log_id;
    for (const SegmentFile& file : log_.segments) {
      SegmentSummary summary;
      summary.name = file.name;
      absl::StatusOr<std::unique_ptr<wal::SegmentReader>> reader =
          wal::SegmentReader::Open(env_, file.path, options_.read_chunk_bytes);
      absl::Status problem = HeaderProblem(file, reader, log_id);
      if (!problem.ok()) {
        if (!salvage_) return problem;
        summary.header_error = std::string(problem.message());
        readers_.push_back(nullptr);
      } else {
        if (!log_id.has_value()) log_id = (*reader)->header().log_id;
        summary.header_ok = true;
        summary.header = (*reader)->header();
        summary.file_size = (*reader)->file_size();
        readers_.push_back(std::move(*reader));
      }
      if (summary.file_size == 0) {
        absl::StatusOr<uint64_t> size = env_->FileSize(file.path);
        if (size.ok()) summary.file_size = *size;
      }
      result_.segments.push_back(std::move(summary));
    }
    return absl::OkStatus();
  }

  // Returns one record: to the visitor (its first error is kept in visit_error_, later records
  // are not shown) or into result_.records.
  void Keep(wal::Lsn lsn, absl::Span<const uint8_t> payload) {
    if (result_.record_count == 0) result_.first_record_lsn = lsn;
    ++result_.record_count;
    result_.last_record_lsn = lsn;
    if (visit_) {
      if (visit_error_.ok()) visit_error_ = visit_(lsn, payload);
      return;
    }
    RecoveredRecord record;
    record.lsn = lsn;
    if (options_.keep_payloads) {
      record.payload.assign(reinterpret_cast<const char*>(payload.data()), payload.size());
    }
    result_.records.push_back(std::move(record));
  }

  // Walks the dense chain from the first segment until its first break, keeping its records.
  absl::StatusOr<ChainWalk> WalkChain() {
    wal::Lsn expected = log_.segments[0].first_lsn;
    result_.first_lsn = expected;
    bool previous_sealed = false;
    for (size_t i = 0; i < readers_.size(); ++i) {
      std::optional<Cut> cut = BreakBefore(i, expected, previous_sealed);
      if (cut.has_value()) return ChainWalk{std::move(cut), expected};
      ASSIGN_OR_RETURN(const wal::ChainScan chain, ScanChain(i));
      expected = chain.next_lsn;
      previous_sealed = chain.stop == wal::ScanStop::kSeal;
      ASSIGN_OR_RETURN(const bool ends_cleanly, EndsCleanly(*readers_[i], chain));
      if (!ends_cleanly) {
        return ChainWalk{
            Cut{i, chain.end_offset, chain.next_lsn, StopReason(chain, *readers_[i]), false},
            expected};
      }
    }
    return ChainWalk{std::nullopt, expected};
  }

  // The cut before segment i when the chain cannot continue into it: its header was rejected
  // (salvage), or it does not start where the log before it ends.
  std::optional<Cut> BreakBefore(size_t i, wal::Lsn expected, bool previous_sealed) const {
    const wal::Lsn first = log_.segments[i].first_lsn;
    if (readers_[i] == nullptr) {  // salvage: an unreadable segment
      return Cut{i == 0 ? 0 : i - 1, i == 0 ? 0 : result_.segments[i - 1].chain_end, expected,
                 fmt::format("{}: {}", log_.segments[i].name, result_.segments[i].header_error),
                 /*structural=*/true};
    }
    if (i > 0 && first != expected) {
      const bool overlap = first < expected;
      return Cut{i - 1, result_.segments[i - 1].chain_end, expected,
                 overlap ? fmt::format("{} starts at LSN {}, but the segment before it already "
                                       "holds records up to LSN {}",
                                       log_.segments[i].name, first, expected - 1)
                         : fmt::format("LSN gap: {} starts at LSN {}, but the log before it ends "
                                       "at LSN {} (a missing segment or lost records)",
                                       log_.segments[i].name, first, expected - 1),
                 /*structural=*/overlap || previous_sealed};
    }
    return std::nullopt;
  }

  // Scans segment i's chain from its header, keeps its data records and notes in its summary and
  // in the result's tail how far it got.
  absl::StatusOr<wal::ChainScan> ScanChain(size_t i) {
    ASSIGN_OR_RETURN(const wal::ChainScan chain,
                     readers_[i]->ScanAll(
                         [&](const wal::RecordLocation& record, absl::Span<const uint8_t> payload) {
                           if (record.header.type == wal::RecordType::kData) {
                             Keep(record.header.lsn, payload);
                           }
                         }));
    if (!visit_error_.ok()) return visit_error_;
    SegmentSummary& summary = result_.segments[i];
    summary.scanned = true;
    summary.chain_end = chain.end_offset;
    summary.chain_records = chain.data_records;
    summary.stop = chain.stop;
    result_.tail_segment_index = i;
    result_.tail_offset = chain.end_offset;
    return chain;
  }

  // Whether a segment's chain ends where a writer leaves it (a seal, the end of the file, or
  // zeros to the end), so the log may continue in the next segment.
  static absl::StatusOr<bool> EndsCleanly(wal::SegmentReader& reader, const wal::ChainScan& chain) {
    if (chain.stop == wal::ScanStop::kSeal || chain.stop == wal::ScanStop::kEndOfSegment) {
      return true;
    }
    if (chain.stop == wal::ScanStop::kZero) return reader.IsZeroFrom(chain.end_offset);
    return false;
  }

  // Reads every readable segment from the cut on. Valid records there decide torn vs corrupt
  // (their synced LSN), are counted as dropped, or (salvage) are kept.
  absl::StatusOr<AfterCut> ScanAfterCut(const Cut& cut) {
    AfterCut after;
    size_t current_segment = 0;
    const wal::RecordCallback collect = [&](const wal::RecordLocation& record,
                                            absl::Span<const uint8_t> payload) {
      if (record.header.synced_lsn >= cut.lsn && after.evidence.empty()) {
        after.evidence = fmt::format(
            "record LSN {} at {} offset {} was written after everything up to LSN {} had passed "
            "a barrier (its synced LSN), yet LSN {} is lost",
            record.header.lsn, log_.segments[current_segment].name, record.offset,
            record.header.synced_lsn, cut.lsn);
      }
      if (record.header.type != wal::RecordType::kData || after.later.contains(record.header.lsn)) {
        return;
      }
      LaterRecord& kept = after.later[record.header.lsn];
      kept.segment = current_segment;
      kept.offset = record.offset;
      if (salvage_ && (options_.keep_payloads || visit_)) {
        kept.payload.assign(reinterpret_cast<const char*>(payload.data()), payload.size());
      }
    };
    for (size_t i = cut.segment; i < readers_.size(); ++i) {
      if (readers_[i] == nullptr) continue;
      current_segment = i;
      const uint64_t from =
          i == cut.segment && result_.segments[i].scanned ? cut.offset : wal::kSegmentHeaderSize;
      ASSIGN_OR_RETURN(const wal::TailProbe probe, readers_[i]->ProbeTail(from, cut.lsn, collect));
      (void)probe;
    }
    return after;
  }

  // Records where the log ends and whether its tail is torn or corrupt (damage[0]).
  void ClassifyTail(const Cut& cut, const AfterCut& after) {
    const bool corrupt = cut.structural || !after.evidence.empty();
    result_.tail = corrupt ? TailState::kCorrupt : TailState::kTorn;
    result_.corruption_evidence = cut.structural ? cut.reason : after.evidence;
    result_.next_lsn = cut.lsn;
    result_.tail_segment_index = cut.segment;
    result_.tail_segment = log_.segments[cut.segment].name;
    result_.tail_offset = cut.offset;
    result_.damage.push_back(Damage{log_.segments[cut.segment].name, cut.offset, cut.lsn,
                                    after.later.empty() ? 0 : after.later.begin()->first,
                                    cut.reason});
  }

  // Salvage: keeps the records after the cut in LSN order and lists every further hole.
  absl::Status KeepSalvaged(const Cut& cut, std::map<wal::Lsn, LaterRecord>& later) {
    wal::Lsn previous = result_.record_count == 0 ? cut.lsn - 1 : result_.last_record_lsn;
    bool first_hole = true;
    for (auto& [lsn, record] : later) {
      if (lsn > previous + 1 && !first_hole) {
        result_.damage.push_back(
            Damage{log_.segments[record.segment].name, record.offset, previous + 1, lsn,
                   fmt::format("LSNs {}..{} not found", previous + 1, lsn - 1)});
      }
      first_hole = false;
      if (visit_) {
        const auto* data = reinterpret_cast<const uint8_t*>(record.payload.data());
        Keep(lsn, absl::MakeConstSpan(data, record.payload.size()));
        RETURN_IF_ERROR(visit_error_);
      } else {
        if (result_.record_count == 0) result_.first_record_lsn = lsn;
        ++result_.record_count;
        result_.last_record_lsn = lsn;
        result_.records.push_back(RecoveredRecord{lsn, std::move(record.payload)});
      }
      previous = lsn;
    }
    return absl::OkStatus();
  }

  // The error for a tail the mode does not accept: a corrupt one (tolerate-torn-tail), any
  // damage (absolute). Point-in-time accepts every tail.
  absl::Status RefuseDamageTheModeRejects(const Cut& cut) const {
    const std::string where =
        fmt::format("{}/{} offset {} (LSN {})", dir_, result_.tail_segment, cut.offset, cut.lsn);
    if (options_.mode == Mode::kTolerateTornTail && result_.tail == TailState::kCorrupt) {
      return absl::DataLossError(fmt::format(
          "WAL is corrupt at {}: {}; {}. This is not the torn tail of a crash. Recover with mode "
          "point-in-time to keep the {} records before it, or salvage to keep every readable "
          "record",
          where, cut.reason, result_.corruption_evidence, result_.record_count));
    }
    if (options_.mode == Mode::kAbsolute) {
      return absl::DataLossError(fmt::format(
          "WAL is not clean ({} tail) at {}: {}; mode absolute accepts no damage. Recover with "
          "mode tolerate-torn-tail (the default) to accept a torn tail",
          TailStateName(result_.tail), where, cut.reason));
    }
    return absl::OkStatus();
  }

  const std::string& dir_;
  const RecoverOptions& options_;
  const RecordVisitor& visit_;
  wal::Env* const env_;
  const bool salvage_;
  const LogDirectory log_;
  RecoveryResult result_;
  // One per segment of log_; null for a segment whose header was rejected (salvage only).
  std::vector<std::unique_ptr<wal::SegmentReader>> readers_;
  // The visitor's first error; later records are skipped and the scan stops after the segment.
  absl::Status visit_error_;
};

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
  ASSIGN_OR_RETURN(LogDirectory log, ListLogDirectory(env, dir));
  return LogRecovery(dir, options, visit, env, std::move(log)).Run();
}

}  // namespace powercut::recovery
