#include "harness/cluster/node_logs.h"

#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <optional>
#include <utility>

#include "fmt/format.h"
#include "harness/cluster/cluster.h"

namespace powercut::cluster {
namespace {

// Whether `line` is node `node`'s header as the launcher writes it: "=== node K (ADDR): ".
bool IsHeader(const std::string& line, uint32_t node) {
  return line.rfind(fmt::format("=== node {} ({}): ", node, NodeAddress(node)), 0) == 0;
}

// One node's file being written: its head as it comes, then a tail window of whole lines that
// holds the last bytes once the head is full.
class BoundedLog {
 public:
  BoundedLog(NodeLog log, uint64_t cap)
      : log_(std::move(log)), head_cap_(cap / 4), tail_cap_(cap - cap / 4), out_(log_.path) {}

  bool ok() const { return static_cast<bool>(out_); }

  void Add(const std::string& line) {  // with its '\n'
    if (!tail_started_ && head_ + line.size() <= head_cap_) {
      out_ << line;
      head_ += line.size();
      return;
    }
    tail_started_ = true;
    tail_.push_back(line);
    tail_bytes_ += line.size();
    while (tail_bytes_ > tail_cap_ && !tail_.empty()) {
      tail_bytes_ -= tail_.front().size();
      log_.left_out += tail_.front().size();
      tail_.pop_front();
    }
  }

  absl::StatusOr<NodeLog> Finish() {
    if (log_.left_out > 0) {
      out_ << fmt::format(
          "[powercut: {} bytes of node {}'s log left out here; the kept log holds its first and "
          "its last bytes, at most {} in all]\n",
          log_.left_out, log_.node, head_cap_ + tail_cap_);
    }
    for (const std::string& line : tail_) out_ << line;
    out_.close();
    if (!out_) {
      return absl::InternalError(
          fmt::format("cannot write node {}'s log {}", log_.node, log_.path));
    }
    std::error_code ec;
    log_.bytes = std::filesystem::file_size(log_.path, ec);
    return log_;
  }

 private:
  NodeLog log_;
  const uint64_t head_cap_, tail_cap_;
  std::ofstream out_;
  uint64_t head_ = 0;
  bool tail_started_ = false;
  std::deque<std::string> tail_;
  uint64_t tail_bytes_ = 0;
};

}  // namespace

std::string NodeLogPath(const std::string& dir, uint32_t node) {
  return fmt::format("{}/node-{}.log", dir, node);
}

absl::StatusOr<std::vector<NodeLog>> SplitNodeLogs(const std::string& output,
                                                   const std::string& dir, uint32_t nodes,
                                                   uint64_t cap_bytes) {
  std::vector<NodeLog> logs;
  std::error_code ec;
  if (!std::filesystem::exists(output, ec)) return logs;
  std::ifstream in(output, std::ios::binary);
  if (!in) {
    return absl::InternalError(
        fmt::format("cannot read the nodes' logs in {}: {}", output, std::strerror(errno)));
  }
  std::optional<BoundedLog> current;
  uint32_t next = 1;
  std::string line;
  while (std::getline(in, line)) {
    if (!in.eof()) line += '\n';
    if (next <= nodes && IsHeader(line, next)) {
      if (current) {
        absl::StatusOr<NodeLog> done = current->Finish();
        if (!done.ok()) return done.status();
        logs.push_back(*std::move(done));
      }
      current.emplace(NodeLog{.node = next, .path = NodeLogPath(dir, next)}, cap_bytes);
      if (!current->ok()) {
        return absl::InternalError(
            fmt::format("cannot write {}: {}", NodeLogPath(dir, next), std::strerror(errno)));
      }
      ++next;
      continue;
    }
    if (current) current->Add(line);
  }
  if (current) {
    absl::StatusOr<NodeLog> done = current->Finish();
    if (!done.ok()) return done.status();
    logs.push_back(*std::move(done));
  }
  return logs;
}

}  // namespace powercut::cluster
