#include "harness/vm/machine/kernel.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "base/hash.h"
#include "base/image_io.h"
#include "base/process.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "harness/fs/file_system.h"

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

// What `apt-cache depends` answers from: apt's configuration (sources, pins), the package lists
// and dpkg's status. A stamp of each file's mtime and size; the same stamp, the same answer.
std::string AptStamp() {
  std::string stamp;
  auto add = [&stamp](const fs::path& p) {
    struct stat st;
    if (::stat(p.c_str(), &st) != 0) return;
    stamp +=
        fmt::format("{}:{}.{}:{};", p.string(), st.st_mtim.tv_sec, st.st_mtim.tv_nsec, st.st_size);
  };
  std::error_code ec;
  add("/etc/apt");
  for (auto it = fs::recursive_directory_iterator("/etc/apt", ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    add(it->path());
  }
  add("/var/lib/apt/lists");
  for (const auto& entry : fs::directory_iterator("/var/lib/apt/lists", ec)) add(entry.path());
  add("/var/lib/dpkg/status");
  return powercut::HashBytes(
             absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(stamp.data()), stamp.size()))
      .Hex();
}

// ResolveKernelPackage, remembered in `kernel_root`/resolved against AptStamp(): `apt-cache
// depends` loads apt's whole cache, ~1.4 s of CPU at every start of a guest-using command.
absl::StatusOr<std::string> ResolveKernelPackageCached(const fs::path& kernel_root) {
  if (std::getenv("APT_CONFIG") != nullptr) return ResolveKernelPackage();  // another apt
  const std::string stamp = AptStamp();
  const fs::path memo = kernel_root / "resolved";
  {
    std::ifstream in(memo);
    std::string saved_stamp, package;
    if (std::getline(in, saved_stamp) && std::getline(in, package) && saved_stamp == stamp &&
        package.rfind(kPackagePrefix, 0) == 0) {
      return package;
    }
  }
  ASSIGN_OR_RETURN(std::string package, ResolveKernelPackage());
  (void)PublishFile(memo.string(), stamp + "\n" + package + "\n");  // a cache: best effort
  return package;
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

std::string KernelName(const GuestKernel& k) {
  if (!k.source.empty()) return fmt::format("{} (--kernel {})", k.release, k.source);
  return fmt::format("{} (Debian {} {})", k.release, kMetaPackage, k.package_version);
}

absl::StatusOr<std::string> KernelImageVersion(const std::string& image) {
  // The x86 boot protocol's setup header: "HdrS" at 0x202, and at 0x20e the offset (from 0x200)
  // of the NUL-terminated version string (Documentation/arch/x86/boot.rst).
  std::ifstream in(image, std::ios::binary);
  if (!in) return absl::NotFoundError(fmt::format("kernel image {}: cannot read it", image));
  std::string head(0x10000, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  auto not_bzimage = [&] {
    return absl::InvalidArgumentError(fmt::format(
        "kernel image {}: not an x86 bzImage (no \"HdrS\" setup header); pass the bzImage "
        "(arch/x86/boot/bzImage, or /boot/vmlinuz-<release>), not vmlinux",
        image));
  };
  if (head.size() < 0x210 || head.compare(0x202, 4, "HdrS") != 0) return not_bzimage();
  const size_t offset = static_cast<uint8_t>(head[0x20e]) |
                        (static_cast<size_t>(static_cast<uint8_t>(head[0x20f])) << 8);
  const size_t at = 0x200 + offset;
  if (offset == 0 || at >= head.size()) return not_bzimage();
  const size_t end = head.find('\0', at);
  return head.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

std::string ModuleConfigOption(const std::string& module) {
  static const std::map<std::string, std::string> kOptions = {
      {"virtio_pci", "CONFIG_VIRTIO_PCI"},
      {"virtio_blk", "CONFIG_VIRTIO_BLK"},
      {"virtio_console", "CONFIG_VIRTIO_CONSOLE"},
      {"9pnet_virtio", "CONFIG_NET_9P_VIRTIO"},
      {"9p", "CONFIG_9P_FS"},
      {"dm-mod", "CONFIG_BLK_DEV_DM"},
      {"dm-log-writes", "CONFIG_DM_LOG_WRITES"},
      {"dm-flakey", "CONFIG_DM_FLAKEY"},
      {"loop", "CONFIG_BLK_DEV_LOOP"}};
  if (auto it = kOptions.find(module); it != kOptions.end()) return it->second;
  for (const harness::FileSystem& fs : harness::AllFileSystems()) {
    for (const harness::GuestModule& m : fs.guest_modules) {
      if (module == m.module) return m.config_option;
    }
  }
  return "";
}

std::vector<std::string> KernelConfigProblems(const GuestKernel& k) {
  std::vector<std::string> problems;
  if (k.config.empty()) return problems;
  std::ifstream in(k.config);
  std::set<std::string> yes;
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > 2 && line.compare(line.size() - 2, 2, "=y") == 0) {
      yes.insert(line.substr(0, line.size() - 2));
    }
  }
  const std::pair<const char*, const char*> kNeeded[] = {
      {"CONFIG_BLK_DEV_INITRD", "the guest boots from powercut's initramfs"},
      {"CONFIG_DEVTMPFS", "the guest's init mounts devtmpfs"},
      {"CONFIG_TMPFS", "the guest writes to tmpfs"},
      {"CONFIG_PROC_FS", "the guest mounts /proc"},
      {"CONFIG_SYSFS", "the agent finds its disks in /sys"},
      {"CONFIG_HOTPLUG_PCI_ACPI", "warm guests hot-plug each recording's disk"}};
  for (const auto& [option, why] : kNeeded) {
    if (!yes.count(option)) problems.push_back(fmt::format("{}=y ({})", option, why));
  }
  return problems;
}

namespace {

// The single entry of `dir` (a lib/modules folder) that is a folder, or "".
std::string OnlySubfolder(const fs::path& dir) {
  std::error_code ec;
  std::string found;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_directory()) continue;
    if (!found.empty()) return "";
    found = e.path().filename();
  }
  return found;
}

