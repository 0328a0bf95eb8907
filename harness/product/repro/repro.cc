#include "harness/product/repro/repro.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "base/image_io.h"
#include "base/scratch_dir.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/check/disk_attribution.h"
#include "harness/check/disk_set_check.h"
#include "harness/check/engine.h"
#include "harness/check/image_check.h"
#include "harness/check/oracle.h"
#include "harness/check/report.h"
#include "harness/cluster/cluster.h"
#include "harness/fs/fsck.h"
#include "harness/state/cache_model.h"
#include "harness/state/crash_state.h"
#include "harness/state/materialize.h"
#include "harness/trace/manifest.h"
#include "harness/trace/trace_reader.h"

namespace powercut::product {
namespace {

namespace fs = std::filesystem;

// The cluster of `o` with its checker: ReproOptions::checker (the user's own).
cluster::ClusterSpec ClusterOf(const ReproOptions& o) {
  cluster::ClusterSpec spec = o.cluster;
  spec.checker = o.checker;
  return spec;
}

std::string Quote(const std::string& s) {
  if (s.find_first_of(" '\"$`\\|&;<>()*?!#~") == std::string::npos && !s.empty()) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::vector<size_t> DeltaDebug(const std::vector<size_t>& elements,
                               const std::function<bool(const std::vector<size_t>&)>& fails) {
  std::vector<size_t> c = elements;
  if (c.empty()) return c;
  if (fails({})) return {};
  size_t n = 2;
  while (c.size() >= 2) {
    n = std::min(n, c.size());
    std::vector<std::vector<size_t>> chunks(n);
    for (size_t i = 0; i < c.size(); ++i) chunks[i * n / c.size()].push_back(c[i]);
    bool reduced = false;
    for (const auto& chunk : chunks) {
      if (fails(chunk)) {
        c = chunk;
        n = 2;
        reduced = true;
        break;
      }
    }
    if (!reduced && n > 2) {
      for (size_t k = 0; k < n; ++k) {
        std::vector<size_t> complement;
        for (size_t j = 0; j < n; ++j) {
          if (j != k) complement.insert(complement.end(), chunks[j].begin(), chunks[j].end());
        }
        std::sort(complement.begin(), complement.end());
        if (fails(complement)) {
          c = complement;
          n = std::max<size_t>(n - 1, 2);
          reduced = true;
          break;
        }
      }
    }
    if (!reduced) {
      if (n >= c.size()) break;
      n = std::min(n * 2, c.size());
    }
  }
  if (c.size() == 1 && fails({})) return {};
  return c;
}

namespace {

// A state's verdict: whether it violates, and Verdict::Describe().
using Judgement = std::pair<bool, std::string>;

// The world of one state being reproduced: its trace, its crash point seen under its cache model,
// the oracle, and a scratch folder where candidate states are rebuilt and checked (each once).
class StateJudge {
 public:
  StateJudge(const ReproOptions& o, const harness::Trace& trace, harness::ParsedStateId parsed,
             std::string work)
      : o_(o),
        trace_hash8_(std::move(parsed.trace_hash8)),
        original_(parsed.state),
        index_(trace),
        oracle_(index_, o.ordered, /*fs_failures_are_violations=*/false, o.latest_ack_only),
        view_(index_.View(original_.point, original_.model)),
        work_(std::move(work)),
        check_{.fs = o.fs,
               .checker = o.checker,
               .timeout_seconds = o.checker_timeout_s,
               .mountpoint = work_ + "/mnt"} {
    fs::create_directories(check_.mountpoint);
    if (o.fsck && !harness::FileSystemOf(o.fs).raw()) check_.before_mount = harness::FsckHook(o.fs);
  }

  // Several disks (the manifest's `disks`): each state is checked with every disk mounted
  // (harness/check/disk_set_check.h); the shrink runs over the volatile writes of all disks.
  void UseDiskSet(harness::DiskLayout layout, std::vector<harness::FsKind> fs) {
    disks_ = std::move(layout);
    disk_fs_ = std::move(fs);
  }

  const harness::CrashState& original() const { return original_; }
  // The volatile writes of the point (what a state keeps or drops).
  size_t volatile_count() const { return view_.volatile_entries.size(); }
  uint64_t volatile_entry(size_t i) const { return view_.volatile_entries[i]; }
  std::string Id(const harness::CrashState& state) const {
    return harness::EncodeStateId(trace_hash8_, state);
  }

  // Whether `state` drops volatile write i (left off the media whole; the torn write is not).
  bool Drops(const harness::CrashState& state, size_t i) const {
    return !state.kept.Contains(i, volatile_count()) &&
           view_.volatile_entries[i] != state.torn_entry;
  }

  // Where a cluster state's nodes' logs are kept while it is judged (the launcher's --keep-logs).
  std::string LogsOf(const std::string& id) const { return work_ + "/logs/" + id; }

  // Rebuilds `state`'s image, runs the check and judges it.
  absl::StatusOr<Judgement> Judge(const harness::CrashState& state) {
    const std::string id = Id(state);
    if (auto it = cache_.find(id); it != cache_.end()) return it->second;
    const std::string image = work_ + "/crash.img";
    if (auto s = harness::MaterializeState(o_.trace, o_.base, id, image); !s.ok()) return s;
    absl::StatusOr<harness::ImageCheckResult> out = CheckImage(image, id);
    std::error_code ec;
    fs::remove(image, ec);
    if (!out.ok()) return out.status();
    harness::Verdict v;
    v.state_id = id;
    v.cache = state.model.Code();
    oracle_.Judge(state.point, oracle_.Compact(out->checker, out->fs), &v);
    for (size_t i = 0; i < volatile_count(); ++i) {
      if (Drops(state, i)) v.dropped.push_back(view_.volatile_entries[i]);
    }
    if (state.torn_entry) {
      v.torn_entry = state.torn_entry;
      v.torn_units = state.torn_units.Encode();
    }
    // Each disk's (node's) own dropped writes, as the run's report names them.
    harness::AttributeToDisks(
        index_.trace(),
        o_.cluster.nodes > 0 ? harness::SetMember::kNode : harness::SetMember::kDisk, &v);
    v.rebuild = fmt::format("{} state materialize --trace trace.log --state {} --out crash.img",
                            o_.powercut, id);
    Judgement result = std::make_pair(v.violation(), v.Describe());
    cache_[id] = result;
    return result;
  }

  // The host's check of state `id`'s `image`, or the guest judge's (ReproOptions::judges).
  absl::StatusOr<harness::ImageCheckResult> CheckImage(const std::string& image,
                                                       const std::string& id) {
    if (disks_.several()) {
      std::string checker = o_.checker;
      double timeout = o_.checker_timeout_s;
      if (o_.cluster.nodes > 0) {
        // Every node started on its own disk's image, its log kept for this state.
        checker = cluster::WrapForCluster(ClusterOf(o_), o_.launcher, LogsOf(id)).checker;
        timeout = o_.cluster.checker_timeout_s + cluster::kLauncherSlackSeconds;
      }
      return harness::CheckDiskSetImageFile(image, {.layout = disks_,
                                                    .fs = disk_fs_,
                                                    .checker = checker,
                                                    .timeout_seconds = timeout,
                                                    .work_prefix = work_ + "/set"});
    }
    if (!o_.judges || harness::FileSystemOf(o_.fs).raw()) {
      return harness::CheckImageFile(image, check_);
    }
    if (guest_ == nullptr) {
      ASSIGN_OR_RETURN(guest_, o_.judges(0));
    }
    const int fd = ::open(image.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return absl::InternalError(fmt::format("cannot open {}", image));
    struct stat st {};
    ::fstat(fd, &st);
    auto out = guest_->Check(fd, static_cast<uint64_t>(st.st_size));
    guest_.reset();  // the judge serves the open image: release it before the file goes
    ::close(fd);
    return out;
  }

  // The element standing for the torn write among the shrinking elements (the others are indexes
  // of dropped volatile writes).
  size_t torn_element() const { return volatile_count(); }

  // The original state with the writes in `subset` left off (and the torn write torn only when
  // `subset` holds its element; otherwise it is on the media whole).
  harness::CrashState Candidate(const std::vector<size_t>& subset) const {
    auto in_subset = [&](size_t e) {
      return std::find(subset.begin(), subset.end(), e) != subset.end();
    };
    harness::CrashState s = original_;
    const size_t nvol = volatile_count();
    const bool keeps_torn = !in_subset(torn_element());
    uint64_t mask = 0;
    for (size_t i = 0; i < nvol; ++i) {
      bool keep = true;
      if (view_.volatile_entries[i] == original_.torn_entry) {
        keep = keeps_torn || original_.kept.Contains(i, nvol);
      }
      if (in_subset(i)) keep = false;
      if (keep) mask |= uint64_t{1} << i;
    }
    s.kept = {harness::SubsetSpec::kMask, mask};
    if (keeps_torn) {
      s.torn_entry.reset();
      s.torn_units = {};
    }
    return s;
  }

 private:
  const ReproOptions& o_;
  const std::string trace_hash8_;
  const harness::CrashState original_;
  const harness::TraceIndex index_;
  harness::Oracle oracle_;
  const harness::PointView view_;
  const std::string work_;
  harness::ImageCheckOptions check_;
  harness::DiskLayout disks_;
  std::vector<harness::FsKind> disk_fs_;
  std::map<std::string, Judgement> cache_;  // state id -> judgement
  std::unique_ptr<harness::StateJudge> guest_;
};

// Judges the original state and lists what shrinking may take away: its dropped writes, then its
// torn write (StateJudge::torn_element()).
absl::StatusOr<std::vector<size_t>> JudgeOriginal(StateJudge& judge, ReproResult* r) {
  const harness::CrashState& original = judge.original();
  auto first = judge.Judge(original);
  if (!first.ok()) return first.status();
  r->violates = first->first;
  r->verdict = first->second;
  std::vector<size_t> elements;
  for (size_t i = 0; i < judge.volatile_count(); ++i) {
    if (judge.Drops(original, i)) {
      elements.push_back(i);
      r->dropped.push_back(judge.volatile_entry(i));
    }
  }
  if (original.torn_entry) {
    elements.push_back(judge.torn_element());
    r->torn = original.torn_entry;
  }
  r->minimal_state_id = r->state_id;
  r->minimal_verdict = r->verdict;
  r->minimal_dropped = r->dropped;
  r->minimal_torn = r->torn;
  return elements;
}

// Why the state is not shrunk ("" when it is).
std::string WhyNotShrunk(const ReproOptions& o, const ReproResult& r, size_t volatile_count) {
  if (!r.violates) return "the state does not violate: nothing to shrink";
  if (!o.shrink) return "not shrunk (--no-shrink)";
  if (volatile_count > 64) {
    return fmt::format(
        "not shrunk: {} volatile writes at this point (at most 64 can be expressed as a kept "
        "mask)",
        volatile_count);
  }
  return "";
}

// Delta debugging over `elements`: records every candidate in r->steps and the 1-minimal
// violating state in r->minimal_*.
absl::Status Shrink(StateJudge& judge, const std::vector<size_t>& elements, ReproResult* r) {
  absl::Status failure;
  std::vector<size_t> minimal = DeltaDebug(elements, [&](const std::vector<size_t>& subset) {
    if (!failure.ok()) return false;
    harness::CrashState s = judge.Candidate(subset);
    auto v = judge.Judge(s);
    if (!v.ok()) {
      failure = v.status();
      return false;
    }
    r->steps.push_back({judge.Id(s), subset.size(), v->first});
    return v->first;
  });
  RETURN_IF_ERROR(failure);
  harness::CrashState m = judge.Candidate(minimal);
  r->minimal_state_id = judge.Id(m);
  auto mv = judge.Judge(m);
  if (!mv.ok()) return mv.status();
  r->minimal_verdict = mv->second;
  r->minimal_dropped.clear();
  r->minimal_torn.reset();
  for (size_t e : minimal) {
    if (e == judge.torn_element()) {
      r->minimal_torn = judge.original().torn_entry;
    } else {
      r->minimal_dropped.push_back(judge.volatile_entry(e));
    }
  }
  return absl::OkStatus();
}

// One node's part of cluster.sh: its disk cut out of the set's image, its file system's boot
// steps (harness/fs/file_system.h), mounted at $work/node-K.
std::string NodeSteps(uint32_t node, const harness::DiskExtent& extent, harness::FsKind fs) {
  const harness::FileSystem& row = harness::FileSystemOf(fs);
  std::string steps = fmt::format(
      "# node {}: {}, bytes {} to {} of the set's image\n"
      "dd if=\"$work/set.img\" of=\"$work/node-{}.img\" bs=1M iflag=skip_bytes,count_bytes "
      "skip={} count={} conv=sparse status=none\n",
      node, row.name, extent.offset, extent.offset + extent.bytes, node, extent.offset,
      extent.bytes);
  for (const harness::FsStep& step : row.boot_steps) {
    std::vector<std::string> argv;
    for (const std::string& arg : step.argv) {
      argv.push_back(arg == "{image}" ? fmt::format("\"$work/node-{}.img\"", node) : Quote(arg));
    }
    steps += fmt::format(
        "rc=0; {} || rc=$?\ncase $rc in {}) ;; *) echo \"{} failed ($rc)\" >&2; exit 1 ;; esac\n",
        fmt::join(argv, " "), fmt::join(step.ok_exits, "|"), step.name);
  }
  const std::string options = row.mount_options[0] == '\0'
                                  ? std::string("loop")
                                  : fmt::format("loop,{}", row.mount_options);
  steps += fmt::format(
      "mkdir \"$work/node-{0}\"\nmount -o {1} \"$work/node-{0}.img\" \"$work/node-{0}\"\n"
      "mounted=\"$mounted $work/node-{0}\"\n",
      node, options);
  return steps;
}

// cluster.sh: the minimal state (or the one named) by hand, as root: each node's crash image
// rebuilt and through its boot path, then every node started on it with the checker.
std::string ClusterScript(const ReproOptions& o, const ReproResult& r,
                          const harness::DiskLayout& layout,
                          const std::vector<harness::FsKind>& disk_fs) {
  std::string script = fmt::format(
      "#!/bin/sh\n"
      "# A cluster's crash state by hand (docs/cluster.md, \"Reproducing a state\"), as root, in "
      "this\n"
      "# folder: every node's disk rebuilt from the state id, taken through its file system's "
      "boot\n"
      "# path and mounted, then every node started on it with the checker (powercut-cluster\n"
      "# --mode check: the nodes in a network and a process namespace of their own, killed when\n"
      "# the checker ends). The checker's `have` lines come out here; the nodes' logs stay in\n"
      "# logs/<state>/node-K.log. Replace the checker to look around yourself.\n"
      "# Usage: sh cluster.sh [STATE]   (default: the minimal state, {})\n"
      "set -eu\n"
      "cd \"$(dirname \"$0\")\"\n"
      "state=${{1:-{}}}\n"
      "powercut=${{POWERCUT:-{}}}\n"
      "launcher=${{POWERCUT_CLUSTER:-{}}}\n"
      "work=$(mktemp -d /var/tmp/powercut-cluster-repro-XXXXXX)\n"
      "mounted=\"\"\n"
      "cleanup() {{ for m in $mounted; do umount \"$m\" || true; done; rm -rf \"$work\"; }}\n"
      "trap cleanup EXIT\n"
      "trap 'exit 130' INT TERM\n"
      "\"$powercut\" state materialize --trace trace.log --state \"$state\" --out "
      "\"$work/set.img\" "
      ">/dev/null\n",
      r.minimal_state_id, r.minimal_state_id, Quote(o.powercut), Quote(o.launcher));
  for (uint32_t d = 0; d < layout.count(); ++d) {
    script += NodeSteps(d + 1, layout.extents()[d], disk_fs[d]);
  }
  std::string dirs;
  for (uint32_t d = 0; d < layout.count(); ++d) {
    dirs += fmt::format("{}=\"$work/node-{}\" ", harness::DiskVariable(d, /*raw=*/false), d + 1);
  }
  script += fmt::format(
      "mkdir -p \"logs/$state\"\n"
      "rc=0\n"
      "{}\"$launcher\" --mode check --nodes {} --node {} --timeout {:g} --keep-logs "
      "\"logs/$state\" "
      "-- {} || rc=$?\n"
      "echo \"checker exit $rc; the nodes' logs: logs/$state/\" >&2\n"
      "exit $rc\n",
      dirs, o.cluster.nodes, Quote(o.cluster.node_command), o.cluster.checker_timeout_s,
      Quote(o.checker));
  return script;
}

// The bundle's README.md: what the states are and the command that re-checks the minimal one.
std::string BundleReadme(const ReproOptions& o, const ReproResult& r) {
  const bool cluster = o.cluster.nodes > 0;
  std::string recheck =
      cluster ? harness::ReproCommand(o.powercut, "trace.log", r.minimal_state_id,
                                      cluster::ReproArgs(ClusterOf(o)))
              : fmt::format("{} repro {} --trace trace.log --checker {} --fs {}{} --recheck",
                            o.powercut, r.minimal_state_id, Quote(o.checker), harness::FsName(o.fs),
                            o.ordered ? " --ordered" : "");
  if (cluster) recheck += " --keep-logs logs";
  const std::string by_hand =
      cluster ? fmt::format(
                    "\nThe same by hand, each step a command you can change (`cluster.sh`: every "
                    "node's crash image rebuilt, through its boot path and mounted, then the {} "
                    "nodes started on them with the checker by `powercut-cluster --mode check`; "
                    "as root):\n\n```\nsh cluster.sh {}\n```\n\nThe nodes' logs of the original "
                    "and the minimal state: `logs/<state>/node-K.log`.\n",
                    o.cluster.nodes, r.minimal_state_id)
              : std::string();
  return fmt::format(
      "# powercut reproducer\n\n"
      "A crash state that violates the workload's durability promise, shrunk by delta "
      "debugging.\n\n"
      "- original state: `{}`\n  - {}\n- minimal state: `{}` ({} dropped write(s){}): \n  - {}\n"
      "\nRebuild the minimal crash image and re-check it (run in this folder{}):\n\n"
      "```\n{}\n```\n{}\n"
      "Only the image: `{} state materialize --trace trace.log --state {} --out crash.img`\n\n"
      "Files: `trace.log` (dm-log-writes v1), `trace.log.manifest.json` (base image, hash, "
      "order), `base.img` (sparse), `state.txt` (original and minimal ids), `repro.json` (every "
      "candidate checked while shrinking).\n",
      r.state_id, r.verdict, r.minimal_state_id, r.minimal_dropped.size(),
      r.minimal_torn ? fmt::format(", entry {} torn", *r.minimal_torn) : std::string(),
      r.minimal_verdict,
      cluster || !harness::FileSystemOf(o.fs).raw() ? "; as root: the image is loop-mounted" : "",
      recheck, by_hand, o.powercut, r.minimal_state_id);
}

// Writes the self-contained bundle (header comment in repro.h) into o.bundle.
absl::Status WriteBundle(const ReproOptions& o, const ReproResult& r, const harness::Trace& trace,
                         const std::string& base,
                         const std::optional<harness::TraceManifest>& manifest,
                         const harness::DiskLayout& layout,
                         const std::vector<harness::FsKind>& disk_fs) {
  std::error_code ec;
  fs::create_directories(o.bundle, ec);
  if (ec) {
    return absl::InternalError(fmt::format("repro: cannot create {}: {}", o.bundle, ec.message()));
  }
  const std::string b = o.bundle;
  fs::copy_file(o.trace, b + "/trace.log", fs::copy_options::overwrite_existing, ec);
  if (ec) {
    return absl::InternalError(fmt::format("repro: cannot copy {}: {}", o.trace, ec.message()));
  }
  RETURN_IF_ERROR(powercut::CopySparse(base, b + "/base.img"));
  absl::StatusOr<harness::TraceManifest> m = absl::NotFoundError("no manifest");
  if (manifest) {
    m = *manifest;
  } else {
    m = harness::MakeManifest(b + "/base.img", trace.sector_size,
                              harness::OrderSemantics::kCompletion, trace.entries.size());
  }
  if (!m.ok()) return m.status();
  // The recording's own manifest where it has one (a set's disks, the geometry, the same base
  // image's hash), its base image now beside it.
  m->base_image = "base.img";
  RETURN_IF_ERROR(harness::WriteManifest(b + "/trace.log.manifest.json", *m));
  std::ofstream(b + "/state.txt") << r.state_id << "\n" << r.minimal_state_id << "\n";
  std::ofstream(b + "/repro.json") << ReproToJson(r).dump(2) << "\n";
  std::ofstream(b + "/README.md") << BundleReadme(o, r);
  if (o.cluster.nodes > 0) {
    std::ofstream(b + "/cluster.sh") << ClusterScript(o, r, layout, disk_fs);
    fs::permissions(b + "/cluster.sh", fs::perms::owner_exec | fs::perms::group_exec,
                    fs::perm_options::add, ec);
  }
  return absl::OkStatus();
}

// A cluster's: the nodes' logs of the original and the minimal state, from where they were judged
// into `to`/<id>/ (ReproOptions::keep_logs, a bundle's logs/).
absl::Status CopyNodeLogs(const StateJudge& judge, const ReproResult& r, const std::string& to,
                          std::vector<std::string>* kept) {
  for (const std::string& id : {r.state_id, r.minimal_state_id}) {
    std::error_code ec;
    const std::string from = judge.LogsOf(id);
    const std::string dest = fmt::format("{}/{}", to, id);
    if (!fs::exists(from, ec) || fs::exists(dest, ec)) continue;
    fs::create_directories(dest, ec);
    fs::copy(from, dest, fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
    if (ec) {
      return absl::InternalError(
          fmt::format("repro: cannot keep the nodes' logs in {}: {}", dest, ec.message()));
    }
    if (kept != nullptr) kept->push_back(dest);
  }
  return absl::OkStatus();
}

// A cluster's state needs its node command, the launcher, and a trace of one disk a node.
absl::Status ValidateCluster(const ReproOptions& o, const harness::DiskLayout& layout) {
  RETURN_IF_ERROR(cluster::ValidateNodeCount(o.cluster.nodes));
  if (o.cluster.node_command.empty()) {
    return absl::InvalidArgumentError(
        "repro: --nodes N needs --node CMD, the node command of the run (docs/cluster.md)");
  }
  if (o.launcher.empty()) {
    return absl::InvalidArgumentError("repro: --nodes N needs the cluster launcher");
  }
  if (layout.count() != o.cluster.nodes) {
    return absl::InvalidArgumentError(fmt::format(
        "repro: --nodes {}, but the trace {} holds {} disk{} (a cluster's recording has one disk "
        "a node): give the run's node count",
        o.cluster.nodes, o.trace, layout.count(), layout.count() == 1 ? "" : "s"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ReproResult> Repro(const ReproOptions& o) {
  if (o.checker.empty()) return absl::InvalidArgumentError("repro: --checker CMD is required");
  auto parsed = harness::DecodeStateId(o.state_id);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(fmt::format("repro: state id '{}': {}", o.state_id,
                                                  std::string(parsed.status().message())));
  }
  std::optional<harness::TraceManifest> manifest;
  auto base = harness::ResolveBase(o.trace, o.base, &manifest);
  if (!base.ok()) return base.status();
  harness::DiskLayout layout;
  std::vector<harness::FsKind> disk_fs;
  if (manifest) {
    ASSIGN_OR_RETURN(layout, harness::LayoutOf(*manifest));
    for (const harness::DiskManifest& d : manifest->disks) {
      ASSIGN_OR_RETURN(harness::FsKind fs,
                       harness::ParseManifestFs(d.fs, "the manifest's disks[].fs"));
      disk_fs.push_back(fs);
    }
  }
  auto file = harness::TraceFile::Open(o.trace, {.disks = layout});
  if (!file.ok()) return file.status();
  const harness::Trace& trace = (*file)->trace();
  if (trace.ShortHash() != parsed->trace_hash8) {
    return absl::InvalidArgumentError(fmt::format(
        "repro: state {} was made from trace {}, but {} hashes to {}: pass the trace it came from",
        o.state_id, parsed->trace_hash8, o.trace, trace.ShortHash()));
  }
  auto scratch = ScratchDir::Create("powercut-repro", "/var/tmp");
  if (!scratch.ok()) {
    return absl::InternalError("repro: cannot create a folder in /var/tmp");
  }
  if (o.cluster.nodes > 0) RETURN_IF_ERROR(ValidateCluster(o, layout));
  StateJudge judge(o, trace, *std::move(parsed), scratch->path());
  if (layout.several()) judge.UseDiskSet(layout, disk_fs);

  ReproResult r;
  r.state_id = o.state_id;
  ASSIGN_OR_RETURN(std::vector<size_t> elements, JudgeOriginal(judge, &r));
  r.note = WhyNotShrunk(o, r, judge.volatile_count());
  if (r.note.empty()) RETURN_IF_ERROR(Shrink(judge, elements, &r));
  if (!o.keep_logs.empty()) RETURN_IF_ERROR(CopyNodeLogs(judge, r, o.keep_logs, &r.node_logs));
  if (!o.bundle.empty()) {
    RETURN_IF_ERROR(WriteBundle(o, r, trace, *base, manifest, layout, disk_fs));
    if (o.cluster.nodes > 0) RETURN_IF_ERROR(CopyNodeLogs(judge, r, o.bundle + "/logs", nullptr));
  }
  return r;
}

nlohmann::json ReproToJson(const ReproResult& r) {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : r.steps) {
    steps.push_back({{"state", s.state_id}, {"dropped", s.dropped}, {"violates", s.violates}});
  }
  auto opt = [](const std::optional<uint64_t>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  return {{"state", r.state_id},
          {"violates", r.violates},
          {"verdict", r.verdict},
          {"dropped_entries", r.dropped},
          {"torn_entry", opt(r.torn)},
          {"minimal_state", r.minimal_state_id},
          {"minimal_verdict", r.minimal_verdict},
          {"minimal_dropped_entries", r.minimal_dropped},
          {"minimal_torn_entry", opt(r.minimal_torn)},
          {"steps", steps},
          {"note", r.note},
          {"node_logs", r.node_logs}};
}

}  // namespace powercut::product
