#include "harness/product/fstest/fstest_kernels.h"

#include <filesystem>
#include <set>

#include "absl/strings/str_split.h"
#include "fmt/format.h"

namespace powercut::product {
namespace {

constexpr size_t kMaxLabel = 64;

bool ValidLabel(std::string_view label) {
  if (label.empty() || label.size() > kMaxLabel) return false;
  for (const char c : label) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '+' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::vector<FsTestKernel>> ParseKernelList(std::string_view text,
                                                          const KernelRelease& release_of) {
  std::vector<FsTestKernel> out;
  if (text.empty()) return std::vector<FsTestKernel>{{std::string(kDefaultKernelLabel), ""}};
  std::set<std::string> labels;
  const std::vector<std::string> items = absl::StrSplit(std::string(text), ',');
  for (const std::string& item : items) {
    if (item.empty()) {
      return absl::InvalidArgumentError(fmt::format(
          "--kernel {}: an empty item; give default, a linux-image .deb or folder, or LABEL=PATH, "
          "comma-separated",
          text));
    }
    FsTestKernel k;
    const size_t eq = item.find('=');
    std::error_code ec;
    if (item == kDefaultKernelLabel) {
      k.label = kDefaultKernelLabel;
    } else if (eq != std::string_view::npos && !std::filesystem::exists(std::string(item), ec)) {
      k.label = item.substr(0, eq);
      k.path = std::filesystem::absolute(std::string(item.substr(eq + 1)), ec).string();
      if (!ValidLabel(k.label)) {
        return absl::InvalidArgumentError(
            fmt::format("--kernel {}: the label '{}' is not [A-Za-z0-9._+-], 1 to {} characters",
                        text, k.label, kMaxLabel));
      }
    } else {
      k.path = std::filesystem::absolute(std::string(item), ec).string();
    }
    if (!k.path.empty()) {
      // Opened even where the label is given: a wrong path fails here, before any guest boots.
      absl::StatusOr<std::string> release = release_of(k.path);
      if (!release.ok()) {
        const std::string message(release.status().message());
        return absl::InvalidArgumentError(message.find(k.path) != std::string::npos
                                              ? message
                                              : fmt::format("--kernel {}: {}", item, message));
      }
      if (k.label.empty()) k.label = *release;
      if (!ValidLabel(k.label)) {
        return absl::InvalidArgumentError(fmt::format(
            "--kernel {}: its release '{}' cannot name cells: give it a label, LABEL={}", item,
            k.label, item));
      }
    }
    if (!labels.insert(k.label).second) {
      return absl::InvalidArgumentError(fmt::format(
          "--kernel {}: two kernels are labelled '{}' (two builds of one release?): give each a "
          "label of its own, LABEL=PATH",
          text, k.label));
    }
    out.push_back(std::move(k));
  }
  return out;
}

std::string KernelVariant(const std::vector<FsTestKernel>& kernels, const FsTestKernel& kernel) {
  return kernels.size() > 1 ? "@" + kernel.label : "";
}

nlohmann::json KernelsToJson(const std::vector<FsTestKernel>& kernels) {
  nlohmann::json j = nlohmann::json::array();
  for (const FsTestKernel& k : kernels) j.push_back({{"label", k.label}, {"path", k.path}});
  return j;
}

absl::StatusOr<std::vector<FsTestKernel>> KernelsFromJson(const nlohmann::json& j) {
  std::vector<FsTestKernel> out;
  if (!j.is_array()) return absl::InvalidArgumentError("fstest kernels: not an array");
  for (const nlohmann::json& k : j) {
    if (!k.is_object() || !k.contains("label") || !k.at("label").is_string() ||
        !k.contains("path") || !k.at("path").is_string()) {
      return absl::InvalidArgumentError(
          fmt::format("fstest kernels: {} is not {{\"label\": ..., \"path\": ...}}", k.dump()));
    }
    out.push_back({k.at("label").get<std::string>(), k.at("path").get<std::string>()});
  }
  return out;
}

}  // namespace powercut::product
