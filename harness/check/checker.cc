#include "harness/check/checker.h"

#include <string_view>

#include "base/ack_id.h"
#include "base/process.h"
#include "fmt/format.h"

namespace powercut::harness {
namespace {

constexpr size_t kStderrTail = 2048;
constexpr std::string_view kUnavailableWord = "unavailable ";

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

}  // namespace

bool PlainCommandWords(const std::string& command, std::vector<std::string>* words) {
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

void ParseCheckerLine(std::string_view line, uint64_t line_number, CheckerOutput* out) {
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) {
    line.remove_suffix(1);
  }
  if (line.find_first_not_of(" \t") == std::string_view::npos) return;  // blank
  if (line.substr(0, 4) == "why ") {
    const std::string_view rest = line.substr(4);
    const size_t space = rest.find(' ');
    if (space != std::string_view::npos && IsValidAckId(rest.substr(0, space)) &&
        rest.find_first_not_of(' ', space) != std::string_view::npos) {
      out->why.try_emplace(std::string(rest.substr(0, space)), std::string(rest.substr(space + 1)));
      return;
    }
  }
  if (line.substr(0, kUnavailableWord.size()) == kUnavailableWord &&
      line.find_first_not_of(' ', kUnavailableWord.size()) != std::string_view::npos) {
    if (out->unavailable.empty()) {
      out->unavailable = std::string(line.substr(kUnavailableWord.size()));
    }
    return;
  }
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
        "checker stdout line {} is not the protocol: {} (expected `have <id>`, `corrupt <id>`, "
        "`why <id> <text>` or `unavailable <text>`, ids of 1-{} characters [A-Za-z0-9_.:-]; "
        "diagnostics belong on stderr)",
        line_number, Quote(line), kMaxAckIdBytes);
  }
}

absl::StatusOr<CheckerOutput> RunChecker(
    const std::string& command, const std::vector<std::pair<std::string, std::string>>& env,
    double timeout_seconds) {
  ProcessOptions options;
  // The protocol gives a checker POWERCUT_DIR or POWERCUT_DEV, never both: inherited values of
  // either (from the caller's environment) are dropped, only `env` sets them.
  options.unset_env = {"POWERCUT_DIR", "POWERCUT_DEV"};
  options.set_env = env;
  options.timeout_seconds = timeout_seconds;
  options.die_with_parent = false;  // started once per crash state: posix_spawn is cheaper

  CheckerOutput out;
  uint64_t line_number = 0;
  std::string line_buf;
  std::string err_buf;
  auto on_stdout = [&](std::string_view chunk) {
    line_buf.append(chunk);
    size_t start = 0;
    size_t nl;
    while ((nl = line_buf.find('\n', start)) != std::string::npos) {
      ParseCheckerLine(std::string_view(line_buf).substr(start, nl - start), ++line_number, &out);
      start = nl + 1;
    }
    line_buf.erase(0, start);
    if (line_buf.size() > (1 << 20)) {  // an absurd line: not the protocol
      ParseCheckerLine(line_buf, ++line_number, &out);
      line_buf.clear();
    }
  };
  auto on_stderr = [&](std::string_view chunk) {
    err_buf.append(chunk);
    if (err_buf.size() > 4 * kStderrTail) err_buf.erase(0, err_buf.size() - kStderrTail);
  };

  std::vector<std::string> words;
  absl::StatusOr<ProcessEnd> end = absl::UnknownError("not started");
  if (PlainCommandWords(command, &words)) end = RunProcess(words, options, on_stdout, on_stderr);
  if (!end.ok() || !end->start_error.empty()) {
    // Not plain, or a first word that is no program on PATH (a shell builtin such as `exit 1`,
    // or a typo): let the shell run it, so the result is what `sh -c` would give (127 for a
    // command that does not exist) rather than an error that stops the whole check.
    end = RunProcess({"/bin/sh", "-c", command}, options, on_stdout, on_stderr);
  }
  if (!end.ok() || !end->start_error.empty()) {
    return absl::InternalError(
        fmt::format("checker: cannot start /bin/sh -c '{}': {}", command,
                    end.ok() ? end->start_error : std::string(end.status().message())));
  }
  out.exit_code = end->exit_code;
  out.signal = end->signal;
  out.timed_out = end->timed_out;
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
