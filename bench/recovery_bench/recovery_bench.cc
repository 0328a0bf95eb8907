// recovery_bench: measures how fast recovery reads a log from the page cache. Writes a log of
// --mib MiB with the real WAL (barrier none, so writing is quick), then times Recover a few times
// with and without keeping payloads, and prints GB/s. A program that prints measurements, not a
// test. Needs --mib of free space in --dir (default /var/tmp); removes its files at the end.
#include <fmt/format.h>
#include <stdlib.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

#include "base/main_guard.h"
#include "base/scratch_dir.h"
#include "recovery/recovery.h"
#include "wal/wal.h"

static int Main(int argc, char** argv) {
  CLI::App app{"recovery_bench: recovery scan throughput from the page cache"};
  uint64_t mib = 1024;
  uint32_t record_bytes = 4000;
  int rounds = 3;
  std::string base = "/var/tmp";
  app.add_option("--mib", mib, "log size to write, MiB");
  app.add_option("--record-bytes", record_bytes, "payload size of each record");
  app.add_option("--rounds", rounds, "timed recoveries per setting");
  app.add_option("--dir", base, "where to create the scratch log");
  CLI11_PARSE(app, argc, argv);

  auto scratch = powercut::ScratchDir::Create("powercut-recovery-bench", base);
  if (!scratch.ok()) {
    fmt::print(stderr, "recovery_bench: {}\n", std::string(scratch.status().message()));
    return 2;
  }
  const std::string dir = scratch->File("wal");

  powercut::wal::WalOptions options;
  options.barrier = powercut::wal::Barrier::kNone;
  auto wal = powercut::wal::Wal::Open(dir, options);
  if (!wal.ok()) {
    fmt::print(stderr, "recovery_bench: {}\n", std::string(wal.status().message()));
    return 2;
  }
  std::string payload(record_bytes, 'x');
  const uint64_t records = (mib << 20) / (record_bytes + 32);
  for (uint64_t i = 0; i < records; ++i) {
    payload[i % record_bytes] = static_cast<char>(i);
    auto lsn = (*wal)->Append(
        absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(payload.data()), payload.size()));
    if (!lsn.ok()) {
      fmt::print(stderr, "recovery_bench: {}\n", std::string(lsn.status().message()));
      return 2;
    }
    if (i % 1024 == 1023) (void)(*wal)->Sync(*lsn);
  }
  if (absl::Status s = (*wal)->Close(); !s.ok()) {
    fmt::print(stderr, "recovery_bench: {}\n", std::string(s.message()));
    return 2;
  }
  wal->reset();
  uint64_t bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) bytes += e.file_size();
  fmt::print("log: {} records of {} bytes, {} segment bytes on disk\n", records, record_bytes,
             bytes);
  for (bool keep : {false, true}) {
    for (int r = 0; r < rounds; ++r) {
      powercut::recovery::RecoverOptions ro;
      ro.keep_payloads = keep;
      const auto start = std::chrono::steady_clock::now();
      auto result = powercut::recovery::Recover(dir, ro);
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (!result.ok() || result->records.size() != records) {
        fmt::print(stderr, "recovery_bench: recovery failed: {}\n",
                   result.ok() ? result->Summary() : std::string(result.status().message()));
        return 1;
      }
      fmt::print(
          "recover keep_payloads={:<5} round {}: {:.3f} s, {:.2f} GB/s of segment files, "
          "{:.2f} GB/s of records\n",
          keep, r, s, bytes / s / 1e9, records * (record_bytes + 32.0) / s / 1e9);
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  return powercut::RunMainGuarded("recovery_bench", 2, [&] { return Main(argc, argv); });
}
