// Runs a checker command (the workload protocol, design brief) and collects what it reports.
//
// The command runs as `/bin/sh -c CMD` (or, when CMD is only plain words without quotes,
// variables, globs or operators, directly with the same meaning) in its own process group with the
// given extra environment variables (inherited POWERCUT_DIR and POWERCUT_DEV are dropped: only
// `env` sets them), stdin from /dev/null, and a timeout after which the whole
// group is killed (SIGKILL). After it exits the group is killed too, so that nothing it started
// outlives the check. stdout lines `have <id>` and `corrupt <id>` are collected; other lines are
// ignored.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"

namespace powercut::harness {

struct CheckerOutput {
  int exit_code = -1;  // exit status, or -1 when killed by a signal
  int signal = 0;      // the signal that ended it, if any
  bool timed_out = false;
  absl::flat_hash_set<std::string> have;
  absl::flat_hash_set<std::string> corrupt;
  std::string stderr_tail;  // the last 2 KiB of stderr, for verdicts
  // Non-empty when the checker could not run on the image (e.g. the mount failed): the state is
  // not recoverable.
  std::string setup_error;

  bool recovered() const { return setup_error.empty() && exit_code == 0 && !timed_out; }
};

// Fails only when the command cannot be started at all.
absl::StatusOr<CheckerOutput> RunChecker(
    const std::string& command, const std::vector<std::pair<std::string, std::string>>& env,
    double timeout_seconds);

}  // namespace powercut::harness
