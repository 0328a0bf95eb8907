// A verdict on a set of disks (a cluster's nodes) names what each disk lost at the one instant:
// the engine's verdicts (model_run.cc) and `powercut repro`'s (harness/product/repro/) alike.
#pragma once

#include <cstdint>

#include "harness/check/oracle.h"
#include "harness/check/set_member.h"
#include "harness/trace/trace_reader.h"

namespace powercut::harness {

// Splits `v`'s dropped writes and its torn write by the disk each entry wrote
// (Verdict::dropped_per_disk, ::torn_disk), the disks named as `member`. A trace of one disk: no
// change.
inline void AttributeToDisks(const Trace& trace, SetMember member, Verdict* v) {
  if (trace.disks <= 1) return;
  v->dropped_per_disk.assign(trace.disks, {});
  for (uint64_t e : v->dropped) v->dropped_per_disk[trace.entries[e].disk].push_back(e);
  if (v->torn_entry) v->torn_disk = trace.entries[*v->torn_entry].disk + 1;
  v->member = member;
}

}  // namespace powercut::harness
