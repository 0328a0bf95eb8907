#include "harness/fs/fsck.h"

#include <algorithm>

#include "base/process.h"
#include "fmt/format.h"

namespace powercut::harness {
namespace {

bool Among(const std::vector<int>& codes, int code) {
  return std::find(codes.begin(), codes.end(), code) != codes.end();
}

}  // namespace

absl::StatusOr<std::string> FsckCommand(FsKind fs, const std::string& image) {
  const FsckSpec& spec = FileSystemOf(fs).fsck;
  if (spec.argv.empty()) {
    return absl::InvalidArgumentError(fmt::format("--fsck needs a file system ({}), not '{}'",
                                                  FsNames(/*with_raw=*/false), FsName(fs)));
  }
  return ShellJoin(WithImage(spec.argv, image));
}

absl::StatusOr<std::string> FsckImage(FsKind fs, const std::string& image, double timeout_seconds) {
  auto command = FsckCommand(fs, image);
  if (!command.ok()) return command.status();
  const FileSystem& table = FileSystemOf(fs);
  const FsckSpec& spec = table.fsck;
  const std::string& tool = spec.argv.front();
  if (!SystemToolInstalled(tool)) {
    return absl::NotFoundError(
        fmt::format("--fsck: {} not found: apt-get install {}", tool, table.package));
  }
  const ProcessOptions options{.timeout_seconds = timeout_seconds, .die_with_parent = false};
  if (!spec.replay_argv.empty()) {
    auto replay = RunCommand(WithImage(spec.replay_argv, image), options);
    if (!replay.ok()) return replay.status();
    if (replay->timed_out || !Among(spec.replay_ok_exits, replay->exit_code)) {
      return fmt::format("fsck: {} journal replay exit {}: {}", spec.replay_argv.front(),
                         replay->exit_code, LastLinesOnOneLine(replay->output, 3));
    }
  }
  auto out = RunCommand(WithImage(spec.argv, image), options);
  if (!out.ok()) return out.status();
  if (out->timed_out) return fmt::format("fsck: {} timed out after {} s", tool, timeout_seconds);
  if (Among(spec.clean_exits, out->exit_code)) return std::string();
  if (!spec.unjudgeable_output.empty() &&
      out->output.find(spec.unjudgeable_output) != std::string::npos) {
    return std::string();  // only a mount can judge it (xfs: a dirty log)
  }
  return fmt::format("fsck: {} exit {}: {}", tool, out->exit_code,
                     LastLinesOnOneLine(out->output, 4));
}

std::function<std::string(const std::string&)> FsckHook(FsKind fs) {
  return [fs](const std::string& image) -> std::string {
    auto problem = FsckImage(fs, image);
    if (!problem.ok()) return "fsck: " + std::string(problem.status().message());
    return *problem;
  };
}

}  // namespace powercut::harness
