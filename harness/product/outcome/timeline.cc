#include "harness/product/outcome/timeline.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "fmt/format.h"
#include "harness/trace/manifest.h"
#include "harness/trace/trace_reader.h"

namespace powercut::product {

absl::StatusOr<Timeline> BuildTimeline(const std::string& trace_path,
                                       const harness::CheckReport& report) {
  auto layout = harness::LayoutBeside(trace_path);
  if (!layout.ok()) return layout.status();
  auto file = harness::TraceFile::Open(trace_path, {.disks = *layout});
  if (!file.ok()) return file.status();
  Timeline t;
  const bool several = (*file)->trace().disks > 1;
  if (several) t.member = report.set_member;
  absl::flat_hash_map<std::string, uint64_t> ack_entry;
  for (const harness::TraceEntry& e : (*file)->trace().entries) {
    char kind = 'w';
    if (e.is_mark()) {
      kind = e.mark.rfind("ack:", 0) == 0 ? 'a' : 'm';
      if (kind == 'a') {
        t.acks.emplace_back(e.index, e.mark.substr(4));
        ack_entry.try_emplace(e.mark.substr(4), e.index);
      }
    } else if (e.is_discard()) {
      kind = 'd';
    } else if (e.is_flush()) {
      kind = e.header.nr_sectors > 0 ? 'F' : 'f';
    } else if (e.is_fua()) {
      kind = 'u';
    }
    t.kinds.push_back(kind);
    if (several) t.disks.push_back(static_cast<char>('0' + std::min<uint32_t>(e.disk, 9)));
  }
  for (const harness::ModelResult& m : report.results) {
    // The worst state (most acks lost), the one the tables' "lost max" column counts.
    const std::optional<harness::Verdict>& worst =
        m.worst_violation ? m.worst_violation : m.first_violation;
    if (!worst) continue;
    const harness::Verdict& v = *worst;
    TimelineCrash c{.cache = m.model.Name(),
                    .state = v.state_id,
                    .point = v.point,
                    .lost = v.lost,
                    .dropped = v.dropped,
                    .torn = v.torn_entry,
                    .summary = v.Describe(),
                    .repro = v.repro};
    for (const std::string& id : v.lost) {
      auto it = ack_entry.find(id);
      if (it != ack_entry.end()) c.lost_entries.push_back(it->second);
    }
    t.crashes.push_back(std::move(c));
  }
  return t;
}

nlohmann::json TimelineToJson(const Timeline& t) {
  nlohmann::json acks = nlohmann::json::array();
  for (const auto& [entry, id] : t.acks) acks.push_back({entry, id});
  nlohmann::json crashes = nlohmann::json::array();
  for (const TimelineCrash& c : t.crashes) {
    crashes.push_back({{"cache", c.cache},
                       {"state", c.state},
                       {"point", c.point},
                       {"lost", c.lost},
                       {"lost_entries", c.lost_entries},
                       {"dropped", c.dropped},
                       {"torn", c.torn ? nlohmann::json(*c.torn) : nlohmann::json(nullptr)},
                       {"summary", c.summary}});
    if (!c.repro.empty()) crashes.back()["repro"] = c.repro;
  }
  nlohmann::json j = {{"kinds", t.kinds}, {"acks", acks}, {"crashes", crashes}};
  if (!t.disks.empty()) j["disks"] = t.disks;
  if (t.member == harness::SetMember::kNode) j["member"] = harness::SetMemberName(t.member);
  return j;
}

absl::StatusOr<Timeline> TimelineFromJson(const nlohmann::json& j) {
  try {
    Timeline t;
    t.kinds = j.at("kinds").get<std::string>();
    t.disks = j.value("disks", "");
    if (j.value("member", "") == harness::SetMemberName(harness::SetMember::kNode)) {
      t.member = harness::SetMember::kNode;
    }
    for (const auto& a : j.at("acks")) {
      t.acks.emplace_back(a.at(0).get<uint64_t>(), a.at(1).get<std::string>());
    }
    for (const auto& c : j.at("crashes")) {
      TimelineCrash crash{.cache = c.at("cache").get<std::string>(),
                          .state = c.at("state").get<std::string>(),
                          .point = c.at("point").get<uint64_t>(),
                          .lost = c.at("lost").get<std::vector<std::string>>(),
                          .lost_entries = c.at("lost_entries").get<std::vector<uint64_t>>(),
                          .dropped = c.at("dropped").get<std::vector<uint64_t>>(),
                          .summary = c.value("summary", ""),
                          .repro = c.value("repro", "")};
      if (!c.at("torn").is_null()) crash.torn = c.at("torn").get<uint64_t>();
      t.crashes.push_back(std::move(crash));
    }
    return t;
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(fmt::format("timeline: {}", e.what()));
  }
}

}  // namespace powercut::product
