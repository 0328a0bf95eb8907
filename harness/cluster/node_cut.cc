#include "harness/cluster/node_cut.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include "fmt/format.h"

namespace powercut::cluster {
namespace {

constexpr char kBegin[] = "=== powercut node-cut";
constexpr char kEnd[] = "=== powercut node-cut end";
constexpr char kStdout[] = "--- checker stdout";
constexpr char kStderr[] = "--- checker stderr";
// The kernel freezes or kills a node's tree within this long.
constexpr std::chrono::seconds kCgroupSettles{10};

std::string OneLine(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::Status WriteValue(const std::string& path, const std::string& value) {
  std::ofstream out(path);
  out << value;
  out.close();
  if (!out) {
    return absl::InternalError(
        fmt::format("cannot write {} to {}: {}", value, path, std::strerror(errno)));
  }
  return absl::OkStatus();
}

// Polls `file` (cgroup.events) until it holds the line `want`, calling `between` each round.
absl::Status WaitForEvent(const std::string& file, const std::string& want,
                          const std::function<void()>& between = {}) {
  const auto deadline = std::chrono::steady_clock::now() + kCgroupSettles;
  for (;;) {
    if (between) between();
    std::istringstream lines(ReadAll(file));
    std::string line;
    while (std::getline(lines, line)) {
      if (line == want) return absl::OkStatus();
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return absl::DeadlineExceededError(
          fmt::format("{} did not say '{}' within {} s", file, want, kCgroupSettles.count()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace

std::string FormatNodeCutSection(const NodeCutOutcome& o) {
  std::string text = fmt::format(
      "{}\nnode {}\nfired {}\nacks-before {}\nat-seconds {:.3f}\ndown-seconds {:.3f}\nerror "
      "{}\nchecker-ran {}\nchecker-exit {}\nchecker-timed-out {}\n{}\n",
      kBegin, o.node, o.fired ? 1 : 0, o.acks_before, o.at_seconds, o.down_seconds,
      OneLine(o.error), o.checker_ran ? 1 : 0, o.checker_exit, o.checker_timed_out ? 1 : 0,
      kStdout);
  text += o.checker_stdout;
  if (!o.checker_stdout.empty() && o.checker_stdout.back() != '\n') text += '\n';
  text += fmt::format("{}\n", kStderr);
  text += o.checker_stderr;
  if (!o.checker_stderr.empty() && o.checker_stderr.back() != '\n') text += '\n';
  return text + fmt::format("{}\n", kEnd);
}

absl::Status ParseNodeCutSection(std::string_view output, NodeCutOutcome* o) {
  const size_t begin = output.find(std::string(kBegin) + "\n");
  if (begin == std::string_view::npos) {
    return absl::NotFoundError("the workload's output holds no node-cut section");
  }
  const size_t end = output.find(std::string("\n") + kEnd, begin);
  if (end == std::string_view::npos) {
    return absl::DataLossError("the node-cut section of the workload's output is cut short");
  }
  std::istringstream lines(std::string(output.substr(begin, end + 1 - begin)));
  std::string line;
  std::getline(lines, line);  // the header
  enum { kFields, kOut, kErr } part = kFields;
  *o = NodeCutOutcome{};
  while (std::getline(lines, line)) {
    if (line == kStdout) {
      part = kOut;
      continue;
    }
    if (line == kStderr) {
      part = kErr;
      continue;
    }
    if (part == kOut) {
      o->checker_stdout += line + "\n";
      continue;
    }
    if (part == kErr) {
      o->checker_stderr += line + "\n";
      continue;
    }
    const size_t space = line.find(' ');
    const std::string key = line.substr(0, space);
    const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    try {
      if (key == "node") o->node = static_cast<uint32_t>(std::stoul(value));
      if (key == "fired") o->fired = value == "1";
      if (key == "acks-before") o->acks_before = std::stoull(value);
      if (key == "at-seconds") o->at_seconds = std::stod(value);
      if (key == "down-seconds") o->down_seconds = std::stod(value);
      if (key == "error") o->error = value;
      if (key == "checker-ran") o->checker_ran = value == "1";
      if (key == "checker-exit") o->checker_exit = std::stoi(value);
      if (key == "checker-timed-out") o->checker_timed_out = value == "1";
    } catch (const std::exception&) {
      return absl::DataLossError(fmt::format("node-cut section: bad line '{}'", line));
    }
  }
  return absl::OkStatus();
}

absl::Status NodeCgroup::Create(uint32_t node, NodeCgroup* out) {
  // "0::/path" on a cgroup2-only system.
  std::istringstream lines(ReadAll("/proc/self/cgroup"));
  std::string line;
  std::string own;
  while (std::getline(lines, line)) {
    if (line.rfind("0::", 0) == 0) own = line.substr(3);
  }
  if (own.empty()) {
    return absl::FailedPreconditionError(
        "no cgroup v2 hierarchy: a node cut freezes the node's processes in a cgroup of its own");
  }
  if (own == "/") own.clear();
  const std::string path = fmt::format("/sys/fs/cgroup{}/powercut-node-{}", own, node);
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(
        fmt::format("cannot make the node's cgroup {}: {}", path, std::strerror(errno)));
  }
  out->path_ = path;
  out->procs_ = path + "/cgroup.procs";
  return absl::OkStatus();
}

NodeCgroup::NodeCgroup(NodeCgroup&& other) noexcept
    : path_(std::exchange(other.path_, "")), procs_(std::exchange(other.procs_, "")) {}

NodeCgroup& NodeCgroup::operator=(NodeCgroup&& other) noexcept {
  if (this != &other) {
    if (!path_.empty()) ::rmdir(path_.c_str());
    path_ = std::exchange(other.path_, "");
    procs_ = std::exchange(other.procs_, "");
  }
  return *this;
}

NodeCgroup::~NodeCgroup() {
  if (path_.empty()) return;
  // Its members die with the launcher's process namespace; the folder goes once they are gone.
  const auto deadline = std::chrono::steady_clock::now() + kCgroupSettles;
  while (::rmdir(path_.c_str()) != 0 && errno == EBUSY &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void NodeCgroup::EnterFromChild() const {
  if (procs_.empty()) return;
  const int fd = ::open(procs_.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  (void)!::write(fd, "0", 1);
  ::close(fd);
}

absl::Status NodeCgroup::Freeze(bool frozen) const {
  if (absl::Status s = WriteValue(path_ + "/cgroup.freeze", frozen ? "1" : "0"); !s.ok()) return s;
  return WaitForEvent(path_ + "/cgroup.events", frozen ? "frozen 1" : "frozen 0");
}

absl::Status NodeCgroup::KillAndWait(const std::function<void()>& reap) const {
  if (absl::Status s = WriteValue(path_ + "/cgroup.kill", "1"); !s.ok()) return s;
  return WaitForEvent(path_ + "/cgroup.events", "populated 0", reap);
}

}  // namespace powercut::cluster
