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
  return fmt::format("cells: {} compared, {} added, {} removed", d.cells_compared,
                     d.cells_added.size(), d.cells_removed.size());
}

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
    out += fmt::format("NOT COMPARABLE: {} parameter{} differ (base → new):\n",
                       d.incomparable.size(), d.incomparable.size() == 1 ? "" : "s");
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
  if (!d.signatures_new.empty() || !d.signatures_gone.empty()) {
    out += fmt::format("violation signatures: {} new, {} gone\n", d.signatures_new.size(),
                       d.signatures_gone.size());
    for (const std::string& s : d.signatures_new) out += fmt::format("  REGRESSION  new   {}\n", s);
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
    out +=
        "**Not comparable**: these parameters differ.\n\n| parameter | base | new "
        "|\n|---|---|---|\n";
    for (const ParameterChange& p : d.incomparable) {
      out += fmt::format("| {} | {} | {} |\n", MarkdownCell(p.name), MarkdownCell(OrNone(p.base)),
                         MarkdownCell(OrNone(p.next)));
    }
    out += "\n";
  }
  out += CellsLine(d) + ".\n\n";
  if (!d.changes.empty()) {
    out += "| | cell | model | what | base | new |\n|---|---|---|---|---|---|\n";
    for (const Change& c : d.changes) {
      out +=
          fmt::format("| {} | `{}` | {} | {} | {} | {} |\n", c.regression ? "**REGRESSION**" : "",
                      MarkdownCell(c.cell), MarkdownCell(c.model), ChangeAspectName(c.aspect),
                      MarkdownCell(OrNone(c.base)), MarkdownCell(OrNone(c.next)));
    }
    out += "\n";
  }
  auto list = [&](const std::string& title, const std::vector<std::string>& items) {
    if (items.empty()) return;
    out += fmt::format("**{}**:\n", title);
    for (const std::string& item : items) out += fmt::format("- `{}`\n", item);
    out += "\n";
  };
  list("Cells added", d.cells_added);
  list("Cells removed", d.cells_removed);
  list("New violation signatures (regressions)", d.signatures_new);
  list("Violation signatures gone", d.signatures_gone);
  out += fmt::format("_{}_\n\n**{}**\n", TimingLine(d), VerdictLine(d));
  return out;
}

std::string DiffHtmlSection(const ReportDiff& d) {
  std::string h = fmt::format(
      "<section id=\"powercut-diff\">\n<h2>What changed since {}: {}</h2>\n<p>base <code>{}</code> "
      "({}, "
      "{}) → new <code>{}</code> ({}, {})</p>\n",
      XmlEscape(d.base.path), XmlEscape(d.Regressions() == 0 ? "no regression" : "REGRESSION"),
      XmlEscape(d.base.path), XmlEscape(d.base.kind), CellCount(d.base.cells),
      XmlEscape(d.next.path), XmlEscape(d.next.kind), CellCount(d.next.cells));
  if (!d.incomparable.empty()) {
    h += "<p class=\"unexpected\"><b>Not comparable</b>: these parameters differ.</p>\n"
         "<table><tr><th>parameter</th><th>base</th><th>new</th></tr>\n";
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
          c.regression ? " class=\"unexpected\"" : "", c.regression ? "<b>REGRESSION</b>" : "",
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
  list("Violation signatures gone", d.signatures_gone);
  h += fmt::format("<p><i>{}</i></p>\n<p><b>{}</b></p>\n</section>\n", XmlEscape(TimingLine(d)),
                   XmlEscape(VerdictLine(d)));
  return h;
}

std::string DiffHtmlPage(const ReportDiff& d) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>powercut "
         "diff</title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:"
         "collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}"
         ".unexpected{background:#fdd}code{font-size:90%}</style></head>\n<body>\n<h1>powercut "
         "diff</h1>\n" +
         DiffHtmlSection(d) + "</body></html>\n";
}

absl::StatusOr<std::string> WithDiffSection(const std::string& report_html, const ReportDiff& d) {
  const size_t title = report_html.find("</h1>");
  if (title == std::string::npos) {
    return absl::InvalidArgumentError(
        "not a powercut HTML report (no <h1> title to put the diff after)");
  }
  std::string html = report_html;
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
          {"changes", changes},
          {"signatures_new", d.signatures_new},
          {"signatures_gone", d.signatures_gone},
          {"regressions", d.Regressions()},
          {"regression_names", d.RegressionNames()},
          {"verdict", d.Regressions() == 0 ? "no regression" : "regression"},
          {"summary", VerdictLine(d)},
          {"timing", TimingLine(d)}};
}

}  // namespace powercut::diff
