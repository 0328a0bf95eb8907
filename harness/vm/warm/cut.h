// The moment of a live power cut, drawn once per recording from its CutSpec (vm_run.h; docs/vm.md,
// "Live power cut"). The recording waits `delay` after its trigger (the workload's start, or ack
// `trigger_ack`), or, with the NBD recorder and --cut random, arms the server to cut at the
// `nbd_writes`-th write completion after ack `trigger_ack`.
#pragma once

#include <chrono>
#include <cstdint>

#include "harness/vm/warm/vm_run.h"

namespace powercut::vm {

struct CutPlan {
  std::chrono::milliseconds delay{-1};  // after the trigger; -1: no timed cut
  uint64_t trigger_ack = 0;             // 0: the trigger is the workload's start
  uint64_t nbd_writes = 0;              // >0: NbdServer::ArmCut(nbd_writes) at the trigger ack
};

// `nbd`: the recording has the NBD server (a request stream to cut on).
CutPlan PlanCut(const CutSpec& cut, bool nbd);

}  // namespace powercut::vm
