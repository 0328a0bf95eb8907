#include "harness/product/html/html_report.h"

#include <algorithm>
#include <fstream>

#include "base/xml_escape.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "harness/product/run/recordings.h"

namespace powercut::product {
namespace {

using powercut::XmlEscape;

constexpr const char* kCss = R"(
body{font-family:sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em} h2{font-size:1.15em;margin-top:1.5em}
table{border-collapse:collapse} th,td{border:1px solid #bbb;padding:4px 8px;text-align:left}
td.pass{background:#dff5df} td.fail{background:#f8d4d4} .fsfail{color:#8a5a00} td.error{background:#f3e3b5}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td.unexpected{outline:3px solid #c00;outline-offset:-3px;font-weight:bold}
td.verdict-ok{color:#1a6b1a} td.verdict-unexpected{color:#c00;font-weight:bold}
td.verdict-error{color:#8a6100}
.small{font-size:.85em;color:#555} code{font-size:.9em}
.legend span{margin-right:1.2em}
details.checker-failed pre{white-space:pre-wrap;max-width:40em;font-weight:normal}
)";

// The notes under a cache cell's numbers: file-system failures and repairs, checker failures,
// unchecked states, and why the check stopped.
std::string ModelNotesHtml(const CellModel* m) {
  std::string fs_note;
  if (m->fs_unrecoverable) {
    fs_note += fmt::format(
        "<br><span class=\"fsfail small\" title=\"{}\">file system unrecoverable in {} "
        "states</span>",
        XmlEscape(m->fs_summary), m->fs_unrecoverable);
  }
  if (m->fs_repaired) {
    fs_note += fmt::format(
        "<br><span class=\"small\" title=\"{}\">file system repaired in {} states</span>",
        XmlEscape(m->fs_repair_steps), m->fs_repaired);
  }
  if (m->checker_failures) {
    // The server's own words on why it could not recover the image (issue 14: a violation,
    // with the server's log quoted).
    fs_note += fmt::format(
        "<details class=\"small checker-failed\"><summary>checker failed in {} states"
        "</summary>first: <code>{}</code>, its stderr:<pre>{}</pre></details>",
        m->checker_failures, XmlEscape(m->first_checker_failure), XmlEscape(m->checker_stderr));
  }
  if (m->unavailable) {
    // The system's own outcome (a cluster that did not come back), with its checker's stderr:
    // each node's last log lines.
    fs_note += fmt::format(
        "<details class=\"small checker-failed\"><summary>unavailable in {} states (the system "
        "did not come back)</summary>first: <code>{}</code>: {}<pre>{}</pre></details>",
        m->unavailable, XmlEscape(m->first_unavailable), XmlEscape(m->unavailable_summary),
        XmlEscape(m->unavailable_stderr));
  }
  if (m->could_not_check) {
    fs_note += fmt::format(" <span class=\"unchecked\">({} could not be checked)</span>",
                           m->could_not_check);
  }
  if (!m->stopped.empty()) {
    fs_note +=
        fmt::format("<br><span class=\"small\">{}</span>",
                    m->stopped == "budget"
                        ? fmt::format("incomplete: budget ran out after {} of {} states", m->states,
                                      m->states_planned)
                        : fmt::format("stopped at the first violation: {} of {} states "
                                      "checked, the worst first; &ge;{} acks lost is a lower "
                                      "bound",
                                      m->states, m->states_planned, m->lost_acks_max));
  }
  return fs_note;
}

// One cache cell: the verdict, the acks lost, the states checked and the violating states.
std::string ModelCellHtml(const CellResult& c, const CellModel* m) {
  const std::string fs_note = ModelNotesHtml(m);
  // The raw rule (`--no-expect`) claims no expectation.
  const bool expected = c.judged && !c.raw_rule;
  return fmt::format(
      "<td class=\"{} num{}\" title=\"{}{}\">{} {} / {} / {}{}</td>",
      m->violations ? "fail" : "pass", c.AsExpected(*m) ? "" : " unexpected",
      expected ? fmt::format("expected {}. ", ExpectedVerdictName(c.expect.For(m->kind))) : "",
      XmlEscape(m->summary),
      m->violations   ? "FAIL"
      : m->complete() ? "pass"
                      : "incomplete",
      XmlEscape(CellLostText(*m)), CellStatesText(*m), m->violations, fs_note);
}

// A row's verdict (its data-verdict) and its column: as expected, unexpected (and why) or could
// not run; without an expectation, pass or fail.
struct RowVerdict {
  std::string verdict;
  std::string cell;
};

RowVerdict VerdictOf(const CellResult& c) {
  const CellVerdict cell_verdict = c.Verdict();
  std::string verdict(CellVerdictName(cell_verdict));
  std::string verdict_text =
      cell_verdict == CellVerdict::kOk ? std::string("as expected")
      : cell_verdict == CellVerdict::kUnexpected
          ? fmt::format("{}: {}", c.MismatchWord(), XmlEscape(c.Unexpected()))
          : std::string("could not run");
  if (!c.judged && c.ran) {  // `powercut run` without --expect: nothing to compare with
    verdict = c.failed() ? "fail" : "pass";
    verdict_text =
        c.failed() ? "violations (no expectation given)" : "no violation (no expectation given)";
  }
  std::string verdict_cell = fmt::format("<td class=\"verdict-{}\">{}</td>", verdict, verdict_text);
  return {verdict, verdict_cell};
}

// One row of the matrix table.
std::string CellRowHtml(const CellResult& c, const std::vector<std::string>& caches) {
  std::string h;
  const auto [verdict, verdict_cell] = VerdictOf(c);
  h += fmt::format(
      "<tr id=\"cell-{}\" data-cell=\"{}\" data-verdict=\"{}\"><td>{}</td><td>{}</td><td>{}</td>",
      c.index, XmlEscape(c.name), verdict, XmlEscape(c.workload), XmlEscape(c.setting),
      XmlEscape(c.fs));
  if (!c.ran) {
    h += fmt::format(
        "<td class=\"error\" colspan=\"{}\">could not run ({}){}: {}</td>", caches.size() + 2,
        XmlEscape(std::string(RunErrorName(c.error_kind))),
        !c.expect.error ? "" : ", expected " + XmlEscape(std::string(RunErrorName(c.expect.error))),
        XmlEscape(c.error));
    return h + verdict_cell + "</tr>\n";
  }
  for (const auto& cache : caches) {
    const CellModel* m = nullptr;
    for (const CellModel& cm : c.models) {
      if (cm.cache == cache) m = &cm;
    }
    h += m == nullptr ? "<td>-</td>" : ModelCellHtml(c, m);
  }
  h += fmt::format("<td class=\"num\">{}</td><td class=\"num\">{}</td>{}</tr>\n", c.acks,
                   c.trace_entries, verdict_cell);
  return h;
}

// A failing cell's section: its command, where its recording is kept, its timeline and its
// worst state per cache model.
std::string FailingSectionHtml(const CellResult& c) {
  std::string h;
  h += fmt::format("<section class=\"failing\" id=\"failing-{}\"><h2>{}</h2>\n", c.index,
                   XmlEscape(c.name));
  h += fmt::format("<p class=\"small\"><code>{}</code></p>\n", XmlEscape(c.workload_command));
  if (!c.recording.empty()) {
    h += fmt::format(
        "<p class=\"small\">recording kept in <code class=\"recording\">{}</code>: the "
        "rebuild commands below name it</p>\n",
        XmlEscape(c.recording));
  }
  h += TimelineSvg(*c.timeline, fmt::format("timeline-{}", c.index));
  h += "<ul class=\"small\">\n";
  for (const TimelineCrash& crash : c.timeline->crashes) {
    h += fmt::format(
        "<li>cache {}, worst state: {}{}</li>\n", XmlEscape(crash.cache), XmlEscape(crash.summary),
        crash.repro.empty() ? std::string()
                            : fmt::format("<br>reproduce it: <code class=\"repro\">{}</code>",
                                          XmlEscape(crash.repro)));
  }
  h += "</ul></section>\n";
  return h;
}

// How many of each disk's writes `crash` dropped (`disks` of them; Timeline::disks says whose each
// entry is).
std::vector<size_t> DroppedOfEachDisk(const Timeline& t, const TimelineCrash& crash, size_t disks) {
  std::vector<size_t> per_disk(std::max<size_t>(disks, 1), 0);
  for (uint64_t e : crash.dropped) {
    const size_t disk = e < t.disks.size() ? static_cast<size_t>(t.disks[e] - '0') : 0;
    if (disk < per_disk.size()) ++per_disk[disk];
  }
  return per_disk;
}

// The last `bytes` of the file at `path`, from a line's start where one is in them; "" when it
// cannot be read (a report merged on another machine names logs it does not have).
std::string FileTail(const std::string& path, size_t bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  const std::streamoff start =
      std::max<std::streamoff>(0, size - static_cast<std::streamoff>(bytes));
  in.seekg(start);
  std::string text(static_cast<size_t>(size - start), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (start > 0) {
    const size_t nl = text.find('\n');
    if (nl != std::string::npos && nl + 1 < text.size()) text = text.substr(nl + 1);
  }
  return text;
}

// How much of each kept log the report embeds: its end, where a failure shows; the whole log is
// the file it links to.
constexpr size_t kLogTailBytes = 4096;

// A set's disks (a cluster's nodes): what the trace did to each, each one's dropped writes in
// every failing model's worst state, and its kept log (a link, and its last lines).
std::string DisksSectionHtml(const CellResult& c) {
  if (c.disks.empty()) return "";
  const std::string word = harness::SetMemberName(c.set_member);
  const std::string words = harness::SetMembersName(c.set_member);
  std::string h = fmt::format(
      "<section class=\"{}\" id=\"{}-{}\"><h2>{}: each {}</h2>\n<table class=\"{}\"><thead><tr>"
      "<th>{}</th><th>fs</th><th>writes</th><th>flushes</th><th>FUA writes</th>",
      words, words, c.index, XmlEscape(c.name), word, words, word);
  // Each worst state's dropped writes, counted per disk once for the whole table.
  std::vector<std::vector<size_t>> dropped;
  if (c.timeline) {
    for (const TimelineCrash& crash : c.timeline->crashes) {
      h += fmt::format("<th title=\"{}\">dropped in the worst {} state</th>",
                       XmlEscape(crash.summary), XmlEscape(crash.cache));
      dropped.push_back(DroppedOfEachDisk(*c.timeline, crash, c.disks.size()));
    }
  }
  h += "<th>log</th></tr></thead><tbody>\n";
  for (size_t d = 0; d < c.disks.size(); ++d) {
    const harness::DiskSummary& disk = c.disks[d];
    h += fmt::format(
        "<tr data-{}=\"{}\"><td>{} {}</td><td>{}</td><td class=\"num\">{}</td><td "
        "class=\"num\">{}</td><td class=\"num\">{}</td>",
        word, d + 1, word, d + 1, XmlEscape(disk.fs), disk.writes, disk.flushes, disk.fua);
    for (const std::vector<size_t>& per_disk : dropped) {
      h += fmt::format("<td class=\"num\">{}</td>", per_disk[d]);
    }
    if (disk.log.empty()) {
      h += "<td class=\"small\">not kept (a passing run's recording is temporary: --keep DIR "
           "keeps it)</td></tr>\n";
      continue;
    }
    const std::string tail = FileTail(disk.log, kLogTailBytes);
    h += fmt::format("<td class=\"log\"><a href=\"file://{}\">{}</a> ({})", XmlEscape(disk.log),
                     XmlEscape(disk.log), FormatBytes(disk.log_bytes));
    if (!tail.empty()) {
      h += fmt::format(
          "<details class=\"small\"><summary>its last lines</summary><pre>{}</pre></details>",
          XmlEscape(tail));
    }
    h += "</td></tr>\n";
  }
  return h + "</tbody></table></section>\n";
}

// The timeline figure of one recording: a write and a flush lane per disk, the acks, and per
// crash state its point, the acks it lost and the writes it dropped.
class TimelineFigure {
 public:
  explicit TimelineFigure(const Timeline& t)
      : t_(t), left_(t.member == harness::SetMember::kNode ? kNodeLeft : kLeft) {
    const size_t n = std::max<size_t>(t.kinds.size(), 1);
    dx_ = (kWidth - left_ - kRight) / static_cast<double>(n);
    const size_t rows = std::max<size_t>(t.crashes.size(), 1);
    // One write lane and one flush lane per disk (Timeline::disks), then the acks.
    for (char d : t.disks) disks_ = std::max<size_t>(disks_, static_cast<size_t>(d - '0') + 1);
    extra_ = 60.0 * static_cast<double>(disks_ - 1);
    ack_y_ = 80 + extra_;
    height_ = 120 + extra_ + 26.0 * static_cast<double>(rows);
    w_ = std::max(dx_, 0.6);
  }

  std::string Svg(const std::string& id) const {
    std::string s = fmt::format(
        "<svg id=\"{}\" class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" "
        "height=\"{:.0f}\" viewBox=\"0 0 {} {:.0f}\" role=\"img\">\n"
        "<title>timeline of {} trace entries</title>\n",
        XmlEscape(id), kWidth, height_, kWidth, height_, t_.kinds.size());
    s += Lanes();
    s += Entries();
    s += Acks();
    for (size_t r = 0; r < t_.crashes.size(); ++r) s += Crash(r);
    s += "</svg>\n";
    return s;
  }

 private:
  // A cluster's lanes say "node K write": a wider margin for the longer names.
  static constexpr double kWidth = 1000, kLeft = 40, kNodeLeft = 76, kRight = 20;

  size_t DiskOf(size_t entry) const {
    return entry < t_.disks.size() ? static_cast<size_t>(t_.disks[entry] - '0') : 0;
  }
  static double WriteY(size_t disk) { return 20 + 60.0 * static_cast<double>(disk); }
  double X(double entry) const { return left_ + entry * dx_; }
  // A lane's name before "write" or "flush": "" for one disk, "d2 " for a disk of a set, "node 2 "
  // for a cluster's.
  std::string LaneName(size_t disk) const {
    if (disks_ <= 1) return "";
    return t_.member == harness::SetMember::kNode ? fmt::format("node {} ", disk + 1)
                                                  : fmt::format("d{} ", disk + 1);
  }
  // Each disk's (node's) writes that `crash` dropped, counted.
  std::vector<size_t> DroppedPerDisk(const TimelineCrash& crash) const {
    return DroppedOfEachDisk(t_, crash, disks_);
  }

  // Lanes: writes (y 20-40), flushes/FUA (50-70), acks (80-100); with several disks a write and
  // a flush lane per disk, 60 apart, above the acks.
  std::string Lanes() const {
    std::string s;
    for (size_t d = 0; d < disks_; ++d) {
      s += fmt::format(
          "<text x=\"2\" y=\"{:.0f}\" font-size=\"10\">{}write</text>"
          "<text x=\"2\" y=\"{:.0f}\" font-size=\"10\">{}flush</text>",
          WriteY(d) + 14, LaneName(d), WriteY(d) + 44, LaneName(d));
    }
    s += fmt::format("<text x=\"2\" y=\"{:.0f}\" font-size=\"10\">ack{}</text>\n", ack_y_ + 14,
                     t_.member == harness::SetMember::kNode ? " (one clock)" : "");
    s += fmt::format("<line x1=\"{}\" y1=\"{:.0f}\" x2=\"{}\" y2=\"{:.0f}\" stroke=\"#999\"/>\n",
                     left_, ack_y_ + 25, kWidth - kRight, ack_y_ + 25);
    return s;
  }

  // Every entry's write and flush/FUA marks.
  std::string Entries() const {
    std::string s;
    for (size_t i = 0; i < t_.kinds.size(); ++i) {
      char k = t_.kinds[i];
      const double y = WriteY(DiskOf(i));
      if (k == 'w' || k == 'u' || k == 'F' || k == 'd') {
        s += fmt::format(
            "<rect class=\"write\" x=\"{:.2f}\" y=\"{:.0f}\" width=\"{:.2f}\" "
            "height=\"20\" fill=\"{}\"/>",
            X(static_cast<double>(i)), y, w_, k == 'd' ? "#aaa" : "#4a7bd0");
      }
      if (k == 'f' || k == 'F' || k == 'u') {
        s += fmt::format(
            "<rect class=\"{}\" x=\"{:.2f}\" y=\"{:.0f}\" width=\"{:.2f}\" height=\"20\" "
            "fill=\"{}\"/>",
            k == 'u' ? "fua" : "flush", X(static_cast<double>(i)), y + 30, w_,
            k == 'u' ? "#8e44ad" : "#2e8b57");
      }
    }
    return s + "\n";
  }

  std::string Acks() const {
    std::string s;
    for (const auto& [entry, ack] : t_.acks) {
      s += fmt::format(
          "<rect class=\"ack\" x=\"{:.2f}\" y=\"{:.0f}\" width=\"{:.2f}\" height=\"20\" "
          "fill=\"#e0a020\"><title>ack {} (entry {})</title></rect>",
          X(static_cast<double>(entry)), ack_y_, w_, XmlEscape(ack), entry);
    }
    return s + "\n";
  }

  // Crash state r's point, the acks it lost and the writes it dropped.
  std::string Crash(size_t r) const {
    const TimelineCrash& c = t_.crashes[r];
    double y = 115 + extra_ + 26.0 * static_cast<double>(r);
    double cx = X(static_cast<double>(c.point));
    // With several disks the cut is one instant on all of them: each one's dropped writes.
    std::string dropped;
    if (disks_ > 1) {
      std::vector<std::string> per_disk;
      const std::vector<size_t> counts = DroppedPerDisk(c);
      for (size_t d = 0; d < counts.size(); ++d) {
        per_disk.push_back(fmt::format("{}{}", LaneName(d), counts[d]));
      }
      dropped = fmt::format("; dropped {}", fmt::join(per_disk, ", "));
    }
    const std::string label =
        fmt::format("crash ({}): {} lost, after entry {}{}", c.cache, c.lost.size(),
                    static_cast<int64_t>(c.point) - 1, dropped);
    // About 6 px a character at font-size 11: the label stays inside the figure.
    const double label_x =
        std::max(2.0, std::min(cx + 4, kWidth - 6.0 * static_cast<double>(label.size())));
    std::string s = fmt::format(
        "<line class=\"crash\" x1=\"{:.2f}\" y1=\"15\" x2=\"{:.2f}\" y2=\"{:.0f}\" "
        "stroke=\"#d00\" stroke-width=\"2\" stroke-dasharray=\"4 2\"/>"
        "<text class=\"crash-label\" x=\"{:.2f}\" y=\"{:.0f}\" font-size=\"11\" fill=\"#d00\">"
        "{}<title>{}</title></text>\n",
        cx, cx, y + 4, label_x, y + 12, XmlEscape(label), XmlEscape(c.summary));
    for (uint64_t e : c.lost_entries) {
      s += fmt::format(
          "<circle class=\"lost\" cx=\"{:.2f}\" cy=\"{:.0f}\" r=\"{:.1f}\" "
          "fill=\"none\" stroke=\"#d00\" stroke-width=\"1.5\"><title>lost under {}"
          "</title></circle>",
          X(static_cast<double>(e)) + w_ / 2, ack_y_ + 10, std::max(3.0, std::min(dx_, 6.0)),
          XmlEscape(c.cache));
    }
    for (uint64_t e : c.dropped) {
      s += fmt::format(
          "<rect class=\"dropped\" x=\"{:.2f}\" y=\"{:.0f}\" width=\"{:.2f}\" "
          "height=\"24\" fill=\"none\" stroke=\"#d00\"/>",
          X(static_cast<double>(e)), WriteY(DiskOf(static_cast<size_t>(e))) - 2, w_);
    }
    return s + "\n";
  }

  const Timeline& t_;
  const double left_;
  double dx_ = 0;
  size_t disks_ = 1;
  double extra_ = 0;
  double ack_y_ = 0;
  double height_ = 0;
  double w_ = 0;
};

}  // namespace

std::string TimelineSvg(const Timeline& t, const std::string& id) {
  return TimelineFigure(t).Svg(id);
}

std::string HtmlReport(const MatrixReport& r, const std::string& title) {
  std::vector<std::string> caches = CacheColumns(r);
  if (caches.empty()) caches = {"off", "on", "lying"};
  std::string h = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>{}</title><style>{}</style></head><body>\n<h1>{}</h1>\n"
      "<p class=\"small\">Shard {}; {} of {} planned cells; {:.0f} s. Each cache cell: acks lost "
      "in the worst crash state / crash states checked / violating states; &ge;N: a lower bound, "
      "the largest loss before the check stopped early; a cell outlined in red "
      "did not match its expected verdict (hover for it).</p>\n",
      XmlEscape(title), kCss, XmlEscape(title), XmlEscape(r.shard), r.cells.size(), r.plan_cells,
      r.seconds);
  h += "<table id=\"matrix\"><thead><tr><th>workload</th><th>setting</th><th>fs</th>";
  for (const auto& c : caches) h += fmt::format("<th>cache {}</th>", XmlEscape(c));
  h += "<th>acks</th><th>entries</th><th>verdict</th></tr></thead><tbody>\n";
  for (const CellResult& c : r.cells) h += CellRowHtml(c, caches);
  h += "</tbody></table>\n";
  if (std::string summary = r.recordings.Summary(); !summary.empty()) {
    h += fmt::format("<p class=\"small\" id=\"recordings\">{}</p>\n", XmlEscape(summary));
  }
  h += "<p class=\"legend small\"><span style=\"color:#4a7bd0\">&#9632; write</span>"
       "<span style=\"color:#8e44ad\">&#9632; FUA write</span>"
       "<span style=\"color:#2e8b57\">&#9632; flush</span>"
       "<span style=\"color:#e0a020\">&#9632; ack</span>"
       "<span style=\"color:#d00\">- - crash point, &#9675; lost ack, &#9633; dropped write"
       "</span></p>\n";
  for (const CellResult& c : r.cells) {
    if (c.failed() && c.timeline) h += FailingSectionHtml(c);
  }
  for (const CellResult& c : r.cells) h += DisksSectionHtml(c);
  for (const CellResult& c : r.cells) h += FaultDetailsHtml(c);
  h += "</body></html>\n";
  return h;
}

}  // namespace powercut::product
