// A line plot rendered as SVG text.
//
// Hand-written on purpose: a plot of a few polylines is ~100 lines of SVG, and Debian's plotting
// libraries for C++ either shell out to gnuplot or pull in a GUI toolkit. The output is
// self-contained SVG 1.1 that browsers and image viewers open directly.
#pragma once

#include <string>
#include <vector>

namespace powercut::walbench {

struct PlotSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in order
};

struct PlotPanel {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log2_x = false;  // x axis in powers of two (thread counts)
  std::vector<PlotSeries> series;
};

// Panels side by side in one SVG document, one shared legend per panel. Empty series and
// non-positive x on a log axis are skipped.
std::string RenderSvg(const std::vector<PlotPanel>& panels);

// A "nice" upper axis bound >= value: 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten.
double NiceCeiling(double value);

}  // namespace powercut::walbench
