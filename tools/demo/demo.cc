// powercut-demo: for every barrier mode, several threads commit to a WAL on FaultInjectionEnv (over
// a real temp dir); at a random, seeded point the machine "dies" (every later file-system call
// fails) and the power is cut (un-synced writes dropped, a random prefix kept, the last one torn at
// 512 bytes: a drive with a volatile write cache). Recovery then runs and a table shows, per mode,
// how many acknowledged commits came back. Modes that are not barriers (none, direct,
// sync_file_range) lose acknowledged commits; real barriers lose none.
//
// Exit code: 0 when no real barrier lost an acknowledged commit, 1 otherwise, 2 on a setup error.
#include <fmt/format.h>
#include <stdlib.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "base/main_guard.h"
#include "base/scratch_dir.h"
#include "recovery/recovery.h"
#include "wal/barrier.h"
#include "wal/testing/fault_injection_env.h"
#include "wal/wal.h"

namespace powercut {
namespace {

struct Row {
  std::string barrier;
  bool is_barrier = false;
  uint64_t acked = 0;
  uint64_t acked_recovered = 0;
  uint64_t lost = 0;
  uint64_t recovered = 0;
  std::string tail;
  double seconds = 0;
  std::string error;
};

std::string Payload(int thread, int seq, uint64_t seed) {
  std::string p = fmt::format("t{}-c{}-s{}:", thread, seq, seed);
  while (p.size() < 200) p += static_cast<char>('a' + (p.size() * 7 + seq) % 26);
  return p;
}

Row RunOne(const std::string& base, wal::Barrier barrier, int threads, int per_thread,
           uint64_t seed, wal::PowerCutMode cut) {
  Row row;
  row.barrier = std::string(wal::BarrierName(barrier));
  row.is_barrier = wal::IsDurableWithVolatileCache(barrier);
  const auto start = std::chrono::steady_clock::now();
  const std::string dir = base + "/" + row.barrier;

  wal::FaultInjectionEnv env(wal::Env::Default());
  wal::WalOptions options;
  options.env = &env;
  options.barrier = barrier;
  options.segment_bytes = 256 << 10;
  auto log = wal::Wal::Open(dir, options);
  if (!log.ok()) {
    row.error = std::string(log.status().message());
    return row;
  }
  std::mt19937_64 rng(seed ^ static_cast<uint64_t>(barrier) * 0x9e3779b97f4a7c15ull);
  const uint64_t total = static_cast<uint64_t>(threads) * per_thread;
  // The power goes out once this many commits were acknowledged (25%..75% of the workload).
  const uint64_t cut_after = total / 4 + rng() % (total / 2 + 1);

  absl::Mutex mu;
  std::map<wal::Lsn, std::string> acked;  // guarded by mu
  std::atomic<uint64_t> acked_count{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        const std::string payload = Payload(t, i, seed);
        auto lsn = (*log)->Commit(
            absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(payload.data()), payload.size()));
        if (!lsn.ok()) return;  // the machine is dead: the log is fenced
        {
          absl::MutexLock lock(&mu);
          acked.emplace(*lsn, payload);
        }
        if (acked_count.fetch_add(1) + 1 == cut_after) env.SetCrashAfter(0);
      }
    });
  }
  for (std::thread& w : workers) w.join();
  (*log)->Close().IgnoreError();
  log->reset();
  if (!env.crashed()) env.SetCrashAfter(0);
  if (absl::Status s = env.SimulatePowerCut(cut, rng()); !s.ok()) {
    row.error = std::string(s.message());
    return row;
  }

  // Recovery on the real file system, as after a reboot.
  recovery::RecoverOptions ro;
  ro.mode = recovery::Mode::kPointInTime;
  auto result = recovery::Recover(dir, ro);
  if (!result.ok()) {
    row.error = std::string(result.status().message());
    return row;
  }
  std::map<wal::Lsn, const std::string*> found;
  for (const auto& r : result->records) found.emplace(r.lsn, &r.payload);
  row.acked = acked.size();
  for (const auto& [lsn, payload] : acked) {
    auto it = found.find(lsn);
    if (it != found.end() && *it->second == payload) ++row.acked_recovered;
  }
  row.lost = row.acked - row.acked_recovered;
  row.recovered = result->records.size();
  row.tail = std::string(recovery::TailStateName(result->tail));
  row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return row;
}

