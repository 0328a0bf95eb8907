#include "workloads/workload.h"

#include "base/status_macros.h"
#include "wal/barrier.h"

namespace powercut::workloads {

absl::Status DirectoryWorkload::Run(const Target& target, AckChannel& acks) {
  RETURN_IF_ERROR(RequireDir(target, help().name));
  return RunIn(target.dir, acks);
}

absl::StatusOr<CheckResult> DirectoryWorkload::Check(const Target& target) {
  RETURN_IF_ERROR(RequireDir(target, help().name));
  return CheckIn(target.dir);
}

void AddBarrierOption(CLI::App& run, std::string& barrier) {
  std::string names;
  for (wal::Barrier b : wal::AllBarriers()) {
    names += names.empty() ? "" : ", ";
    names += std::string(wal::BarrierName(b));
  }
  run.add_option("--barrier", barrier, "durability barrier: " + names)->capture_default_str();
}

void AddCountOption(CLI::App& run, uint64_t& count, const std::string& what) {
  run.add_option("--count", count, what)->capture_default_str()->check(CLI::PositiveNumber);
}

void AddThreadsOption(CLI::App& run, int& threads, const std::string& who) {
  run.add_option("--threads", threads, "concurrent " + who)
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
}

void AddPayloadOptions(CLI::App& run, size_t& value_size, uint64_t& seed, const std::string& what) {
  run.add_option("--value-size", value_size, "mean " + what + " size in bytes")
      ->capture_default_str();
  run.add_option("--seed", seed, "seed of the " + what + " sizes")->capture_default_str();
}

std::vector<std::unique_ptr<Workload>> AllWorkloads() {
  std::vector<std::unique_ptr<Workload>> all;
  all.push_back(MakeXlogWorkload());
  all.push_back(MakeRocksDbWorkload());
  all.push_back(MakeSqliteWorkload());
  all.push_back(MakeWalWorkload());
  all.push_back(MakePostgresWorkload());
  all.push_back(MakeRedisWorkload());
  all.push_back(MakeLmdbWorkload());
  all.push_back(MakeRetryWorkload());
  all.push_back(MakeEtcdWorkload());
  all.push_back(MakeTwoDiskWorkload());
  return all;
}

}  // namespace powercut::workloads
