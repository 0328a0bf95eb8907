// The fault modes' verdicts as rows of a cell's models (cell_result.h, AppendFaultModels).
#include <algorithm>

#include "base/xml_escape.h"
#include "fmt/format.h"
#include "harness/product/cell/cell_result.h"

namespace powercut::product {

using powercut::XmlEscape;

void AppendFaultModels(CellResult* cell) {
  if (cell->live_cuts) {
    const LiveCutsResult& r = *cell->live_cuts;
    CellModel m{.cache = std::string(ModelKindName(ModelKind::kLive)),
                .kind = ModelKind::kLive,
                .points = r.Counted(),
                .states = r.Counted(),
                .checked = r.Counted(),
                .violations = r.Violations()};
    m.states_planned = r.Counted();
    for (const LiveCut& c : r.cuts) {
      if (!c.error.empty()) continue;
      m.fs_unrecoverable += c.fs_unrecoverable;
      m.lost_acks_max = std::max<uint64_t>(m.lost_acks_max, c.lost.size());
      if (!c.in_model && m.summary.empty()) {
        m.summary = fmt::format("TESTER BUG: live cut seed {} is outside the replay model: {}",
                                c.seed, c.evidence);
      }
      if (!c.unavailable.empty() && m.unavailable++ == 0) {  // a cluster that did not come back
        m.first_unavailable = c.state_id;
        m.unavailable_summary = fmt::format("live cut seed {}: {}", c.seed, c.summary);
        m.unavailable_stderr = c.unavailable_stderr;
      }
      if (c.violation && m.first_violation.empty()) {
        m.first_violation = c.state_id;
        if (m.summary.empty()) m.summary = fmt::format("live cut seed {}: {}", c.seed, c.summary);
      }
    }
    const uint64_t unavailable = m.unavailable;
    cell->models.push_back(std::move(m));
    cell->notes.push_back(r.Summary());
    if (unavailable > 0 && unavailable == r.Counted()) {
      // Not a loss, and not a survival either: the replay's rule for states (docs/cluster.md).
      cell->notes.push_back(fmt::format(
          "live cuts: the system came back on none of the {} cut(s): nothing was shown to survive "
          "a live cut (the replay's states say more)",
          unavailable));
    }
    for (const LiveCut& c : r.cuts) {
      if (!c.error.empty()) {
        cell->notes.push_back(fmt::format("live cut seed {}: {}", c.seed, c.error));
      }
    }
  }
  if (cell->node_cuts) {
    const NodeCutsResult& r = *cell->node_cuts;
    CellModel m{.cache = std::string(ModelKindName(ModelKind::kNodeCut)),
                .kind = ModelKind::kNodeCut,
                .points = r.Counted(),
                .states = r.Counted(),
                .checked = r.Counted(),
                .violations = r.Violations()};
    // A cut that could not be made or judged leaves the row incomplete: not a survival.
    m.states_planned = r.cuts.size() - r.Uncut();
    for (const NodeCut& c : r.cuts) {
      if (!c.error.empty() || !c.fired) continue;
      m.lost_acks_max = std::max<uint64_t>(m.lost_acks_max, c.lost.size() + c.corrupt.size());
      if (!c.in_model && m.summary.empty()) {
        m.summary = fmt::format(
            "TESTER BUG: node cut seed {} (node {}) is outside the replay "
            "model: {}",
            c.seed, c.node, c.evidence);
      }
      if (!c.unavailable.empty() && m.unavailable++ == 0) {
        m.unavailable_summary =
            fmt::format("node cut seed {} (node {}): {}", c.seed, c.node, c.unavailable);
        m.unavailable_stderr = c.checker_stderr;
      }
      if (c.violation() && m.summary.empty()) {
        m.summary = fmt::format(
            "node cut seed {}: node {} lost its power after ack {}; the live cluster lost {} of "
            "{} acks",
            c.seed, c.node, c.acks_before_cut, c.lost.size() + c.corrupt.size(), c.acks);
      }
    }
    cell->models.push_back(std::move(m));
    cell->notes.push_back("node cuts: " + r.Summary());
    for (const NodeCut& c : r.cuts) {
      if (!c.error.empty()) {
        cell->notes.push_back(fmt::format("node cut seed {}: {}", c.seed, c.error));
      }
    }
  }
  if (cell->flakey) {
    const FlakeyResult& f = *cell->flakey;
    CellModel m{.cache = std::string(vm::FlakeyModeName(f.mode)),
                .kind = ModelKindOf(f.mode),
                .points = 1,
                .states = 1,
                .checked = 1,
                .violations = f.violations() > 0 ? 1u : 0u,
                .lost_acks_max = f.acks_after_failure.size() + f.lost_before_failure.size()};
    m.states_planned = 1;
    m.summary = f.Summary();
    cell->models.push_back(std::move(m));
    cell->notes.push_back("flakey: " + f.Summary());
  }
}

std::string FaultDetailsHtml(const CellResult& c) {
  if (!c.live_cuts && !c.node_cuts && !c.flakey) return "";
  std::string h = fmt::format("<section class=\"faults\" id=\"faults-{}\"><h2>{}: faults</h2>\n",
                              c.index, XmlEscape(c.name));
  if (c.live_cuts) {
    h += fmt::format("<p class=\"small live-summary\">{}</p>\n", XmlEscape(c.live_cuts->Summary()));
    h += "<table class=\"live-cuts\"><thead><tr><th>seed</th><th>cut</th><th>acks before</th>"
         "<th>volatile writes</th><th>kept/dropped/torn</th><th>in model</th><th>lost</th>"
         "<th>seconds</th><th>state or evidence</th></tr></thead><tbody>\n";
    for (const LiveCut& cut : c.live_cuts->cuts) {
      std::string lost;
      for (const std::string& id : cut.lost) lost += (lost.empty() ? "" : " ") + id;
      std::string what = !cut.error.empty() ? cut.error
                         : cut.in_model     ? cut.state_id
                                            : "TESTER BUG: " + cut.evidence;
      if (cut.error.empty() && !cut.unavailable.empty()) {
        what += "; unavailable (did not come back): " + cut.unavailable;
      }
      // Several disks (a cluster's nodes): each one's reality check, by name.
      std::string in_model = cut.error.empty() ? (cut.in_model ? "yes" : "NO") : "-";
      if (cut.error.empty() && cut.disks.size() > 1) {
        std::string per;
        for (const LiveCutDisk& d : cut.disks) {
          per += fmt::format("{}{} {}: {} ({} volatile)", per.empty() ? "" : "<br>",
                             c.live_cuts->DiskWord(), d.disk, d.in_model ? "yes" : "NO",
                             d.volatile_writes);
        }
        in_model += "<br><span class=\"small\">" + per + "</span>";
      }
      h += fmt::format(
          "<tr class=\"{}\"><td>{}</td><td>{}</td><td class=\"num\">{}</td>"
          "<td class=\"num\">{}</td><td class=\"num\">{}/{}/{}</td><td>{}</td><td>{}</td>"
          "<td class=\"num\">{:.1f}</td><td class=\"small\"><code>{}</code></td></tr>\n",
          !cut.error.empty()               ? "error"
          : cut.violation || !cut.in_model ? "fail"
          : !cut.unavailable.empty()       ? "unavailable"
                                           : "pass",
          cut.seed,
          cut.cut ? fmt::format("after ack {}, write {}", cut.cut_after_ack, cut.cut_after_write)
                  : std::string("at the end (fewer acks)"),
          cut.acks_before_cut, cut.volatile_writes, cut.kept, cut.dropped, cut.torn, in_model,
          XmlEscape(lost), cut.record_seconds + cut.check_seconds, XmlEscape(what));
    }
    h += "</tbody></table>\n";
  }
  if (c.node_cuts) {
    h += fmt::format("<p class=\"small node-cut-summary\">node cuts: {}</p>\n",
                     XmlEscape(c.node_cuts->Summary()));
    h += "<table class=\"node-cuts\"><thead><tr><th>seed</th><th>node</th><th>instant</th>"
         "<th>volatile writes</th><th>kept/dropped/torn</th><th>in model</th><th>down s</th>"
         "<th>lost</th><th>seconds</th><th>state, evidence or outcome</th></tr></thead>"
         "<tbody>\n";
    for (const NodeCut& cut : c.node_cuts->cuts) {
      std::string lost;
      for (const std::string& id : cut.lost) lost += (lost.empty() ? "" : " ") + id;
      for (const std::string& id : cut.corrupt) {
        lost += (lost.empty() ? "" : " ") + id + "(corrupt)";
      }
      const bool judged = cut.error.empty() && cut.fired;
      std::string what = !cut.error.empty()         ? cut.error
                         : !cut.fired               ? "not cut: the workload ended first"
                         : !cut.in_model            ? "TESTER BUG: " + cut.evidence
                         : !cut.unavailable.empty() ? "unavailable: " + cut.unavailable
                                                    : cut.state_id;
      h += fmt::format(
          "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td>"
          "<td class=\"num\">{}/{}/{}</td><td>{}</td><td class=\"num\">{:.1f}</td><td>{}</td>"
          "<td class=\"num\">{:.1f}</td><td class=\"small\"><code>{}</code></td></tr>\n",
          !cut.error.empty()                             ? "error"
          : judged && (cut.violation() || !cut.in_model) ? "fail"
          : judged && !cut.unavailable.empty()           ? "unavailable"
                                                         : "pass",
          cut.seed, cut.node,
          judged ? fmt::format("after ack {}, {:.2f} s, trace entry {}", cut.acks_before_cut,
                               cut.at_seconds, cut.point)
                 : fmt::format("planned after ack {}", cut.after_ack),
          cut.volatile_writes, cut.kept, cut.dropped, cut.torn,
          judged ? (cut.in_model ? "yes" : "NO") : "-", cut.down_seconds, XmlEscape(lost),
          cut.record_seconds, XmlEscape(what));
    }
    h += "</tbody></table>\n";
  }
  if (c.flakey) {
    h += fmt::format("<p class=\"small flakey {}\">failing disk: {}</p>\n",
                     c.flakey->violations() ? "fail" : "pass", XmlEscape(c.flakey->Summary()));
  }
  return h + "</section>\n";
}

}  // namespace powercut::product
