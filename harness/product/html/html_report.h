// The self-contained HTML report of a matrix or a run: one file with inline CSS and inline SVG,
// no scripts, no fonts, no network at view time. It holds the matrix (per cell and cache model:
// acks lost in the worst state, states checked, violating states; cells that could not run with
// why) and, for each failing cell, a timeline figure of the recording: writes, FUA writes,
// flushes and acks along the entry axis (a write and a flush lane per disk of a set, per node of a
// cluster: one clock), the crash point of each failing model's worst violating state with each
// disk's (node's) dropped writes, and its lost acks marked. A set's cells (a cluster's) also get
// a section of each disk: its writes, flushes, FUA writes, dropped writes in each worst state and
// its kept log (a link, and its last lines). Element ids for tests: `matrix`, `cell-<n>`,
// `timeline-<n>`, `disks-<n>` or `nodes-<n>`.
#pragma once

#include <string>

#include "harness/product/matrix/matrix.h"

namespace powercut::product {

std::string HtmlReport(const MatrixReport& report, const std::string& title);

// The timeline figure alone (an <svg> element).
std::string TimelineSvg(const Timeline& timeline, const std::string& id);

}  // namespace powercut::product
