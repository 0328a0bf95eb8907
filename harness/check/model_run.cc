#include "harness/check/model_run.h"

#include <algorithm>
#include <thread>

#include "absl/strings/cord.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/check/disk_attribution.h"

namespace powercut::harness {
namespace {

constexpr size_t kBatch = 16;  // states per hand-out: few enough that a stop wastes little

CheckerOutput SetupFailure(std::string why) {
  CheckerOutput out;
  out.exit_code = -1;
  out.setup_error = std::move(why);
  return out;
}

}  // namespace

std::optional<CompactOutput> CheckShared::Lookup(const Hash128& image) const {
  powercut::MutexLock lock(&mu_);
  auto it = outputs_.find(image);
  if (it == outputs_.end()) return std::nullopt;
  return it->second;
}

void CheckShared::Insert(const Hash128& image, const CompactOutput& output,
                         const std::string& method, const std::string& kernel) {
  powercut::MutexLock lock(&mu_);
  outputs_.try_emplace(image, output);
  if (!method.empty()) method_ = method;
  if (!kernel.empty()) kernel_ = kernel;
}

std::string CheckShared::kernel() const {
  powercut::MutexLock lock(&mu_);
  return kernel_;
}

void CheckShared::Progress(uint64_t states) {
  if (!options_.on_state_checked || states == 0) return;
  powercut::MutexLock lock(&mu_);
  done_ += states;
  options_.on_state_checked(done_, total_);
}

std::string CheckShared::method() const {
  powercut::MutexLock lock(&mu_);
  return method_;
}

absl::Status CheckShared::CouldNotCheck(const CompactOutput& output, const std::string& why) {
  powercut::MutexLock lock(&mu_);
  if (first_broken_.empty()) first_broken_ = why;
  if (!output.cannot_start && ++broken_runs_ < options_.max_could_not_check) {
    return absl::OkStatus();
  }
  absl::Status error = absl::FailedPreconditionError(
      output.cannot_start
          ? fmt::format("{}: fix --checker '{}'", why, options_.checker)
          : fmt::format("the checker's output is not the protocol on {} crash images, the "
                        "first: {}",
                        broken_runs_, first_broken_));
  MarkBrokenChecker(error);
  return error;
}

absl::Status ModelRun::Run(std::vector<CheckWorker>& workers) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (CheckWorker& w : workers) threads.emplace_back([this, &w] { Work(w); });
  for (auto& t : threads) t.join();
  powercut::MutexLock lock(&mu_);
  RETURN_IF_ERROR(error_);
  result_->states_planned = plan_.size();
  if (tally_.stopped_at()) {
    result_->stopped = StopReason::kFirstViolation;
  } else if (tally_.folded() < plan_.size()) {
    result_->stopped = StopReason::kBudget;  // the only other way to leave states unchecked
  }
  // The states never handed out count as done for the progress line.
  context_.shared.Progress(plan_.size() - std::min<uint64_t>(next_seq_, plan_.size()));
  result_->seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return absl::OkStatus();
}

std::vector<ModelRun::Item> ModelRun::NextBatch() {
  powercut::MutexLock lock(&mu_);
  std::vector<Item> batch;
  if (!error_.ok() || next_seq_ > stop_after_) return batch;
  if (std::chrono::steady_clock::now() >= context_.deadline) {
    out_of_time_ = true;
    return batch;
  }
  std::vector<CrashState> states;
  // The head one state at a time, so that the workers judge its states side by side.
  plan_.Next(next_seq_ < plan_.head() ? 1 : kBatch, &states);
  for (const CrashState& s : states) batch.push_back({next_seq_++, s});  // trivially copyable
  return batch;
}

bool ModelRun::Skip(uint64_t seq) {
  powercut::MutexLock lock(&mu_);
  if (!error_.ok() || seq > stop_after_ || out_of_time_) return true;
  // Checked per state, so that one slow batch overshoots the budget by one state at most.
  if (std::chrono::steady_clock::now() >= context_.deadline) out_of_time_ = true;
  return out_of_time_;
}

void ModelRun::Fail(const absl::Status& status) {
  powercut::MutexLock lock(&mu_);
  if (error_.ok()) error_ = status;
}

void ModelRun::Work(CheckWorker& w) {
  for (std::vector<Item> batch = NextBatch(); !batch.empty(); batch = NextBatch()) {
    for (Item& item : batch) {
      if (Skip(item.seq)) {
        context_.shared.Progress(1);
        continue;
      }
      Hash128 image;
      absl::StatusOr<Verdict> v = Judge(item.state, w, &image);
      if (!v.ok()) return Fail(v.status());
      Record(item.seq, image, *std::move(v));
    }
  }
}

absl::StatusOr<CompactOutput> ModelRun::OutputFor(const Hash128& image, CheckWorker& w) {
  if (auto cached = context_.shared.Lookup(image)) return *cached;
  const CheckOptions& o = context_.options;
  auto out = CheckWorkerImage(o, w);
  CompactOutput compact;
  if (out.ok()) {
    compact = context_.oracle.Compact(out->checker, out->fs);
  } else if (absl::IsFailedPrecondition(out.status())) {
    compact = context_.oracle.Compact(SetupFailure(std::string(out.status().message())));
  } else {
    return out.status();
  }
  context_.shared.Insert(image, compact, out.ok() ? out->method : "", out.ok() ? out->kernel : "");
  if (!compact.protocol_error.empty()) {
    RETURN_IF_ERROR(context_.shared.CouldNotCheck(compact, compact.protocol_error));
  }
  return compact;
}

absl::StatusOr<Verdict> ModelRun::Judge(const CrashState& state, CheckWorker& w, Hash128* image) {
  const CheckOptions& o = context_.options;
  RETURN_IF_ERROR(w.image->Materialize(state, context_.index.View(state.point, state.model)));
  *image = w.image->content_hash();
  ASSIGN_OR_RETURN(CompactOutput output, OutputFor(*image, w));
  Verdict v;
  v.state_id = EncodeStateId(context_.trace_hash8, state);
  v.cache = state.model.Code();
  context_.oracle.Judge(state.point, output, &v);
  v.dropped = w.image->dropped();
  if (state.torn_entry) {
    v.torn_entry = state.torn_entry;
    v.torn_units = state.torn_units.Encode();
    v.dropped.erase(std::remove(v.dropped.begin(), v.dropped.end(), *state.torn_entry),
                    v.dropped.end());
  }
  AttributeToDisks(context_.index.trace(), o.set_member, &v);
  v.rebuild = RebuildCommand(o.powercut, o.trace_path, context_.base, v.state_id);
  if (!o.repro_args.empty()) {
    v.repro = ReproCommand(o.powercut, o.trace_path, v.state_id, o.repro_args);
  }
  return v;
}

void ModelRun::Record(uint64_t seq, const Hash128& image, Verdict verdict) {
  {
    powercut::MutexLock lock(&mu_);
    if (!context_.options.exhaustive && verdict.violation()) {
      stop_after_ = std::min(stop_after_, std::max(seq, plan_.head() - 1));
    }
    tally_.Add(seq, image, std::move(verdict));
  }
  context_.shared.Progress(1);
}

}  // namespace powercut::harness
