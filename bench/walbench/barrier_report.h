// Text and JSON renderings of `walbench barriers` results and of the device facts.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/walbench/barrier_bench.h"
#include "bench/walbench/block_device.h"

namespace powercut::walbench {

// A few lines: the path, file system, disk and its cache/FUA/rotational/block sizes.
std::string FormatDeviceFacts(const DeviceFacts& facts);
nlohmann::json DeviceFactsToJson(const DeviceFacts& facts);

// One row per cell, then the findings that are not "plausible", in words.
std::string FormatBarrierTable(const std::vector<BarrierCell>& cells);

// {"device": {...}, "cells": [{barrier, workload, op_bytes, ops_per_sec, p50_us, p99_us,
//  p999_us, barrier_calls_per_op, device_flushes_per_op, verdict, findings: [...]}, ...]}
nlohmann::json BarrierResultsToJson(const DeviceFacts& facts,
                                    const std::vector<BarrierCell>& cells);

}  // namespace powercut::walbench
