#include "workloads/server_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <pwd.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace powercut::workloads {

absl::StatusOr<ServiceAccount> ServiceAccountFor(const std::string& user,
                                                 const std::string& package) {
  ServiceAccount account;
  if (::geteuid() != 0) {
    account.uid = ::geteuid();
    account.gid = ::getegid();
    return account;
  }
  const struct passwd* pw = ::getpwnam(user.c_str());
  if (pw == nullptr) {
    return absl::FailedPreconditionError(fmt::format(
        "there is no user '{}' to run the server as (running as root, and the server must not): "
        "install {} (its package creates the user), or run as an ordinary user",
        user, package));
  }
  account.user = user;
  account.uid = pw->pw_uid;
  account.gid = pw->pw_gid;
  return account;
}

std::vector<std::string> AsAccount(const ServiceAccount& account, std::vector<std::string> argv) {
  if (account.user.empty()) return argv;
  std::vector<std::string> out = {"setpriv", fmt::format("--reuid={}", account.uid),
                                  fmt::format("--regid={}", account.gid), "--init-groups", "--"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

absl::StatusOr<CommandResult> RunAs(const ServiceAccount& account, std::vector<std::string> argv,
                                    const std::string& working_dir) {
  return RunCommand(AsAccount(account, std::move(argv)), working_dir);
}

absl::StatusOr<std::string> ReachableByAccount(const ServiceAccount& account,
                                               const std::string& dir, const std::string& folder) {
  if (account.user.empty()) return dir;
  if (::unshare(CLONE_NEWNS) != 0) {
    return absl::InternalError(fmt::format("unshare(CLONE_NEWNS), to show {} to the {} user: {}",
                                           dir, account.user, std::strerror(errno)));
  }
  // Private: the bind below must not propagate back to the host's (or guest's) namespace.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return absl::InternalError(fmt::format("make / a private mount: {}", std::strerror(errno)));
  }
  const std::string target = folder + "/data";
  if (::mkdir(target.c_str(), 0700) != 0 ||
      (::chown(target.c_str(), account.uid, account.gid) != 0)) {
    return absl::InternalError(fmt::format("mkdir {}: {}", target, std::strerror(errno)));
  }
  if (::mount(dir.c_str(), target.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    return absl::InternalError(fmt::format("bind {} at {}: {}", dir, target, std::strerror(errno)));
  }
  return target;
}

absl::Status MakeOwnedFolder(const std::string& path, const ServiceAccount& account) {
  if (::mkdir(path.c_str(), 0700) != 0) {
    if (errno == EEXIST) return absl::AlreadyExistsError(fmt::format("{} already exists", path));
    return absl::InternalError(fmt::format("mkdir {}: {}", path, std::strerror(errno)));
  }
  if (!account.user.empty() && ::chown(path.c_str(), account.uid, account.gid) != 0) {
    return absl::InternalError(
        fmt::format("chown {} to {}: {}", path, account.user, std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<PrivateFolder> PrivateFolder::Create(const std::string& what,
                                                    const ServiceAccount& account) {
  std::string templ = fmt::format("/tmp/powercut-{}-XXXXXX", what);
  if (::mkdtemp(templ.data()) == nullptr) {
    return absl::InternalError(fmt::format("mkdtemp {}: {}", templ, std::strerror(errno)));
  }
  PrivateFolder folder(templ);
  if (!account.user.empty() && ::chown(templ.c_str(), account.uid, account.gid) != 0) {
    return absl::InternalError(
        fmt::format("chown {} to {}: {}", templ, account.user, std::strerror(errno)));
  }
  return folder;
}

PrivateFolder::~PrivateFolder() {
  if (path_.empty()) return;
  // Never remove through the bind of ReachableByAccount: that is the crash image itself.
  const std::string bound = path_ + "/data";
  if (::umount2(bound.c_str(), MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT) {
    return;  // still mounted: leave the folder rather than empty the image through it
  }
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string FileTail(const std::string& path, int lines) {
  std::ifstream in(path);
  if (!in) return fmt::format("(cannot read {})", path);
  std::stringstream text;
  text << in.rdbuf();
  return LastLines(text.str(), lines);
}

absl::Status SyncFileSystem(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return absl::InternalError(fmt::format("open {}: {}", path, std::strerror(errno)));
  const int rc = ::syncfs(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return absl::DataLossError(fmt::format("syncfs {}: {}", path, std::strerror(err)));
  return absl::OkStatus();
}

absl::StatusOr<std::string> FindProgram(const std::vector<std::string>& candidates,
                                        const std::string& install_hint) {
  for (const std::string& c : candidates) {
    if (!c.empty() && ::access(c.c_str(), X_OK) == 0) return c;
  }
  std::string list;
  for (const std::string& c : candidates) list += (list.empty() ? "" : ", ") + c;
  return absl::NotFoundError(fmt::format("none of {} is installed: {}", list, install_hint));
}

}  // namespace powercut::workloads
