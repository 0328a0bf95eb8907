#include "harness/vm/machine/guest_config.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "fmt/format.h"
#include "harness/vm/machine/guest_config.h"

namespace powercut::vm {
namespace {

namespace fs = std::filesystem;

// Folders the guest covers with tmpfs (guest/init.sh).
constexpr const char* kCoveredFolders[] = {"/tmp", "/run", "/var/tmp", "/mnt"};

// The covered folder `path` lies strictly inside ("" if none).
std::string CoveredFolderOf(const fs::path& path) {
  for (const char* covered : kCoveredFolders) {
    const std::string prefix = std::string(covered) + "/";
    if (path.string().rfind(prefix, 0) == 0 && path.string().size() > prefix.size()) {
      return covered;
    }
  }
  return "";
}

void SortedUnion(std::vector<std::string>* into, const std::vector<std::string>& more) {
  into->insert(into->end(), more.begin(), more.end());
  std::sort(into->begin(), into->end());
  into->erase(std::unique(into->begin(), into->end()), into->end());
}

bool Includes(std::vector<std::string> have, std::vector<std::string> need) {
  std::sort(have.begin(), have.end());
  std::sort(need.begin(), need.end());
  return std::includes(have.begin(), have.end(), need.begin(), need.end());
}

}  // namespace

bool GuestConfig::Covers(const GuestConfig& need) const {
  return Includes(modules, need.modules) && Includes(keep_paths, need.keep_paths) &&
         memory_mib == need.memory_mib && cpus == need.cpus;
}

void GuestConfig::Add(const GuestConfig& more) {
  SortedUnion(&modules, more.modules);
  SortedUnion(&keep_paths, more.keep_paths);
  if (more.memory_mib != 0) memory_mib = more.memory_mib;
  if (more.cpus != 0) cpus = more.cpus;
}

std::vector<std::string> GuestModulesFor(harness::FsKind fs, bool log_writes, bool flakey) {
  std::vector<std::string> modules;
  for (const harness::GuestModule& m : harness::FileSystemOf(fs).guest_modules) {
    modules.emplace_back(m.module);
  }
  if (log_writes || flakey) modules.emplace_back("dm-mod");
  if (log_writes) modules.emplace_back("dm-log-writes");
  if (flakey) modules.emplace_back("dm-flakey");
  return modules;
}

// The folders to keep visible: the caller's, the agent's folder and what the commands name.
std::vector<std::string> KeepPathsFor(const std::string& agent, std::vector<std::string> keep,
                                      const std::vector<std::string>& commands) {
  std::vector<std::string> named = commands;
  named.push_back(agent);
  for (std::string& k : CommandKeepPaths(named)) keep.push_back(std::move(k));
  std::sort(keep.begin(), keep.end());
  keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
  return keep;
}

absl::Status ValidateKeepPaths(const std::vector<std::string>& paths) {
  for (const auto& p : paths) {
    if (p.empty() || p[0] != '/' || p.find_first_of(" ,\t\n") != std::string::npos ||
        !fs::is_directory(p)) {
      return absl::InvalidArgumentError(fmt::format(
          "keep path '{}': must be an existing absolute folder without spaces or commas", p));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateCommand(const std::string& command, const char* what) {
  if (command.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("no {} command: give it as one command string (run with /bin/sh -c)", what));
  }
  return absl::OkStatus();
}

std::vector<std::string> CommandKeepPaths(const std::vector<std::string>& commands) {
  // A path starts with '/' at the start of a word or after = : , ( and similar; it ends at
  // whitespace, a quote or a shell metacharacter.
  constexpr char kBefore[] = " \t\n'\"=:,;(|&<>`";
  constexpr char kEnd[] = " \t\n'\"`:,;()|&<>$*?[]{}";
  std::vector<std::string> keep;
  auto add = [&](const fs::path& path) {
    const std::string covered = CoveredFolderOf(path);
    if (covered.empty()) return;
    std::error_code ec;
    fs::path dir = path;
    while (!dir.empty() && dir != covered && !fs::is_directory(dir, ec)) dir = dir.parent_path();
    if (dir.empty() || dir == covered || CoveredFolderOf(dir).empty()) return;
    keep.push_back(dir.string());
  };
  for (const std::string& command : commands) {
    size_t i = 0;
    while ((i = command.find('/', i)) != std::string::npos) {
      const bool starts_word = i == 0 || std::strchr(kBefore, command[i - 1]) != nullptr;
      size_t end = command.find_first_of(kEnd, i);
      if (end == std::string::npos) end = command.size();
      if (starts_word) {
        const fs::path path = fs::path(command.substr(i, end - i)).lexically_normal();
        add(path);
        // A symbolic link may lead into another covered folder.
        std::error_code ec;
        const fs::path real = fs::weakly_canonical(path, ec);
        if (!ec && real != path) add(real);
      }
      i = std::max(end, i + 1);
    }
  }
  // Sorted, each once, none inside another (its binding would be hidden by the outer one's).
  std::sort(keep.begin(), keep.end());
  keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
  std::vector<std::string> out;
  for (const std::string& k : keep) {
    if (!out.empty() && k.rfind(out.back() + "/", 0) == 0) continue;
    out.push_back(k);
  }
  return out;
}

}  // namespace powercut::vm
