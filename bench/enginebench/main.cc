// enginebench: how fast the crash-state engine checks states (issue 3's speed target).
//
// Scenario "raw": a 64 MiB device, a 1,000-entry trace of the raw-device log workload (write,
// FLUSH, ack per commit), a checker that reads 4 MiB of the image (enginebench-checker), every
// entry a crash point, cache models off, on and lying. Scenario "ext4": a 64 MiB ext4 image, files
// written and fsynced through a loop mount, the changed blocks as a trace, every entry a crash
// point, each state loop-mounted (journal replay) and checked by a shell command; `--fs xfs,btrfs`
// does the same on 300 MiB xfs / btrfs images. `--wide N`: one crash point with N volatile writes,
// all-but-one states capped vs uncapped. `--trace FILE --checker CMD`: a recorded trace with a
// real checker (e.g. PostgreSQL's). Prints states/s,
// checker runs/s and peak memory; it asserts nothing.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "base/image_io.h"
#include "base/main_guard.h"
#include "base/process.h"
#include "base/scratch_dir.h"
#include "fmt/format.h"
#include "harness/check/engine.h"
#include "harness/check/loop_mount.h"
#include "harness/fs/file_system.h"
#include "harness/trace/diff_trace.h"
#include "harness/trace/disk_geometry.h"
#include "harness/trace/raw_log.h"
#include "harness/trace/recorder.h"

