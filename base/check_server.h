// A resident checker (docs/protocol.md, "Resident checkers"): a checker program that starts once
// in a checking guest and then runs one fresh child per crash state, forked after the dynamic
// loader and the static initializers did their work, instead of being exec'd per state. Under
// TCG that start is most of a state's time: ~0.2 s for powercut-workload and ~0.4 s for
// powercut-workload-clients against a few milliseconds for a fork (docs/run.md, "Where the time
// goes").
//
// What a checker is does not change: every state still gets its own process, started from the
// same program image with the same arguments, environment and descriptors as an exec'd one would
// get, which has run nothing of the check before the fork. Only the loading is shared.
//
// The wire, over a unix stream socket the agent hands the server as POWERCUT_CHECK_SERVER_FD:
//   server -> agent  "ready\n"                       once, when it serves
//   agent  -> server one request: the text "<cgroup.procs path>\n<working folder>\n", carrying
//                    four descriptors (SCM_RIGHTS): stdin, stdout, stderr, POWERCUT_ACK_FD
//   server -> agent  "pid <N>\n"                     the state's checker runs as process N
//   server -> agent  "exit <wait status>\n"          it ended (waitpid's raw status)
// The agent closing the socket ends the server. The child is in a process group of its own (its
// pid), in the cgroup named (empty: none), in the working folder, with the four descriptors on
// 0, 1, 2 and 3, and without the socket.
#pragma once

#include <sys/types.h>

#include <string>

#include "absl/status/statusor.h"

namespace powercut {

inline constexpr char kCheckServerFdVariable[] = "POWERCUT_CHECK_SERVER_FD";

// Called first in main(). Without POWERCUT_CHECK_SERVER_FD: returns at once (a plain start).
// With it: serves requests until the socket closes, then exits the process; in each forked child
// it returns, and main goes on as a plain start of the same command line would.
void ServeChecksIfAsked();

// The agent's side of one request.
struct CheckRequest {
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  int ack_fd = -1;
  std::string cgroup_procs;  // "" = stay in the server's cgroup
  std::string working_dir;
};
// Sends the request; the server's answer is the child's pid.
absl::StatusOr<pid_t> SendCheckRequest(int socket_fd, const CheckRequest& request);
// Waits (at most `timeout_ms`, -1 = no limit) for the server's `exit` line of the request in
// flight; returns waitpid's raw status.
absl::StatusOr<int> ReadCheckExit(int socket_fd, int timeout_ms);
// Waits for the server's `ready` line.
absl::Status ReadCheckServerReady(int socket_fd, int timeout_ms);

}  // namespace powercut
