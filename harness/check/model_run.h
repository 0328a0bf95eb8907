// Checking one cache model's crash states with the engine's workers (harness/check/engine.h).
// A ModelRun hands the StatePlan's states out in check order, judges each on a worker's image
// (or from the output of an identical image already checked), and folds the verdicts into the
// model's result in that order (StateTally). It stops handing states out at the first violation
// (unless exhaustive) and when the budget runs out.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "base/hash.h"
#include "base/tsan_mutex.h"
#include "harness/check/engine.h"
#include "harness/check/oracle.h"
#include "harness/check/state_tally.h"
#include "harness/check/worker_pool.h"
#include "harness/state/state_plan.h"

namespace powercut::harness {

// Marks `status` as the broken-checker stop that IsBrokenChecker recognises.
void MarkBrokenChecker(absl::Status& status);

// What every model of one check shares: the checker outputs by image, the progress, and the
// evidence that the checker is broken.
class CheckShared {
 public:
  CheckShared(const CheckOptions& options, uint64_t total_states)
      : options_(options), total_(total_states) {}

  std::optional<CompactOutput> Lookup(const Hash128& image) const;
  // `method`, `kernel`: how and by which kernel the image was judged ("" = not recorded).
  void Insert(const Hash128& image, const CompactOutput& output, const std::string& method,
              const std::string& kernel);
  // Counts `states` judged (or skipped) for CheckOptions::on_state_checked.
  void Progress(uint64_t states);
  // A checker run whose output was not the protocol: the error that stops the check once the
  // checker looks broken (cannot start, or max_could_not_check such runs), else OK.
  absl::Status CouldNotCheck(const CompactOutput& output, const std::string& why);
  std::string method() const;
  std::string kernel() const;

 private:
  const CheckOptions& options_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<Hash128, CompactOutput> outputs_ ABSL_GUARDED_BY(mu_);
  std::string method_ ABSL_GUARDED_BY(mu_);  // how the states were read
  std::string kernel_ ABSL_GUARDED_BY(mu_);  // which kernel judged them
  uint64_t done_ ABSL_GUARDED_BY(mu_) = 0;
  const uint64_t total_;
  uint64_t broken_runs_ ABSL_GUARDED_BY(mu_) = 0;
  std::string first_broken_ ABSL_GUARDED_BY(mu_);  // the first such run's problem
};

// The parts of one check every model's run reads.
struct CheckContext {
  const CheckOptions& options;  // models and defaults resolved
  std::string base;             // the base image
  std::string trace_hash8;
  const TraceIndex& index;
  const Oracle& oracle;
  std::chrono::steady_clock::time_point deadline;  // time_point::max(): no budget
  CheckShared& shared;
  // Images folded so far (StateTally); used by the one model running, under its lock.
  absl::flat_hash_set<Hash128>* images;
};

class ModelRun {
 public:
  ModelRun(const CheckContext& context, StatePlan& plan, ModelResult* result)
      : context_(context),
        plan_(plan),
        result_(result),
        tally_(result, context.options.max_examples, !context.options.exhaustive, plan.head(),
               context.images) {}

  // Runs one thread per worker until the plan, the first violation or the budget ends it; fills
  // the result's counts, stop reason and time.
  absl::Status Run(std::vector<CheckWorker>& workers);

 private:
  struct Item {
    uint64_t seq;
    CrashState state;
  };
  void Work(CheckWorker& worker);
  std::vector<Item> NextBatch();
  // Whether state `seq` is no longer worth checking: after a known violation, or out of time.
  bool Skip(uint64_t seq);
  // Judges one state on the worker's image; `image` receives its content hash.
  absl::StatusOr<Verdict> Judge(const CrashState& state, CheckWorker& worker, Hash128* image);
  // The checker's output for the worker's image: from an identical image, or a checker run.
  absl::StatusOr<CompactOutput> OutputFor(const Hash128& image, CheckWorker& worker);
  void Record(uint64_t seq, const Hash128& image, Verdict verdict);
  void Fail(const absl::Status& status);

  const CheckContext& context_;
  absl::Mutex mu_;
  StatePlan& plan_ ABSL_GUARDED_BY(mu_);
  ModelResult* const result_;  // written by tally_ under mu_, and by Run after the threads
  StateTally tally_ ABSL_GUARDED_BY(mu_);
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 0;
  // The last seq worth judging (not exhaustive): the smallest seq of a violating state judged so
  // far, or the plan's head's last state if that comes later. States after it are skipped. The
  // tally stops at the true first one once every state before it is folded.
  uint64_t stop_after_ ABSL_GUARDED_BY(mu_) = UINT64_MAX;
  bool out_of_time_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace powercut::harness
