#include "harness/check/checker.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string_view>

#include "fmt/format.h"
#include "harness/trace/ack_id.h"

// `environ` comes from <unistd.h> (glibc declares it with _GNU_SOURCE, which g++ defines).

namespace powercut::harness {
namespace {

constexpr size_t kStderrTail = 2048;

// At most 120 characters of `line`, non-printable bytes as \xNN, in double quotes.
std::string Quote(std::string_view line) {
  std::string q = "\"";
  for (size_t i = 0; i < line.size() && i < 120; ++i) {
    auto c = static_cast<unsigned char>(line[i]);
    if (c < 0x20 || c >= 0x7f) {
      q += fmt::format("\\x{:02x}", c);
    } else {
      if (c == '"' || c == '\\') q += '\\';
      q += static_cast<char>(c);
    }
  }
  if (line.size() > 120) q += "...";
  return q + "\"";
}

// A command made only of plain words (no quoting, expansion, redirection or operators) means the
// same to /bin/sh -c as to a direct exec; running it directly saves starting a shell per check.
bool PlainWords(const std::string& command, std::vector<std::string>* words) {
  words->clear();
  std::string word;
  for (char c : command) {
    bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '-' || c == '.' || c == '/' || c == ',' || c == ':' || c == '+' ||
                 c == '@' || c == '%';
    if (c == ' ') {
      if (!word.empty()) words->push_back(std::move(word));
      word.clear();
    } else if (plain) {
      word += c;
    } else {
      return false;
    }
  }
  if (!word.empty()) words->push_back(std::move(word));
  // A first word with '=' is an assignment to sh: excluded above since '=' is not plain.
  return !words->empty();
}

}  // namespace

void ParseCheckerLine(std::string_view line, uint64_t line_number, CheckerOutput* out) {
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) {
    line.remove_suffix(1);
  }
  if (line.find_first_not_of(" \t") == std::string_view::npos) return;  // blank
  for (auto [prefix, set] : {std::pair{std::string_view("have "), &out->have},
                             std::pair{std::string_view("corrupt "), &out->corrupt}}) {
    if (line.substr(0, prefix.size()) != prefix) continue;
    std::string_view id = line.substr(prefix.size());
    if (IsValidAckId(id)) {
      set->insert(std::string(id));
      return;
    }
  }
  if (out->protocol_error_lines++ == 0) {
    out->protocol_error = fmt::format(
        "checker stdout line {} is not the protocol: {} (expected `have <id>` or `corrupt <id>`, "
        "ids of 1-{} characters [A-Za-z0-9_.:-]; diagnostics belong on stderr)",
        line_number, Quote(line), kMaxAckIdBytes);
  }
}

absl::StatusOr<CheckerOutput> RunChecker(
    const std::string& command, const std::vector<std::pair<std::string, std::string>>& env,
    double timeout_seconds) {
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    return absl::InternalError(fmt::format("checker: pipe: {}", std::strerror(errno)));
  }
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return absl::InternalError(fmt::format("checker: pipe: {}", std::strerror(errno)));
  }
  // Environment: ours, with the protocol variables replaced.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view kv(*e);
    // The protocol gives a checker POWERCUT_DIR or POWERCUT_DEV, never both: inherited values
    // of either (from the caller's environment) are dropped, only `env` sets them.
    bool replaced = kv.starts_with("POWERCUT_DIR=") || kv.starts_with("POWERCUT_DEV=");
    for (const auto& [k, v] : env) {
      if (kv.size() > k.size() && kv.substr(0, k.size()) == k && kv[k.size()] == '=') {
        replaced = true;
      }
    }
    if (!replaced) env_strings.emplace_back(kv);
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGINT);
  posix_spawnattr_setsigdefault(&attr, &defaults);

  std::vector<std::string> words;
  pid_t pid = 0;
  int rc = -1;
  if (PlainWords(command, &words)) {
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    // posix_spawnp searches PATH like sh would; PATH comes from our own environment.
    rc = ::posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  }
  if (rc != 0) {
    // Not plain, or a first word that is no program on PATH (a shell builtin such as `exit 1`,
    // or a typo): let the shell run it, so the result is what `sh -c` would give (127 for a
    // command that does not exist) rather than an error that stops the whole check.
    words = {"/bin/sh", "-c", command};
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    rc = ::posix_spawn(&pid, "/bin/sh", &actions, &attr, argv.data(), envp.data());
  }
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return absl::InternalError(
        fmt::format("checker: cannot start /bin/sh -c '{}': {}", command, std::strerror(rc)));
  }

  CheckerOutput out;
  uint64_t line_number = 0;
  std::string line_buf;
  std::string err_buf;
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::microseconds(static_cast<int64_t>(timeout_seconds * 1e6));
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  bool killed = false;
  char buf[65536];
  while (open_fds > 0) {
    auto now = std::chrono::steady_clock::now();
    int wait_ms;
    if (now >= deadline) {
      if (!killed) {
        out.timed_out = true;
        ::kill(-pid, SIGKILL);
        killed = true;
        // Give the pipes a last second to drain (descendants that left the group may hold them).
        deadline = now + std::chrono::seconds(1);
        continue;
      }
      break;
    }
    wait_ms = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1);
    int n = ::poll(fds, 2, wait_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t r = ::read(fds[i].fd, buf, sizeof(buf));
      if (r <= 0) {
        if (r < 0 && errno == EINTR) continue;
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      if (i == 0) {
        line_buf.append(buf, static_cast<size_t>(r));
        size_t start = 0;
        size_t nl;
        while ((nl = line_buf.find('\n', start)) != std::string::npos) {
          ParseCheckerLine(std::string_view(line_buf).substr(start, nl - start), ++line_number,
                           &out);
          start = nl + 1;
        }
        line_buf.erase(0, start);
        if (line_buf.size() > (1 << 20)) {  // an absurd line: not the protocol
          ParseCheckerLine(line_buf, ++line_number, &out);
          line_buf.clear();
        }
      } else {
        err_buf.append(buf, static_cast<size_t>(r));
        if (err_buf.size() > 4 * kStderrTail) err_buf.erase(0, err_buf.size() - kStderrTail);
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) ::close(f.fd);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ::kill(-pid, SIGKILL);  // whatever the checker left behind in its group
  if (WIFEXITED(status)) {
    out.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    out.signal = WTERMSIG(status);
  }
  // A last line without its newline counts only when the checker ended by itself: a kill
  // (timeout, signal) may have cut it short.
  if (!line_buf.empty() && !out.timed_out && out.signal == 0) {
    ParseCheckerLine(line_buf, ++line_number, &out);
  }
  if (err_buf.size() > kStderrTail) err_buf.erase(0, err_buf.size() - kStderrTail);
  out.stderr_tail = std::move(err_buf);
  return out;
}

}  // namespace powercut::harness
