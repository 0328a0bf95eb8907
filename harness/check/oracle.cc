#include "harness/check/oracle.h"

#include <algorithm>

#include "fmt/format.h"
#include "fmt/ranges.h"

namespace powercut::harness {

Oracle::Oracle(const TraceIndex& index, bool ordered, bool fs_failures_are_violations,
               bool latest_ack_only)
    : index_(index),
      ordered_(ordered),
      fs_failures_are_violations_(fs_failures_are_violations),
      latest_ack_only_(latest_ack_only) {
  const auto& acks = index_.acks();
  for (size_t i = 0; i < acks.size(); ++i) {
    auto [it, inserted] = unique_.try_emplace(acks[i].second, first_position_.size());
    if (inserted) first_position_.push_back(i);
    ack_unique_.push_back(it->second);
  }
}

CompactOutput Oracle::Compact(const CheckerOutput& output) const {
  CompactOutput c;
  std::vector<uint32_t> numbers;
  for (const std::string& id : output.have) {
    auto it = unique_.find(id);
    if (it != unique_.end()) numbers.push_back(static_cast<uint32_t>(it->second));
  }
  std::sort(numbers.begin(), numbers.end());
  for (uint32_t u : numbers) {
    if (!c.present.empty() && c.present.back().second >= u) {
      c.present.back().second = std::max(c.present.back().second, u + 1);
    } else {
      c.present.emplace_back(u, u + 1);
    }
  }
  c.corrupt.assign(output.corrupt.begin(), output.corrupt.end());
  std::sort(c.corrupt.begin(), c.corrupt.end());
  c.why.assign(output.why.begin(), output.why.end());
  std::sort(c.why.begin(), c.why.end());
  c.exit_code = output.exit_code;
  c.signal = output.signal;
  c.timed_out = output.timed_out;
  c.setup_error = output.setup_error;
  c.unavailable = output.unavailable;
  if (!c.recovered() || !c.unavailable.empty()) c.stderr_tail = output.stderr_tail;
  c.protocol_error = output.protocol_error;
  if (output.setup_error.empty() && output.cannot_start()) {
    c.cannot_start = true;
    std::string why = output.stderr_tail;
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    c.protocol_error = fmt::format("checker cannot start (exit {}{}{})", output.exit_code,
                                   why.empty() ? "" : ": ", why.substr(why.rfind('\n') + 1));
  }
  return c;
}

CompactOutput Oracle::Compact(const CheckerOutput& output, const FsRecovery& fs) const {
  CompactOutput c = Compact(output);
  c.fs_unrecoverable = fs.unrecoverable;
  c.fs_repaired = fs.repaired;
  c.fs_steps = fs.Describe();
  return c;
}

void Oracle::Judge(uint64_t point, const CompactOutput& output, Verdict* v) const {
  const auto& acks = index_.acks();
  const size_t before = index_.AcksBefore(point);
  v->point = point;
  v->acked_before = before;
  v->lost.clear();
  v->gaps.clear();
  v->unavailable.clear();
  v->could_not_check = output.protocol_error;
  if (!v->could_not_check.empty()) return;  // its `have` lines cannot be trusted
  v->unavailable = output.unavailable;
  v->fs_unrecoverable = output.fs_unrecoverable;
  v->fs_repaired = output.fs_repaired;
  v->fs_steps = output.fs_steps;
  v->fs_failure_is_violation = fs_failures_are_violations_;
  v->exit_code = output.signal != 0 ? -output.signal : output.exit_code;
  v->timed_out = output.timed_out;
  v->mount_error = output.setup_error;
  v->recovered = output.recovered();
  v->stderr_tail = output.stderr_tail;
  v->corrupt.clear();
  v->torn_unacked.clear();
  v->why.clear();
  // The system did not answer: whatever `have` lines came before say nothing of what it holds.
  if (!v->unavailable.empty()) return;
  // Distinct ids are numbered in first-ack order, so those acked before the point are the
  // numbers below `acked`, and the missing ones are the gaps between the present ranges: the
  // work is the ranges plus what is lost, not the acks.
  const size_t acked =
      static_cast<size_t>(std::lower_bound(first_position_.begin(), first_position_.end(), before) -
                          first_position_.begin());
  auto each_missing = [&](size_t from, size_t to, std::vector<std::string>* out) {
    size_t u = from;
    for (const auto& [lo, hi] : output.present) {
      if (u >= to) break;
      for (; u < std::min<size_t>(lo, to); ++u) out->push_back(acks[first_position_[u]].second);
      u = std::max<size_t>(u, hi);
    }
    for (; u < to; ++u) out->push_back(acks[first_position_[u]].second);
  };
  if (latest_ack_only_) {
    // Only the last id acked before the point binds (its promises include the earlier ones).
    if (before > 0) {
      const uint32_t u = static_cast<uint32_t>(ack_unique_[before - 1]);
      const bool present = std::any_of(output.present.begin(), output.present.end(),
                                       [u](const auto& r) { return r.first <= u && u < r.second; });
      if (!present) v->lost.push_back(acks[before - 1].second);
    }
  } else {
    each_missing(0, acked, &v->lost);
  }
  if (ordered_ && !latest_ack_only_ && !output.present.empty()) {
    // Missing ids acked before the last id present (and not already lost).
    const size_t last = output.present.back().second - 1;
    if (last > acked) each_missing(acked, last, &v->gaps);
  }
  for (const std::string& id : output.corrupt) {
    auto it = unique_.find(id);
    bool acked_before = it != unique_.end() && first_position_[it->second] < before;
    (acked_before ? v->corrupt : v->torn_unacked).push_back(id);
  }
  for (const std::vector<std::string>* ids : {&v->lost, &v->corrupt}) {
    for (const std::string& id : *ids) {
      auto it =
          std::lower_bound(output.why.begin(), output.why.end(), id,
                           [](const auto& w, const std::string& key) { return w.first < key; });
      if (it != output.why.end() && it->first == id) v->why.push_back(id + ": " + it->second);
    }
  }
  if (output.fs_unrecoverable && !fs_failures_are_violations_) {
    // The checker never saw the program's data: what it lost is unknown, not lost.
    v->lost.clear();
    v->gaps.clear();
    v->why.clear();
  }
}

std::string Verdict::Describe() const {
  std::vector<std::string> what;
  if (!could_not_check.empty()) what.push_back("could not check: " + could_not_check);
  if (!unavailable.empty()) {
    what.push_back(fmt::format(
        "unavailable: {} (the system's outcome, not a violation: nothing is known of its acks)",
        unavailable));
  }
  if (!lost.empty()) {
    what.push_back(fmt::format("lost {} of {} acked commits [{}]", lost.size(), acked_before,
                               fmt::join(lost, " ")));
  }
  if (!gaps.empty()) what.push_back(fmt::format("gaps in commit order [{}]", fmt::join(gaps, " ")));
  if (!corrupt.empty()) what.push_back(fmt::format("corrupt [{}]", fmt::join(corrupt, " ")));
  if (!why.empty()) what.push_back(fmt::format("the checker says why: {}", fmt::join(why, "; ")));
  if (!unavailable.empty()) {
    // Its exit status and timeout are how it said so, not a recoverability verdict.
  } else if (fs_unrecoverable) {
    what.push_back(fmt::format("file system unrecoverable ({}): {}",
                               fs_failure_is_violation ? "counted as a violation"
                                                       : "the file system's outcome, not the "
                                                         "program's",
                               fs_steps));
  } else if (!mount_error.empty()) {
    what.push_back("not recoverable: " + mount_error);
  } else if (timed_out) {
    what.emplace_back("not recoverable: checker timed out");
  } else if (exit_code != 0) {
    what.push_back(fmt::format("not recoverable: checker exit {}", exit_code));
  }
  if (what.empty()) what.emplace_back("ok");
  if (fs_repaired) what.push_back("file system repaired: " + fs_steps);
  if (!torn_unacked.empty()) {
    what.push_back(fmt::format("torn tail (never acked) [{}]", fmt::join(torn_unacked, " ")));
  }
  const char* word = SetMemberName(member);
  std::string torn =
      torn_entry
          ? fmt::format("; torn entry {}{} units {}", *torn_entry,
                        torn_disk != 0 ? fmt::format(" ({} {})", word, torn_disk) : std::string(),
                        torn_units)
          : std::string();
  if (!dropped_per_disk.empty()) {
    // Each disk's (node's) own dropped writes: which drive lost what at the one instant.
    std::vector<std::string> per_disk;
    for (size_t d = 0; d < dropped_per_disk.size(); ++d) {
      const std::vector<uint64_t>& entries = dropped_per_disk[d];
      per_disk.push_back(entries.empty() ? fmt::format("{} {}: 0", word, d + 1)
                                         : fmt::format("{} {}: {} [{}]", word, d + 1,
                                                       entries.size(), fmt::join(entries, " ")));
    }
    torn = fmt::format(" (dropped per {}: {}){}", word, fmt::join(per_disk, ", "), torn);
  }
  // A cluster's cut is one instant on every node's disk (the trace's one clock).
  const std::string instant =
      member == SetMember::kNode && !dropped_per_disk.empty()
          ? fmt::format("every node cut at once after entry {}", static_cast<int64_t>(point) - 1)
          : fmt::format("crash after entry {}", static_cast<int64_t>(point) - 1);
  return fmt::format("state {}: {} ({}, cache {}; dropped entries [{}]{}); rebuild: {}", state_id,
                     fmt::join(what, "; "), instant, cache, fmt::join(dropped, " "), torn, rebuild);
}

}  // namespace powercut::harness
