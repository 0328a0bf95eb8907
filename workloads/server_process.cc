#include "workloads/server_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/scratch_dir.h"
#include "base/status_macros.h"
#include "workloads/check_result.h"

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
  return powercut::RunCommand(AsAccount(account, std::move(argv)), working_dir);
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
                                               const std::string& dir, const std::string& folder,
                                               const std::string& bind) {
  if (account.user.empty()) return dir;
  if (::unshare(CLONE_NEWNS) != 0) {
    return absl::InternalError(fmt::format("unshare(CLONE_NEWNS), to show {} to the {} user: {}",
                                           dir, account.user, std::strerror(errno)));
  }
  // Private: the bind below must not propagate back to the host's (or guest's) namespace.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return absl::InternalError(fmt::format("make / a private mount: {}", std::strerror(errno)));
  }
  const std::string target = fmt::format("{}/{}", folder, bind);
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

namespace {

// Removes the folder at `path` and everything in it, unless something is still mounted at its
// data/ or data2/ (ReachableByAccount's binds of the crash image's disks, seen from this mount
// namespace) that cannot be detached: never remove through a bind. Whether the folder is gone.
bool RemoveFolderTree(const std::string& path) {
  for (const char* bind : {kStoreBind, kSecondDiskBind}) {
    const std::string bound = fmt::format("{}/{}", path, bind);
    if (::umount2(bound.c_str(), MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT) {
      return false;
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  return !std::filesystem::exists(path, ec) && !ec;
}

// The remover: a child that outlives its parent on purpose (base/process.h's runners kill their
// children with them, the opposite of what is needed here). It is forked before the parent
// moves to a mount namespace of its own (ReachableByAccount), so the crash image's bind is not
// in its namespace and its removal cannot reach the image. It waits for EOF on `pipe_read`:
// the parent closed its end (the destructor) or died (any way, SIGKILL included), then removes
// the folder. A server killed with its parent may still be exiting and create a file between
// two passes of remove_all, hence a few passes, bounded.
[[noreturn]] void RunRemover(const std::string& path, int pipe_read) {
  // Its own process group: a kill of the caller's group (the tester's timeout) must not end it.
  ::setpgid(0, 0);
  const int null = ::open("/dev/null", O_RDWR);
  for (int fd = 0; fd <= 2; ++fd) ::dup2(null, fd);
  // Nothing else of the parent's stays open here: the ack pipe, the parent's stdout and stderr
  // pipes must see EOF when the parent ends, not when the remover does.
  ::dup2(pipe_read, 3);
  ::close_range(4, ~0U, 0);
  if (::chdir("/") != 0) ::_exit(1);
  char byte;
  while (::read(3, &byte, 1) < 0 && errno == EINTR) {
  }
  for (int pass = 0; pass < 100 && !RemoveFolderTree(path); ++pass) {
  }
  ::_exit(0);
}

// Whether the account (not root, which enters anything) may enter `folder`.
bool AccountCanEnter(const ServiceAccount& account, const std::string& folder) {
  struct stat st;
  if (account.user.empty() || ::stat(folder.c_str(), &st) != 0) return true;
  if (st.st_uid == account.uid) return (st.st_mode & S_IXUSR) != 0;
  if (st.st_gid == account.gid) return (st.st_mode & S_IXGRP) != 0;
  return (st.st_mode & S_IXOTH) != 0;
}

}  // namespace

absl::StatusOr<PrivateFolder> PrivateFolder::Create(const std::string& what,
                                                    const ServiceAccount& account) {
  const std::string parent = DefaultScratchParent();
  if (!AccountCanEnter(account, parent)) {
    return absl::FailedPreconditionError(fmt::format(
        "the {} user cannot enter {} (its mode forbids it), where the server's socket folder "
        "goes: set TMPDIR to a folder every user may enter (e.g. /tmp)",
        account.user, parent));
  }
  std::string templ = fmt::format("{}/powercut-{}-XXXXXX", parent, what);
  if (::mkdtemp(templ.data()) == nullptr) {
    return absl::InternalError(fmt::format("mkdtemp {}: {}", templ, std::strerror(errno)));
  }
  PrivateFolder folder(templ);
  if (!account.user.empty() && ::chown(templ.c_str(), account.uid, account.gid) != 0) {
    return absl::InternalError(
        fmt::format("chown {} to {}: {}", templ, account.user, std::strerror(errno)));
  }
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return absl::InternalError(fmt::format("pipe: {}", std::strerror(errno)));
  }
  const pid_t pid = ::fork();
  if (pid == 0) RunRemover(templ, fds[0]);
  ::close(fds[0]);
  if (pid < 0) {
    ::close(fds[1]);
    return absl::InternalError(
        fmt::format("fork (the remover of {}): {}", templ, std::strerror(errno)));
  }
  folder.remover_ = pid;
  folder.remover_pipe_ = fds[1];
  return folder;
}

PrivateFolder::~PrivateFolder() {
  if (!path_.empty()) RemoveFolderTree(path_);
  // The remover finds the folder gone (or, if the bind could not be detached here, removes it
  // from its own namespace, where there is no bind) and exits: reap it.
  if (remover_pipe_ >= 0) ::close(remover_pipe_);
  if (remover_ > 0) {
    while (::waitpid(remover_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

absl::Status MakeFreshStoreFolder(const std::string& dir, const std::string& store,
                                  const std::string& workload, const ServiceAccount& account) {
  const std::string path = fmt::format("{}/{}", dir, store);
  if (absl::Status made = MakeOwnedFolder(path, account); !made.ok()) {
    if (!absl::IsAlreadyExists(made)) return made;
    return absl::InvalidArgumentError(
        fmt::format("{} already exists: the {} workload needs a fresh POWERCUT_DIR (remove it)",
                    path, workload));
  }
  return SyncFileSystem(path);
}

absl::StatusOr<ServerSite> RunSite(const std::string& dir, const std::string& store,
                                   const std::string& workload, const std::string& user,
                                   const std::string& package, const std::string& folder_name) {
  ASSIGN_OR_RETURN(ServiceAccount account, ServiceAccountFor(user, package));
  RETURN_IF_ERROR(MakeFreshStoreFolder(dir, store, workload, account));
  ASSIGN_OR_RETURN(PrivateFolder folder, PrivateFolder::Create(folder_name, account));
  ASSIGN_OR_RETURN(const std::string reachable, ReachableByAccount(account, dir, folder.path()));
  return ServerSite{.account = std::move(account),
                    .folder = std::move(folder),
                    .data = fmt::format("{}/{}", reachable, store)};
}

absl::StatusOr<std::string> SecondDiskStore(const ServerSite& site, const std::string& dir2,
                                            const std::string& store, const std::string& workload,
                                            bool fresh) {
  const std::string path = fmt::format("{}/{}", dir2, store);
  if (fresh) {
    RETURN_IF_ERROR(MakeFreshStoreFolder(dir2, store, workload, site.account));
  } else if (::access(path.c_str(), F_OK) != 0) {
    return absl::NotFoundError(fmt::format("{}: {}", path, std::strerror(errno)));
  }
  ASSIGN_OR_RETURN(const std::string reachable,
                   ReachableByAccount(site.account, dir2, site.folder.path(), kSecondDiskBind));
  return fmt::format("{}/{}", reachable, store);
}

absl::StatusOr<ServerSite> CheckSite(const std::string& dir, const std::string& store,
                                     const std::string& user, const std::string& package,
                                     const std::string& folder_name) {
  if (OnReadOnlyMount(dir)) {
    return absl::InvalidArgumentError(
        fmt::format("{} is on a read-only mount: the server writes while it recovers; mount the "
                    "crash image read-write",
                    dir));
  }
  ASSIGN_OR_RETURN(ServiceAccount account, ServiceAccountFor(user, package));
  ASSIGN_OR_RETURN(PrivateFolder folder, PrivateFolder::Create(folder_name, account));
  ASSIGN_OR_RETURN(const std::string reachable, ReachableByAccount(account, dir, folder.path()));
  return ServerSite{.account = std::move(account),
                    .folder = std::move(folder),
                    .data = fmt::format("{}/{}", reachable, store)};
}

absl::StatusOr<UnixStream> UnixStream::Connect(const std::string& path,
                                               std::chrono::seconds timeout) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(fmt::format("socket path too long: {}", path));
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  UnixStream stream(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (stream.fd_ < 0) return absl::InternalError(fmt::format("socket: {}", std::strerror(errno)));
  if (::connect(stream.fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return absl::UnavailableError(fmt::format("connect {}: {}", path, std::strerror(errno)));
  }
  timeval tv{.tv_sec = static_cast<time_t>(timeout.count()), .tv_usec = 0};
  ::setsockopt(stream.fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return stream;
}

UnixStream::~UnixStream() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status UnixStream::SendAll(std::string_view data) {
  for (size_t done = 0; done < data.size();) {
    const ssize_t n = ::send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(fmt::format("send: {}", std::strerror(errno)));
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> UnixStream::Receive(std::string& in) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n >= 0) {
      in.append(buf, static_cast<size_t>(n));
      return static_cast<size_t>(n);
    }
    if (errno == EINTR) continue;
    return absl::UnavailableError(
        fmt::format("recv: {}", errno == EAGAIN ? "no reply in time" : std::strerror(errno)));
  }
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

absl::Status WriteReadyMarker(const std::string& dir, const std::string& name) {
  const std::string path = fmt::format("{}/{}", dir, name);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(fmt::format("create {}: {}", path, std::strerror(errno)));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return absl::DataLossError(fmt::format("fsync {}: {}", path, std::strerror(err)));
  return SyncFileSystem(dir);
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
