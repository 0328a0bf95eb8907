// Runs a checker command (the workload protocol, design brief) and collects what it reports.
//
// The command runs as `/bin/sh -c CMD` (or, when CMD is only plain words without quotes,
// variables, globs or operators, directly with the same meaning) in its own process group with the
// given extra environment variables (inherited POWERCUT_DIR and POWERCUT_DEV are dropped: only
// `env` sets them), stdin from /dev/null, and a timeout after which the whole
// group is killed (SIGKILL). After it exits the group is killed too, so that nothing it started
// outlives the check. stdout is the protocol: `have <id>` and `corrupt <id>` lines are collected,
// `why <id> <text>` (why the checker does not have <id>, quoted in the verdict) is kept,
// `unavailable <text>` (the system did not come back to answer: docs/protocol.md) is kept, and
// blank lines are allowed; any other line (or an id outside the grammar of base/ack_id.h) is a
// protocol error, quoted in CheckerOutput::protocol_error. stderr is free-form diagnostics and
// never parsed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"

namespace powercut::harness {

struct CheckerOutput {
  int exit_code = -1;  // exit status, or -1 when killed by a signal
  int signal = 0;      // the signal that ended it, if any
  bool timed_out = false;
  absl::flat_hash_set<std::string> have;
  absl::flat_hash_set<std::string> corrupt;
  // `why <id> <text>`: the checker's reason for not having <id> (the first line for each id).
  absl::flat_hash_map<std::string, std::string> why;
  // `unavailable <text>`: the system under test did not come back to answer (a cluster without a
  // quorum): the text of the first such line, "" when none. The state is then neither judged nor
  // "could not check" (harness/check/oracle.h).
  std::string unavailable;
  std::string stderr_tail;  // the last 2 KiB of stderr, for verdicts
  // Non-empty when the checker could not run on the image (e.g. the mount failed): the state is
  // not recoverable.
  std::string setup_error;
  // The first stdout line that is not the protocol, quoted with its line number ("" when every
  // line was): the output cannot be trusted, so the state could not be checked (not a violation).
  std::string protocol_error;
  uint64_t protocol_error_lines = 0;  // how many stdout lines were not the protocol

  bool recovered() const { return setup_error.empty() && exit_code == 0 && !timed_out; }
  // sh's "command not found" (127) or "not executable" (126): the checker never ran.
  bool cannot_start() const { return signal == 0 && (exit_code == 126 || exit_code == 127); }
};

// Parses one stdout line (without its newline) into `out`: `have <id>` / `corrupt <id>` (one
// space, trailing blanks and a CR tolerated), `why <id> <text>` or `unavailable <text>` (text not
// empty), or a blank line.
// Any other line counts as a protocol error; the first one is quoted with `line_number` in
// out->protocol_error.
void ParseCheckerLine(std::string_view line, uint64_t line_number, CheckerOutput* out);

// A command made only of plain words (no quoting, expansion, redirection or operators) means the
// same to /bin/sh -c as to a direct exec of its words: true with the words in `words`. Checkers
// run that way save a shell start per state (here and in the guest agent).
bool PlainCommandWords(const std::string& command, std::vector<std::string>* words);

// Fails only when the command cannot be started at all.
absl::StatusOr<CheckerOutput> RunChecker(
    const std::string& command, const std::vector<std::pair<std::string, std::string>>& env,
    double timeout_seconds);

}  // namespace powercut::harness
