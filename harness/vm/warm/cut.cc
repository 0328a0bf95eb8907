#include "harness/vm/warm/cut.h"

#include <algorithm>
#include <cstdlib>
#include <random>

#include "base/duration_flag.h"
#include "fmt/format.h"

namespace powercut::vm {

absl::StatusOr<CutSpec> ParseCut(const std::string& text) {
  CutSpec cut;
  if (text.empty() || text == "none") return cut;
  if (text == "random") {
    cut.when = CutSpec::When::kRandom;
    return cut;
  }
  auto bad = [&] {
    return absl::InvalidArgumentError(fmt::format(
        "--cut '{}': expected random, after-acks=N or after=DURATION (e.g. 1.5s, 300ms)", text));
  };
  if (text.rfind("after-acks=", 0) == 0) {
    std::string n = text.substr(11);
    if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos) return bad();
    cut.when = CutSpec::When::kAfterAcks;
    cut.after_acks = std::stoull(n);
    if (cut.after_acks == 0) return bad();
    return cut;
  }
  if (text.rfind("after=", 0) == 0) {
    absl::StatusOr<absl::Duration> after =
        ParseDurationFlag("--cut after", text.substr(6), {.allow_zero = true});
    if (!after.ok()) return bad();
    cut.when = CutSpec::When::kAfter;
    cut.after = absl::ToChronoMilliseconds(*after);
    return cut;
  }
  return bad();
}

CutPlan PlanCut(const CutSpec& cut, bool nbd) {
  // after=D: D after the workload started. random: after the N-th ack, at the K-th write
  // completion (NBD: the server fires it, see NbdServer::ArmCut), or, without the NBD server, a
  // delay after the N-th ack.
  CutPlan plan;
  if (cut.when == CutSpec::When::kAfter) plan.delay = cut.after;
  if (cut.when == CutSpec::When::kRandom) {
    std::mt19937_64 rng(cut.seed);
    plan.trigger_ack = 1 + rng() % std::max<uint64_t>(1, cut.random_max_acks);
    const uint64_t k = 1 + rng() % std::max<uint64_t>(1, cut.random_max_writes);
    const auto delay = std::chrono::milliseconds(static_cast<int64_t>(
        rng() % static_cast<uint64_t>(std::max<int64_t>(1, cut.random_window.count()))));
    if (nbd) {
      plan.nbd_writes = k;
    } else {
      plan.delay = delay;
    }
  }
  return plan;
}

}  // namespace powercut::vm
