#include "harness/product/fstest/fstest_by_kernel.h"

#include <algorithm>
#include <map>
#include <vector>

#include "base/xml_escape.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "harness/product/fstest/fstest_kernels.h"
#include "harness/product/fstest/fstest_run.h"

namespace powercut::product {
namespace {

std::string Word(const CellResult& c, const CellModel& m) {
  if (!c.ran) return "not run";
  if (m.violations > 0) return "FAIL";
  if (m.fs_unrecoverable > 0) return "fs-unrecoverable";
  return "pass";
}

bool Failing(const std::string& word) { return word == "FAIL" || word == "fs-unrecoverable"; }

// The kernels in the order the run listed them (the report's parameters), then any other label
// a cell names.
std::vector<std::string> KernelOrder(const MatrixReport& r) {
  std::vector<std::string> labels;
  const nlohmann::json& f = r.parameters.value("fstest", nlohmann::json::object());
  if (f.contains("kernels")) {
    absl::StatusOr<std::vector<FsTestKernel>> kernels = KernelsFromJson(f.at("kernels"));
    if (kernels.ok()) {
      for (const FsTestKernel& k : *kernels) labels.push_back(k.label);
    }
  }
  for (const CellResult& c : r.cells) {
    if (c.fstest && std::find(labels.begin(), labels.end(), c.fstest->kernel) == labels.end()) {
      labels.push_back(c.fstest->kernel);
    }
  }
  return labels;
}

// "off pass, on FAIL"
std::string VerdictsText(const nlohmann::json& verdicts, const std::vector<std::string>& caches) {
  std::vector<std::string> parts;
  for (const std::string& cache : caches) {
    parts.push_back(fmt::format("{} {}", cache, verdicts.value(cache, "not run")));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

nlohmann::json CompareKernels(const MatrixReport& r) {
  const std::vector<std::string> labels = KernelOrder(r);
  const std::vector<std::string> caches = CacheColumns(r);
  std::map<std::string, std::string> recorded_by;
  struct Row {
    std::string workload, fs, shape;
    std::map<std::string, std::map<std::string, std::string>> verdicts;  // label -> cache -> word
  };
  std::vector<Row> rows;
  std::map<std::pair<std::string, std::string>, size_t> index;  // (fs, workload) -> row
  for (const CellResult& c : r.cells) {
    if (!c.fstest) continue;
    if (!c.kernel.empty()) recorded_by.emplace(c.fstest->kernel, c.kernel);
    const std::string fs = ProfileName(CellProfile(c));
    auto [it, added] = index.emplace(std::make_pair(fs, c.workload), rows.size());
    if (added) rows.push_back({c.workload, fs, c.fstest->shape, {}});
    std::map<std::string, std::string>& v = rows[it->second].verdicts[c.fstest->kernel];
    for (const CellModel& m : c.models) v[m.cache] = Word(c, m);
    if (c.models.empty()) {
      for (const std::string& cache : caches) v[cache] = Word(c, CellModel{});
    }
  }
  nlohmann::json out_rows = nlohmann::json::array();
  uint64_t differing = 0, failing = 0, passing = 0;
  std::vector<std::pair<int, nlohmann::json>> ranked;
  for (const Row& row : rows) {
    nlohmann::json verdicts = nlohmann::json::object();
    bool fails = false;
    std::vector<std::string> texts;
    for (const std::string& label : labels) {
      nlohmann::json per_cache = nlohmann::json::object();
      auto k = row.verdicts.find(label);
      for (const std::string& cache : caches) {
        std::string word = "not run";
        if (k != row.verdicts.end()) {
          if (auto w = k->second.find(cache); w != k->second.end()) word = w->second;
        }
        fails = fails || Failing(word);
        per_cache[cache] = word;
      }
      texts.push_back(per_cache.dump());
      verdicts[label] = per_cache;
    }
    const bool differs =
        std::any_of(texts.begin(), texts.end(), [&](const auto& t) { return t != texts.front(); });
    const int rank = differs ? 0 : fails ? 1 : 2;
    (differs ? differing : fails ? failing : passing) += 1;
    ranked.emplace_back(rank, nlohmann::json{{"workload", row.workload},
                                             {"fs", row.fs},
                                             {"shape", row.shape},
                                             {"differs", differs},
                                             {"fails", fails},
                                             {"verdicts", verdicts}});
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [rank, row] : ranked) out_rows.push_back(std::move(row));
  nlohmann::json kernels = nlohmann::json::array();
  for (const std::string& label : labels) {
    kernels.push_back({{"label", label}, {"recorded_by", recorded_by[label]}});
  }
  return {{"kernels", kernels},
          {"caches", caches},
          {"rows", out_rows},
          {"differing", differing},
          {"failing_everywhere", failing},
          {"passing_everywhere", passing}};
}

std::string KernelComparisonText(const nlohmann::json& cmp) {
  const auto caches = cmp.at("caches").get<std::vector<std::string>>();
  std::string out = "kernels side by side:";
  for (const nlohmann::json& k : cmp.at("kernels")) {
    out += fmt::format(" {} = {};", k.at("label").get<std::string>(),
                       k.at("recorded_by").get<std::string>().empty()
                           ? "(no cell ran)"
                           : k.at("recorded_by").get<std::string>());
  }
  out.back() = '\n';
  out += fmt::format(
      "  {} workload row(s) differ between kernels, {} fail on every kernel, {} pass on every "
      "kernel\n",
      cmp.at("differing").get<uint64_t>(), cmp.at("failing_everywhere").get<uint64_t>(),
      cmp.at("passing_everywhere").get<uint64_t>());
  for (const nlohmann::json& row : cmp.at("rows")) {
    const bool differs = row.at("differs").get<bool>();
    if (!differs && !row.at("fails").get<bool>()) continue;
    std::vector<std::string> per_kernel;
    for (const nlohmann::json& k : cmp.at("kernels")) {
      const std::string label = k.at("label");
      per_kernel.push_back(
          fmt::format("{}: {}", label, VerdictsText(row.at("verdicts").at(label), caches)));
    }
    out += fmt::format("  {:<8} {} {}  {}\n", differs ? "differs" : "fails",
                       row.at("workload").get<std::string>(), row.at("fs").get<std::string>(),
                       fmt::join(per_kernel, " | "));
  }
  if (cmp.at("passing_everywhere").get<uint64_t>() > 0) {
    out += "  (the rows that pass on every kernel are listed in the JSON and HTML reports)\n";
  }
  return out;
}

std::string KernelComparisonHtml(const nlohmann::json& cmp) {
  const auto caches = cmp.at("caches").get<std::vector<std::string>>();
  std::string out = fmt::format(
      "<h2>Kernels side by side</h2>\n<p>{} workload row(s) differ between kernels (first), {} "
      "fail on every kernel, {} pass on every kernel.</p>\n<table><tr><th>workload</th>"
      "<th>fs</th>",
      cmp.at("differing").get<uint64_t>(), cmp.at("failing_everywhere").get<uint64_t>(),
      cmp.at("passing_everywhere").get<uint64_t>());
  for (const nlohmann::json& k : cmp.at("kernels")) {
    out +=
        fmt::format("<th title=\"{}\">{}</th>", XmlEscape(k.at("recorded_by").get<std::string>()),
                    XmlEscape(k.at("label").get<std::string>()));
  }
  out += "<th></th></tr>\n";
  for (const nlohmann::json& row : cmp.at("rows")) {
    const bool differs = row.at("differs").get<bool>();
    out += fmt::format("<tr><td title=\"{}\">{}</td><td>{}</td>",
                       XmlEscape(row.at("shape").get<std::string>()),
                       XmlEscape(row.at("workload").get<std::string>()),
                       XmlEscape(row.at("fs").get<std::string>()));
    for (const nlohmann::json& k : cmp.at("kernels")) {
      out += fmt::format(
          "<td>{}</td>",
          XmlEscape(VerdictsText(row.at("verdicts").at(k.at("label").get<std::string>()), caches)));
    }
    out += fmt::format("<td>{}</td></tr>\n", differs                       ? "<b>differs</b>"
                                             : row.at("fails").get<bool>() ? "fails"
                                                                           : "");
  }
  return out + "</table>\n";
}

}  // namespace powercut::product
