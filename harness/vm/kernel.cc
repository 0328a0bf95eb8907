#include "harness/vm/kernel.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "base/process.h"
#include "base/status_macros.h"
#include "fmt/format.h"

namespace powercut::vm {
namespace {

namespace fs = std::filesystem;

constexpr char kMetaPackage[] = "linux-image-amd64";
constexpr char kPackagePrefix[] = "linux-image-";

// "  Depends: linux-image-6.1.0-57-amd64" -> "linux-image-6.1.0-57-amd64".
absl::StatusOr<std::string> ResolveKernelPackage() {
  ASSIGN_OR_RETURN(std::string out,
                   RunCommandOrError("resolving the kernel package (is apt-get update done?)",
                                     {"apt-cache", "depends", kMetaPackage}));
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    auto pos = line.find("Depends: linux-image-");
    if (pos == std::string::npos) continue;
    std::string name = line.substr(pos + 9);
    while (!name.empty() && (name.back() == ' ' || name.back() == '\r')) name.pop_back();
    if (name.find("-amd64") != std::string::npos && name != kMetaPackage) return name;
  }
  return absl::NotFoundError(fmt::format(
      "resolving the kernel package: `apt-cache depends {}` names no linux-image-*-amd64 "
      "package; run `apt-get update` and check that the Debian main archive is configured",
      kMetaPackage));
}

absl::StatusOr<std::string> PackageVersion(const std::string& package) {
  ASSIGN_OR_RETURN(std::string out,
                   RunCommandOrError("reading the kernel package version",
                                     {"apt-cache", "show", "--no-all-versions", package}));
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("Version: ", 0) == 0) return line.substr(9);
  }
  return absl::NotFoundError(fmt::format(
      "reading the kernel package version: apt-cache shows no Version for {}", package));
}

std::string ReadSmallFile(const fs::path& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

absl::StatusOr<std::string> NewestCachedKernel(const fs::path& kernel_root) {
  std::error_code ec;
  std::string best;
  for (const auto& entry : fs::directory_iterator(kernel_root, ec)) {
    std::string name = entry.path().filename();
    if (name.empty() || name[0] == '.') continue;
    if (!fs::exists(entry.path() / "package-version")) continue;
    if (name > best) best = name;
  }
  if (best.empty()) return absl::NotFoundError("no cached kernel");
  return (kernel_root / best).string();
}

}  // namespace

absl::StatusOr<std::string> CacheRoot() {
  std::string root;
  if (const char* env = std::getenv("POWERCUT_CACHE"); env != nullptr && *env != '\0') {
    root = env;
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    root = fmt::format("{}/.cache/powercut", home);
  } else {
    return absl::FailedPreconditionError(
        "cache folder: neither POWERCUT_CACHE nor HOME is set; set POWERCUT_CACHE to a "
        "writable folder");
  }
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) {
    return absl::FailedPreconditionError(fmt::format(
        "cache folder {}: cannot create it: {}; set POWERCUT_CACHE to a writable folder", root,
        ec.message()));
  }
  return fs::absolute(root).string();
}

absl::StatusOr<GuestKernel> OpenCachedKernel(const std::string& kernel_dir) {
  GuestKernel k;
  fs::path dir(kernel_dir);
  k.release = dir.filename();
  k.package = std::string(kPackagePrefix) + k.release;
  k.package_version = ReadSmallFile(dir / "package-version");
  k.vmlinuz = (dir / "root/boot" / ("vmlinuz-" + k.release)).string();
  k.modules_dir = (dir / "root/lib/modules" / k.release).string();
  if (!fs::exists(k.vmlinuz) || !fs::exists(fs::path(k.modules_dir) / "modules.dep")) {
    return absl::NotFoundError(
        fmt::format("kernel cache {}: missing {} or modules.dep; delete the folder and retry",
                    kernel_dir, k.vmlinuz));
  }
  return k;
}

absl::StatusOr<GuestKernel> FetchKernel() {
  ASSIGN_OR_RETURN(std::string cache, CacheRoot());
  fs::path kernel_root = fs::path(cache) / "kernel";
  std::error_code ec;
  fs::create_directories(kernel_root, ec);

  auto package = ResolveKernelPackage();
  if (!package.ok()) {
    // Offline: a kernel fetched earlier is as good as any.
    auto cached = NewestCachedKernel(kernel_root);
    if (cached.ok()) return OpenCachedKernel(*cached);
    return package.status();
  }
  std::string release = package->substr(sizeof(kPackagePrefix) - 1);
  fs::path final_dir = kernel_root / release;
  if (fs::exists(final_dir / "package-version")) return OpenCachedKernel(final_dir);

  ASSIGN_OR_RETURN(std::string version, PackageVersion(*package));
  fs::path work = kernel_root / fmt::format(".tmp-{}-{}", release, getpid());
  fs::remove_all(work, ec);
  fs::create_directories(work, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        fmt::format("kernel fetch: cannot create {}: {}", work.string(), ec.message()));
  }
  auto cleanup = [&] { fs::remove_all(work, ec); };
  auto fail = [&](absl::Status s) {
    cleanup();
    return s;
  };
  auto dl = RunCommandOrError(
      fmt::format("kernel fetch: downloading {} {} (check network access to the Debian "
                  "archive and run `apt-get update`)",
                  *package, version),
      {"apt-get", "download", "-q", fmt::format("{}={}", *package, version)}, work.string());
  if (!dl.ok()) return fail(dl.status());
  fs::path deb;
  for (const auto& entry : fs::directory_iterator(work)) {
    if (entry.path().extension() == ".deb") deb = entry.path();
  }
  if (deb.empty()) {
    return fail(absl::NotFoundError(
        fmt::format("kernel fetch: apt-get download left no .deb in {}", work.string())));
  }
  auto unpack = RunCommandOrError(
      fmt::format("kernel fetch: unpacking {} (is dpkg-deb installed, is the disk full?)",
                  deb.string()),
      {"dpkg-deb", "-x", deb.string(), (work / "root").string()});
  if (!unpack.ok()) return fail(unpack.status());
  fs::remove(deb, ec);
  // The package ships no modules.dep (the install hook would make it): make it here.
  auto depmod = RunCommandOrError("kernel fetch: depmod (is kmod installed?)",
                                  {"depmod", "-b", (work / "root").string(), release});
  if (!depmod.ok()) return fail(depmod.status());
  {
    std::ofstream out(work / "package-version");
    out << version << "\n";
  }
  fs::rename(work, final_dir, ec);
  if (ec) {
    // Another run published the same kernel first: use theirs.
    cleanup();
    if (!fs::exists(final_dir / "package-version")) {
      return absl::InternalError(
          fmt::format("kernel fetch: cannot publish {}: {}", final_dir.string(), ec.message()));
    }
  }
  return OpenCachedKernel(final_dir);
}

}  // namespace powercut::vm
