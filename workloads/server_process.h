// What the server workloads (postgres, redis) share: the account a server runs as, a private
// folder for its unix socket and log, and running its tools as that account.
//
// Why: database servers refuse to run as root (PostgreSQL) or should not (Redis), and the
// workload and checker run as root in the guest (and as root on the host, which loop-mounts the
// crash images). A server listens only on a unix socket in a fresh folder under /tmp, so two
// checkers on the host, or a server of the host, never share a socket, a port or a lock file.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/process.h"

namespace powercut::workloads {

// The account a server runs as: `user` when this process is root (its uid and gid from the
// password database), else this process's own account (the server then runs as the caller).
struct ServiceAccount {
  std::string user;  // "" when not switching (not root)
  uid_t uid = 0;
  gid_t gid = 0;
};
// FailedPrecondition naming `package` (which creates the account) when root and `user` does not
// exist.
absl::StatusOr<ServiceAccount> ServiceAccountFor(const std::string& user,
                                                 const std::string& package);

// `argv` prefixed to run as `account` (setpriv from util-linux: no PAM, no session, works in the
// guest, which has no /run/systemd and no login machinery); unchanged when not switching.
std::vector<std::string> AsAccount(const ServiceAccount& account, std::vector<std::string> argv);

// A server run in the foreground as this process's child, as `account`, that says "READY=1" on
// $NOTIFY_SOCKET once it accepts clients (sd_notify: Debian builds PostgreSQL and Redis with
// systemd support, and both speak it with no systemd present). Waiting for that message is exact:
// no polling of the socket, no sleeps. The child gets SIGKILL when this process dies (setpriv
// --pdeathsig: a killed workload takes its server with it, as a crash of the machine would), and
// when the object dies.
class NotifiedServer {
 public:
  // Starts `argv` (run through AsAccount) with stdout and stderr appended to `output_path`, and
  // waits up to `timeout` for READY=1. A server that exits first or stays silent is an error of
  // `failure_code` quoting the last lines of `log_path` (or of `output_path` when the log does
  // not exist); `what` names the server in it.
  static absl::StatusOr<std::unique_ptr<NotifiedServer>> Start(
      const ServiceAccount& account, const std::vector<std::string>& argv,
      const std::string& folder, const std::string& output_path, const std::string& log_path,
      const std::string& what, std::chrono::seconds timeout, absl::StatusCode failure_code);
  ~NotifiedServer() = default;

  // Sends `signal` and waits up to `timeout` for the server to exit; InternalError when it
  // does not (it is then SIGKILLed).
  absl::Status Stop(int signal, std::chrono::seconds timeout);
  // The last lines of its log (or of its output, when it died before it had a log).
  std::string LogTail() const;

 private:
  NotifiedServer(std::string output_path, std::string log_path, std::string what)
      : output_path_(std::move(output_path)),
        log_path_(std::move(log_path)),
        what_(std::move(what)) {}
  std::string output_path_;
  std::string log_path_;
  std::string what_;
  std::optional<ChildProcess> child_;  // SIGKILLed and reaped when the object dies
};

// Runs `argv` as `account` in `working_dir` (RunCommand's rules).
absl::StatusOr<CommandResult> RunAs(const ServiceAccount& account, std::vector<std::string> argv,
                                    const std::string& working_dir);

// A folder $TMPDIR/powercut-<what>-XXXXXX (/tmp without TMPDIR) owned by the account, mode
// 0700, removed with everything in it when the object dies (after detaching the bind of
// ReachableByAccount, never through it), and also when this process dies without running the
// destructor (SIGKILL: the tests' process crashes, the tester's timeouts on the host): Create
// starts a small process of its own (see Remover in the .cc) that waits for this process's end
// of a pipe to close and then removes the folder. Create it before ReachableByAccount, while
// this process is single-threaded (it forks and the remover runs C++), and keep the path short:
// unix socket paths must fit in sun_path (108 bytes). A switched account must be able to enter
// the parent folder: FailedPrecondition saying so when its mode forbids it.
class PrivateFolder {
 public:
  static absl::StatusOr<PrivateFolder> Create(const std::string& what,
                                              const ServiceAccount& account);
  PrivateFolder(PrivateFolder&& other) noexcept
      : path_(std::exchange(other.path_, "")),
        remover_(std::exchange(other.remover_, -1)),
        remover_pipe_(std::exchange(other.remover_pipe_, -1)) {}
  PrivateFolder& operator=(PrivateFolder&&) = delete;
  PrivateFolder(const PrivateFolder&) = delete;
  ~PrivateFolder();
  const std::string& path() const { return path_; }