// A kernel from a modules folder (lib/modules/<release>) and the image beside it.
absl::StatusOr<GuestKernel> KernelFromFolders(const fs::path& modules_dir,
                                              const std::vector<fs::path>& images,
                                              const std::string& source) {
  GuestKernel k;
  k.source = source;
  k.release = modules_dir.filename();
  k.package = "(none)";
  k.modules_dir = fs::absolute(modules_dir).lexically_normal().string();
  std::error_code ec;
  for (const fs::path& image : images) {
    if (fs::is_regular_file(image, ec)) {
      k.vmlinuz = fs::canonical(image, ec).string();
      break;
    }
  }
  if (k.vmlinuz.empty()) {
    std::vector<std::string> looked;
    for (const fs::path& p : images) looked.push_back(p.string());
    return absl::NotFoundError(fmt::format(
        "--kernel {}: no kernel image found (looked for {}); copy your bzImage there as "
        "vmlinuz",
        source, fmt::join(looked, ", ")));
  }
  if (!fs::exists(modules_dir / "modules.dep")) {
    return absl::FailedPreconditionError(fmt::format(
        "--kernel {}: {} has no modules.dep; run `depmod -b <root> {}` where <root> holds "
        "lib/modules/{} (`make modules_install` runs it)",
        source, k.modules_dir, k.release, k.release));
  }
  ASSIGN_OR_RETURN(k.version, KernelImageVersion(k.vmlinuz));
  const std::string image_release = k.version.substr(0, k.version.find(' '));
  if (image_release != k.release) {
    return absl::InvalidArgumentError(fmt::format(
        "--kernel {}: the image {} is release {} but the modules in {} are for {}: pass the "
        "modules built with that image",
        source, k.vmlinuz, image_release, k.modules_dir, k.release));
  }
  for (const fs::path& config :
       {modules_dir / "build/.config", modules_dir / "config",
        fs::path(k.vmlinuz).parent_path() / ("config-" + k.release),
        fs::path(k.vmlinuz).parent_path() / ".config",
        modules_dir.parent_path().parent_path().parent_path() / "boot" / ("config-" + k.release)}) {
    if (fs::is_regular_file(config, ec)) {
      k.config = fs::canonical(config, ec).string();
      break;
    }
  }
  if (std::vector<std::string> problems = KernelConfigProblems(k); !problems.empty()) {
    return absl::FailedPreconditionError(fmt::format(
        "--kernel {}: its config {} lacks what the guest needs: {}; rebuild with these set", source,
        k.config, fmt::join(problems, ", ")));
  }
  return k;
}

// A root folder (boot/ and lib/modules/<release>/ inside), as dpkg-deb -x leaves it.
absl::StatusOr<GuestKernel> KernelFromRoot(const fs::path& root, const std::string& source) {
  const std::string release = OnlySubfolder(root / "lib/modules");
  if (release.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("--kernel {}: {} must hold exactly one lib/modules/<release> folder", source,
                    root.string()));
  }
  return KernelFromFolders(
      root / "lib/modules" / release,
      {root / "boot" / ("vmlinuz-" + release), root / "boot/vmlinuz", root / "boot/bzImage"},
      source);
}

