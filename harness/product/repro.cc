#include "harness/product/repro.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "base/image_io.h"
#include "base/signal_cleanup.h"
#include "fmt/format.h"
#include "harness/check/engine.h"
#include "harness/check/fsck.h"
#include "harness/check/image_check.h"
#include "harness/check/oracle.h"
#include "harness/check/report.h"
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
  auto file = harness::TraceFile::Open(o.trace);
  if (!file.ok()) return file.status();
  const harness::Trace& trace = (*file)->trace();
  if (trace.ShortHash() != parsed->trace_hash8) {
    return absl::InvalidArgumentError(fmt::format(
        "repro: state {} was made from trace {}, but {} hashes to {}: pass the trace it came from",
        o.state_id, parsed->trace_hash8, o.trace, trace.ShortHash()));
  }
  const harness::CrashState original = parsed->state;
  harness::TraceIndex index(trace);
  harness::Oracle oracle(index, o.ordered);
  harness::PointView view = index.View(original.point, original.model);
  const size_t nvol = view.volatile_entries.size();

  std::string work = "/var/tmp/powercut-repro-XXXXXX";
  if (::mkdtemp(work.data()) == nullptr) {
    return absl::InternalError("repro: cannot create a folder in /var/tmp");
  }
  powercut::RegisterCleanupFolder(work);  // a fatal signal removes it (harness/signal_cleanup.h)
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
      powercut::UnregisterCleanupFolder(dir);
    }
  } cleanup{work};
  fs::create_directories(work + "/mnt");

  harness::ImageCheckOptions ic{.fs = o.fs,
                                .checker = o.checker,
                                .timeout_seconds = o.checker_timeout_s,
                                .mountpoint = work + "/mnt"};
  if (o.fsck && o.fs != harness::FsKind::kRaw) ic.before_mount = harness::FsckHook(o.fs);
  std::map<std::string, std::pair<bool, std::string>> cache;  // id -> (violates, description)
  auto judge =
      [&](const harness::CrashState& state) -> absl::StatusOr<std::pair<bool, std::string>> {
    std::string id = harness::EncodeStateId(parsed->trace_hash8, state);
    if (auto it = cache.find(id); it != cache.end()) return it->second;
    std::string image = work + "/crash.img";
    if (auto s = harness::MaterializeState(o.trace, o.base, id, image); !s.ok()) return s;
    auto out = harness::CheckImageFile(image, ic);
    std::error_code ec;
    fs::remove(image, ec);
    if (!out.ok()) return out.status();
    harness::Verdict v;
    v.state_id = id;
    v.cache = state.model.Code();
    oracle.Judge(state.point, oracle.Compact(out->checker, out->fs), &v);
    for (size_t i = 0; i < nvol; ++i) {
      if (!state.kept.Contains(i, nvol) && view.volatile_entries[i] != state.torn_entry) {
        v.dropped.push_back(view.volatile_entries[i]);
      }
    }
    if (state.torn_entry) {
      v.torn_entry = state.torn_entry;
      v.torn_units = state.torn_units.Encode();
    }
    v.rebuild = fmt::format("{} state materialize --trace trace.log --state {} --out crash.img",
                            o.powercut, id);
    auto result = std::make_pair(v.violation(), v.Describe());
    cache[id] = result;
    return result;
  };

  ReproResult r;
  r.state_id = o.state_id;
  auto first = judge(original);
  if (!first.ok()) return first.status();
  r.violates = first->first;
  r.verdict = first->second;
  // Elements: dropped volatile writes (index into volatile_entries), then the torn write.
  std::vector<size_t> elements;
  for (size_t i = 0; i < nvol; ++i) {
    if (!original.kept.Contains(i, nvol) && view.volatile_entries[i] != original.torn_entry) {
      elements.push_back(i);
      r.dropped.push_back(view.volatile_entries[i]);
    }
  }
  const size_t kTorn = nvol;  // the element standing for the torn write
  if (original.torn_entry) {
    elements.push_back(kTorn);
    r.torn = original.torn_entry;
  }
  auto candidate = [&](const std::vector<size_t>& subset) {
    harness::CrashState s = original;
    uint64_t mask = 0;
    for (size_t i = 0; i < nvol; ++i) {
      bool keep = true;
      if (view.volatile_entries[i] == original.torn_entry) keep = original.kept.Contains(i, nvol);
      if (std::find(subset.begin(), subset.end(), i) != subset.end()) keep = false;
      if (keep) mask |= uint64_t{1} << i;
    }
    s.kept = {harness::SubsetSpec::kMask, mask};
    if (std::find(subset.begin(), subset.end(), kTorn) == subset.end()) {
      s.torn_entry.reset();
      s.torn_units = {};
      // A volatile write no longer torn is on the media whole.
      for (size_t i = 0; i < nvol; ++i) {
        if (view.volatile_entries[i] == original.torn_entry) s.kept.value |= uint64_t{1} << i;
      }
    }
    return s;
  };
  r.minimal_state_id = r.state_id;
  r.minimal_verdict = r.verdict;
  r.minimal_dropped = r.dropped;
  r.minimal_torn = r.torn;
  absl::Status failure;
  if (!r.violates) {
    r.note = "the state does not violate: nothing to shrink";
  } else if (!o.shrink) {
    r.note = "not shrunk (--no-shrink)";
  } else if (nvol > 64) {
    r.note = fmt::format(
        "not shrunk: {} volatile writes at this point (at most 64 can be "
        "expressed as a kept mask)",
        nvol);
  } else {
    std::vector<size_t> minimal = DeltaDebug(elements, [&](const std::vector<size_t>& subset) {
      if (!failure.ok()) return false;
      harness::CrashState s = candidate(subset);
      auto v = judge(s);
      if (!v.ok()) {
        failure = v.status();
        return false;
      }
      size_t count = subset.size();
      r.steps.push_back({harness::EncodeStateId(parsed->trace_hash8, s), count, v->first});
      return v->first;
    });
    if (!failure.ok()) return failure;
    harness::CrashState m = candidate(minimal);
    r.minimal_state_id = harness::EncodeStateId(parsed->trace_hash8, m);
    auto mv = judge(m);
    if (!mv.ok()) return mv.status();
    r.minimal_verdict = mv->second;
    r.minimal_dropped.clear();
    r.minimal_torn.reset();
    for (size_t e : minimal) {
      if (e == kTorn) {
        r.minimal_torn = original.torn_entry;
      } else {
        r.minimal_dropped.push_back(view.volatile_entries[e]);
      }
    }
  }

  if (!o.bundle.empty()) {
    std::error_code ec;
    fs::create_directories(o.bundle, ec);
    if (ec) {
      return absl::InternalError(
          fmt::format("repro: cannot create {}: {}", o.bundle, ec.message()));
    }
    const std::string b = o.bundle;
    fs::copy_file(o.trace, b + "/trace.log", fs::copy_options::overwrite_existing, ec);
    if (ec) {
      return absl::InternalError(fmt::format("repro: cannot copy {}: {}", o.trace, ec.message()));
    }
    if (auto s = powercut::CopySparse(*base, b + "/base.img"); !s.ok()) return s;
    auto m = harness::MakeManifest(
        b + "/base.img", trace.sector_size,
        manifest ? manifest->order : harness::OrderSemantics::kCompletion, trace.entries.size());
    if (!m.ok()) return m.status();
    m->base_image = "base.img";
    if (auto s = harness::WriteManifest(b + "/trace.log.manifest.json", *m); !s.ok()) return s;
    std::ofstream(b + "/state.txt") << r.state_id << "\n" << r.minimal_state_id << "\n";
    std::ofstream(b + "/repro.json") << ReproToJson(r).dump(2) << "\n";
    std::string recheck = fmt::format(
        "{} repro {} --trace trace.log --checker {} --fs {}{} --recheck", o.powercut,
        r.minimal_state_id, Quote(o.checker), harness::FsName(o.fs), o.ordered ? " --ordered" : "");
    std::ofstream readme(b + "/README.md");
    readme << fmt::format(
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
        o.fs == harness::FsKind::kRaw ? "" : "; as root: the image is loop-mounted", recheck,
        o.powercut, r.minimal_state_id);
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
          {"note", r.note}};
}

}  // namespace powercut::product
