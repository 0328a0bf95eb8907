// The forms of a report diff (diff_render.h).
#include "harness/diff/diff_render.h"

#include "base/xml_escape.h"
#include "fmt/format.h"

namespace powercut::diff {
namespace {

std::string CellCount(size_t cells) {
  return fmt::format("{} cell{}", cells, cells == 1 ? "" : "s");
}

std::string SideText(const ReportDiff::Side& side) {
  return fmt::format("{} ({}, {})", side.path, side.kind, CellCount(side.cells));
}

std::string Subject(const Change& c) {
  return c.model.empty() ? c.cell : fmt::format("{} cache {}", c.cell, c.model);
}

std::string OrNone(const std::string& value) { return value.empty() ? "(none)" : value; }

std::string Joined(const std::vector<std::string>& items, const std::string& separator) {
  std::string joined;
  for (const std::string& item : items) joined += (joined.empty() ? "" : separator) + item;
  return joined;
}

// Markdown table cells: a pipe ends the cell (the fstest signatures have them), a newline the row.
std::string MarkdownCell(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (ch == '|') {
      out += "\\|";
    } else if (ch == '\n') {
      out += ' ';
    } else {
      out += ch;
    }
  }
  return out;
}

std::string CellsLine(const ReportDiff& d) {
  return fmt::format("cells: {} compared, {} added, {} removed{}", d.cells_compared,
                     d.cells_added.size(), d.cells_removed.size(),
                     d.cells_missing == 0 ? "" : fmt::format(", {} missing", d.cells_missing));
}

// What the incomparable parameters mean for the rest, after their count.
std::string IncomparableHead(const ReportDiff& d) {
  return fmt::format("{} parameter{} differ{} (the verdicts are compared all the same)",
                     d.incomparable.size(), d.incomparable.size() == 1 ? "" : "s",
                     d.incomparable.size() == 1 ? "s" : "");
}

// The most rows of each Markdown table or list that are not regressions.
constexpr size_t kMarkdownRows = 50;

constexpr std::string_view kElsewhere =
    "under a file system or cache model the base did not judge: not a regression";

// The section's own styles, inline, so that it reads the same in its own page and in a
// report's (whose stylesheet knows none of its classes).
constexpr std::string_view kRegressionStyle = " style=\"background:#fdd\"";
constexpr std::string_view kSectionMarker = "<section id=\"powercut-diff\">";

}  // namespace

std::string VerdictLine(const ReportDiff& d) {
  const size_t regressions = d.Regressions();
  if (regressions == 0) return "no regression";
  return fmt::format("{} regression{}: {}", regressions, regressions == 1 ? "" : "s",
                     Joined(d.RegressionNames(), "; "));
}

std::string TimingLine(const ReportDiff& d) {
  return fmt::format(
      "timing: {:.1f} s → {:.1f} s (record {:.1f} → {:.1f} s, check {:.1f} → {:.1f} s)",
      d.base.seconds, d.next.seconds, d.base.record_seconds, d.next.record_seconds,
      d.base.check_seconds, d.next.check_seconds);
}

std::string DiffText(const ReportDiff& d) {
  std::string out =
      fmt::format("powercut diff: base {} → new {}\n", SideText(d.base), SideText(d.next));
  if (!d.incomparable.empty()) {
    out += fmt::format("NOT COMPARABLE: {}; base → new:\n", IncomparableHead(d));
    for (const ParameterChange& p : d.incomparable) {
      out += fmt::format("  {}: {} → {}\n", p.name, OrNone(p.base), OrNone(p.next));
    }
  }
  out += CellsLine(d) + "\n";
  for (const std::string& c : d.cells_added) out += fmt::format("  added    {}\n", c);
  for (const std::string& c : d.cells_removed) out += fmt::format("  removed  {}\n", c);
  if (!d.changes.empty()) out += "changes (base → new):\n";
  for (const Change& c : d.changes) {
    out += fmt::format("  {:<11} {}  {}: {} → {}\n", c.regression ? "REGRESSION" : "", Subject(c),
                       ChangeAspectName(c.aspect), OrNone(c.base), OrNone(c.next));
  }
  const size_t new_signatures = d.signatures_new.size() + d.signatures_new_elsewhere.size();
  if (new_signatures > 0 || !d.signatures_gone.empty()) {
    out += fmt::format("violation signatures: {} new, {} gone\n", new_signatures,
                       d.signatures_gone.size());
    for (const std::string& s : d.signatures_new) out += fmt::format("  REGRESSION  new   {}\n", s);
    for (const std::string& s : d.signatures_new_elsewhere) {
      out += fmt::format("              new   {} ({})\n", s, kElsewhere);
    }
    for (const std::string& s : d.signatures_gone) {
      out += fmt::format("              gone  {}\n", s);
    }
  }
  out += TimingLine(d) + "\n";
  out += VerdictLine(d) + "\n";
  return out;
}