absl::StatusOr<GuestKernel> KernelFromDeb(const std::string& deb) {
  ASSIGN_OR_RETURN(std::string cache, CacheRoot());
  ASSIGN_OR_RETURN(Hash128 hash, HashFile(deb));
  // Keyed by content: a rebuilt .deb of the same name is unpacked again.
  const fs::path final_dir = fs::path(cache) / "kernel" / ("deb-" + hash.Hex().substr(0, 16));
  std::error_code ec;
  if (!fs::exists(final_dir / "package-version")) {
    const fs::path work = final_dir.string() + fmt::format(".tmp-{}", getpid());
    fs::remove_all(work, ec);
    fs::create_directories(work, ec);
    auto unpack = RunCommandOrError(
        fmt::format("--kernel {}: unpacking it (is it a linux-image .deb? is dpkg-deb "
                    "installed?)",
                    deb),
        {"dpkg-deb", "-x", deb, (work / "root").string()});
    const std::string release = OnlySubfolder(work / "root/lib/modules");
    absl::Status made = unpack.status();
    if (made.ok() && release.empty()) {
      made = absl::InvalidArgumentError(fmt::format(
          "--kernel {}: the package holds no single lib/modules/<release> folder: is it a "
          "linux-image package (not linux-headers or a meta package)?",
          deb));
    }
    if (made.ok()) {
      // The package ships no modules.dep (its install hook would make it).
      made = RunCommandOrError(fmt::format("--kernel {}: depmod (is kmod installed?)", deb),
                               {"depmod", "-b", (work / "root").string(), release})
                 .status();
    }
    if (made.ok()) {
      absl::StatusOr<std::string> version = RunCommandOrError(
          fmt::format("--kernel {}: reading its version", deb), {"dpkg-deb", "-f", deb, "Version"});
      made = version.status();
      if (made.ok()) std::ofstream(work / "package-version") << *version;
    }
    if (made.ok()) {
      absl::StatusOr<std::string> package =
          RunCommandOrError(fmt::format("--kernel {}: reading its package name", deb),
                            {"dpkg-deb", "-f", deb, "Package"});
      made = package.status();
      if (made.ok()) std::ofstream(work / "package") << *package;
    }
    if (!made.ok()) {
      fs::remove_all(work, ec);
      return made;
    }
    fs::rename(work, final_dir, ec);
    if (ec) fs::remove_all(work, ec);  // another run published it first
  }
  ASSIGN_OR_RETURN(GuestKernel k, KernelFromRoot(final_dir / "root", deb));
  k.package_version = ReadSmallFile(final_dir / "package-version");
  k.package = ReadSmallFile(final_dir / "package");
  for (std::string* field : {&k.package_version, &k.package}) {
    while (!field->empty() && std::isspace(static_cast<unsigned char>(field->back()))) {
      field->pop_back();
    }
  }
  return k;
}

}  // namespace

absl::StatusOr<GuestKernel> OpenUserKernel(const std::string& path) {
  std::error_code ec;
  const std::string source = fs::absolute(path, ec).lexically_normal().string();
  if (fs::is_regular_file(path, ec)) {
    if (fs::path(path).extension() != ".deb") {
      return absl::InvalidArgumentError(fmt::format(
          "--kernel {}: a file must be a linux-image .deb; for your own build pass the "
          "lib/modules/<release> folder `make modules_install` made (with the bzImage in it as "
          "vmlinuz, or its build/ link to the tree)",
          path));
    }
    return KernelFromDeb(source);
  }
  if (!fs::is_directory(path, ec)) {
    return absl::NotFoundError(fmt::format("--kernel {}: no such file or folder", path));
  }
  const fs::path dir(source);
  if (fs::is_directory(dir / "lib/modules", ec)) return KernelFromRoot(dir, source);
  if (fs::exists(dir / "modules.dep", ec) || fs::exists(dir / "modules.order", ec) ||
      fs::is_directory(dir / "kernel", ec)) {
    const std::string release = dir.filename();
    return KernelFromFolders(
        dir,
        {dir / "vmlinuz", dir / "bzImage", dir / "build/arch/x86/boot/bzImage",
         dir.parent_path().parent_path().parent_path() / "boot" / ("vmlinuz-" + release)},
        source);
  }
  return absl::InvalidArgumentError(fmt::format(
      "--kernel {}: neither a linux-image .deb, a folder with lib/modules/<release>, nor a "
      "lib/modules/<release> folder (no modules.dep, modules.order or kernel/ in it)",
      path));
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
  k.version = KernelImageVersion(k.vmlinuz).value_or("");
  if (fs::path config = dir / "root/boot" / ("config-" + k.release); fs::exists(config)) {
    k.config = config.string();
  }
  return k;
}

absl::StatusOr<GuestKernel> FetchKernel() {
  ASSIGN_OR_RETURN(std::string cache, CacheRoot());
  fs::path kernel_root = fs::path(cache) / "kernel";
  std::error_code ec;
  fs::create_directories(kernel_root, ec);

  auto package = ResolveKernelPackageCached(kernel_root);
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
