#include "tests/state/state_cases.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/state/crash_state.h"
#include "harness/state/materialize.h"
#include "harness/state/state_plan.h"
#include "harness/trace/disk_geometry.h"
#include "harness/trace/manifest.h"
#include "harness/trace/trace_writer.h"

namespace powercut::harness {
namespace {

using powercut::testing::TestCase;

absl::StatusOr<uint64_t> ParseNumber(std::string_view text, std::string_view what) {
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    return absl::InvalidArgumentError(
        fmt::format("{} \"{}\": expected a number", std::string(what), std::string(text)));
  }
  return v;
}

absl::StatusOr<uint64_t> NumberArg(const TestCase& c, std::string_view key, uint64_t fallback) {
  if (!c.Has(key)) return fallback;
  return ParseNumber(c.Get(key), key);
}

// "a*8b." -> one byte per sector: 'a' x 8, 'b', 0 ('.' is a zero sector).
absl::StatusOr<std::string> ExpandData(std::string_view spec) {
  std::string out;
  size_t i = 0;
  while (i < spec.size()) {
    char ch = spec[i++] == '.' ? '\0' : spec[i - 1];
    uint64_t n = 1;
    if (i < spec.size() && spec[i] == '*') {
      size_t j = ++i;
      while (j < spec.size() && spec[j] >= '0' && spec[j] <= '9') ++j;
      ASSIGN_OR_RETURN(n, ParseNumber(spec.substr(i, j - i), "repeat count"));
      i = j;
    }
    out.append(n, ch);
  }
  if (out.empty()) return absl::InvalidArgumentError("a write needs data: one character a sector");
  return out;
}

// One byte a sector back into "a*8b.".
std::string CompressData(const std::string& bytes) {
  std::string out;
  for (size_t i = 0; i < bytes.size();) {
    size_t j = i;
    while (j < bytes.size() && bytes[j] == bytes[i]) ++j;
    out += bytes[i] ? bytes[i] : '.';
    if (j - i > 1) out += fmt::format("*{}", j - i);
    i = j;
  }
  return out;
}

std::string EntryList(const std::vector<uint64_t>& entries) {
  if (entries.empty()) return "-";
  std::vector<std::string> parts;
  for (uint64_t e : entries) parts.push_back(fmt::format("e{}", e));
  return absl::StrJoin(parts, " ");
}

absl::StatusOr<StateOptions> OptionsOf(const TestCase& c) {
  StateOptions o;
  ASSIGN_OR_RETURN(uint64_t k, NumberArg(c, "k", o.max_exhaustive));
  ASSIGN_OR_RETURN(uint64_t samples, NumberArg(c, "samples", o.samples));
  ASSIGN_OR_RETURN(uint64_t abo, NumberArg(c, "abo", o.max_all_but_one));
  ASSIGN_OR_RETURN(uint64_t torn_samples, NumberArg(c, "torn-samples", o.torn_samples));
  ASSIGN_OR_RETURN(uint64_t max_torn, NumberArg(c, "max-torn", o.max_torn_writes));
  o.max_exhaustive = static_cast<uint32_t>(k);
  o.samples = static_cast<uint32_t>(samples);
  o.max_all_but_one = static_cast<uint32_t>(abo);
  o.torn_samples = static_cast<uint32_t>(torn_samples);
  o.max_torn_writes = static_cast<uint32_t>(max_torn);
  if (c.Has("torn")) o.torn = c.Get("torn") != "off";
  if (c.Has("inflight")) o.torn_inflight = c.Get("inflight") != "off";
  return o;
}

// The id without "pc1_<trace hash>_": the part a case can pin.
std::string ShortId(const std::string& id) {
  size_t second = id.find('_', 4);
  return second == std::string::npos ? id : id.substr(second + 1);
}

// One input line of `trace` as a log entry: its header, mark text and data.
struct Entry {
  EntryHeader header;
  std::string mark;
  std::string data;
};

absl::StatusOr<Entry> EntryOf(const std::string& line, const std::vector<std::string>& words,
                              const DiskLayout& layout, uint32_t logical) {
  Entry entry;
  EntryHeader& h = entry.header;
  uint64_t disk = 1;
  std::vector<std::string> pos;
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w == "fua") {
      h.flags |= kFlagFua;
    } else if (w == "flush") {
      h.flags |= kFlagFlush;
    } else if (w.rfind("disk=", 0) == 0) {
      ASSIGN_OR_RETURN(disk, ParseNumber(w.substr(5), "disk"));
    } else {
      pos.push_back(w);
    }
  }
  if (disk < 1 || disk > layout.count()) {
    return absl::InvalidArgumentError(fmt::format("\"{}\": no disk {}", line, disk));
  }
  const uint64_t first = layout.OffsetOf(static_cast<uint32_t>(disk - 1)) / logical;
  auto want = [&](size_t n) -> absl::Status {
    if (pos.size() != n) {
      return absl::InvalidArgumentError(fmt::format(
          "\"{}\": expected write SECTOR DATA [fua] [flush] [disk=N] | flush [disk=N] | discard "
          "SECTOR COUNT [disk=N] | ack ID | mark TEXT",
          line));
    }
    return absl::OkStatus();
  };
  if (words[0] == "write") {
    RETURN_IF_ERROR(want(2));
    ASSIGN_OR_RETURN(uint64_t s, ParseNumber(pos[0], "sector"));
    ASSIGN_OR_RETURN(std::string bytes, ExpandData(pos[1]));
    h.sector = first + s;
    h.nr_sectors = bytes.size();
    for (char ch : bytes) entry.data.append(logical, ch);
  } else if (words[0] == "flush") {
    RETURN_IF_ERROR(want(0));
    h.flags |= kFlagFlush;
    h.sector = first;
  } else if (words[0] == "discard") {
    RETURN_IF_ERROR(want(2));
    ASSIGN_OR_RETURN(uint64_t s, ParseNumber(pos[0], "sector"));
    ASSIGN_OR_RETURN(uint64_t n, ParseNumber(pos[1], "count"));
    h.flags |= kFlagDiscard;
    h.sector = first + s;
    h.nr_sectors = n;
  } else if (words[0] == "ack" || words[0] == "mark") {
    RETURN_IF_ERROR(want(1));
    h.flags = kFlagMark;
    entry.mark = words[0] == "ack" ? "ack:" + pos[0] : pos[0];
  } else {
    return absl::InvalidArgumentError(fmt::format("\"{}\": unknown trace entry", line));
  }
  return entry;
}

