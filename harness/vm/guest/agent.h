// The guest agent's one job (agent.cc): set up the disk (dm-log-writes, dm-flakey), mount, run
// the workload relaying its acks, clean up, or check images; agent_main.cc runs jobs.
#pragma once

#include "harness/vm/guest/guest_job.h"

namespace powercut::vm::guest {

inline constexpr char kRunDir[] = "/run/powercut";  // the run folder (9p tag powercut)
inline constexpr char kAckPortName[] = "powercut.ack";

class ResidentCheckers;

// Runs `job`; every line it sends on the virtio-serial port (`port_fd`, -1 = none) is prefixed
// with `job <id> ` when job.job_id != 0. `residents`: a serving agent's resident checkers, kept
// across its jobs (null: every checker is exec'd).
GuestResult RunGuestJob(const GuestJob& job, int port_fd, ResidentCheckers* residents = nullptr);

}  // namespace powercut::vm::guest