std::string DiffMarkdown(const ReportDiff& d) {
  const size_t regressions = d.Regressions();
  std::string out = fmt::format(
      "### powercut diff: {}\n\nbase `{}` ({}, {}) → new `{}` ({}, {})\n\n",
      regressions == 0 ? "no regression"
                       : fmt::format("{} regression{}", regressions, regressions == 1 ? "" : "s"),
      d.base.path, d.base.kind, CellCount(d.base.cells), d.next.path, d.next.kind,
      CellCount(d.next.cells));
  if (!d.incomparable.empty()) {
    out += fmt::format("**Not comparable**: {}.\n\n| parameter | base | new |\n|---|---|---|\n",
                       IncomparableHead(d));
    for (const ParameterChange& p : d.incomparable) {
      out += fmt::format("| {} | {} | {} |\n", MarkdownCell(p.name), MarkdownCell(OrNone(p.base)),
                         MarkdownCell(OrNone(p.next)));
    }
    out += "\n";
  }
  out += CellsLine(d) + ".\n\n";
  // Every regression; of the rest the first kMarkdownRows of each table and list, so that a
  // night whose parameters changed for hundreds of cells still fits a pull-request comment.
  size_t left_out = 0;
  if (!d.changes.empty()) {
    out += "| | cell | model | what | base | new |\n|---|---|---|---|---|---|\n";
    size_t shown = 0;
    for (const Change& c : d.changes) {
      if (!c.regression && shown++ >= kMarkdownRows) {
        ++left_out;
        continue;
      }
      out +=
          fmt::format("| {} | `{}` | {} | {} | {} | {} |\n", c.regression ? "**REGRESSION**" : "",
                      MarkdownCell(c.cell), MarkdownCell(c.model), ChangeAspectName(c.aspect),
                      MarkdownCell(OrNone(c.base)), MarkdownCell(OrNone(c.next)));
    }
    out += "\n";
  }
  auto list = [&](const std::string& title, const std::vector<std::string>& items, bool all) {
    if (items.empty()) return;
    out += fmt::format("**{}**:\n", title);
    for (size_t i = 0; i < items.size(); ++i) {
      if (!all && i >= kMarkdownRows) {
        left_out += items.size() - i;
        break;
      }
      out += fmt::format("- `{}`\n", items[i]);
    }
    out += "\n";
  };
  list("Cells added", d.cells_added, false);
  list("Cells removed", d.cells_removed, false);
  list("New violation signatures (regressions)", d.signatures_new, true);
  list(fmt::format("New violation signatures {}", kElsewhere), d.signatures_new_elsewhere, false);
  list("Violation signatures gone", d.signatures_gone, false);
  if (left_out > 0) {
    out += fmt::format(
        "_{} more line{}, none a regression, left out here: the diff's text, --html and --json "
        "hold them all._\n\n",
        left_out, left_out == 1 ? "" : "s");
  }
  out += fmt::format("_{}_\n\n**{}**\n", TimingLine(d), VerdictLine(d));
  return out;
}

