#include "harness/product/outcome/node_cut_results.h"

#include <algorithm>

#include "fmt/format.h"
#include "fmt/ranges.h"

namespace powercut::product {

using nlohmann::json;

namespace {

bool Counts(const NodeCut& c) { return c.error.empty() && c.fired; }

}  // namespace

uint64_t NodeCutsResult::Counted() const {
  return static_cast<uint64_t>(std::count_if(cuts.begin(), cuts.end(), Counts));
}
uint64_t NodeCutsResult::InModel() const {
  return static_cast<uint64_t>(std::count_if(
      cuts.begin(), cuts.end(), [](const NodeCut& c) { return Counts(c) && c.in_model; }));
}
uint64_t NodeCutsResult::Violations() const {
  return static_cast<uint64_t>(std::count_if(
      cuts.begin(), cuts.end(), [](const NodeCut& c) { return Counts(c) && c.violation(); }));
}
uint64_t NodeCutsResult::Unavailable() const {
  return static_cast<uint64_t>(std::count_if(cuts.begin(), cuts.end(), [](const NodeCut& c) {
    return Counts(c) && !c.unavailable.empty();
  }));
}
uint64_t NodeCutsResult::Errors() const {
  return static_cast<uint64_t>(
      std::count_if(cuts.begin(), cuts.end(), [](const NodeCut& c) { return !c.error.empty(); }));
}
uint64_t NodeCutsResult::Uncut() const {
  return static_cast<uint64_t>(std::count_if(
      cuts.begin(), cuts.end(), [](const NodeCut& c) { return c.error.empty() && !c.fired; }));
}

std::string NodeCutsResult::Summary() const {
  double seconds = 0;
  for (const NodeCut& c : cuts) seconds += c.record_seconds;
  std::string s = fmt::format(
      "{} of {} node cuts inside the model (cache on), {} violating, {} unavailable, {:.1f} s per "
      "cut",
      InModel(), Counted(), Violations(), Unavailable(),
      cuts.empty() ? 0.0 : seconds / static_cast<double>(cuts.size()));
  if (Errors() > 0) s += fmt::format("; {} could not be made or judged", Errors());
  if (Uncut() > 0) {
    s += fmt::format("; {} not cut (the workload ended before the planned instant)", Uncut());
  }
  return s;
}

std::string NodeCutsText(const NodeCutsResult& r) {
  std::string s;
  for (const NodeCut& c : r.cuts) {
    s += fmt::format("node cut seed {}: node {}", c.seed, c.node);
    if (!c.error.empty()) {
      s += ": COULD NOT CUT: " + c.error + "\n";
      continue;
    }
    if (!c.fired) {
      s += fmt::format(", planned after ack {}: the workload ended first (not cut)\n", c.after_ack);
      continue;
    }
    s += fmt::format(
        " lost its power at {:.2f} s, after ack {} (trace entry {}); its drive held {} volatile "
        "writes ({} kept, {} dropped, {} torn); {}; back after {:.1f} s; ",
        c.at_seconds, c.acks_before_cut, c.point, c.volatile_writes, c.kept, c.dropped, c.torn,
        c.in_model ? "inside the model" : "OUTSIDE THE MODEL (tester bug): " + c.evidence,
        c.down_seconds);
    if (!c.unavailable.empty()) {
      s += "UNAVAILABLE: " + c.unavailable;
    } else if (c.violation()) {
      s += fmt::format("FAIL: the live cluster lost {} of {} acks [{}]", c.lost.size(), c.acks,
                       fmt::join(c.lost, " "));
      if (!c.corrupt.empty()) s += fmt::format(", corrupt [{}]", fmt::join(c.corrupt, " "));
    } else {
      s += fmt::format("pass: the live cluster holds all {} acks", c.acks);
    }
    s += "\n";
  }
  return s + "node cuts: " + r.Summary() + "\n";
}

json NodeCutsToJson(const NodeCutsResult& r) {
  json cuts = json::array();
  for (const NodeCut& c : r.cuts) {
    cuts.push_back({{"seed", c.seed},
                    {"node", c.node},
                    {"after_ack", c.after_ack},
                    {"delay_ms", c.delay_ms},
                    {"down_ms", c.down_ms},
                    {"fired", c.fired},
                    {"acks_before_cut", c.acks_before_cut},
                    {"at_seconds", c.at_seconds},
                    {"down_seconds", c.down_seconds},
                    {"point", c.point},
                    {"volatile_writes", c.volatile_writes},
                    {"kept", c.kept},
                    {"dropped", c.dropped},
                    {"torn", c.torn},
                    {"in_model", c.in_model},
                    {"state_id", c.state_id},
                    {"evidence", c.evidence},
                    {"acks", c.acks},
                    {"lost", c.lost},
                    {"corrupt", c.corrupt},
                    {"unavailable", c.unavailable},
                    {"checker_stderr", c.checker_stderr},
                    {"record_seconds", c.record_seconds},
                    {"recording", c.recording},
                    {"error", c.error}});
  }
  return {
      {"requested", r.requested},     {"counted", r.Counted()},         {"in_model", r.InModel()},
      {"violations", r.Violations()}, {"unavailable", r.Unavailable()}, {"errors", r.Errors()},
      {"uncut", r.Uncut()},           {"summary", r.Summary()},         {"cuts", cuts}};
}

NodeCutsResult NodeCutsFromJson(const json& j) {
  NodeCutsResult r;
  r.requested = j.value("requested", uint64_t{0});
  for (const json& c : j.value("cuts", json::array())) {
    NodeCut n;
    n.seed = c.value("seed", uint64_t{0});
    n.node = c.value("node", uint32_t{0});
    n.after_ack = c.value("after_ack", uint64_t{0});
    n.delay_ms = c.value("delay_ms", uint64_t{0});
    n.down_ms = c.value("down_ms", uint64_t{0});
    n.fired = c.value("fired", false);
    n.acks_before_cut = c.value("acks_before_cut", uint64_t{0});
    n.at_seconds = c.value("at_seconds", 0.0);
    n.down_seconds = c.value("down_seconds", 0.0);
    n.point = c.value("point", uint64_t{0});
    n.volatile_writes = c.value("volatile_writes", uint64_t{0});
    n.kept = c.value("kept", uint64_t{0});
    n.dropped = c.value("dropped", uint64_t{0});
    n.torn = c.value("torn", uint64_t{0});
    n.in_model = c.value("in_model", false);
    n.state_id = c.value("state_id", "");
    n.evidence = c.value("evidence", "");
    n.acks = c.value("acks", uint64_t{0});
    n.lost = c.value("lost", std::vector<std::string>{});
    n.corrupt = c.value("corrupt", std::vector<std::string>{});
    n.unavailable = c.value("unavailable", "");
    n.checker_stderr = c.value("checker_stderr", "");
    n.record_seconds = c.value("record_seconds", 0.0);
    n.recording = c.value("recording", "");
    n.error = c.value("error", "");
    r.cuts.push_back(std::move(n));
  }
  return r;
}

}  // namespace powercut::product