int Main(int argc, char** argv) {
  CLI::App app{
      "powercut-demo: commit to a WAL under every barrier mode, cut the power at a random point "
      "(a simulated volatile write cache), recover, and show which acknowledged commits survived"};
  uint64_t seed = 0;
  int threads = 8, per_thread = 150;
  std::string cut_name = "torn", base_dir = "/var/tmp";
  std::vector<std::string> barrier_names;
  app.add_option("--seed", seed, "seed for the power-cut points (0: pick one and print it)");
  app.add_option("--threads", threads, "committing threads per mode")->check(CLI::Range(1, 256));
  app.add_option("--commits", per_thread, "commits per thread")->check(CLI::Range(4, 100000));
  app.add_option("--cut", cut_name,
                 "what survives of un-synced writes: drop (nothing), keep (a random prefix), torn "
                 "(a random prefix, the last write torn at 512 bytes)")
      ->check(CLI::IsMember({"drop", "keep", "torn"}));
  app.add_option("--barriers", barrier_names, "barrier modes to run (default: all)");
  app.add_option("--dir", base_dir,
                 "where to create the scratch directory (must support O_DIRECT: not tmpfs)");
  CLI11_PARSE(app, argc, argv);
  if (seed == 0) seed = std::random_device{}() | 1;
  const wal::PowerCutMode cut = cut_name == "drop"   ? wal::PowerCutMode::kDropUnsynced
                                : cut_name == "keep" ? wal::PowerCutMode::kKeepPrefix
                                                     : wal::PowerCutMode::kTornPrefix;
  std::vector<wal::Barrier> barriers;
  if (barrier_names.empty()) barriers = wal::AllBarriers();
  for (const std::string& name : barrier_names) {
    auto b = wal::ParseBarrier(name);
    if (!b.ok()) {
      fmt::print(stderr, "powercut-demo: {}\n", std::string(b.status().message()));
      return 2;
    }
    barriers.push_back(*b);
  }

  auto scratch_dir = ScratchDir::Create("powercut-demo", base_dir);
  if (!scratch_dir.ok()) {
    fmt::print(stderr, "powercut-demo: {} (or pass --dir)\n",
               std::string(scratch_dir.status().message()));
    return 2;
  }
  const std::string scratch = scratch_dir->path();

  fmt::print("powercut-demo: {} threads x {} commits per mode, power cut mode '{}', seed {}\n",
             threads, per_thread, cut_name, seed);
  fmt::print("(reproduce with: powercut-demo --seed {} --threads {} --commits {} --cut {})\n\n",
             seed, threads, per_thread, cut_name);
  fmt::print("{:<16} {:>8} {:>7} {:>10} {:>6} {:>10} {:>8} {:>7}\n", "barrier", "durable?", "acked",
             "acked+rec", "lost", "recovered", "tail", "time");
  bool barrier_lost = false;
  for (wal::Barrier barrier : barriers) {
    const Row row = RunOne(scratch, barrier, threads, per_thread, seed, cut);
    if (!row.error.empty()) {
      fmt::print("{:<16} error: {}\n", row.barrier, row.error);
      if (row.is_barrier) barrier_lost = true;
      continue;
    }
    fmt::print("{:<16} {:>8} {:>7} {:>10} {:>6} {:>10} {:>8} {:>6.2f}s{}\n", row.barrier,
               row.is_barrier ? "yes" : "no", row.acked, row.acked_recovered, row.lost,
               row.recovered, row.tail, row.seconds,
               row.is_barrier && row.lost > 0    ? "  <- BUG: a barrier lost acknowledged commits"
               : !row.is_barrier && row.lost > 0 ? "  <- not a barrier"
                                                 : "");
    if (row.is_barrier && row.lost > 0) barrier_lost = true;
  }
  fmt::print(
      "\nacked: commits whose Commit() returned OK before the cut; acked+rec: of those, recovered "
      "byte for byte;\nlost = acked - acked+rec; recovered: all records recovery returned "
      "(point-in-time), acknowledged or not.\n");
  return barrier_lost ? 1 : 0;
}

}  // namespace
}  // namespace powercut

int main(int argc, char** argv) {
  return powercut::RunMainGuarded("powercut-demo", 2, [&] { return powercut::Main(argc, argv); });
}
