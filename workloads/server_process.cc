#include "workloads/server_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <pwd.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
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
  // --pdeathsig: the credential change clears the parent-death signal ChildProcess set, so
  // setpriv sets it again just before it executes the server.
  std::vector<std::string> out = {"setpriv",
                                  fmt::format("--reuid={}", account.uid),
                                  fmt::format("--regid={}", account.gid),
                                  "--init-groups",
                                  "--pdeathsig",
                                  "SIGKILL",
                                  "--"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

absl::StatusOr<CommandResult> RunAs(const ServiceAccount& account, std::vector<std::string> argv,
                                    const std::string& working_dir) {
  return RunCommand(AsAccount(account, std::move(argv)), working_dir);
}

absl::StatusOr<std::unique_ptr<NotifiedServer>> NotifiedServer::Start(
    const ServiceAccount& account, const std::vector<std::string>& argv, const std::string& folder,
    const std::string& output_path, const std::string& log_path, const std::string& what,
    std::chrono::seconds timeout, absl::StatusCode failure_code) {
  const std::string notify = folder + "/notify.sock";
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (notify.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(fmt::format("socket path too long: {}", notify));
  }
  std::memcpy(addr.sun_path, notify.c_str(), notify.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(fmt::format("socket: {}", std::strerror(errno)));
  struct CloseFd {
    int fd;
    ~CloseFd() { ::close(fd); }
  } close_fd{fd};
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return absl::InternalError(fmt::format("bind {}: {}", notify, std::strerror(errno)));
  }
  if (!account.user.empty() && ::chown(notify.c_str(), account.uid, account.gid) != 0) {
    return absl::InternalError(fmt::format("chown {}: {}", notify, std::strerror(errno)));
  }
  auto server = std::unique_ptr<NotifiedServer>(new NotifiedServer(output_path, log_path, what));
  // Only the child needs NOTIFY_SOCKET; this program starts no other child meanwhile.
  ::setenv("NOTIFY_SOCKET", notify.c_str(), 1);
  absl::StatusOr<ChildProcess> child = ChildProcess::Spawn(AsAccount(account, argv), output_path);
  ::unsetenv("NOTIFY_SOCKET");
  if (!child.ok()) return child.status();
  server->child_.emplace(std::move(*child));

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    // Wake at least every 200 ms to see whether the server died instead of getting ready.
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    if (::poll(&p, 1, 200) > 0) {
      char buf[512];
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n > 0 &&
          std::string_view(buf, static_cast<size_t>(n)).find("READY=1") != std::string_view::npos) {
        return server;
      }
      continue;
    }
    if (std::optional<int> code = server->child_->WaitFor(std::chrono::milliseconds(0))) {
      return absl::Status(failure_code,
                          fmt::format("{} exited with status {} before it was ready; its log:\n{}",
                                      what, *code, server->LogTail()));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return absl::Status(failure_code, fmt::format("{} was not ready within {} s; its log:\n{}",
                                                    what, timeout.count(), server->LogTail()));
    }
  }
}

absl::Status NotifiedServer::Stop(int signal, std::chrono::seconds timeout) {
  if (!child_.has_value()) return absl::OkStatus();
  ::kill(child_->pid(), signal);
  std::optional<int> code = child_->WaitFor(timeout);
  if (!code.has_value()) {
    child_->Kill();
    return absl::InternalError(fmt::format("{} did not stop within {} s of signal {}; its log:\n{}",
                                           what_, timeout.count(), signal, LogTail()));
  }
  return absl::OkStatus();
}

std::string NotifiedServer::LogTail() const {
  if (::access(log_path_.c_str(), R_OK) == 0) return FileTail(log_path_, 15);
  return FileTail(output_path_, 15);
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