 private:
  explicit PrivateFolder(std::string path) : path_(std::move(path)) {}
  std::string path_;
  pid_t remover_ = -1;     // the process that removes the folder if this one dies first
  int remover_pipe_ = -1;  // our end of its pipe: closing it (or dying) tells it to act
};

// `dir` as a path the account can reach. The tester mounts crash images under its own mode-0700
// folders (mkdtemp), which a server running as postgres or redis cannot traverse; so, when
// switching accounts, this process moves to a mount namespace of its own (unshare(CLONE_NEWNS),
// every mount private) and binds `dir` at `<folder>/<bind>` (kStoreBind, or kSecondDiskBind for
// the second disk of a set), which only this process and its children (the server) see and
// which vanishes with them: nothing to unmount on any exit path. A second call moves to yet
// another namespace, which keeps the first bind. Returns `dir` unchanged when not switching
// accounts.
inline constexpr char kStoreBind[] = "data";
inline constexpr char kSecondDiskBind[] = "data2";
absl::StatusOr<std::string> ReachableByAccount(const ServiceAccount& account,
                                               const std::string& dir, const std::string& folder,
                                               const std::string& bind = kStoreBind);

// Where a server workload's server runs: the account it runs as, a private folder for its
// socket and log (PrivateFolder), and its store folder in POWERCUT_DIR as that account reaches
// it (ReachableByAccount). The run and the check of postgres, redis and etcd each start here.
struct ServerSite {
  ServiceAccount account;
  PrivateFolder folder;
  std::string data;  // `dir`/`store` as the account reaches it
};
// The run's: `dir`/`store` made fresh (InvalidArgument when it exists: `workload` needs a fresh
// POWERCUT_DIR), owned by the account and synced (our set-up is durable before the server
// writes; what the server then creates is its own to make durable). `user` and `package` as for
// ServiceAccountFor; `folder_name` names the private folder (/tmp/powercut-<folder_name>-...).
absl::StatusOr<ServerSite> RunSite(const std::string& dir, const std::string& store,
                                   const std::string& workload, const std::string& user,
                                   const std::string& package, const std::string& folder_name);
// The checker's, on a crash image: InvalidArgument when `dir` is on a read-only mount (a server
// writes while it recovers).
absl::StatusOr<ServerSite> CheckSite(const std::string& dir, const std::string& store,
                                     const std::string& user, const std::string& package,
                                     const std::string& folder_name);

// A store's second folder, on the second disk of a set (a database's log on its own device:
// PostgreSQL's pg_wal, etcd's --wal-dir): `dir2`/`store` as `site`'s account reaches it
// (ReachableByAccount, bound at kSecondDiskBind). `fresh` (the run's): made fresh and synced
// like the store folder (MakeFreshStoreFolder); otherwise (the checker's) it must exist:
// NotFound when it does not.
absl::StatusOr<std::string> SecondDiskStore(const ServerSite& site, const std::string& dir2,
                                            const std::string& store, const std::string& workload,
                                            bool fresh);

// `dir`/`store` made fresh (mode 0700, owned by the account) for `workload`'s store:
// InvalidArgument when it exists (the workload needs a fresh POWERCUT_DIR), then synced.
absl::Status MakeFreshStoreFolder(const std::string& dir, const std::string& store,
                                  const std::string& workload, const ServiceAccount& account);

// A connected unix stream socket: a client of a server listening in its private folder.
// Closed when the object dies.
class UnixStream {
 public:
  // Connects to the socket at `path`; a receive waits at most `timeout`.
  static absl::StatusOr<UnixStream> Connect(const std::string& path, std::chrono::seconds timeout);
  UnixStream(UnixStream&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UnixStream& operator=(UnixStream&&) = delete;
  UnixStream(const UnixStream&) = delete;
  ~UnixStream();

  absl::Status SendAll(std::string_view data);
  // Appends what arrives next to `in`; 0 at EOF (the server closed the connection).
  absl::StatusOr<size_t> Receive(std::string& in);

 private:
  explicit UnixStream(int fd) : fd_(fd) {}
  int fd_;
};

// Creates `path` (mode 0700) owned by the account. AlreadyExists when it exists.
absl::Status MakeOwnedFolder(const std::string& path, const ServiceAccount& account);

// The last `lines` lines of the file at `path`, or a note that it cannot be read: for quoting a
// server's log in an error.
std::string FileTail(const std::string& path, int lines);

// syncfs(2) on the file system holding `path`: makes a server's set-up (its files written by
// tools that were told not to sync, e.g. initdb -N) durable in one call before the first commit.
absl::Status SyncFileSystem(const std::string& path);

// Creates the empty file `dir`/`name`, fsyncs it and syncs the file system: the marker that a
// workload's set-up finished and is durable (pgdata.ready, etcd.ready), so a checker can tell a
// crash image cut during the set-up (nothing committed yet) from one whose store is gone.
absl::Status WriteReadyMarker(const std::string& dir, const std::string& name);

// The first executable among `candidates`; NotFound listing them and saying what to install.
absl::StatusOr<std::string> FindProgram(const std::vector<std::string>& candidates,
                                        const std::string& install_hint);

}  // namespace powercut::workloads
