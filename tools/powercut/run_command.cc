// powercut run
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "absl/strings/str_replace.h"
#include "base/duration_flag.h"
#include "base/process.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/check/report.h"
#include "harness/cluster/cluster.h"
#include "harness/fs/file_system.h"
#include "harness/product/cell/cell_result.h"
#include "harness/product/faults/run_with_faults.h"
#include "harness/product/html/html_report.h"
#include "harness/product/matrix/builtin.h"
#include "harness/product/matrix/matrix.h"
#include "harness/product/run/progress.h"
#include "harness/product/run/recordings.h"
#include "harness/product/run/run.h"
#include "harness/vm/warm/vm_run.h"
#include "tools/powercut/commands.h"
#include "tools/powercut/fault_options.h"
#include "tools/powercut/product_commands.h"

namespace powercut::cli {

void AddGuestSizeOptions(CLI::App* command, product::GuestSize* guest, std::string* disk) {
  command->add_option("--guest-memory", guest->memory_mib, "guest memory in MiB (default 768)")
      ->check(CLI::Range(128, 65536));
  command->add_option("--guest-cpus", guest->cpus, "guest CPUs (default 1)")
      ->check(CLI::Range(1, 64));
  std::string defaults;
  for (const harness::FileSystem& fs : harness::AllFileSystems()) {
    if (fs.raw()) continue;
    defaults += fmt::format("{}{} {}MiB", defaults.empty() ? "" : ", ", fs.name,
                            fs.default_image_bytes >> 20);
  }
  command->add_option("--disk-size", *disk,
                      fmt::format("the disk under test, e.g. 1GiB (default: {}); run --disks N: "
                                  "one for every disk or one per disk (512MiB,1GiB)",
                                  defaults));
}

void AddKernelOption(CLI::App* command, std::string* path) {
  command->add_option("--kernel", *path,
                      "the guest kernel and its modules: a linux-image .deb, a folder with "
                      "boot/vmlinuz-<release> and lib/modules/<release>, or the lib/modules/"
                      "<release> folder of `make modules_install` (default: Debian's "
                      "linux-image-amd64; docs/vm.md)");
}

absl::Status ParseGuestDisk(const std::string& disk, uint64_t* bytes) {
  if (disk.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::vector<uint64_t> sizes, product::DiskSizes(disk, 1));
  *bytes = sizes.front();
  return absl::OkStatus();
}

namespace {

// `--sector` and `--disk-size` of `run`: one value for every disk or one per disk (--disks N).
absl::Status ParseDiskGeometry(const std::string& sector, const std::string& disk_size,
                               product::RunOptions* o) {
  ASSIGN_OR_RETURN(o->sectors, product::DiskSectors(sector, o->disks));
  if (!disk_size.empty()) {
    ASSIGN_OR_RETURN(o->disk_bytes, product::DiskSizes(disk_size, o->disks));
  }
  return absl::OkStatus();
}

}  // namespace

void AddRecordingsOptions(CLI::App* command, std::string* dir, std::string* cap) {
  command->add_option("--recordings", *dir,
                      "keep failing runs' recordings here for the rebuild commands (default: "
                      "<report folder>/recordings, or a new /var/tmp/powercut-recordings-* "
                      "folder)");
  command->add_option("--recordings-cap", *cap, "most bytes of kept recordings (0: keep none)")
      ->capture_default_str();
}

int CouldNotRun(const std::string& message) {
  std::fprintf(stderr, "powercut: %s\n", message.c_str());
  return 2;
}

namespace {

// The flags of `powercut run`, as parsed.
struct RunArgs {
  product::RunOptions o;
  std::string fs = harness::FsName(harness::DefaultFs());  // parsed into o.fs
  std::string cache = "all", window = "16", recorder = "nbd", points = product::kDefaultPoints,
              states = product::kDefaultStates, json, junit, html, trace, sector = "512e", expect,
              recordings, recordings_cap = "1GiB", budget, disk_size, kernel, check_in,
              cache_per_disk, cache_per_node;
  int timeout = 600;
  bool quiet = false, no_torn = false;
  FaultArgs faults;
};

void AddRunOptions(CLI::App* run, RunArgs* a) {
  run->add_option("--workload", a->o.workload,
                  "the workload command (runs in the guest; acks on $POWERCUT_ACK_FD); not "
                  "needed with --trace");
  run->add_option("--checker", a->o.checker,
                  "the checker command (runs on each crash image; prints `have <id>`)")
      ->required();
  run->add_option("--fs", a->fs,
                  fmt::format("{}; with --disks N one for every disk or one per disk (ext4,xfs)",
                              harness::FsNames()))
      ->capture_default_str();
  run->add_option("--disks", a->o.disks,
                  "record N disks on one clock (POWERCUT_DIR, POWERCUT_DIR_2 ...; docs/run.md)")
      ->capture_default_str();
  run->add_option("--cache-per-disk", a->cache_per_disk,
                  "each disk's own cache model on top of --cache, e.g. 1=on,2=lying");
  run->add_option("--nodes", a->o.cluster.nodes,
                  "test a cluster of N nodes (2 or more), a recorded disk and an address each, "
                  "cut together (docs/cluster.md)");
  run->add_option("--node", a->o.cluster.node_command,
                  "with --nodes: the server each node runs in the foreground (POWERCUT_NODE, "
                  "POWERCUT_NODE_DIR, POWERCUT_NODE_ADDR, POWERCUT_NODE_ADDRS, POWERCUT_NODES)");
  AddNodeCutOptions(run, "with --nodes", &a->o.node_cuts, &a->o.node_down_ms);
  run->add_option("--cache-per-node", a->cache_per_node,
                  "with --nodes: each node's disk's own cache model on top of --cache, e.g. "
                  "3=lying");
  run->add_option("--sector", a->sector,
                  "the recorded disk's sectors: 512n, 512e (512-byte logical, 4,096-byte "
                  "physical) or 4kn; with --disks N one for every disk or one per disk (512e,4kn)")
      ->capture_default_str();
  run->add_option("--cache", a->cache, "off,on,lying or all")->capture_default_str();
  run->add_option("--window", a->window, "lying window: entries (16) or bytes (64KiB)")
      ->capture_default_str();
  run->add_option("--recorder", a->recorder, "nbd | dm-log-writes")->capture_default_str();
  run->add_option("--points", a->points, "crash points: " + std::string(harness::kPointChoices))
      ->capture_default_str();
  run->add_option("--states", a->states, "per point: exhaustive or about N states")
      ->capture_default_str();
  run->add_option("--atomic", a->o.atomic_unit,
                  "atomic unit for torn writes: 512 or 4096 (default: the disk's physical "
                  "sector)");
  run->add_flag("--fs-failures-are-violations", a->o.fs_failures_are_violations,
                "count crash states the file system's own tools cannot bring back as "
                "violations (file-system work)");
  run->add_option("--seed", a->o.seed, "seed for every sample");
  run->add_flag("--ordered", a->o.ordered, "also require the commits present to be a prefix");
  run->add_flag("--no-torn", a->no_torn, "no torn-write variants");
  run->add_flag("--fsck", a->o.fsck,
                "run the file system's checker read-only on every state before mounting");
  run->add_option("--workers", a->o.workers, "parallel checks (default: one per core)");
  AddCheckInOption(run, &a->check_in);
  run->add_option("--timeout", a->timeout,
                  "seconds one recording may take in its guest (boot not counted)")
      ->capture_default_str();
  run->add_option("--checker-timeout", a->o.checker_timeout_s, "seconds per checker run");
  run->add_option("--max-acks", a->o.max_acks, "more acks than this is an ack flood");
  run->add_option("--keep", a->o.keep_dir, "keep the recording (trace, base image) here");
  run->add_option("--expect", a->expect,
                  "expected verdict per cache model, e.g. off=survives,on=survives,lying=loses "
                  "(survives, loses, may-lose); exit 0 when every model matches it, 1 otherwise");
  AddRecordingsOptions(run, &a->recordings, &a->recordings_cap);
  AddGuestSizeOptions(run, &a->o.guest, &a->disk_size);
  AddKernelOption(run, &a->kernel);
  run->add_option("--max-unchecked", a->o.max_could_not_check,
                  "stop (exit 2) after this many checker runs whose output is not the protocol")
      ->capture_default_str();
  run->add_option("--trace", a->trace,
                  "skip the VM: check this existing recording (with its manifest)");
  run->add_option("--name", a->o.name, "name in reports");
  run->add_option("--json", a->json, "write the JSON report here");
  run->add_option("--junit", a->junit, "write a JUnit XML report here");
  run->add_option("--html", a->html, "write the self-contained HTML report here");
  run->add_flag("--quiet", a->quiet, "no progress on stderr");
  AddFaultOptions(run, &a->faults);
  run->add_flag("--exhaustive", a->o.exhaustive,
                "check every state for full counts (default: a model stops at its first "
                "violating state, where its verdict is decided)");
  run->add_option("--budget", a->budget,
                  "bound the checking time (30s, 2m, 1h); a pass cut short is incomplete");
}

// The rows `--expect` names: each cache model replayed (or the failing disk's mode instead) and
// the live cuts. A set whose disks have different models has no name to expect by.
absl::StatusOr<std::vector<product::ModelKind>> CheckedModels(
    const product::RunOptions& o, const std::vector<harness::CacheModel>& models) {
  std::vector<product::ModelKind> checked;
  if (!o.flakey.mode) {
    for (const harness::CacheModel& m : models) {
      std::optional<product::ModelKind> kind = product::ModelKindOf(m);
      if (!kind) {
        return absl::InvalidArgumentError(fmt::format(
            "--expect: cache {} gives the disks different models; --expect names one model "
            "for every disk (off, on or lying)",
            m.Name()));
      }
      checked.push_back(*kind);
    }
  } else {
    checked.push_back(product::ModelKindOf(*o.flakey.mode));
  }
  if (o.live_cuts > 0) checked.push_back(product::ModelKind::kLive);
  if (o.node_cuts > 0) checked.push_back(product::ModelKind::kNodeCut);
  return checked;
}

// `--nodes N --node CMD`: a disk a node, so that the per-disk flags read one value per node;
// `--cache-per-node` needs --nodes, and --disks or --cache-per-disk beside --nodes are usage
// errors (a node's disk is named by its node).
absl::Status ClusterDisks(const RunArgs& a, product::RunOptions* o) {
  const product::RunOptions& given = a.o;
  if (given.cluster.nodes == 0) {
    if (!given.cluster.node_command.empty()) {
      return absl::InvalidArgumentError("--node CMD needs --nodes N (2 or more)");
    }
    if (!a.cache_per_node.empty()) {
      return absl::InvalidArgumentError(
          "--cache-per-node needs --nodes N (several disks without nodes: --cache-per-disk)");
    }
    return absl::OkStatus();
  }
  if (given.disks != 1) {
    return absl::InvalidArgumentError(fmt::format(
        "--nodes {} records one disk a node: drop --disks {} (--fs, --sector and --disk-size "
        "take one value for every node or one per node)",
        given.cluster.nodes, given.disks));
  }
  if (!a.cache_per_disk.empty()) {
    return absl::InvalidArgumentError(
        "--nodes N: name a node's cache model with --cache-per-node (e.g. 3=lying), not "
        "--cache-per-disk");
  }
  RETURN_IF_ERROR(cluster::ValidateNodeCount(given.cluster.nodes));
  o->disks = given.cluster.nodes;
  return absl::OkStatus();
}

// Every flag checked (all of them before the VM boots) and turned into the run's options; the
// cell's expectations filled when --expect is given. `recordings` must outlive the options.
absl::StatusOr<product::RunOptions> ParseRunArgs(const RunArgs& a, product::CellResult* cell,
                                                 product::RecordingStore* recordings) {
  product::RunOptions o = a.o;
  o.powercut = SelfPath("powercut");
  o.timeout = std::chrono::seconds(a.timeout);
  ASSIGN_OR_RETURN(o.fs, harness::ParseFsKinds(a.fs));
  const bool is_cluster = o.cluster.nodes > 0;
  RETURN_IF_ERROR(ClusterDisks(a, &o));
  auto replay = product::ParseReplayChoice(a.cache, a.window, a.points, a.states);
  auto recorder = product::ParseRecorder(a.recorder);
  auto store =
      product::RecordingStoreFor(a.recordings, a.recordings_cap, {a.html, a.json, a.junit});
  absl::StatusOr<double> budget = a.budget.empty() ? 0.0 : harness::ParseBudget(a.budget);
  const absl::StatusOr<product::CheckIn> check_in = product::ParseCheckIn(a.check_in);
  // ValidateRunOptions last: it reads what the fault flags set.
  for (const absl::Status& s :
       {replay.status(), recorder.status(), store.status(), budget.status(), check_in.status(),
        ParseDiskGeometry(a.sector, a.disk_size, &o),
        ApplyFaultArgs(a.faults, product::kFaultsFlakeyAfterAcks, &o.live_cuts, &o.flakey),
        product::ValidateRunOptions(o, check_in.ok() && *check_in == product::CheckIn::kGuest)}) {
    if (!s.ok()) return s;
  }
  o.budget_seconds = *budget;
  if (is_cluster) {
    ASSIGN_OR_RETURN(const std::string launcher, product::FindClusterLauncher(o.powercut));
    o.cluster.workload = o.workload;
    o.cluster.checker = o.checker;
    RETURN_IF_ERROR(product::MakeClusterRun(launcher, &o));
  }
  if (!a.cache_per_disk.empty()) {
    RETURN_IF_ERROR(harness::ApplyCachePerDisk(a.cache_per_disk, o.disks, &replay->models));
  }
  if (!a.cache_per_node.empty()) {
    // A node is a disk of the set: the same models, named by node (so is the message).
    if (absl::Status s = harness::ApplyCachePerDisk(a.cache_per_node, o.disks, &replay->models);
        !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrReplaceAll(s.message(), {{"--cache-per-disk", "--cache-per-node"},
                                            {"disks", "nodes"},
                                            {"disk", "node"},
                                            {"DISK", "NODE"}}));
    }
  }
  *cell = product::CellResult{.workload_command = o.workload, .checker_command = o.checker};
  cell->judged = !a.expect.empty();
  if (cell->judged) {
    ASSIGN_OR_RETURN(std::vector<product::ModelKind> checked, CheckedModels(o, replay->models));
    auto expect = product::ParseExpect(a.expect, checked);
    if (!expect.ok()) return expect.status();
    cell->expect = *expect;
  }
  *recordings = std::move(*store);
  o.recordings = recordings;
  o.models = replay->models;
  o.points = replay->points;
  o.states = replay->states.Options();
  o.states.torn = !a.no_torn;
  o.recording = *recorder;
  if (o.name.empty()) o.name = "run";
  return o;
}

// Records the workload in the VM and checks it, or checks the recording --trace names.
absl::StatusOr<product::RunOutcome> RecordAndCheck(const RunArgs& a, product::RunOptions o) {
  const bool progress = !a.quiet && ::isatty(2);
  ASSIGN_OR_RETURN(product::CheckIn check_in, product::ParseCheckIn(a.check_in));
  // A raw disk needs no mount: its states are judged here. A set (a cluster's nodes included) is
  // judged in guests as one disk is, every disk through its own boot path there.
  const bool judged_in_guests = o.AnyFileSystem();
  std::unique_ptr<vm::GuestCheckPool> check_pool;
  if (!a.trace.empty()) {
    if (o.live_cuts > 0 || o.node_cuts > 0 || o.flakey.mode) {
      return absl::InvalidArgumentError(
          "--trace checks an existing recording: --live-cuts and --flakey need the VM (drop "
          "--trace)");
    }
    if (judged_in_guests) {
      ASSIGN_OR_RETURN(check_pool,
                       product::CheckPoolFor(check_in, product::AgentHint(o.powercut), a.kernel));
    }
    o.check_pool = check_pool.get();
    return product::CheckRecording(a.trace, o);
  }
  if (progress) std::fprintf(stderr, "powercut run: preparing the VM...\n");
  // One environment for the guest that records and those that judge (a second PrepareVm would
  // resolve the kernel and build the initramfs again).
  auto env = vm::PrepareVm(product::AgentHint(o.powercut), a.kernel);
  if (!env.ok()) {
    return absl::Status(env.status().code(), fmt::format("cannot prepare the VM: {}",
                                                         std::string(env.status().message())));
  }
  if (judged_in_guests) check_pool = product::CheckPoolFor(check_in, *env);
  o.check_pool = check_pool.get();
  if (progress) {
    std::fprintf(stderr, "powercut run: recording the workload in the VM (%s)...\n",
                 vm::AccelName(env->accel));
  }
  product::RunOutcome outcome = product::RunWithFaults(*env, o);
  if (check_pool != nullptr) {
    outcome.check_guests_booted = check_pool->boots();
    outcome.check_guests_adopted = check_pool->adopted();
  }
  return outcome;
}

// The JSON report: the engine's report (or an empty one) with the run's own section.
// "512e", or per disk "512e,4kn" when the disks differ (`--sector`).
std::string SectorText(const product::RunOptions& o) {
  std::string text = harness::SectorFormatName(o.SectorOf(0));
  bool differ = false;
  for (harness::SectorFormat f : o.sectors) differ = differ || f != o.SectorOf(0);
  if (!differ) return text;
  text.clear();
  for (harness::SectorFormat f : o.sectors) {
    text += (text.empty() ? "" : ",") + std::string(harness::SectorFormatName(f));
  }
  return text;
}

nlohmann::json RunJson(const product::RunOutcome& outcome, const product::RunOptions& o,
                       const product::CellResult& cell, const product::RecordingStore& recordings) {
  nlohmann::json j;
  if (outcome.report) {
    j = harness::ReportToJson(*outcome.report);
  } else {
    j = {{"schema", "powercut-report/1"}, {"results", nlohmann::json::array()}};
  }
  const std::string verdict(cell.judged && outcome.ran ? product::CellVerdictName(cell.Verdict())
                                                       : "");
  j["run"] = {
      {"workload", o.workload},
      {"checker", o.checker},
      {"fs", harness::FsListName(o.fs)},
      {"sector", SectorText(o)},
      {"guest", product::GuestSizeToJson(o.guest, o.DiskBytesOf(0))},
      {"status", !outcome.ran                                          ? "error"
                 : outcome.exit_code() == 1                            ? "fail"
                 : outcome.could_not_check() > 0                       ? "incomplete"
                 : outcome.live_cuts && outcome.live_cuts->TesterBug() ? "error"
                 : outcome.node_cuts && outcome.node_cuts->TesterBug() ? "error"
                                                                       : "pass"},
      {"error_kind", product::RunErrorName(outcome.error_kind)},
      {"error", outcome.error},
      {"workload_exit", outcome.workload_exit},
      {"acks", outcome.acks},
      {"invalid_ack_lines", outcome.invalid_ack_lines},
      {"record_seconds", outcome.record_seconds},
      {"kernel", outcome.kernel},
      {"check_seconds", outcome.check_seconds},
      {"check_phases", product::PhasesToJson(outcome.check_phases)},
      {"check_guests",
       {{"booted", outcome.check_guests_booted}, {"adopted", outcome.check_guests_adopted}}},
      {"recording", outcome.recording_dir},
      {"recording_bytes", outcome.recording_bytes},
      {"recordings", recordings.ToJson()},
      {"could_not_check", outcome.could_not_check()},
      {"expect", cell.judged ? cell.expect.ToJson() : nlohmann::json(nullptr)},
      {"verdict", verdict},
      {"unexpected", cell.Unexpected()},
      {"notes", outcome.notes}};
  if (o.cluster.nodes > 0) {
    // The user's own commands; `workload` and `checker` above are the launcher's wrapped ones.
    j["run"]["cluster"] = {{"nodes", o.cluster.nodes},
                           {"node", o.cluster.node_command},
                           {"addresses", cluster::NodeAddresses(o.cluster.nodes)},
                           {"workload", o.cluster.workload},
                           {"checker", o.cluster.checker},
                           {"checker_timeout", o.cluster.checker_timeout_s}};
  }
  if (outcome.live_cuts) j["run"]["live_cuts"] = product::LiveCutsToJson(*outcome.live_cuts);
  if (outcome.node_cuts) j["run"]["node_cuts"] = product::NodeCutsToJson(*outcome.node_cuts);
  if (outcome.flakey) j["run"]["flakey"] = product::FlakeyToJson(*outcome.flakey);
  return j;
}

// The JUnit report; a run that could not run is one error.
std::string RunJunit(const product::RunOutcome& outcome, const product::RunOptions& o,
                     const product::CellResult& cell) {
  if (outcome.ran && (outcome.live_cuts || outcome.node_cuts || outcome.flakey)) {
    // One test case per cache model, live cuts and failing disk included: the matrix's form.
    product::MatrixReport m;
    m.shard = o.name;
    m.seconds = outcome.record_seconds + outcome.check_seconds;
    m.cells.push_back(cell);
    return product::MatrixJunit(m);
  }
  if (outcome.report) return harness::ReportToJunit(*outcome.report);
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites><testsuite "
      "name=\"powercut run\" tests=\"1\" failures=\"0\" errors=\"1\">"
      "<testcase classname=\"powercut.run\" name=\"{}\"><error type=\"{}\"/>"
      "</testcase></testsuite></testsuites>\n",
      o.name, product::RunErrorName(outcome.error_kind));
}

