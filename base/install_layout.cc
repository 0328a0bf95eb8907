#include "base/install_layout.h"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <utility>

#include "base/process.h"

namespace powercut {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kHelperFolder = "libexec/powercut";

// Every program another program starts, and the source folder (= build folder) CMake builds it
// in. tests/base/install_layout_test.cc checks each row against the real build tree.
constexpr std::array<std::pair<std::string_view, std::string_view>, 9> kBuildFolders = {{
    {"powercut", "tools/powercut"},
    {"powercut-vm", "harness/vm"},
    {"powercut-vm-agent", "harness/vm"},
    {"powercut-workload", "workloads"},
    {"powercut-workload-clients", "workloads"},
    {"powercut-fstest-exec", "harness/fstest"},
    {"powercut-cluster", "harness/cluster"},
    {"walbench", "bench/walbench"},
    {"waldump", "tools/waldump"},
}};

bool IsDirectory(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

bool IsFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

}  // namespace

InstallLayout InstallLayout::OfSelf() { return Of(SelfPath("")); }

InstallLayout InstallLayout::Of(const std::string& program_path) {
  const fs::path dir = fs::path(program_path).parent_path();
  if (dir.empty()) return InstallLayout(Kind::kLoose, ".");
  // Installed: <prefix>/bin/<program> or <prefix>/libexec/powercut/<program>.
  if (dir.filename() == "bin" && IsDirectory(dir.parent_path() / kHelperFolder)) {
    return InstallLayout(Kind::kInstalled, dir.parent_path().string());
  }
  if (dir.filename() == "powercut" && dir.parent_path().filename() == "libexec") {
    return InstallLayout(Kind::kInstalled, dir.parent_path().parent_path().string());
  }
  // A build tree: the program sits at most three folders below the CMakeCache.txt of its build
  // (tools/powercut/powercut, bench/walbench/walbench).
  fs::path up = dir;
  for (int depth = 0; depth <= 3 && !up.empty(); ++depth) {
    if (IsFile(up / "CMakeCache.txt")) return InstallLayout(Kind::kBuildTree, up.string());
    if (up == up.parent_path()) break;
    up = up.parent_path();
  }
  return InstallLayout(Kind::kLoose, dir.string());
}

std::string_view InstallLayout::BuildFolderOf(std::string_view name) {
  for (const auto& [program, folder] : kBuildFolders) {
    if (program == name) return folder;
  }
  return "";
}

std::string InstallLayout::Find(std::string_view name) const {
  const fs::path root(root_);
  switch (kind_) {
    case Kind::kInstalled: {
      // A helper in libexec/powercut, else a program users run in bin (cmake/Install.cmake
      // decides which is which; the table of who is where lives there only).
      const fs::path helper = root / kHelperFolder / name;
      return (IsFile(helper) ? helper : root / "bin" / name).string();
    }
    case Kind::kBuildTree: {
      const std::string_view folder = BuildFolderOf(name);
      return (folder.empty() ? root / name : root / folder / name).string();
    }
    case Kind::kLoose:
      break;
  }
  return (root / name).string();
}

std::string InstallLayout::Describe() const {
  switch (kind_) {
    case Kind::kInstalled:
      return fmt::format("the installed tree {}", root_);
    case Kind::kBuildTree:
      return fmt::format("the build tree {}", root_);
    case Kind::kLoose:
      break;
  }
  return fmt::format("the folder {}", root_);
}

absl::StatusOr<std::string> FindHelperProgram(const std::string& self, std::string_view name,
                                              std::string_view env_var, std::string_view what) {
  const std::string variable(env_var);
  if (const char* env = std::getenv(variable.c_str()); env != nullptr && *env != '\0') {
    if (::access(env, X_OK) == 0) return std::filesystem::absolute(env).string();
    return absl::NotFoundError(fmt::format("${}={}: not an executable", env_var, env));
  }
  const InstallLayout layout = InstallLayout::Of(self);
  const std::string program = layout.Find(name);
  if (::access(program.c_str(), X_OK) == 0) return program;
  return absl::NotFoundError(fmt::format(
      "cannot find {} (looked at {}, in {}): build it (cmake --build --preset default --target "
      "{}), install it with powercut, or set {}",
      what, program, layout.Describe(), name, env_var));
}

}  // namespace powercut
