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
#include "harness/check/disk_set_check.h"
#include "harness/check/engine.h"
#include "harness/check/image_check.h"
#include "harness/check/oracle.h"
#include "harness/check/report.h"
#include "harness/fs/fsck.h"
#include "harness/state/cache_model.h"
#include "harness/state/crash_state.h"
#include "harness/state/materialize.h"
#include "harness/trace/manifest.h"
#include "harness/trace/trace_reader.h"

namespace powercut::product {
namespace {

namespace fs = std::filesystem;

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

  // Rebuilds `state`'s image, runs the check and judges it.
  absl::StatusOr<Judgement> Judge(const harness::CrashState& state) {
    const std::string id = Id(state);
    if (auto it = cache_.find(id); it != cache_.end()) return it->second;
    const std::string image = work_ + "/crash.img";
    if (auto s = harness::MaterializeState(o_.trace, o_.base, id, image); !s.ok()) return s;
    absl::StatusOr<harness::ImageCheckResult> out = CheckImage(image);
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
    v.rebuild = fmt::format("{} state materialize --trace trace.log --state {} --out crash.img",
                            o_.powercut, id);
    Judgement result = std::make_pair(v.violation(), v.Describe());
    cache_[id] = result;
    return result;
  }

  // The host's check of `image`, or the guest judge's (ReproOptions::judges).
  absl::StatusOr<harness::ImageCheckResult> CheckImage(const std::string& image) {
    if (disks_.several()) {
      return harness::CheckDiskSetImageFile(image, {.layout = disks_,
                                                    .fs = disk_fs_,
                                                    .checker = o_.checker,
                                                    .timeout_seconds = o_.checker_timeout_s,
                                                    .work_prefix = work_ + "/set"});
    }
    if (!o_.judges || harness::FileSystemOf(o_.fs).raw())
      return harness::CheckImageFile(image, check_);
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

// The bundle's README.md: what the states are and the command that re-checks the minimal one.
std::string BundleReadme(const ReproOptions& o, const ReproResult& r) {
  std::string recheck = fmt::format(
      "{} repro {} --trace trace.log --checker {} --fs {}{} --recheck", o.powercut,
      r.minimal_state_id, Quote(o.checker), harness::FsName(o.fs), o.ordered ? " --ordered" : "");
  return fmt::format(
      "# powercut reproducer\n\n"
      "A crash state that violates the workload's durability promise, shrunk by delta "
      "debugging.\n\n"
      "- original state: `{}`\n  - {}\n- minimal state: `{}` ({} dropped write(s){}): \n  - {}\n"
      "\nRebuild the minimal crash image and re-check it (run in this folder{}):\n\n"
      "```\n{}\n```\n\n"
      "Only the image: `{} state materialize --trace trace.log --state {} --out crash.img`\n\n"
      "Files: `trace.log` (dm-log-writes v1), `trace.log.manifest.json` (base image, hash, "
      "order), `base.img` (sparse), `state.txt` (original and minimal ids), `repro.json` (every "
      "candidate checked while shrinking).\n",
      r.state_id, r.verdict, r.minimal_state_id, r.minimal_dropped.size(),
      r.minimal_torn ? fmt::format(", entry {} torn", *r.minimal_torn) : std::string(),
      r.minimal_verdict,
      harness::FileSystemOf(o.fs).raw() ? "" : "; as root: the image is loop-mounted", recheck,
      o.powercut, r.minimal_state_id);
}

// Writes the self-contained bundle (header comment in repro.h) into o.bundle.
absl::Status WriteBundle(const ReproOptions& o, const ReproResult& r, const harness::Trace& trace,
                         const std::string& base,
                         const std::optional<harness::TraceManifest>& manifest) {
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
  auto m = harness::MakeManifest(b + "/base.img", trace.sector_size,
                                 manifest ? manifest->order : harness::OrderSemantics::kCompletion,
                                 trace.entries.size());
  if (!m.ok()) return m.status();
  m->base_image = "base.img";
  RETURN_IF_ERROR(harness::WriteManifest(b + "/trace.log.manifest.json", *m));
  std::ofstream(b + "/state.txt") << r.state_id << "\n" << r.minimal_state_id << "\n";
  std::ofstream(b + "/repro.json") << ReproToJson(r).dump(2) << "\n";
  std::ofstream(b + "/README.md") << BundleReadme(o, r);
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
  StateJudge judge(o, trace, *std::move(parsed), scratch->path());
  if (layout.several()) judge.UseDiskSet(layout, disk_fs);

  ReproResult r;
  r.state_id = o.state_id;
  ASSIGN_OR_RETURN(std::vector<size_t> elements, JudgeOriginal(judge, &r));
  r.note = WhyNotShrunk(o, r, judge.volatile_count());
  if (r.note.empty()) RETURN_IF_ERROR(Shrink(judge, elements, &r));
  if (!o.bundle.empty()) RETURN_IF_ERROR(WriteBundle(o, r, trace, *base, manifest));
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
          {"note", r.note}};
}

}  // namespace powercut::product