namespace {

using namespace powercut::harness;

constexpr uint64_t kImageBytes = 64 << 20;

double CpuSeconds(int who) {
  rusage ru{};
  ::getrusage(who, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double CpuNow() { return CpuSeconds(RUSAGE_SELF) + CpuSeconds(RUSAGE_CHILDREN); }

long PeakRssKiB(int who) {
  rusage ru{};
  ::getrusage(who, &ru);
  return ru.ru_maxrss;
}

void MakeImage(const std::string& path, uint64_t bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) std::perror("ftruncate");
    ::close(fd);
  }
}

void PrintResult(const char* scenario, const CheckReport& r, double cpu_seconds) {
  for (const ModelResult& m : r.results) {
    std::printf(
        "%-5s cache %-6s points %6llu states %7llu of %7llu%s checked %6llu dedup %6llu "
        "violating %6llu  %6.2f s  %8.1f states/s  %7.1f checks/s\n",
        scenario, m.model.Code().c_str(), static_cast<unsigned long long>(m.points),
        static_cast<unsigned long long>(m.states),
        static_cast<unsigned long long>(m.states_planned),
        m.stopped == StopReason::kNone
            ? ""
            : (std::string(" (stopped: ") + StopReasonName(m.stopped) + ")").c_str(),
        static_cast<unsigned long long>(m.checked), static_cast<unsigned long long>(m.deduplicated),
        static_cast<unsigned long long>(m.violations), m.seconds, m.states / m.seconds,
        m.checked / m.seconds);
  }
  uint64_t states = 0, checked = 0;
  double seconds = 0;
  for (const ModelResult& m : r.results) {
    states += m.states;
    checked += m.checked;
    seconds += m.seconds;
  }
  std::printf(
      "%-5s total: %llu states in %.2f s = %.1f states/s (%.1f checker runs/s), %d "
      "workers\n",
      scenario, static_cast<unsigned long long>(states), seconds, states / seconds,
      checked / seconds, r.workers);
  // Wall-clock rates depend on what else runs on the machine; CPU time per state does not.
  std::printf(
      "%-5s CPU: %.2f ms per state, %.2f ms per checker run (engine + checkers); on %u "
      "idle cores that is %.0f states/s\n",
      scenario, 1e3 * cpu_seconds / states, checked ? 1e3 * cpu_seconds / checked : 0.0,
      std::thread::hardware_concurrency(),
      states * std::thread::hardware_concurrency() / cpu_seconds);
}

// `--cache off,on,lying` into models; false (after saying which) on a bad name.
bool ParseModels(const std::string& models, std::vector<CacheModel>* out) {
  for (size_t start = 0; start <= models.size();) {
    size_t comma = models.find(',', start);
    std::string name = models.substr(start, comma == std::string::npos ? comma : comma - start);
    auto model = ParseCacheModel(name);
    if (!model.ok()) return std::fprintf(stderr, "--cache %s: bad model\n", name.c_str()), false;
    out->push_back(*model);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return true;
}

// What the raw scenario records and how it checks it.
struct RawParams {
  uint64_t commits = 333;
  std::string points = "every";   // every, or acks,flushes as run and matrix use
  bool exhaustive = true;         // the rates of issue 3 are for every state
  uint64_t checker_work_mib = 0;  // > 0: a costly checker that also hashes this many MiB
};

int RawScenario(const std::string& dir, int workers, const std::string& models,
                const RawParams& params) {
  std::string base = dir + "/raw-base.img";
  MakeImage(base, kImageBytes);
  std::string log = dir + "/raw.log";
  Recorder::Options ro{log, 4096, kImageBytes, base};
  auto rec = Recorder::Create(ro);
  if (!rec.ok()) {
    return std::fprintf(stderr, "%s\n", std::string(rec.status().message()).c_str()), 1;
  }
  const uint64_t n = params.commits;
  if (auto s = WriteRawLog(**rec, n, RawLogBarrier::kFlushBeforeAck); !s.ok()) return 1;
  if (!(*rec)->RecordWrite(n * kRawLogBlock, RawLogRecord(n), false).ok()) return 1;
  std::printf("raw   trace: %llu entries on a %llu MiB image\n",
              static_cast<unsigned long long>((*rec)->entries()),
              static_cast<unsigned long long>(kImageBytes >> 20));
  if (!(*rec)->Finish().ok()) return 1;
  CheckOptions o;
  o.trace_path = log;
  o.checker = powercut::SelfPath("enginebench") + "-checker";
  if (params.checker_work_mib > 0) {
    // Work, not a sleep: what a checker that starts a server per image costs in CPU.
    o.checker = fmt::format("head -c {} /dev/zero | cksum >/dev/null && {}",
                            params.checker_work_mib << 20, o.checker);
  }
  o.workers = workers;
  o.exhaustive = params.exhaustive;
  if (params.points == "every") {
    o.points.every_entry = true;
  } else {
    auto points = ParsePointSelection(params.points);
    if (!points.ok()) return std::fprintf(stderr, "%s\n", points.status().ToString().c_str()), 2;
    o.points = *points;
  }
  o.work_dir = dir + "/raw-work";
  if (!ParseModels(models, &o.models)) return 2;
  double cpu = CpuNow();
  auto report = RunCheck(o);
  cpu = CpuNow() - cpu;
  if (!report.ok()) {
    std::fprintf(stderr, "raw: %s\n", std::string(report.status().message()).c_str());
    return 1;
  }
  PrintResult("raw", *report, cpu);
  return 0;
}

// A file-system scenario: ext4 (64 MiB, 4 KiB blocks, lazy init: quick to make), xfs or btrfs
// (their smallest image, made as the file-system table makes it).
int FsScenario(const std::string& dir, int workers, powercut::harness::FsKind kind) {
  const powercut::harness::FileSystem& table = powercut::harness::FileSystemOf(kind);
  const std::string fs = table.name;
  const char* tag = table.name;
  const bool ext4 = kind == powercut::harness::FsKind::kExt4;
  if (::geteuid() != 0) {
    std::printf("%-5s skipped: loop mounts need root\n", tag);
    return 0;
  }
  const uint64_t image_bytes = ext4 ? kImageBytes : table.min_image_bytes;
  std::string base = fmt::format("{}/{}-base.img", dir, fs);
  MakeImage(base, image_bytes);
  const std::vector<std::string> mkfs =
      ext4
          ? std::vector<std::string>{"mkfs.ext4",
                                     "-q",
                                     "-F",
                                     "-b",
                                     "4096",
                                     "-E",
                                     "lazy_itable_init=1,lazy_journal_init=1",
                                     base}
          : powercut::harness::WithImage(table.MkfsArgv(powercut::harness::GeometryOf(
                                                            powercut::harness::kDefaultSectorFormat)
                                                            .physical_sector),
                                         base);
  if (auto made = powercut::RunCommandOrError("making " + fs, mkfs); !made.ok()) {
    return std::fprintf(stderr, "%s\n", std::string(made.status().message()).c_str()), 1;
  }
  std::string after = fmt::format("{}/{}-after.img", dir, fs);
  if (!powercut::CopySparse(base, after).ok()) return 1;
  std::string mnt = fmt::format("{}/{}-mnt", dir, fs);
  std::filesystem::create_directories(mnt);
  std::vector<std::string> acks;
  {
    auto mount = LoopMount::Mount(after, fs, mnt);
    if (!mount.ok()) {
      std::printf("%-5s skipped: %s\n", tag, std::string(mount.status().message()).c_str());
      return 0;
    }
    for (int i = 0; i < 40; ++i) {
      std::string path = fmt::format("{}/commit-{}", mnt, i);
      int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      std::string text(8192, static_cast<char>('a' + i % 26));
      if (fd < 0 || ::write(fd, text.data(), text.size()) < 0 || ::fsync(fd) != 0) return 1;
      ::close(fd);
      acks.push_back(std::to_string(i));
    }
    if (!(*mount)->Unmount().ok()) return 1;
  }
  std::string log = fmt::format("{}/{}.log", dir, fs);
  DiffTraceOptions d;
  d.acks = acks;
  if (auto s = WriteDiffTrace(base, after, log, d); !s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return 1;
  }
  CheckOptions o;
  o.trace_path = log;
  o.checker =
      "for f in \"$POWERCUT_DIR\"/commit-*; do [ -s \"$f\" ] && echo \"have ${f##*commit-}\"; "
      "done; true";
  o.fs = *ParseFsKind(fs);
  o.workers = workers;
  o.points.every_entry = true;
  o.models = {*ParseCacheModel("off")};
  o.work_dir = fmt::format("{}/{}-work", dir, fs);
  double cpu = CpuNow();
  auto report = RunCheck(o);
  cpu = CpuNow() - cpu;
  if (!report.ok()) {
    std::fprintf(stderr, "%s: %s\n", tag, std::string(report.status().message()).c_str());
    return 1;
  }
  std::printf("%-5s trace: %llu entries on a %llu MiB %s image\n", tag,
              static_cast<unsigned long long>(report->trace_entries),
              static_cast<unsigned long long>(image_bytes >> 20), tag);
  PrintResult(tag, *report, cpu);
  return 0;
}

// Scenario "trace" (`--trace FILE --checker CMD`): a recording kept by `powercut run/matrix
// --keep` (its trace.log and manifest, base image included) checked with the given checker, so a
// costly real checker (PostgreSQL's, which starts the server on every image) is measured on the
// states a real run produces. Every state of the chosen models (the bench's default).
int TraceScenario(const std::string& dir, int workers, const std::string& trace,
                  const std::string& checker, const std::string& fs, const std::string& models,
                  bool exhaustive) {
  auto kind = ParseFsKind(fs);
  if (!kind.ok()) return std::fprintf(stderr, "--trace-fs %s: unknown\n", fs.c_str()), 2;
  if (!FileSystemOf(*kind).raw() && ::geteuid() != 0) {
    std::printf("trace skipped: loop mounts need root\n");
    return 0;
  }
  CheckOptions o;
  o.trace_path = trace;
  o.checker = checker;
  o.fs = *kind;
  o.workers = workers;
  o.exhaustive = exhaustive;
  o.work_dir = dir + "/trace-work";
  if (!ParseModels(models, &o.models)) return 2;
  double cpu = CpuNow();
  auto report = RunCheck(o);
  cpu = CpuNow() - cpu;
  if (!report.ok()) {
    std::fprintf(stderr, "trace: %s\n", std::string(report.status().message()).c_str());
    return 1;
  }
  std::printf("trace %s: %llu entries, checker: %s\n", trace.c_str(),
              static_cast<unsigned long long>(report->trace_entries), checker.c_str());
  PrintResult("trace", *report, cpu);
  return 0;
}

// Scenario "wide": what "each all-but-one" costs. One crash point with `writes` volatile writes
// under cache on (a raw-device log of `writes` commits and no FLUSH, one ack at the end), checked
// once with the all-but-one states capped at `cap` and once with every one of them.
int WideScenario(const std::string& dir, int workers, uint64_t writes, uint32_t cap) {
  std::string base = dir + "/wide-base.img";
  MakeImage(base, kImageBytes);
  std::string log = dir + "/wide.log";
  Recorder::Options ro{log, 4096, kImageBytes, base};
  auto rec = Recorder::Create(ro);
  if (!rec.ok()) return 1;
  for (uint64_t i = 0; i < writes; ++i) {
    if (!(*rec)->RecordWrite(i * kRawLogBlock, RawLogRecord(i), false).ok()) return 1;
  }
  if (!(*rec)->RecordAck(std::to_string(writes - 1)).ok() || !(*rec)->Finish().ok()) return 1;
  for (uint32_t max_all_but_one : {cap, 0u}) {
    CheckOptions o;
    o.trace_path = log;
    o.checker = powercut::SelfPath("enginebench") + "-checker";
    o.workers = workers;
    o.models = {*ParseCacheModel("on")};
    o.states.max_all_but_one = max_all_but_one;
    o.work_dir = dir + "/wide-work";
    double cpu = CpuNow();
    auto report = RunCheck(o);
    cpu = CpuNow() - cpu;
    if (!report.ok()) {
      std::fprintf(stderr, "wide: %s\n", std::string(report.status().message()).c_str());
      return 1;
    }
    const ModelResult& m = report->results.at(0);
    std::printf(
        "wide  %llu volatile writes, all-but-one %s: %llu states (%llu checked) in %.2f s = "
        "%.1f states/s, CPU %.2f s\n",
        static_cast<unsigned long long>(writes),
        max_all_but_one ? fmt::format("capped at {}", max_all_but_one).c_str() : "every one",
        static_cast<unsigned long long>(m.states), static_cast<unsigned long long>(m.checked),
        m.seconds, m.states / m.seconds, cpu);
  }
  return 0;
}

int Main(int argc, char** argv) {
  CLI::App app{"enginebench: crash states per second of the powercut engine"};
  int workers = 0;
  bool skip_ext4 = false;
  bool skip_raw = false;
  std::string file_systems = "ext4";
  uint64_t wide = 0;
  uint32_t wide_cap = 64;
  app.add_option("--workers", workers, "parallel checks (default: one per core)");
  app.add_flag("--skip-ext4", skip_ext4, "no file-system scenario");
  app.add_flag("--skip-raw", skip_raw, "no raw scenario");
  app.add_option("--fs", file_systems, "file-system scenarios: ext4,xfs,btrfs (default ext4)");
  app.add_option("--wide", wide,
                 "also: one point with this many volatile writes (e.g. 2000), all-but-one "
                 "capped vs every one");
  app.add_option("--wide-cap", wide_cap, "the cap compared in --wide (default 64)");
  std::string models = "off,on,lying";
  app.add_option("--cache", models, "cache models of the raw scenario");
  RawParams raw;
  app.add_option("--commits", raw.commits, "commits in the raw scenario's trace (default 333)");
  app.add_option("--points", raw.points, "raw scenario crash points: every, or acks,flushes...");
  bool first_violation = false;
  app.add_flag("--stop-at-violation", first_violation,
               "raw scenario: stop each model at its first violation (the default of check/run; "
               "the bench checks every state unless given)");
  app.add_option("--checker-work-mib", raw.checker_work_mib,
                 "raw scenario: a costly checker that also hashes this many MiB per image");
  std::string trace;
  std::string trace_checker;
  std::string trace_fs = "ext4";
  app.add_option("--trace", trace,
                 "also (alone with --skip-raw --skip-ext4): check this recorded trace (a "
                 "trace.log kept by `powercut run/matrix --keep`) under --cache with --checker");
  app.add_option("--checker", trace_checker, "--trace: the checker command");
  app.add_option("--trace-fs", trace_fs, "--trace: its file system (default ext4)");
  CLI11_PARSE(app, argc, argv);
  if (!trace.empty() && trace_checker.empty()) {
    return std::fprintf(stderr, "--trace needs --checker\n"), 2;
  }

  auto scratch =
      powercut::ScratchDir::Create("enginebench", std::filesystem::temp_directory_path());
  if (!scratch.ok()) return std::fprintf(stderr, "%s\n", scratch.status().ToString().c_str()), 1;
  const std::string tmpl = scratch->path();
  int rc = 0;
  raw.exhaustive = !first_violation;
  if (!skip_raw) rc |= RawScenario(tmpl, workers, models, raw);
  if (!skip_ext4) {
    for (size_t start = 0; start <= file_systems.size();) {
      size_t comma = file_systems.find(',', start);
      std::string fs = file_systems.substr(
          start, comma == std::string::npos ? std::string::npos : comma - start);
      auto kind = powercut::harness::ParseFsKind(fs);
      if (!kind.ok() || powercut::harness::FileSystemOf(*kind).raw()) {
        std::fprintf(stderr, "--fs %s: expected ext4, xfs or btrfs\n", fs.c_str());
        return 2;
      }
      rc |= FsScenario(tmpl, workers, *kind);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  if (wide > 0) rc |= WideScenario(tmpl, workers, wide, wide_cap);
  if (!trace.empty()) {
    rc |= TraceScenario(tmpl, workers, trace, trace_checker, trace_fs, models, !first_violation);
  }
  std::printf("peak memory of the engine: %ld KiB (getrusage maxrss)\n", PeakRssKiB(RUSAGE_SELF));
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  return powercut::RunMainGuarded("enginebench", 1, [&] { return Main(argc, argv); });
}