// `parse`: what the parsers of --cache, --window, --points, --cache-per-disk, --sector and
// state ids make of their text, or their error.
absl::StatusOr<std::string> ParseCase(const TestCase& c) {
  std::string out;
  if (c.Has("model")) {
    auto m = ParseCacheModel(c.Get("model"));
    out += m.ok() ? fmt::format("model {} code {}\n", m->Name(), m->Code())
                  : fmt::format("error: {}\n", std::string(m.status().message()));
  }
  if (c.Has("window")) {
    CacheModel m;
    m.mode = CacheMode::kLying;
    auto s = ParseWindow(c.Get("window"), &m);
    out += s.ok() ? fmt::format("window {} {} code {}\n", m.window,
                                m.window_in_bytes ? "bytes" : "entries", m.Code())
                  : fmt::format("error: {}\n", std::string(s.message()));
  }
  if (c.Has("points")) {
    auto p = ParsePointSelection(c.Get("points"));
    out += p.ok() ? fmt::format("points every={} acks={} flushes={} sample={}\n", p->every_entry,
                                p->acks, p->flushes, p->sample)
                  : fmt::format("error: {}\n", std::string(p.status().message()));
  }
  if (c.Has("per-disk")) {
    std::vector<CacheModel> models;
    if (!c.Has("models")) return absl::InvalidArgumentError(c.Where() + ": needs models=(...)");
    for (const std::string& name : c.Find("models")->values) {
      ASSIGN_OR_RETURN(CacheModel m, ParseCacheModel(name));
      models.push_back(m);
    }
    ASSIGN_OR_RETURN(uint64_t disks, NumberArg(c, "disks", 2));
    auto s = ApplyCachePerDisk(c.Get("per-disk"), static_cast<uint32_t>(disks), &models);
    if (!s.ok()) {
      out += fmt::format("error: {}\n", std::string(s.message()));
    } else {
      for (const CacheModel& m : models) out += fmt::format("{} code {}\n", m.Name(), m.Code());
    }
  }
  if (c.Has("id")) {
    auto p = DecodeStateId(c.Get("id"));
    if (!p.ok()) {
      out += fmt::format("error: {}\n", std::string(p.status().message()));
    } else {
      const CrashState& s = p->state;
      out += fmt::format("trace {} model {} atomic {} point {} kept {}", p->trace_hash8,
                         s.model.Name(), s.model.atomic_unit, s.point, s.kept.Encode());
      if (s.torn_entry) {
        out += fmt::format(" torn e{} units {}", *s.torn_entry, s.torn_units.Encode());
      }
      out += fmt::format(" (re-encoded {})\n", EncodeStateId(p->trace_hash8, s));
    }
  }
  if (c.Has("sector")) {
    auto f = ParseSectorFormat(c.Get("sector"));
    if (f.ok()) {
      DiskGeometry g = GeometryOf(*f);
      out += fmt::format("sector {} logical {} physical {}\n", SectorFormatName(*f),
                         g.logical_sector, g.physical_sector);
    } else {
      out += fmt::format("error: {}\n", std::string(f.status().message()));
    }
  }
  if (out.empty()) return absl::InvalidArgumentError("parse: nothing to parse");
  return out;
}