std::string DiffHtmlSection(const ReportDiff& d) {
  std::string h = fmt::format(
      "{}\n<h2>What changed since {}: {}</h2>\n<p>base <code>{}</code> ({}, {}) → new "
      "<code>{}</code> ({}, {})</p>\n",
      kSectionMarker, XmlEscape(d.base.path),
      XmlEscape(d.Regressions() == 0 ? "no regression" : "REGRESSION"), XmlEscape(d.base.path),
      XmlEscape(d.base.kind), CellCount(d.base.cells), XmlEscape(d.next.path),
      XmlEscape(d.next.kind), CellCount(d.next.cells));
  if (!d.incomparable.empty()) {
    h += fmt::format(
        "<p><b>Not comparable</b>: {}.</p>\n"
        "<table><tr><th>parameter</th><th>base</th><th>new</th></tr>\n",
        XmlEscape(IncomparableHead(d)));
    for (const ParameterChange& p : d.incomparable) {
      h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n", XmlEscape(p.name),
                       XmlEscape(OrNone(p.base)), XmlEscape(OrNone(p.next)));
    }
    h += "</table>\n";
  }
  h += fmt::format("<p>{}</p>\n", XmlEscape(CellsLine(d)));
  if (!d.changes.empty()) {
    h += "<table><tr><th></th><th>cell</th><th>model</th><th>what</th><th>base</th><th>new</th>"
         "</tr>\n";
    for (const Change& c : d.changes) {
      h += fmt::format(
          "<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
          c.regression ? kRegressionStyle : "", c.regression ? "<b>REGRESSION</b>" : "",
          XmlEscape(c.cell), XmlEscape(c.model), XmlEscape(std::string(ChangeAspectName(c.aspect))),
          XmlEscape(OrNone(c.base)), XmlEscape(OrNone(c.next)));
    }
    h += "</table>\n";
  }
  auto list = [&](const std::string& title, const std::vector<std::string>& items) {
    if (items.empty()) return;
    h += fmt::format("<p>{}:</p>\n<ul>\n", XmlEscape(title));
    for (const std::string& item : items) {
      h += fmt::format("<li><code>{}</code></li>\n", XmlEscape(item));
    }
    h += "</ul>\n";
  };
  list("Cells added", d.cells_added);
  list("Cells removed", d.cells_removed);
  list("New violation signatures (regressions)", d.signatures_new);
  list(fmt::format("New violation signatures {}", kElsewhere), d.signatures_new_elsewhere);
  list("Violation signatures gone", d.signatures_gone);
  h += fmt::format("<p><i>{}</i></p>\n<p><b>{}</b></p>\n</section>\n", XmlEscape(TimingLine(d)),
                   XmlEscape(VerdictLine(d)));
  return h;
}

std::string DiffHtmlPage(const ReportDiff& d) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>powercut "
         "diff</title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:"
         "collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}"
         "code{font-size:90%}</style></head>\n<body>\n<h1>powercut "
         "diff</h1>\n" +
         DiffHtmlSection(d) + "</body></html>\n";
}

absl::StatusOr<std::string> WithDiffSection(const std::string& report_html, const ReportDiff& d) {
  std::string html = report_html;
  // A report that shows a diff already (the job ran twice) shows this one instead.
  if (const size_t old = html.find(kSectionMarker); old != std::string::npos) {
    constexpr std::string_view kEnd = "</section>\n";
    const size_t end = html.find(kEnd, old);
    if (end == std::string::npos) {
      return absl::InvalidArgumentError(
          "its diff section has no end (</section>): not a report powercut diff wrote into");
    }
    html.erase(old, end + kEnd.size() - old);
  }
  const size_t title = html.find("</h1>");
  if (title == std::string::npos) {
    return absl::InvalidArgumentError(
        "not a powercut HTML report (no <h1> title to put the diff after)");
  }
  const size_t after = html.find('\n', title);
  html.insert(after == std::string::npos ? html.size() : after + 1, DiffHtmlSection(d));
  return html;
}

nlohmann::json DiffJson(const ReportDiff& d) {
  auto side = [](const ReportDiff::Side& s) {
    return nlohmann::json{{"path", s.path},
                          {"schema", s.schema},
                          {"kind", s.kind},
                          {"cells", s.cells},
                          {"seconds", s.seconds},
                          {"record_seconds", s.record_seconds},
                          {"check_seconds", s.check_seconds}};
  };
  nlohmann::json incomparable = nlohmann::json::array();
  for (const ParameterChange& p : d.incomparable) {
    incomparable.push_back({{"parameter", p.name}, {"base", p.base}, {"new", p.next}});
  }
  nlohmann::json changes = nlohmann::json::array();
  for (const Change& c : d.changes) {
    changes.push_back(
        {{"cell", c.cell},
         {"model", c.model.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.model)},
         {"what", ChangeAspectName(c.aspect)},
         {"base", c.base},
         {"new", c.next},
         {"regression", c.regression}});
  }
  return {{"schema", "powercut-diff/1"},
          {"base", side(d.base)},
          {"new", side(d.next)},
          {"incomparable", incomparable},
          {"cells_compared", d.cells_compared},
          {"cells_added", d.cells_added},
          {"cells_removed", d.cells_removed},
          {"cells_missing", d.cells_missing},
          {"changes", changes},
          {"signatures_new", d.signatures_new},
          {"signatures_new_elsewhere", d.signatures_new_elsewhere},
          {"signatures_gone", d.signatures_gone},
          {"regressions", d.Regressions()},
          {"regression_names", d.RegressionNames()},
          {"verdict", d.Regressions() == 0 ? "no regression" : "regression"},
          {"summary", VerdictLine(d)},
          {"timing", TimingLine(d)}};
}

}  // namespace powercut::diff
