#include "harness/vm/machine/initramfs.h"

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "base/hash.h"
#include "base/image_io.h"
#include "base/process.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/fs/file_system.h"
#include "harness/vm/machine/cpio_writer.h"

namespace powercut::vm {
namespace {

namespace fs = std::filesystem;

// busybox-static: the guest has no libc of its own before it mounts the host root.
constexpr char kBusybox[] = "/bin/busybox";

// "ext4", "dm-mod", "kernel/drivers/md/dm-mod.ko.xz" -> "ext4", "dm_mod", "dm_mod".
std::string ModuleKey(std::string_view name_or_path) {
  std::string name(fs::path(std::string(name_or_path)).filename());
  for (const char* ext : {".ko.xz", ".ko.zst", ".ko.gz", ".ko"}) {
    std::string_view e(ext);
    if (name.size() > e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0) {
      name.resize(name.size() - e.size());
      break;
    }
  }
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
}

struct ModuleIndex {
  std::map<std::string, std::string> path;                      // key -> relative path
  std::map<std::string, std::vector<std::string>> deps;         // key -> dependency keys
  std::map<std::string, std::vector<std::string>> softdep_pre;  // key -> names or aliases
  std::multimap<std::string, std::string> aliases;              // alias -> key
  std::set<std::string> builtin;                                // keys
};

absl::StatusOr<ModuleIndex> LoadIndex(const GuestKernel& kernel) {
  ModuleIndex index;
  auto dep_text = ReadWholeFile(kernel.modules_dir + "/modules.dep");
  if (!dep_text.ok()) {
    return absl::NotFoundError(fmt::format(
        "initramfs: {}/modules.dep is missing; delete the kernel cache folder and retry",
        kernel.modules_dir));
  }
  std::istringstream lines(*dep_text);
  std::string line;
  while (std::getline(lines, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string rel = line.substr(0, colon);
    std::string key = ModuleKey(rel);
    index.path[key] = rel;
    std::istringstream words(line.substr(colon + 1));
    std::string dep;
    while (words >> dep) index.deps[key].push_back(ModuleKey(dep));
  }
  if (auto soft = ReadWholeFile(kernel.modules_dir + "/modules.softdep"); soft.ok()) {
    std::istringstream sl(*soft);
    while (std::getline(sl, line)) {
      std::istringstream words(line);
      std::string w, mod;
      if (!(words >> w) || w != "softdep" || !(words >> mod)) continue;
      bool pre = false;
      while (words >> w) {
        if (w == "pre:") {
          pre = true;
        } else if (w == "post:") {
          pre = false;
        } else if (pre) {
          index.softdep_pre[ModuleKey(mod)].push_back(w);
        }
      }
    }
  }
  if (auto alias = ReadWholeFile(kernel.modules_dir + "/modules.alias"); alias.ok()) {
    std::istringstream al(*alias);
    while (std::getline(al, line)) {
      std::istringstream words(line);
      std::string w, name, mod;
      if ((words >> w >> name >> mod) && w == "alias") index.aliases.emplace(name, ModuleKey(mod));
    }
  }
  if (auto builtin = ReadWholeFile(kernel.modules_dir + "/modules.builtin"); builtin.ok()) {
    std::istringstream bl(*builtin);
    while (std::getline(bl, line)) index.builtin.insert(ModuleKey(line));
  }
  return index;
}

}  // namespace

std::vector<std::string> BaseGuestModules() {
  return {"virtio_pci", "virtio_blk", "virtio_console", "9pnet_virtio", "9p"};
}

std::vector<std::string> DefaultGuestModules() {
  std::vector<std::string> modules = BaseGuestModules();
  for (const char* m : {"dm-mod", "dm-log-writes", "dm-flakey"}) modules.emplace_back(m);
  for (const harness::FileSystem& fs : harness::AllFileSystems()) {
    for (const harness::GuestModule& m : fs.guest_modules) modules.emplace_back(m.module);
  }
  modules.emplace_back("loop");
  return modules;
}

absl::StatusOr<std::vector<std::string>> MissingModules(const GuestKernel& kernel,
                                                        const std::vector<std::string>& modules) {
  ASSIGN_OR_RETURN(ModuleIndex index, LoadIndex(kernel));
  std::vector<std::string> missing;
  for (const std::string& name : modules) {
    const std::string key = ModuleKey(name);
    if (!index.path.count(key) && !index.builtin.count(key)) missing.push_back(name);
  }
  return missing;
}

namespace {

// ResolveModuleLoadOrder on an index already loaded (reading one costs ~50 ms: BuildInitramfs
// resolves every module on its own).
absl::StatusOr<std::vector<std::string>> ResolveLoadOrder(ModuleIndex& index,
                                                          const GuestKernel& kernel,
                                                          const std::vector<std::string>& modules) {
  std::vector<std::string> order;
  std::set<std::string> visited;
  std::function<void(const std::string&)> visit = [&](const std::string& key) {
    if (!visited.insert(key).second) return;
    // Soft dependencies (e.g. ext4 needs a crc32c implementation) name aliases; missing ones
    // are built in.
    for (const auto& soft : index.softdep_pre[key]) {
      std::string sk = ModuleKey(soft);
      if (index.path.count(sk)) visit(sk);
      auto [lo, hi] = index.aliases.equal_range(soft);
      for (auto it = lo; it != hi; ++it) {
        if (index.path.count(it->second)) visit(it->second);
      }
    }
    for (const auto& dep : index.deps[key]) visit(dep);
    order.push_back(index.path[key]);
  };
  for (const auto& name : modules) {
    std::string key = ModuleKey(name);
    if (index.path.count(key)) {
      visit(key);
    } else if (!index.builtin.count(key)) {
      return absl::NotFoundError(
          fmt::format("initramfs: kernel {} has no module {} (not in {}/modules.dep nor built in)",
                      kernel.release, name, kernel.modules_dir));
    }
  }
  return order;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ResolveModuleLoadOrder(
    const GuestKernel& kernel, const std::vector<std::string>& modules) {
  ASSIGN_OR_RETURN(ModuleIndex index, LoadIndex(kernel));
  return ResolveLoadOrder(index, kernel, modules);
}

absl::StatusOr<Initramfs> BuildInitramfs(const GuestKernel& kernel,
                                         const std::vector<std::string>& modules) {
  ASSIGN_OR_RETURN(ModuleIndex index, LoadIndex(kernel));
  ASSIGN_OR_RETURN(std::vector<std::string> order, ResolveLoadOrder(index, kernel, modules));
  auto busybox = ReadWholeFile(kBusybox);
  if (!busybox.ok()) {
    return absl::NotFoundError(fmt::format(
        "initramfs: {} is missing; install busybox-static (tools/install-deps.sh)", kBusybox));
  }
  ASSIGN_OR_RETURN(std::string cache, CacheRoot());
  fs::path dir = fs::path(cache) / "initramfs";
  std::error_code ec;
  fs::create_directories(dir, ec);

  CpioWriter cpio;
  for (const char* d : {"bin", "dev", "proc", "sys", "host", "tmp", "lib", "lib/modules"}) {
    cpio.AddDirectory(d);
  }
  cpio.AddCharDevice("dev/console", 5, 1);
  cpio.AddFile("bin/busybox", *busybox, 0755);
  cpio.AddFile("init", kGuestInitScript, 0755);
  for (const auto& rel : order) {
    std::string src = kernel.modules_dir + "/" + rel;
    std::string data;
    std::string ext = fs::path(rel).extension();
    if (ext == ".xz" || ext == ".zst" || ext == ".gz") {
      fs::path tmp = dir / fmt::format(".module-{}.ko", getpid());
      std::string tool = ext == ".xz" ? "xz" : ext == ".zst" ? "zstd" : "gzip";
      auto out = RunCommandOrError(
          fmt::format("initramfs: decompressing module {} (is {} installed?)", src, tool),
          {"sh", "-c", fmt::format("{} -dc '{}' > '{}'", tool, src, tmp.string())});
      if (!out.ok()) {
        fs::remove(tmp, ec);
        return out.status();
      }
      auto read = ReadWholeFile(tmp);
      fs::remove(tmp, ec);
      if (!read.ok()) return read.status();
      data = std::move(*read);
    } else {
      ASSIGN_OR_RETURN(data, ReadWholeFile(src));
    }
    cpio.AddFile("lib/modules/" + ModuleKey(rel) + ".ko", data);
  }
  // One load list per requested module (its dependencies first): the init loads the base lists
  // and those named by powercut.modules= on the kernel command line, so a run pays only for the
  // file systems and dm targets it uses.
  cpio.AddDirectory("modules.d");
  for (const auto& name : modules) {
    ASSIGN_OR_RETURN(std::vector<std::string> one, ResolveLoadOrder(index, kernel, {name}));
    std::string list;
    for (const auto& rel : one) list += ModuleKey(rel) + "\n";
    cpio.AddFile("modules.d/" + ModuleKey(name), list);
  }
  std::string archive = cpio.Finish();

  Initramfs result;
  result.hash =
      powercut::HashBytes(
          absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(archive.data()), archive.size()))
          .Hex();
  result.modules = order.size();
  result.bytes = archive.size();
  result.path = (dir / (result.hash + ".cpio")).string();
  if (fs::exists(result.path)) return result;
  if (absl::Status published = PublishFile(result.path, archive); !published.ok()) {
    return absl::Status(published.code(),
                        fmt::format("initramfs: {}", std::string(published.message())));
  }
  return result;
}

}  // namespace powercut::vm
