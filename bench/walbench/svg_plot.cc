#include "bench/walbench/svg_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/xml_escape.h"

namespace powercut::walbench {
namespace {

constexpr double kPanelWidth = 560;
constexpr double kPanelHeight = 400;
constexpr double kLeft = 80, kRight = 170, kTop = 40, kBottom = 50;
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string FormatTick(double v) {
  if (v >= 1e6) return fmt::format("{:g}M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:g}k", v / 1e3);
  return fmt::format("{:g}", v);
}

std::string RenderPanel(const PlotPanel& panel, double x0) {
  const double plot_w = kPanelWidth - kLeft - kRight;
  const double plot_h = kPanelHeight - kTop - kBottom;
  double min_x = 0, max_x = 0, max_y = 0;
  bool first = true;
  auto tx = [&](double x) { return panel.log2_x ? std::log2(x) : x; };
  for (const PlotSeries& s : panel.series) {
    for (auto [x, y] : s.points) {
      if (panel.log2_x && x <= 0) continue;
      if (first) {
        min_x = max_x = tx(x);
        first = false;
      }
      min_x = std::min(min_x, tx(x));
      max_x = std::max(max_x, tx(x));
      max_y = std::max(max_y, y);
    }
  }
  if (max_x <= min_x) max_x = min_x + 1;
  max_y = NiceCeiling(max_y > 0 ? max_y : 1);
  auto px = [&](double x) { return x0 + kLeft + (tx(x) - min_x) / (max_x - min_x) * plot_w; };
  auto py = [&](double y) { return kTop + plot_h - y / max_y * plot_h; };

  std::string out;
  out +=
      fmt::format("<text x=\"{:.1f}\" y=\"22\" font-size=\"15\" font-weight=\"bold\">{}</text>\n",
                  x0 + kLeft, powercut::XmlEscape(panel.title));
  out += fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" "
      "stroke=\"#444\"/>\n",
      x0 + kLeft, kTop, plot_w, plot_h);
  // Y ticks: five steps.
  for (int i = 0; i <= 5; ++i) {
    const double v = max_y * i / 5;
    out += fmt::format(
        "<line x1=\"{0:.1f}\" x2=\"{1:.1f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{3:.1f}\" y=\"{4:.1f}\" font-size=\"11\" text-anchor=\"end\">{5}</text>\n",
        x0 + kLeft, x0 + kLeft + plot_w, py(v), x0 + kLeft - 6, py(v) + 4, FormatTick(v));
  }
  // X ticks: every distinct x of the data.
  std::vector<double> xs;
  for (const PlotSeries& s : panel.series) {
    for (auto [x, y] : s.points) {
      if (!(panel.log2_x && x <= 0)) xs.push_back(x);
    }
  }
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  for (double x : xs) {
    out += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"middle\">{:g}</text>\n",
        px(x), kTop + plot_h + 16, x);
  }
  out += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"12\" text-anchor=\"middle\">{}</text>\n",
      x0 + kLeft + plot_w / 2, kPanelHeight - 12, powercut::XmlEscape(panel.x_label));
  out += fmt::format(
      "<text x=\"{0:.1f}\" y=\"{1:.1f}\" font-size=\"12\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 {0:.1f} {1:.1f})\">{2}</text>\n",
      x0 + 18, kTop + plot_h / 2, powercut::XmlEscape(panel.y_label));
  // Series and legend.
  int index = 0;
  for (const PlotSeries& s : panel.series) {
    std::string points;
    for (auto [x, y] : s.points) {
      if (panel.log2_x && x <= 0) continue;
      points += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
    }
    if (points.empty()) continue;
    const char* color = kColors[index % (sizeof(kColors) / sizeof(kColors[0]))];
    out += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n",
                       color, points);
    const double ly = kTop + 10 + 18 * index;
    const double lx = x0 + kLeft + plot_w + 12;
    out += fmt::format(
        "<line x1=\"{0:.1f}\" x2=\"{1:.1f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"{3}\" "
        "stroke-width=\"2\"/><text x=\"{4:.1f}\" y=\"{5:.1f}\" font-size=\"11\">{6}</text>\n",
        lx, lx + 18, ly, color, lx + 22, ly + 4, powercut::XmlEscape(s.name));
    ++index;
  }
  return out;
}

}  // namespace

double NiceCeiling(double value) {
  if (value <= 0) return 1;
  const double power = std::pow(10.0, std::floor(std::log10(value)));
  for (double step : {1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0}) {
    if (step * power >= value * (1 - 1e-12)) return step * power;
  }
  return 10 * power;
}

std::string RenderSvg(const std::vector<PlotPanel>& panels) {
  const double width = kPanelWidth * static_cast<double>(std::max<size_t>(panels.size(), 1));
  std::string out = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0:.0f}\" "
      "height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\" font-family=\"sans-serif\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      width, kPanelHeight);
  for (size_t i = 0; i < panels.size(); ++i) {
    out += RenderPanel(panels[i], kPanelWidth * static_cast<double>(i));
  }
  out += "</svg>\n";
  return out;
}

}  // namespace powercut::walbench
