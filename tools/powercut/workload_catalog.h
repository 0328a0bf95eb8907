// The workload catalog (workloads/catalog.h) in the product's terms. tools/ is the one room that
// may depend on both harness/ and workloads/, so the catalog crosses here: main.cc hands this to
// product::SetBuiltinCatalog (harness/product/matrix/builtin.h).
#pragma once

#include <map>
#include <string>

#include "harness/product/cell/cell_result.h"

namespace powercut::cli {

// Every catalog configuration's expected verdicts (cache off/on/lying, and the file systems where
// cache off differs), keyed by its name, e.g. "xlog-append-fdatasync".
std::map<std::string, product::CellExpect> LinkedWorkloadCatalog();

}  // namespace powercut::cli