// `subset`: which of n elements a subset spec holds.
absl::StatusOr<std::string> SubsetCase(const TestCase& c) {
  auto spec = SubsetSpec::Decode(c.Get("spec"));
  if (!spec.ok()) return fmt::format("error: {}\n", std::string(spec.status().message()));
  ASSIGN_OR_RETURN(uint64_t n, NumberArg(c, "n", 8));
  std::string bits;
  uint64_t in = 0;
  for (uint64_t i = 0; i < n; ++i) {
    bool has = spec->Contains(i, n);
    in += has;
    if (n <= 64) bits += has ? '1' : '0';
  }
  return n <= 64 ? bits + "\n" : fmt::format("{} of {}\n", in, n);
}

// The arguments each command takes: a misspelt one is an error, never silently a default.
absl::Status CheckArgs(const TestCase& c) {
  static const auto* const kModel = new std::vector<std::string>{"window", "atomic"};
  static const auto* const kStates = new std::vector<std::string>{
      "seed", "k", "samples", "abo", "torn", "inflight", "max-torn", "torn-samples"};
  static const auto* const kArgs = new std::map<std::string, std::vector<std::string>>{
      {"trace", {"sector", "sectors", "disks"}},
      {"parse", {"model", "window", "points", "per-disk", "models", "disks", "id", "sector"}},
      {"subset", {"spec", "n"}},
      {"view", {"model", "point", "+model"}},
      {"states", {"model", "point", "ids", "+model", "+states"}},
      {"ids", {"model", "point", "+model", "+states"}},
      {"count", {"model", "points", "+model", "+states"}},
      {"plan", {"model", "points", "+model", "+states"}},
      {"points", {"select", "seed", "flush-epoch"}},
      {"materialize", {"id"}},
      {"hashes", {"model", "states", "+model"}},
      {"contain", {"a", "b", "points", "+model", "+states"}},
      {"seeded", {"model", "point", "other", "+model", "+states"}},
  };
  auto it = kArgs->find(c.cmd);
  if (it == kArgs->end()) {
    return absl::InvalidArgumentError(fmt::format("{}: unknown command", c.Where()));
  }
  std::vector<std::string> keys;
  for (const std::string& k : it->second) {
    const std::vector<std::string>* more = k == "+model"    ? kModel
                                           : k == "+states" ? kStates
                                                            : nullptr;
    if (more) {
      keys.insert(keys.end(), more->begin(), more->end());
    } else {
      keys.push_back(k);
    }
  }
  for (const powercut::testing::CaseArg& a : c.args) {
    if (std::find(keys.begin(), keys.end(), a.key) == keys.end()) {
      return absl::InvalidArgumentError(fmt::format("{}: unknown argument \"{}\" (takes {})",
                                                    c.Where(), a.key, absl::StrJoin(keys, ", ")));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> StateCases::Run(const TestCase& c) {
  RETURN_IF_ERROR(CheckArgs(c));
  if (c.cmd == "trace") return Trace(c);
  if (c.cmd == "parse") return ParseCase(c);
  if (c.cmd == "subset") return SubsetCase(c);
  RETURN_IF_ERROR(NeedTrace(c));
  if (c.cmd == "view") return View(c);
  if (c.cmd == "states") return States(c);
  if (c.cmd == "count") return Count(c);
  if (c.cmd == "points") return Points(c);
  if (c.cmd == "ids") return Ids(c);
  if (c.cmd == "materialize") return Materialize(c);
  if (c.cmd == "hashes") return Hashes(c);
  if (c.cmd == "plan") return Plan(c);
  if (c.cmd == "contain") return Contain(c);
  if (c.cmd == "seeded") return Seeded(c);
  return absl::InvalidArgumentError(fmt::format("unknown command \"{}\"", c.cmd));
}

absl::Status StateCases::NeedTrace(const TestCase& c) const {
  if (index_ == nullptr) {
    return absl::FailedPreconditionError(
        fmt::format("{}: needs a `trace` command before it in the file", c.Where()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> StateCases::Trace(const TestCase& c) {
  image_.reset();
  index_.reset();
  file_.reset();
  dir_ = std::make_unique<testing::TempDir>();
  ASSIGN_OR_RETURN(SectorFormat format, ParseSectorFormat(c.Get("sector", "512n")));
  DiskGeometry geometry = GeometryOf(format);
  logical_ = geometry.logical_sector;
  physical_ = geometry.physical_sector;
  ASSIGN_OR_RETURN(sectors_, NumberArg(c, "sectors", physical_ / logical_ * 4));
  ASSIGN_OR_RETURN(uint64_t disks, NumberArg(c, "disks", 1));
  layout_ = DiskLayout::Packed(std::vector<uint64_t>(disks, sectors_ * logical_));
  log_ = dir_->File("t.log");
  base_ = dir_->File("base.img");
  // A one-disk layout is empty (the plain layout of every single-disk trace).
  const uint64_t total = layout_.several() ? layout_.total_bytes() : sectors_ * logical_;
  testing::MakeImage(base_, total);
  ASSIGN_OR_RETURN(auto writer, TraceWriter::Create({log_, logical_}));

  std::istringstream lines(c.input);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (words.empty() || words[0][0] == '#') continue;
    ASSIGN_OR_RETURN(Entry entry, EntryOf(line, words, layout_, logical_));
    RETURN_IF_ERROR(
        writer->Append(entry.header, entry.mark,
                       absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(entry.data.data()),
                                           entry.data.size())));
  }
  RETURN_IF_ERROR(writer->Finish());
  ASSIGN_OR_RETURN(TraceManifest manifest,
                   MakeManifest(base_, logical_, OrderSemantics::kCompletion, writer->entries()));
  manifest.logical_sector = logical_;
  manifest.physical_sector = physical_;
  if (layout_.several()) {
    for (const auto& extent : layout_.extents()) {
      manifest.disks.push_back({.offset = extent.offset,
                                .bytes = extent.bytes,
                                .logical_sector = logical_,
                                .physical_sector = physical_});
    }
  }
  RETURN_IF_ERROR(WriteManifest(ManifestPathFor(log_), manifest));
  ASSIGN_OR_RETURN(file_, TraceFile::Open(log_, {.device_bytes = total, .disks = layout_}));
  index_ = std::make_unique<TraceIndex>(file_->trace());

  return ListEntries();
}

std::string StateCases::ListEntries() const {
  const harness::Trace& t = file_->trace();
  std::string out;
  for (const TraceEntry& e : t.entries) {
    std::string text = fmt::format("e{} ", e.index);
    const uint64_t first = layout_.OffsetOf(e.disk) / logical_;
    if (e.is_mark()) {
      text += e.mark;
    } else if (e.is_discard()) {
      text += fmt::format("discard {} {}", e.header.sector - first, e.header.nr_sectors);
    } else if (e.header.nr_sectors == 0) {
      text += "flush";
    } else {
      std::string bytes;
      auto d = file_->data(e);
      for (uint64_t s = 0; s < e.header.nr_sectors; ++s) {
        bytes += static_cast<char>(d[s * logical_]);
      }
      text += fmt::format("write {} {}", e.header.sector - first, CompressData(bytes));
      if (e.is_flush()) text += " flush";
    }
    if (e.is_fua()) text += " fua";
    if (t.disks > 1 && !e.is_mark()) text += fmt::format(" disk={}", e.disk + 1);
    out += text + "\n";
  }
  return out;
}

absl::StatusOr<CacheModel> StateCases::ModelOf(const TestCase& c, const std::string& key) const {
  if (!c.Has(key)) return absl::InvalidArgumentError(fmt::format("{}: needs {}=", c.Where(), key));
  ASSIGN_OR_RETURN(CacheModel m, ParseCacheModel(c.Get(key)));
  if (c.Has("window")) RETURN_IF_ERROR(ParseWindow(c.Get("window"), &m));
  ASSIGN_OR_RETURN(uint64_t unit, NumberArg(c, "atomic", physical_));
  // As the engine resolves it: --atomic, else the disk's physical sector.
  m.atomic_unit = static_cast<uint32_t>(unit);
  return m;
}

std::string StateCases::SignatureOf(const std::string& path) const {
  std::vector<uint8_t> img = testing::ReadAll(path);
  std::string sig;
  for (uint32_t d = 0; d < layout_.count(); ++d) {
    if (d) sig += '|';
    const uint64_t at = layout_.OffsetOf(d);
    for (uint64_t s = 0; s < sectors_; ++s) {
      const uint64_t group = physical_ / logical_;  // logical sectors a physical one
      if (group > 1 && s && s % group == 0) sig += ' ';
      uint8_t b = img[at + s * logical_];
      sig += b ? static_cast<char>(b) : '.';
    }
  }
  return sig;
}

absl::Status StateCases::UseGranule(uint32_t granule) {
  if (image_ != nullptr && image_granule_ == granule) return absl::OkStatus();
  image_.reset();
  ASSIGN_OR_RETURN(image_,
                   WorkingImage::Create(dir_->File("work.img"), base_, file_.get(), granule));
  image_granule_ = granule;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<StateCases::Built>> StateCases::Build(uint64_t point,
                                                                 const CacheModel& model,
                                                                 const StateOptions& options,
                                                                 uint64_t seed) {
  RETURN_IF_ERROR(UseGranule(std::min(logical_, model.atomic_unit)));
  PointView view = index_->View(point, model);
  std::vector<CrashState> states;
  StatesAtPoint(*index_, view, model, options, seed, &states);
  std::vector<Built> out;
  for (const CrashState& s : states) {
    RETURN_IF_ERROR(image_->Materialize(s, view));
    out.push_back({SignatureOf(image_->path()), image_->content_hash(),
                   ShortId(EncodeStateId(file_->trace().ShortHash(), s))});
  }
  return out;
}

absl::StatusOr<StateCases::PointArgs> StateCases::PointArgsOf(const TestCase& c) const {
  PointArgs a;
  ASSIGN_OR_RETURN(a.model, ModelOf(c));
  ASSIGN_OR_RETURN(a.options, OptionsOf(c));
  ASSIGN_OR_RETURN(a.point, NumberArg(c, "point", 0));
  ASSIGN_OR_RETURN(a.seed, NumberArg(c, "seed", 1));
  return a;
}

absl::StatusOr<std::string> StateCases::View(const TestCase& c) {
  ASSIGN_OR_RETURN(CacheModel model, ModelOf(c));
  std::vector<uint64_t> points;
  if (c.Has("point")) {
    ASSIGN_OR_RETURN(uint64_t p, NumberArg(c, "point", 0));
    points.push_back(p);
  } else {
    for (uint64_t p = 1; p <= file_->trace().entries.size(); ++p) points.push_back(p);
  }
  std::string out;
  for (uint64_t p : points) {
    PointView v = index_->View(p, model);
    out += fmt::format("p{}: volatile {} | in flight {}", p, EntryList(v.volatile_entries),
                       v.inflight ? fmt::format("e{}", *v.inflight) : "-");
    if (!v.inflight_other_disks.empty()) {
      out += fmt::format(" | other disks in flight {}", EntryList(v.inflight_other_disks));
    }
    out += fmt::format(" | acks before {}\n", index_->AcksBefore(p));
  }
  return out;
}

absl::StatusOr<std::string> StateCases::States(const TestCase& c) {
  ASSIGN_OR_RETURN(PointArgs args, PointArgsOf(c));
  const auto& [model, options, point, seed] = args;
  ASSIGN_OR_RETURN(std::vector<Built> built, Build(point, model, options, seed));
  // Sorted by image, so that the output does not depend on the generator's order.
  std::map<std::string, std::vector<std::string>> by_image;
  std::set<std::pair<uint64_t, uint64_t>> hashes;
  for (const Built& b : built) {
    by_image[b.image].push_back(b.id);
    hashes.insert({b.hash.high, b.hash.low});
  }
  std::string out = fmt::format("{} states, {} distinct images\n", built.size(), hashes.size());
  if (hashes.size() != by_image.size()) {
    out += fmt::format("content hashes disagree with the images: {} hashes for {} images\n",
                       hashes.size(), by_image.size());
  }
  for (auto& [image, ids] : by_image) {
    if (c.Has("ids")) {
      std::sort(ids.begin(), ids.end());
      out += fmt::format("{}  {}\n", image, absl::StrJoin(ids, " "));
    } else {
      out += ids.size() > 1 ? fmt::format("{}  x{}\n", image, ids.size()) : image + "\n";
    }
  }
  return out;
}

absl::StatusOr<std::string> StateCases::Count(const TestCase& c) {
  ASSIGN_OR_RETURN(CacheModel model, ModelOf(c));
  ASSIGN_OR_RETURN(StateOptions options, OptionsOf(c));
  ASSIGN_OR_RETURN(uint64_t seed, NumberArg(c, "seed", 1));
  ASSIGN_OR_RETURN(PointSelection selection, ParsePointSelection(c.Get("points", "ack,flush")));
  std::string out;
  uint64_t total = 0;
  for (uint64_t p : SelectPoints(*index_, selection, seed, false)) {
    ASSIGN_OR_RETURN(std::vector<Built> built, Build(p, model, options, seed));
    std::set<std::pair<uint64_t, uint64_t>> hashes;
    uint64_t torn = 0;
    for (const Built& b : built) {
      hashes.insert({b.hash.high, b.hash.low});
      torn += b.id.find("_t") != std::string::npos;
    }
    total += built.size();
    out += fmt::format("p{}: {} states ({} torn), {} distinct images\n", p, built.size(), torn,
                       hashes.size());
  }
  out += fmt::format("total {} states\n", total);
  return out;
}

absl::StatusOr<std::string> StateCases::Points(const TestCase& c) {
  ASSIGN_OR_RETURN(PointSelection selection, ParsePointSelection(c.Get("select", "ack,flush")));
  ASSIGN_OR_RETURN(uint64_t seed, NumberArg(c, "seed", 1));
  const bool epoch = c.Has("flush-epoch");
  ExactPointCounts counts;
  std::vector<uint64_t> points = SelectPoints(*index_, selection, seed, epoch, &counts);
  std::string out = "points:";
  for (uint64_t p : points) out += fmt::format(" {}", p);
  out += "\n";
  if (epoch) {
    // ExactForCacheOff's answer for the FUA writes, the only entries it is meant for.
    std::vector<uint64_t> exact, inexact;
    std::vector<bool> e = ExactForCacheOff(file_->trace());
    for (const TraceEntry& entry : file_->trace().entries) {
      if (!entry.is_fua() || !entry.changes_content()) continue;
      (e[entry.index] ? exact : inexact).push_back(entry.index);
    }
    out += fmt::format(
        "kept after a flush {}, after an exact FUA {}; skipped FUA {}, other {}\nFUA writes "
        "exact for cache off: {}; not: {}\n",
        counts.after_flush, counts.after_fua, counts.fua_skipped, counts.other_skipped,
        EntryList(exact), EntryList(inexact));
  }
  return out;
}

absl::StatusOr<std::string> StateCases::Ids(const TestCase& c) {
  ASSIGN_OR_RETURN(PointArgs args, PointArgsOf(c));
  const auto& [model, options, point, seed] = args;
  RETURN_IF_ERROR(UseGranule(std::min(logical_, model.atomic_unit)));
  PointView view = index_->View(point, model);
  std::vector<CrashState> states;
  StatesAtPoint(*index_, view, model, options, seed, &states);
  std::vector<std::string> lines;
  const std::string rebuilt = dir_->File("materialized.img");
  for (const CrashState& state : states) {
    RETURN_IF_ERROR(image_->Materialize(state, view));
    const std::string id = EncodeStateId(file_->trace().ShortHash(), state);
    std::string line = ShortId(id) + "  " + SignatureOf(image_->path());
    auto parsed = DecodeStateId(id);
    if (!parsed.ok() || EncodeStateId(parsed->trace_hash8, parsed->state) != id) {
      line += " (does not round-trip)";
    }
    // `state materialize` rebuilds the same image from the files alone.
    absl::Status s = MaterializeState(log_, base_, id, rebuilt);
    if (!s.ok()) {
      line += fmt::format(" (materialize failed: {})", std::string(s.message()));
    } else if (testing::ReadAll(rebuilt) != testing::ReadAll(image_->path())) {
      line += " (materialize built another image: " + SignatureOf(rebuilt) + ")";
    }
    lines.push_back(line);
  }
  std::sort(lines.begin(), lines.end());
  return absl::StrJoin(lines, "\n") + "\n";
}

absl::StatusOr<std::string> StateCases::Materialize(const TestCase& c) {
  std::string id = c.Get("id");
  size_t h = id.find("%h");
  if (h != std::string::npos) id.replace(h, 2, file_->trace().ShortHash());
  const std::string out_path = dir_->File("materialized.img");
  absl::Status s = MaterializeState(log_, base_, id, out_path);
  if (!s.ok()) {
    std::string message(s.message());
    const std::string hash = file_->trace().ShortHash();
    for (size_t at; (at = message.find(hash)) != std::string::npos;) message.replace(at, 8, "%h");
    for (size_t at; (at = message.find(log_)) != std::string::npos;) {
      message.replace(at, log_.size(), "LOG");
    }
    return fmt::format("error: {}\n", message);
  }
  return SignatureOf(out_path) + "\n";
}

absl::StatusOr<std::string> StateCases::Hashes(const TestCase& c) {
  ASSIGN_OR_RETURN(CacheModel model, ModelOf(c));
  RETURN_IF_ERROR(UseGranule(std::min(logical_, model.atomic_unit)));
  std::vector<std::pair<uint64_t, uint64_t>> seen;
  std::string out;
  if (!c.Has("states")) {
    return absl::InvalidArgumentError(c.Where() + ": needs states=(P:KEPT, ...)");
  }
  for (const std::string& state : c.Find("states")->values) {
    // POINT:KEPT, e.g. 4:A, 5:N, 6:X0.
    size_t colon = state.find(':');
    ASSIGN_OR_RETURN(uint64_t point, ParseNumber(state.substr(0, colon), "point"));
    CrashState s;
    s.point = point;
    s.model = model;
    if (colon != std::string::npos) {
      ASSIGN_OR_RETURN(s.kept, SubsetSpec::Decode(state.substr(colon + 1)));
    }
    RETURN_IF_ERROR(image_->Materialize(s, index_->View(point, model)));
    Hash128 h = image_->content_hash();
    std::string label = "base";
    if (!(h == Hash128{})) {
      auto key = std::make_pair(h.high, h.low);
      auto it = std::find(seen.begin(), seen.end(), key);
      if (it == seen.end()) {
        seen.push_back(key);
        it = seen.end() - 1;
      }
      label = fmt::format("h{}", it - seen.begin() + 1);
    }
    out += fmt::format("{}: {} {}\n", state, SignatureOf(image_->path()), label);
  }
  return out;
}

absl::StatusOr<std::string> StateCases::Plan(const TestCase& c) {
  ASSIGN_OR_RETURN(CacheModel model, ModelOf(c));
  ASSIGN_OR_RETURN(StateOptions options, OptionsOf(c));
  ASSIGN_OR_RETURN(uint64_t seed, NumberArg(c, "seed", 1));
  ASSIGN_OR_RETURN(PointSelection selection, ParsePointSelection(c.Get("points", "ack,flush")));
  std::vector<uint64_t> points = SelectPoints(*index_, selection, seed, false);
  std::multiset<std::string> generated;
  for (uint64_t p : points) {
    std::vector<CrashState> states;
    StatesAtPoint(*index_, index_->View(p, model), model, options, seed, &states);
    for (const CrashState& s : states) generated.insert(EncodeStateId("", s));
  }
  StatePlan plan(*index_, model, options, seed, points);
  std::multiset<std::string> planned;
  std::vector<CrashState> batch;
  while (plan.Next(16, &batch)) {
    for (const CrashState& s : batch) planned.insert(EncodeStateId("", s));
    batch.clear();
  }
  return fmt::format("{} states at {} points; size() {}; the generator's states, each once: {}\n",
                     planned.size(), points.size(), plan.size(),
                     planned == generated ? "yes" : "no");
}

absl::StatusOr<std::string> StateCases::Contain(const TestCase& c) {
  ASSIGN_OR_RETURN(CacheModel small, ModelOf(c, "a"));
  ASSIGN_OR_RETURN(CacheModel large, ModelOf(c, "b"));
  ASSIGN_OR_RETURN(StateOptions options, OptionsOf(c));
  ASSIGN_OR_RETURN(PointSelection selection, ParsePointSelection(c.Get("points", "every")));
  std::string yes, no;
  for (uint64_t p : SelectPoints(*index_, selection, 1, false)) {
    std::set<std::string> a, b;
    ASSIGN_OR_RETURN(std::vector<Built> built_a, Build(p, small, options, 1));
    ASSIGN_OR_RETURN(std::vector<Built> built_b, Build(p, large, options, 1));
    for (const Built& x : built_a) a.insert(x.image);
    for (const Built& x : built_b) b.insert(x.image);
    std::vector<std::string> missing;
    std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(missing));
    if (missing.empty()) {
      yes += fmt::format(" {}", p);
    } else {
      no += fmt::format("p{}: {} of {}'s images not in {}'s: {}\n", p, missing.size(), small.Name(),
                        large.Name(), absl::StrJoin(missing, ", "));
    }
  }
  return fmt::format("{} images within {}'s at points:{}\n{}", small.Name(), large.Name(),
                     yes.empty() ? " none" : yes, no);
}

absl::StatusOr<std::string> StateCases::Seeded(const TestCase& c) {
  ASSIGN_OR_RETURN(PointArgs args, PointArgsOf(c));
  ASSIGN_OR_RETURN(uint64_t other, NumberArg(c, "other", args.seed + 1));
  auto ids = [&](uint64_t s) {
    std::vector<CrashState> states;
    StatesAtPoint(*index_, index_->View(args.point, args.model), args.model, args.options, s,
                  &states);
    std::vector<std::string> out;
    for (const CrashState& st : states) out.push_back(EncodeStateId("", st));
    return out;
  };
  return fmt::format(
      "seed {} twice: {}; seed {}: {}\n", args.seed,
      ids(args.seed) == ids(args.seed) ? "the same states in the same order" : "different", other,
      ids(args.seed) == ids(other) ? "the same states" : "different states");
}

}  // namespace powercut::harness
