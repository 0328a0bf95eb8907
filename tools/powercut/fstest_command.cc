// powercut fstest list | run | repro: testing a file system (docs/fstest.md).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "absl/strings/str_split.h"
#include "base/image_io.h"
#include "base/install_layout.h"
#include "base/process.h"
#include "base/scratch_dir.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/check/report.h"
#include "harness/fstest/generator.h"
#include "harness/fstest/workload.h"
#include "harness/product/fstest/fstest_report.h"
#include "harness/product/fstest/fstest_repro.h"
#include "harness/product/fstest/fstest_run.h"
#include "harness/product/run/run.h"
#include "harness/trace/manifest.h"
#include "harness/vm/machine/disk_image.h"
#include "harness/vm/machine/kernel.h"
#include "tools/powercut/commands.h"
#include "tools/powercut/product_commands.h"

namespace powercut::cli {
namespace {

// Which workloads: the generated space (or a sample of it), or the user's files.
struct WorkloadArgs {
  int seq = 1;
  std::string persist = "fsync,sync";
  uint64_t sample = 0;
  uint64_t seed = 1;
  std::string workloads;
};

void AddWorkloadOptions(CLI::App* c, WorkloadArgs* a) {
  c->add_option("--seq", a->seq,
                "core operations per generated workload: 1 (ACE's seq-1 space, 328 workloads), "
                "2 (large: sample it) or 3")
      ->capture_default_str();
  c->add_option("--persist", a->persist,
                "the persistence points the generator places after each core operation: fsync, "
                "fdatasync, sync; odsync, osync, rwf_dsync make a core write or dwrite "
                "synchronous instead (O_DSYNC, O_SYNC, RWF_DSYNC) (comma-separated)")
      ->capture_default_str();
  c->add_option("--sample", a->sample, "a seeded sample of N workloads of the space (0: all)");
  c->add_option("--seed", a->seed, "the sample's seed")->capture_default_str();
  c->add_option("--workloads", a->workloads,
                "your own workloads instead: a file, or a folder of *.fst files, in the language "
                "of docs/fstest.md");
}

absl::StatusOr<product::FsTestOptions> WorkloadOptions(const WorkloadArgs& a) {
  product::FsTestOptions o;
  o.generator.seq = a.seq;
  RETURN_IF_ERROR(fstest::ParsePersistence(a.persist, &o.generator));
  o.sample = a.sample;
  o.sample_seed = a.seed;
  o.workloads = a.workloads;
  if (!a.workloads.empty()) {
    // The language's files, resolved now: the guest sees the host's paths, the report names it.
    std::error_code ec;
    o.workloads = std::filesystem::absolute(a.workloads, ec).string();
  }
  return o;
}

// powercut-fstest-exec: $POWERCUT_FSTEST_EXEC, else where the layout of powercut puts it
// (base/install_layout.h: libexec/powercut/ installed, harness/fstest/ in the build tree).
absl::StatusOr<std::string> FindExec(const std::string& self) {
  return FindHelperProgram(self, "powercut-fstest-exec", "POWERCUT_FSTEST_EXEC",
                           "powercut-fstest-exec");
}

// An option mkfs refuses is refused here, before any guest boots: mkfs runs once on a scratch
// image of each file system (profile) with its options, the profile's and then the user's.
absl::Status CheckMkfsOptions(const std::vector<const product::FsTestProfile*>& profiles,
                              const std::string& options, harness::SectorFormat sector) {
  std::optional<ScratchDir> dir;
  for (const product::FsTestProfile* p : profiles) {
    const std::string all = product::ProfileMkfsOptions(*p, options);
    if (all.empty()) continue;
    if (!dir) {
      ASSIGN_OR_RETURN(ScratchDir made, ScratchDir::Create("powercut-mkfs-check", "/var/tmp"));
      dir.emplace(std::move(made));
    }
    const std::string name = product::ProfileName(*p);
    const std::string image = dir->File(std::string(harness::FsName(p->fs)) + ".img");
    RETURN_IF_ERROR(vm::CreateSparseImage(image, harness::FileSystemOf(p->fs).default_image_bytes));
    absl::StatusOr<std::string> made =
        vm::MakeFileSystem(p->fs, harness::GeometryOf(sector), image, all);
    if (!made.ok()) {
      const std::string profile_part =
          all == options ? "" : fmt::format(" (after the profile's {})", p->mkfs_options);
      return absl::InvalidArgumentError(
          options.empty() ? fmt::format("profile {}: mkfs refuses its options {}: {}", name, all,
                                        StatusMessage(made.status()))
                          : fmt::format("--mkfs-options {}: mkfs of {} refuses them{}: {}", options,
                                        name, profile_part, StatusMessage(made.status())));
    }
  }
  return absl::OkStatus();
}

// `--kernel LIST`: each path opened (a .deb unpacked into the cache once) for its release, the
// label of its cells, before any guest boots.
absl::StatusOr<std::vector<product::FsTestKernel>> ParseKernels(const std::string& text) {
  return product::ParseKernelList(text, [](const std::string& path) -> absl::StatusOr<std::string> {
    ASSIGN_OR_RETURN(vm::GuestKernel kernel, vm::OpenUserKernel(path));
    return kernel.release;
  });
}

void AddList(CLI::App* fstest, int* exit_code) {
  struct Args {
    WorkloadArgs w;
    bool text = false, json = false;
    std::string write;
  };
  auto a = std::make_shared<Args>();
  CLI::App* c = fstest->add_subcommand(
      "list", "print the workloads (id and operations, one a line) and their count");
  AddWorkloadOptions(c, &a->w);
  c->add_flag("--text", a->text, "print each workload's whole text (with its description)");
  c->add_flag("--json", a->json, "print a JSON array of {id, description, text, shape}");
  c->add_option("--write", a->write, "also write each workload to DIR/<id>.fst");
  c->callback([=] {
    auto o = WorkloadOptions(a->w);
    if (!o.ok()) {
      *exit_code = CouldNotRun(std::string(o.status().message()));
      return;
    }
    auto workloads = product::PlanFsTest(*o);
    if (!workloads.ok()) {
      *exit_code = CouldNotRun(std::string(workloads.status().message()));
      return;
    }
    nlohmann::json json = nlohmann::json::array();
    if (!a->json) {
      std::string what = a->w.workloads;
      if (what.empty()) {
        what = fmt::format("seq-{}", a->w.seq);
        auto space = fstest::WorkloadSpace::Make(o->generator);
        if (space.ok() && a->w.sample > 0) {
          what +=
              fmt::format(" (a sample, seed {}, of its {} workloads)", a->w.seed, space->size());
        }
      }
      std::printf("%s: %zu workloads\n", what.c_str(), workloads->size());
    }
    for (const fstest::Workload& w : *workloads) {
      const std::string id = fstest::WorkloadId(w);
      if (!a->write.empty()) {
        std::filesystem::create_directories(a->write);
        if (absl::Status s = PublishFile(a->write + "/" + id + ".fst", fstest::WorkloadText(w));
            !s.ok()) {
          *exit_code = CouldNotRun(std::string(s.message()));
          return;
        }
      }
      if (a->json) {
        json.push_back({{"id", id},
                        {"description", w.description},
                        {"text", fstest::WorkloadText(w, false)},
                        {"shape", fstest::WorkloadShape(w)}});
      } else if (a->text) {
        std::printf("== %s\n%s", id.c_str(), fstest::WorkloadText(w).c_str());
      } else {
        std::string line = fstest::WorkloadText(w, false);
        for (size_t at; (at = line.find('\n')) != std::string::npos && at + 1 < line.size();) {
          line.replace(at, 1, "; ");
        }
        if (!line.empty() && line.back() == '\n') line.pop_back();
        std::printf("%s  %s\n", id.c_str(), line.c_str());
      }
    }
    if (a->json) std::printf("%s\n", json.dump(2).c_str());
  });
}

struct RunArgs {
  WorkloadArgs w;
  product::MatrixOptions m;
  std::string fs;        // "": the profiles' file systems, else the default file system
  std::string profiles;  // "": each file system's default profile
  std::string kernels;   // "": Debian's
  std::string sector = "512e", shard = "1/1", json, junit, html, recordings,
              recordings_cap = "1GiB", budget, disk_size;
  // The replay's flags (product::ParseReplayChoice); the points are the persistence points.
  std::string cache = "off,on", window = "16", states = product::kDefaultStates;
  bool quiet = false, expect_clean = false, list = false;
  int jobs = 1;
};

void AddRunOptions(CLI::App* c, RunArgs* a) {
  AddWorkloadOptions(c, &a->w);
  c->add_option(
      "--fs", a->fs,
      fmt::format("{} (comma-separated: each workload on each; default {}, or with "
                  "--profiles the file systems they name)",
                  harness::FsNames(/*with_raw=*/false), harness::FsName(harness::DefaultFs())));
  c->add_option("--profiles", a->profiles,
                "named mkfs and mount profiles, one more axis (comma-separated FS:NAME, FS, "
                "FS:all or all; `powercut fstest profiles` lists them; with --fs, only its file "
                "systems')");
  c->add_option("--cache", a->cache,
                "the cache models every recording is replayed under: off, on, lying "
                "(comma-separated) or all")
      ->capture_default_str();
  c->add_option("--window", a->window, "lying window")->capture_default_str();
  c->add_option("--states", a->states, "per persistence point: exhaustive or about N states")
      ->capture_default_str();
  c->add_option("--mkfs-options", a->m.mkfs_options,
                "added to every mkfs (e.g. \"-O fast_commit\" for ext4, \"-m single\" for btrfs); "
                "refused before any guest boots when mkfs refuses them");
  c->add_option("--mount-options", a->m.mount_options,
                "every mount, recording and judging (e.g. data=journal, barrier=0, nobarrier)");
  c->add_option("--sector", a->sector, "the recorded disk's sectors: 512n, 512e or 4kn")
      ->capture_default_str();
  c->add_option("--shard", a->shard, "K/N: run only this shard's cells")->capture_default_str();
  c->add_flag("--expect-clean", a->expect_clean,
              "a violation under cache off or on makes the run exit 1 (default: they are reported, "
              "exit 0)");
  c->add_flag("--exhaustive", a->m.exhaustive,
              "check every crash state (default: a model stops at its first violating state)");
  c->add_option("--budget", a->budget, "bound each workload's checking time (30s, 2m)");
  c->add_option("--timeout", a->m.timeout_s, "seconds per recording")->capture_default_str();
  c->add_option("--keep", a->m.keep_dir, "keep each workload's recording under this folder");
  AddRecordingsOptions(c, &a->recordings, &a->recordings_cap);
  AddGuestSizeOptions(c, &a->m.guest, &a->disk_size);
  c->add_option("--kernel", a->kernels,
                "the guest kernels, comma-separated, each workload on each: default (Debian's "
                "linux-image-amd64), a linux-image .deb or a kernel folder (docs/vm.md), or "
                "LABEL=PATH; several make one report side by side");
  c->add_option("--json", a->json, "write the JSON report (powercut-matrix/1 + fstest_summary)");
  c->add_option("--junit", a->junit, "write a JUnit XML report here");
  c->add_option("--html", a->html, "write the self-contained HTML report here");
  c->add_option("--jobs", a->jobs, "warm guests recording at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 16));
  c->add_option("--workers", a->m.workers, "check workers (guests) per workload")
      ->capture_default_str();
  c->add_flag("--list", a->list, "print the shard's cells and exit");
  c->add_flag("--quiet", a->quiet, "no progress on stderr");
}

absl::StatusOr<product::FsTestOptions> ParseRunArgs(const RunArgs& a) {
  ASSIGN_OR_RETURN(product::FsTestOptions o, WorkloadOptions(a.w));
  o.expect_clean = a.expect_clean;
  o.matrix = a.m;
  product::MatrixOptions& m = o.matrix;
  std::vector<harness::FsKind> fs;
  if (!a.fs.empty()) {
    ASSIGN_OR_RETURN(fs, harness::ParseFsKinds(a.fs));
  }
  if (!a.profiles.empty()) {
    ASSIGN_OR_RETURN(o.profiles, product::ParseProfiles(a.profiles, fs));
    m.fs.clear();
    for (const product::FsTestProfile* p : o.profiles) {
      if (std::find(m.fs.begin(), m.fs.end(), p->fs) == m.fs.end()) m.fs.push_back(p->fs);
    }
  } else {
    m.fs = fs.empty() ? std::vector<harness::FsKind>{harness::DefaultFs()} : fs;
  }
  for (const harness::FsKind kind : m.fs) {
    if (harness::FileSystemOf(kind).raw()) {
      return absl::InvalidArgumentError("--fs raw: a file-system test needs a file system");
    }
  }
  ASSIGN_OR_RETURN(m.sector, harness::ParseSectorFormat(a.sector));
  if (!a.budget.empty()) {
    ASSIGN_OR_RETURN(m.budget_seconds, harness::ParseBudget(a.budget));
  }
  RETURN_IF_ERROR(ParseGuestDisk(a.disk_size, &m.disk_bytes));
  ASSIGN_OR_RETURN(m.replay, product::ParseReplayChoice(a.cache, a.window, "acks", a.states));
  m.powercut = SelfPath("powercut");
  m.progress = !a.quiet;
  m.cells_in_flight = a.jobs + 1;
  ASSIGN_OR_RETURN(m.recordings, product::RecordingStoreFor(a.recordings, a.recordings_cap,
                                                            {a.html, a.json, a.junit}));
  ASSIGN_OR_RETURN(m.shard, product::ParseShard(a.shard));
  ASSIGN_OR_RETURN(o.exec_binary, FindExec(m.powercut));
  ASSIGN_OR_RETURN(o.kernels, ParseKernels(a.kernels));
  m.kernel = o.kernels.size() == 1 ? o.kernels.front().path : "";
  return o;
}

// The profiles a run formats: --profiles, else each file system's default.
std::vector<const product::FsTestProfile*> RunProfiles(const product::FsTestOptions& o) {
  if (!o.profiles.empty()) return o.profiles;
  std::vector<const product::FsTestProfile*> out;
  for (const harness::FsKind fs : o.matrix.fs) out.push_back(&product::DefaultFsTestProfile(fs));
  return out;
}

// Each kernel's cell runner: warm guests booted with it, the states judged in guests by it
// (never a host loop mount: any kernel, no root).
product::KernelCellRunner GuestRunners(const product::FsTestOptions& o, int jobs) {
  return [agent = product::AgentHint(o.matrix.powercut), fs = o.matrix.fs,
          jobs](const product::FsTestKernel& kernel) {
    return product::VmCellRunner(agent, fs, jobs, kernel.path, product::CheckIn::kGuest);
  };
}

int Run(const RunArgs& a) {
  auto parsed = ParseRunArgs(a);
  if (!parsed.ok()) return CouldNotRun(std::string(parsed.status().message()));
  const product::FsTestOptions& o = *parsed;
  auto workloads = product::PlanFsTest(o);
  if (!workloads.ok()) return CouldNotRun(std::string(workloads.status().message()));
  auto matrix = product::FsTestMatrix(o, *workloads);
  if (!matrix.ok()) return CouldNotRun(std::string(matrix.status().message()));
  auto plan = product::PlanMatrix(*matrix);
  if (!plan.ok()) return CouldNotRun(std::string(plan.status().message()));
  if (a.list) {
    for (const product::MatrixCell& c : *plan) {
      if (matrix->shard.Contains(c.Name())) std::printf("%s\n", c.Name().c_str());
    }
    return 0;
  }
  if (absl::Status s = CheckMkfsOptions(RunProfiles(o), o.matrix.mkfs_options, o.matrix.sector);
      !s.ok()) {
    return CouldNotRun(std::string(s.message()));
  }
  auto report = product::RunFsTest(o, GuestRunners(o, a.jobs));
  if (!report.ok()) return CouldNotRun(std::string(report.status().message()));
  return PrintAndWriteReports(*report, product::FsTestTable(*report), product::ReportJson(*report),
                              {.json = a.json,
                               .junit = a.junit,
                               .html = a.html,
                               .html_report =
                                   [](const product::MatrixReport& r) {
                                     return product::ReportHtml(r, "powercut fstest");
                                   }},
                              a.quiet);
}

// `fstest repro --cache --window`: exactly one model.
absl::StatusOr<harness::CacheModel> ReproModel(const std::string& cache,
                                               const std::string& window) {
  ASSIGN_OR_RETURN(std::vector<harness::CacheModel> models,
                   harness::ParseCacheModels(cache, window));
  if (models.size() != 1) {
    return absl::InvalidArgumentError(fmt::format(
        "--cache {}: repro shrinks under one cache model ({})", cache, harness::kCacheModeChoices));
  }
  return models.front();
}

void AddRepro(CLI::App* fstest, int* exit_code) {
  struct Args {
    WorkloadArgs w;
    product::FsTestReproOptions o;
    std::string cache = "on", window = "16";  // parsed into o.model (ReproModel)
    bool no_shrink = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* c = fstest->add_subcommand(
      "repro",
      "shrink a violating workload to the fewest operations and its crash state to the fewest "
      "dropped writes that still violate (exit 1 when it violates, 0 when it does not)");
  c->add_option("workload", a->o.workload, "the workload's id (fst-...) or its file")->required();
  AddWorkloadOptions(c, &a->w);
  AddFsOption(c, &a->o.fs, harness::FsNames(/*with_raw=*/false));
  c->add_option("--cache", a->cache, "the one cache model: off, on or lying")
      ->capture_default_str();
  c->add_option("--window", a->window, "lying window")->capture_default_str();
  c->add_option("--mkfs-options", a->o.mkfs_options, "as for fstest run");
  c->add_option("--mount-options", a->o.mount_options, "as for fstest run");
  AddKernelOption(c, &a->o.kernel);
  c->add_option("--bundle", a->o.bundle, "write the reproducer into this folder")->required();
  c->add_flag("--no-shrink", a->no_shrink, "record, judge and bundle it as it is");
  c->callback([=] {
    product::FsTestReproOptions o = a->o;
    auto model = ReproModel(a->cache, a->window);
    if (!model.ok()) {
      *exit_code = CouldNotRun(std::string(model.status().message()));
      return;
    }
    o.model = *model;
    auto source = WorkloadOptions(a->w);
    if (!source.ok()) {
      *exit_code = CouldNotRun(std::string(source.status().message()));
      return;
    }
    o.source = *source;
    o.shrink = !a->no_shrink;
    o.powercut = SelfPath("powercut");
    o.agent_hint = product::AgentHint(o.powercut);
    auto exec = FindExec(o.powercut);
    if (!exec.ok()) {
      *exit_code = CouldNotRun(std::string(exec.status().message()));
      return;
    }
    o.exec_binary = *exec;
    if (absl::Status s = CheckMkfsOptions({&product::DefaultFsTestProfile(o.fs)}, o.mkfs_options,
                                          harness::kDefaultSectorFormat);
        !s.ok()) {
      *exit_code = CouldNotRun(std::string(s.message()));
      return;
    }
    auto r = product::ReproFsTest(o);
    if (!r.ok()) {
      *exit_code = CouldNotRun(std::string(r.status().message()));
      return;
    }
    if (!r->violates) {
      std::printf("%s: %s\n", fstest::WorkloadId(r->original).c_str(), r->note.c_str());
      *exit_code = 0;
      return;
    }
    std::printf("%s violates under cache %s: %s\n", fstest::WorkloadId(r->original).c_str(),
                a->cache.c_str(), r->verdict.c_str());
    std::printf("minimal workload (%zu of %zu operations, %zu candidates recorded), class %s:\n%s",
                r->minimal.ops.size(), r->original.ops.size(), r->tries.size(),
                r->failure_class.c_str(), fstest::WorkloadText(r->minimal, false).c_str());
    std::printf("minimal state: %s (%zu dropped write(s))\n  %s\nbundle: %s (README.md)\n",
                r->state.minimal_state_id.c_str(), r->state.minimal_dropped.size(),
                r->state.minimal_verdict.c_str(), o.bundle.c_str());
    *exit_code = 1;
  });
}

// `fstest report`: the bundle's minimal workload run on every kernel and file system asked for,
// then REPORT.md, repro.c and repro.sh (harness/product/fstest/fstest_report.h).
struct ReportArgs {
  std::string bundle, out, fs, profiles, cache = "off,on", kernels, mkfs_options, mount_options;
  int timeout_s = 600;
  bool quiet = false;
};

int Report(const ReportArgs& a) {
  if (!std::filesystem::exists(a.bundle + "/fstest-repro.json")) {
    return CouldNotRun(fmt::format(
        "{}: not a `powercut fstest repro --bundle` folder (no fstest-repro.json): run `powercut "
        "fstest repro ID --bundle DIR` first",
        a.bundle));
  }
  std::string fs = a.fs;
  if (fs.empty() && a.profiles.empty()) {
    // The file system the finding was recorded on, from its recording's manifest.
    auto manifest =
        harness::ReadManifest(harness::ManifestPathFor(a.bundle + "/recording/trace.log"));
    if (!manifest.ok()) return CouldNotRun(std::string(manifest.status().message()));
    fs = manifest->fs;
  }
  // One run of the minimal workload: every kernel, file system and profile asked for.
  RunArgs run;
  run.w.workloads = std::filesystem::absolute(a.bundle + "/workload.fst").string();
  run.fs = fs;
  run.profiles = a.profiles;
  run.kernels = a.kernels;
  run.cache = a.cache;
  run.quiet = a.quiet;
  run.m.mkfs_options = a.mkfs_options;
  run.m.mount_options = a.mount_options;
  run.m.timeout_s = a.timeout_s;
  auto parsed = ParseRunArgs(run);
  if (!parsed.ok()) return CouldNotRun(std::string(parsed.status().message()));
  if (absl::Status s = CheckMkfsOptions(RunProfiles(*parsed), parsed->matrix.mkfs_options,
                                        parsed->matrix.sector);
      !s.ok()) {
    return CouldNotRun(std::string(s.message()));
  }
  if (!a.quiet) {
    std::fprintf(stderr, "powercut fstest report: %s on %zu kernel(s) and %zu file system(s)\n",
                 run.w.workloads.c_str(), parsed->kernels.size(), RunProfiles(*parsed).size());
  }
  auto report = product::RunFsTest(*parsed, GuestRunners(*parsed, 1));
  if (!report.ok()) return CouldNotRun(std::string(report.status().message()));
  const std::vector<product::FsTestReportRun> runs = product::ReportRuns(*report);
  auto made = product::MakeFsTestReport(a.bundle, runs);
  if (!made.ok()) return CouldNotRun(std::string(made.status().message()));
  auto workload = fstest::LoadWorkloads(a.bundle + "/workload.fst");
  if (!workload.ok()) return CouldNotRun(std::string(workload.status().message()));
  const std::string out = a.out.empty() ? a.bundle + "/report" : a.out;
  if (absl::Status s = product::WriteFsTestReport(*made, workload->front(), out); !s.ok()) {
    return CouldNotRun(std::string(s.message()));
  }
  int failing = 0;
  for (const product::FsTestReportRun& r : runs) failing += r.violates;
  std::printf("%s: %zu run(s), %d failing; REPORT.md, repro.c, repro.sh, workload.fst\n",
              out.c_str(), runs.size(), failing);
  return 0;
}

void AddReport(CLI::App* fstest, int* exit_code) {
  auto a = std::make_shared<ReportArgs>();
  CLI::App* c = fstest->add_subcommand(
      "report",
      "write a finding as a file-system mailing list expects it: the shrunk workload, a "
      "standalone C and dm-log-writes reproducer, where it fails and passes, the trace around the "
      "violated acknowledgement, expected vs found (from a `fstest repro --bundle` folder)");
  c->add_option("bundle", a->bundle, "the `powercut fstest repro --bundle` folder")->required();
  c->add_option("--out", a->out, "where the report goes (default BUNDLE/report)");
  c->add_option("--fs", a->fs,
                "the file systems to run the minimal workload on (comma-separated; default the "
                "one it was found on)");
  c->add_option("--profiles", a->profiles,
                "and the profiles, as for fstest run (e.g. f2fs:all: the finding per profile)");
  c->add_option("--cache", a->cache, "the cache models each run is judged under")
      ->capture_default_str();
  c->add_option("--kernel", a->kernels,
                "the guest kernels, comma-separated, as `fstest run --kernel` takes them "
                "(default, a linux-image .deb or folder, LABEL=PATH; default: Debian's)");
  c->add_option("--mkfs-options", a->mkfs_options, "as for fstest run");
  c->add_option("--mount-options", a->mount_options, "as for fstest run");
  c->add_option("--timeout", a->timeout_s, "seconds per recording")->capture_default_str();
  c->add_flag("--quiet", a->quiet, "no progress on stderr");
  c->callback([=] { *exit_code = Report(*a); });
}

}  // namespace

void AddFsTestCommand(CLI::App& app, int* exit_code) {
  CLI::App* fstest = app.add_subcommand(
      "fstest",
      "test a file system: generated or written workloads, an oracle that knows what fsync, "
      "fdatasync and sync promised, judged in the guest (docs/fstest.md)");
  fstest->require_subcommand(1);
  AddList(fstest, exit_code);
  auto a = std::make_shared<RunArgs>();
  CLI::App* run = fstest->add_subcommand(
      "run",
      "record each workload once per file system, replay every crash state at its persistence "
      "points under each cache model and judge it in the guest (exit 0 ran, 1 a violation under "
      "off/on with --expect-clean, 2 could not run)");
  AddRunOptions(run, a.get());
  run->callback([=] { *exit_code = Run(*a); });
  AddRepro(fstest, exit_code);
  AddReport(fstest, exit_code);
  fstest
      ->add_subcommand("profiles",
                       "print the named mkfs and mount profiles of each file system (`fstest run "
                       "--profiles`) with their measured verdicts and known findings")
      ->callback([exit_code] {
        std::fputs(product::ProfilesTable().c_str(), stdout);
        *exit_code = 0;
      });
}

}  // namespace powercut::cli
