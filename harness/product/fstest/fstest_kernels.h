// Kernels side by side (`powercut fstest run --kernel default,PATH.deb,...`, docs/fstest.md
// "Kernels side by side"): each workload runs on every kernel listed, one more axis of the
// matrix. A kernel has a label, which the cells' names carry ("<id>/fstest/ext4@6.12.118+deb12-
// amd64") so that shards, `powercut merge` and `powercut diff` tell the kernels apart: `default`
// for Debian's linux-image-amd64, else the kernel's release (uname -r) or the label the user gave
// (`fixed=PATH`: two builds of one release, e.g. with and without a patch).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace powercut::product {

struct FsTestKernel {
  std::string label;  // [A-Za-z0-9._+-], at most 64 characters
  std::string path;   // "": Debian's default; else a linux-image .deb or a folder (absolute)

  bool operator==(const FsTestKernel& other) const = default;
};

// The label of Debian's default kernel.
inline constexpr std::string_view kDefaultKernelLabel = "default";

// The release (uname -r) of the kernel at `path`, for a label the user did not give (the CLI:
// vm::OpenUserKernel, which unpacks a .deb once into the cache and checks it before any boot).
using KernelRelease = std::function<absl::StatusOr<std::string>(const std::string& path)>;

// `--kernel LIST`: comma-separated `default`, a path, or `LABEL=PATH`; "" is `default` alone.
// Paths are made absolute. Errors (usage errors naming the item): an empty item, a label outside
// [A-Za-z0-9._+-] or longer than 64, two kernels with the same label (two builds of one release:
// give each a LABEL=), and whatever `release_of` says of a path.
absl::StatusOr<std::vector<FsTestKernel>> ParseKernelList(std::string_view text,
                                                          const KernelRelease& release_of);

// What a cell's name carries after its file system and profile: "@<label>" when several kernels
// run, "" for one (a one-kernel report names its cells as before the axis existed).
std::string KernelVariant(const std::vector<FsTestKernel>& kernels, const FsTestKernel& kernel);

// The report's parameters' form, [{"label": ..., "path": ...}], and back (a malformed entry is an
// error).
nlohmann::json KernelsToJson(const std::vector<FsTestKernel>& kernels);
absl::StatusOr<std::vector<FsTestKernel>> KernelsFromJson(const nlohmann::json& j);

}  // namespace powercut::product
