// powercut-vm-agent: the guest agent. Runs inside the VM, chrooted into the host root by the
// guest init (docs/vm.md, "Boot sequence" and "Warm guests"):
//   powercut-vm-agent [JOB.json]   one job (default /run/powercut/job.json) -> result.json; the
//                                  init then powers the guest off;
//   powercut-vm-agent --serve      a warm guest: announces `event agent-start` on the virtio-serial
//                                  port, then for each line `job <id> inline <json>` the host
//                                  writes there runs that job and sends `job <id> event
//                                  job-result <json>` and `job <id> event job-done`; for `job <id>`
//                                  it runs job-<id>.json and writes result-<id>.json instead;
//                                  `quit` (or the host closing the port) ends it.
#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "base/write_fully.h"
#include "fmt/format.h"
#include "harness/vm/guest/agent.h"
#include "harness/vm/guest/guest_devices.h"
#include "harness/vm/guest/resident_checker.h"

namespace {

using powercut::vm::GuestResult;
using powercut::vm::guest::kRunDir;

GuestResult RunJobText(const std::string& text, const std::string& where, int port_fd,
                       powercut::vm::guest::ResidentCheckers* residents) {
  GuestResult result;
  auto job = powercut::vm::GuestJobFromJson(text);
  if (!job.ok()) {
    result.failed_step = "job";
    result.error = fmt::format("{}: {}", where, std::string(job.status().message()));
    return result;
  }
  return powercut::vm::guest::RunGuestJob(*job, port_fd, residents);
}

GuestResult RunJobFile(const std::string& job_path, int port_fd,
                       powercut::vm::guest::ResidentCheckers* residents = nullptr) {
  std::ifstream in(job_path);
  std::stringstream text;
  text << in.rdbuf();
  return RunJobText(text.str(), job_path, port_fd, residents);
}

// Written under a temporary name and renamed: the host never reads half a result.
void WriteResult(const std::string& name, const GuestResult& result) {
  const std::string path = fmt::format("{}/{}", kRunDir, name);
  std::ofstream out(path + ".tmp");
  out << powercut::vm::GuestResultToJson(result);
  out.close();
  std::rename((path + ".tmp").c_str(), path.c_str());
}

// A port the host closed has nobody to tell: the host notices the guest's end by itself.
void SendLine(int fd, const std::string& line) {
  powercut::WriteFully(fd, line + "\n").IgnoreError();
}

// One line from the port; false when the host closed it.
bool ReadLineFrom(int fd, std::string* pending, std::string* line) {
  for (;;) {
    size_t nl = pending->find('\n');
    if (nl != std::string::npos) {
      *line = pending->substr(0, nl);
      pending->erase(0, nl + 1);
      return true;
    }
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    pending->append(buf, static_cast<size_t>(n));
  }
}

int Serve(int port_fd) {
  if (port_fd < 0) {
    std::fprintf(stderr, "powercut-agent: --serve needs the virtio-serial port %s\n",
                 powercut::vm::guest::kAckPortName);
    return 1;
  }
  SendLine(port_fd, fmt::format("event agent-start ready={:.2f}", powercut::vm::guest::Uptime()));
  // Resident checkers live across jobs: a matrix cell's states share one start of the checker.
  powercut::vm::guest::ResidentCheckers residents;
  std::string pending, line;
  while (ReadLineFrom(port_fd, &pending, &line)) {
    if (line == "quit") return 0;
    // An answer to a synchronous ack that came after its workload had ended: nobody waits.
    if (line.rfind("job ", 0) == 0 && line.find(" acked ") != std::string::npos) continue;
    uint64_t id = 0;
    if (line.rfind("job ", 0) != 0 || (id = std::strtoull(line.c_str() + 4, nullptr, 10)) == 0) {
      SendLine(port_fd, fmt::format("event unknown-request {}", line.substr(0, 80)));
      continue;
    }
    // `job <id> inline <json>`: the job on the line, its result back on the port (a warm
    // guest's checks); `job <id>`: job-<id>.json in the run folder, result-<id>.json back.
    const std::string inline_mark = fmt::format("job {} inline ", id);
    GuestResult result;
    if (line.rfind(inline_mark, 0) == 0) {
      result = RunJobText(line.substr(inline_mark.size()), "the job line", port_fd, &residents);
      SendLine(port_fd, fmt::format("job {} event {}{}", id, powercut::vm::kJobResultEvent,
                                    powercut::vm::GuestResultToLine(result)));
    } else {
      result =
          RunJobFile(fmt::format("{}/{}", kRunDir, powercut::vm::JobFileName("job", id, "json")),
                     port_fd, &residents);
      WriteResult(powercut::vm::JobFileName("result", id, "json"), result);
    }
    SendLine(port_fd, fmt::format("job {} event job-done ok={}", id, result.ok ? 1 : 0));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Orphans of a workload are reparented to the agent, which reaps them (job_cgroup.cc).
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  const std::string port = powercut::vm::guest::FindPort(powercut::vm::guest::kAckPortName);
  const std::string arg = argc > 1 ? argv[1] : "";
  if (arg == "--serve") {
    const int fd = port.empty() ? -1 : open(port.c_str(), O_RDWR | O_CLOEXEC);
    return Serve(fd);
  }
  const int fd = port.empty() ? -1 : open(port.c_str(), O_WRONLY | O_CLOEXEC);
  GuestResult result = RunJobFile(arg.empty() ? fmt::format("{}/job.json", kRunDir) : arg, fd);
  WriteResult("result.json", result);
  return result.ok ? 0 : 1;
}
