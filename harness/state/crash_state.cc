#include "harness/state/crash_state.h"

#include <charconv>
#include <vector>

#include "fmt/format.h"

namespace powercut::harness {
namespace {

uint64_t Mix64(uint64_t x) {  // splitmix64 finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

bool ParseHex(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 16) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, 16);
  return ec == std::errc() && ptr == s.data() + s.size();
}

bool ParseDec(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, 10);
  return ec == std::errc() && ptr == s.data() + s.size();
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      parts.push_back(s.substr(start));
      return parts;
    }
    parts.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

}  // namespace

bool SubsetSpec::Contains(uint64_t i, uint64_t n) const {
  switch (kind) {
    case kAll:
      return true;
    case kNone:
      return false;
    case kAllBut:
      return i != value;
    case kFirst:
      return i < value;
    case kLast:
      return i + value >= n;
    case kMask:
      return i < 64 && ((value >> i) & 1);
    case kRandom:
      return Mix64(value ^ Mix64(i)) & 1;
  }
  return false;
}

std::string SubsetSpec::Encode() const {
  if (kind == kAll || kind == kNone) return std::string(1, static_cast<char>(kind));
  return fmt::format("{}{:x}", static_cast<char>(kind), value);
}

absl::StatusOr<SubsetSpec> SubsetSpec::Decode(std::string_view text) {
  SubsetSpec s;
  if (text.empty()) return absl::InvalidArgumentError("empty subset spec");
  char k = text[0];
  std::string_view rest = text.substr(1);
  switch (k) {
    case 'A':
    case 'N':
      if (!rest.empty()) break;
      s.kind = static_cast<Kind>(k);
      return s;
    case 'X':
    case 'F':
    case 'L':
    case 'M':
    case 'R':
      if (!ParseHex(rest, &s.value)) break;
      s.kind = static_cast<Kind>(k);
      return s;
    default:
      break;
  }
  return absl::InvalidArgumentError(fmt::format(
      "subset \"{}\": expected A, N, X<hex>, F<hex>, L<hex>, M<hex> or R<hex>", std::string(text)));
}

std::string EncodeStateId(std::string_view trace_hash8, const CrashState& s) {
  std::string id = fmt::format("pc1_{}_{}_a{}_p{}_k{}", std::string(trace_hash8), s.model.Code(),
                               s.model.UnitCode(), s.point, s.kept.Encode());
  if (s.torn_entry) id += fmt::format("_t{}.{}", *s.torn_entry, s.torn_units.Encode());
  return id;
}

absl::StatusOr<ParsedStateId> DecodeStateId(std::string_view id) {
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(fmt::format(
        "state id \"{}\": {} (expected pc1_<trace>_<model>_a<unit>_p<point>_k<kept>[_t<entry>."
        "<units>], as printed by `powercut check`)",
        std::string(id), why));
  };
  std::vector<std::string_view> parts = Split(id, '_');
  if (parts.size() < 6 || parts.size() > 7) return bad("wrong number of fields");
  if (parts[0] != "pc1") return bad("unknown version prefix");
  ParsedStateId out;
  if (parts[1].size() != 8) return bad("trace hash is not 8 hex digits");
  out.trace_hash8 = std::string(parts[1]);
  auto model = ParseCacheModel(parts[2]);
  if (!model.ok()) return bad(std::string(model.status().message()));
  out.state.model = *model;
  // One unit for every disk (a4096), or one per disk of a set (a512.4096).
  if (parts[3].size() < 2 || parts[3][0] != 'a') return bad("atomic unit must be a512 or a4096");
  const std::vector<std::string_view> unit_texts = Split(parts[3].substr(1), '.');
  for (std::string_view text : unit_texts) {
    uint64_t unit = 0;
    if (!ParseDec(text, &unit) || (unit != 512 && unit != 4096)) {
      return bad("atomic unit must be a512 or a4096 (per disk: a512.4096)");
    }
    if (unit_texts.size() > 1) out.state.model.disk_units.push_back(static_cast<uint32_t>(unit));
    if (out.state.model.atomic_unit == 0) out.state.model.atomic_unit = static_cast<uint32_t>(unit);
  }
  if (parts[4].size() < 2 || parts[4][0] != 'p' ||
      !ParseDec(parts[4].substr(1), &out.state.point)) {
    return bad("bad point");
  }
  if (parts[5].size() < 2 || parts[5][0] != 'k') return bad("bad kept set");
  auto kept = SubsetSpec::Decode(parts[5].substr(1));
  if (!kept.ok()) return bad(std::string(kept.status().message()));
  out.state.kept = *kept;
  if (parts.size() == 7) {
    std::string_view t = parts[6];
    size_t dot = t.find('.');
    uint64_t entry = 0;
    if (t.size() < 4 || t[0] != 't' || dot == std::string_view::npos ||
        !ParseDec(t.substr(1, dot - 1), &entry)) {
      return bad("bad torn write");
    }
    auto units = SubsetSpec::Decode(t.substr(dot + 1));
    if (!units.ok()) return bad(std::string(units.status().message()));
    out.state.torn_entry = entry;
    out.state.torn_units = *units;
  }
  return out;
}

}  // namespace powercut::harness