// Writes the reports the flags ask for; returns the exit code (2 when one cannot be written).
int WriteRunReports(const RunArgs& a, const product::RunOutcome& outcome,
                    const product::RunOptions& o, const product::CellResult& cell,
                    const product::RecordingStore& recordings, int exit_code) {
  auto write = [&](const std::string& path, const std::string& text) {
    if (path.empty()) return;
    if (auto s = harness::WriteTextFile(path, text); !s.ok()) {
      exit_code = CouldNotRun(std::string(s.message()));
    }
  };
  write(a.json, RunJson(outcome, o, cell, recordings).dump(2) + "\n");
  if (!a.junit.empty()) write(a.junit, RunJunit(outcome, o, cell));
  if (!a.html.empty()) {
    product::MatrixReport m;
    m.plan_cells = 1;
    m.seconds = outcome.record_seconds + outcome.check_seconds;
    m.recordings = recordings;
    m.cells.push_back(cell);
    write(a.html, product::HtmlReport(m, "powercut run: " + o.name));
  }
  return exit_code;
}

// `powercut run` once its flags are parsed; returns the exit code.
int Run(const RunArgs& a) {
  product::CellResult cell;
  product::RecordingStore recordings;
  auto parsed = ParseRunArgs(a, &cell, &recordings);
  if (!parsed.ok()) return CouldNotRun(std::string(parsed.status().message()));
  product::RunOptions o = *std::move(parsed);
  product::Progress states_progress("powercut run: checking", 0, !a.quiet);
  if (states_progress.enabled()) {  // the engine counts the states up front only for this
    o.on_state_checked = [&states_progress](uint64_t done, uint64_t total) {
      states_progress.UpdateStates(done, total);
    };
  }
  auto ran = RecordAndCheck(a, o);
  if (!ran.ok()) return CouldNotRun(std::string(ran.status().message()));
  const product::RunOutcome& outcome = *ran;
  std::printf("%s", product::RunSummary(outcome).c_str());
  cell.name = o.name + "/" + harness::FsListName(o.fs);
  cell.workload = o.name;
  cell.setting = "-";
  cell.fs = harness::FsListName(o.fs);
  product::FillCell(outcome, &cell);
  if (cell.judged && outcome.ran) {
    std::printf("expect %s: %s\n", a.expect.c_str(),
                cell.Verdict() == product::CellVerdict::kOk
                    ? "every cache model as expected"
                    : ("UNEXPECTED: " + cell.Unexpected()).c_str());
  }
  std::fflush(stdout);
  return WriteRunReports(a, outcome, o, cell, recordings, product::RunExitCode(outcome, cell));
}

}  // namespace

void AddRunCommand(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* run = app.add_subcommand(
      "run",
      "record a workload once in the VM, replay its crash states under each cache model "
      "and check them (exit 0 pass, 1 violations, 2 could not run)");
  AddRunOptions(run, a.get());
  run->callback([=] { *exit_code = Run(*a); });
}

}  // namespace powercut::cli
