#include "harness/check/fsck.h"

#include <unistd.h>

#include "base/process.h"
#include "fmt/format.h"

namespace powercut::harness {
absl::StatusOr<std::string> FsckCommand(FsKind fs, const std::string& image) {
  std::vector<std::string> argv = FileSystemOf(fs).ReadOnlyCheckArgv();
  if (argv.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("--fsck needs a file system (ext4, xfs or btrfs), not '{}'", FsName(fs)));
  }
  return ShellJoin(WithImage(argv, image));
}

absl::StatusOr<std::string> FsckImage(FsKind fs, const std::string& image, double timeout_seconds) {
  auto command = FsckCommand(fs, image);
  if (!command.ok()) return command.status();
  const std::string tool = FileSystemOf(fs).ReadOnlyCheckArgv().front();
  const char* package = FileSystemOf(fs).package;
  if (!SystemToolInstalled(tool)) {
    return absl::NotFoundError(
        fmt::format("--fsck: {} not found: apt-get install {}", tool, package));
  }
  const ProcessOptions options{.timeout_seconds = timeout_seconds, .die_with_parent = false};
  if (fs == FsKind::kExt4) {
    // Replay the journal first: e2fsck -n skips it and would call every crash image with a
    // committed-but-unreplayed transaction inconsistent. Exit 0/1 = replayed or nothing to do.
    auto replay = RunCommand({"e2fsck", "-E", "journal_only", "-y", image}, options);
    if (!replay.ok()) return replay.status();
    if (replay->timed_out || (replay->exit_code != 0 && replay->exit_code != 1)) {
      return fmt::format("fsck: e2fsck journal replay exit {}: {}", replay->exit_code,
                         LastLinesOnOneLine(replay->output, 3));
    }
  }
  auto out = RunCommand(WithImage(FileSystemOf(fs).ReadOnlyCheckArgv(), image), options);
  if (!out.ok()) return out.status();
  if (out->timed_out) return fmt::format("fsck: {} timed out after {} s", tool, timeout_seconds);
  if (out->exit_code == 0) return std::string();
  if (fs == FsKind::kXfs && out->output.find("metadata changes in a log") != std::string::npos) {
    return std::string();  // a dirty log: only a mount can replay it, so fsck cannot judge it
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
