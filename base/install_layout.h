// Where powercut's programs find each other: one rule for every program that starts a helper
// (powercut starts powercut-workload, powercut-workload-clients, powercut-vm-agent,
// powercut-fstest-exec, powercut-cluster; powercut-workload hands over to
// powercut-workload-clients).
//
// Three layouts, told apart from the running program's own path (/proc/self/exe):
//   installed   <prefix>/bin/<program> or <prefix>/libexec/powercut/<program>, with the folder
//               <prefix>/libexec/powercut present: programs users run are in <prefix>/bin, helpers
//               in <prefix>/libexec/powercut (docs/install.md). Nothing outside <prefix> is
//               looked at, so an installed tree works from any prefix and never reaches into a
//               build folder.
//   build tree  a folder above the program holds CMakeCache.txt: every program is in the build
//               folder that mirrors its source folder (<build>/harness/vm/powercut-vm-agent).
//   loose       anything else (programs copied into one folder): helpers beside the program.
// Guarantees: the same program name always resolves to one path per layout; the path is
// absolute (when the program's own path is) and is returned whether or not the file exists, so
// the caller's error can name where it looked (Describe()).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace powercut {

class InstallLayout {
 public:
  enum class Kind { kInstalled, kBuildTree, kLoose };

  // The layout of the running program (SelfPath).
  static InstallLayout OfSelf();
  // The layout of a program at `program_path` (absolute path of the binary).
  static InstallLayout Of(const std::string& program_path);

  Kind kind() const { return kind_; }
  // <prefix>, <build> or the program's folder.
  const std::string& root() const { return root_; }

  // Where the program or helper `name` (e.g. "powercut-vm-agent") lives in this layout.
  std::string Find(std::string_view name) const;
  // "the installed tree /usr", "the build tree /src/build/default", "beside /opt/pc/powercut":
  // for error messages.
  std::string Describe() const;

  // The build folder (relative to the build tree's root) that holds `name`; "" for a name the
  // table does not know (then Find looks in the root itself).
  static std::string_view BuildFolderOf(std::string_view name);

 private:
  InstallLayout(Kind kind, std::string root) : kind_(kind), root_(std::move(root)) {}

  Kind kind_;
  std::string root_;
};

// A helper program of powercut's (`name`, e.g. powercut-fstest-exec): `$<env_var>` when set (an
// error when it is not an executable), else where the layout of the program at `self` puts it.
// NotFound names `what` (how the caller's message calls it), where it looked, and the fix.
absl::StatusOr<std::string> FindHelperProgram(const std::string& self, std::string_view name,
                                              std::string_view env_var, std::string_view what);

}  // namespace powercut
