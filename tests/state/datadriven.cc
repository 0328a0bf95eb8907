#include "tests/state/datadriven.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "fmt/format.h"

namespace powercut::testing {
namespace {

constexpr std::string_view kSeparator = "----";

// The file's text as lines, each with its byte offset (the line's end excludes the '\n').
struct Line {
  size_t begin = 0;
  size_t end = 0;   // exclusive, before '\n'
  size_t next = 0;  // the next line's begin
};

std::vector<Line> SplitLines(std::string_view text) {
  std::vector<Line> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == std::string_view::npos ? text.size() : nl;
    lines.push_back({pos, end, nl == std::string_view::npos ? text.size() : nl + 1});
    pos = lines.back().next;
  }
  return lines;
}

std::string_view Trim(std::string_view s) {
  absl::string_view t = absl::StripAsciiWhitespace(absl::string_view(s.data(), s.size()));
  return std::string_view(t.data(), t.size());
}

// "cmd a b=1 c=(x, y)" into the command and its arguments.
absl::Status ParseCommand(std::string_view line, TestCase* c) {
  size_t pos = 0;
  auto skip_space = [&] {
    while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
  };
  auto word_end = [&](size_t from) {
    size_t e = from;
    while (e < line.size() && line[e] != ' ' && line[e] != '\t' && line[e] != '=') ++e;
    return e;
  };
  skip_space();
  size_t e = word_end(pos);
  c->cmd = std::string(line.substr(pos, e - pos));
  pos = e;
  while (true) {
    skip_space();
    if (pos >= line.size()) break;
    e = word_end(pos);
    CaseArg arg;
    arg.key = std::string(line.substr(pos, e - pos));
    if (arg.key.empty()) {
      return absl::InvalidArgumentError(
          fmt::format("{}:{}: an argument without a name", c->file, c->line));
    }
    pos = e;
    if (pos < line.size() && line[pos] == '=') {
      ++pos;
      if (pos < line.size() && line[pos] == '(') {
        size_t close = line.find(')', pos);
        if (close == std::string_view::npos) {
          return absl::InvalidArgumentError(
              fmt::format("{}:{}: argument {}=( has no closing )", c->file, c->line, arg.key));
        }
        std::string_view list = line.substr(pos + 1, close - pos - 1);
        size_t start = 0;
        while (start <= list.size()) {
          size_t comma = list.find(',', start);
          std::string_view v = Trim(list.substr(
              start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
          if (!v.empty()) arg.values.emplace_back(v);
          if (comma == std::string_view::npos) break;
          start = comma + 1;
        }
        pos = close + 1;
      } else {
        size_t v = pos;
        while (pos < line.size() && line[pos] != ' ' && line[pos] != '\t') ++pos;
        arg.values.emplace_back(line.substr(v, pos - v));
      }
    }
    c->args.push_back(std::move(arg));
  }
  return absl::OkStatus();
}

// The output block as it is written after the command's separator line.
std::string FormatOutput(std::string actual) {
  if (!actual.empty() && actual.back() != '\n') actual += '\n';
  bool blank_line = actual.find("\n\n") != std::string::npos || actual.rfind('\n', 0) == 0;
  if (!blank_line) return actual;
  return fmt::format("{}\n{}{}\n{}\n", kSeparator, actual, kSeparator, kSeparator);
}

}  // namespace

const CaseArg* TestCase::Find(std::string_view key) const {
  for (const CaseArg& a : args) {
    if (a.key == key) return &a;
  }
  return nullptr;
}

std::string TestCase::Get(std::string_view key, std::string_view fallback) const {
  const CaseArg* a = Find(key);
  if (a == nullptr) return std::string(fallback);
  if (a->values.empty()) return "";
  std::string out = a->values[0];
  for (size_t i = 1; i < a->values.size(); ++i) out += "," + a->values[i];
  return out;
}

std::string TestCase::Where() const { return fmt::format("{}:{}: {}", file, line, cmd); }

absl::StatusOr<std::vector<TestCase>> ParseTestFile(const std::string& file,
                                                    std::string_view text) {
  std::vector<Line> lines = SplitLines(text);
  auto at = [&](size_t i) { return text.substr(lines[i].begin, lines[i].end - lines[i].begin); };
  std::vector<TestCase> cases;
  size_t i = 0;
  while (i < lines.size()) {
    std::string_view l = Trim(at(i));
    if (l.empty() || l[0] == '#') {
      ++i;
      continue;
    }
    TestCase c;
    c.file = file;
    c.line = static_cast<int>(i + 1);
    if (auto s = ParseCommand(l, &c); !s.ok()) return s;
    ++i;
    while (i < lines.size() && at(i) != kSeparator) {
      c.input += std::string(at(i)) + "\n";
      ++i;
    }
    if (i == lines.size()) {
      return absl::InvalidArgumentError(fmt::format(
          "{}:{}: command \"{}\" has no \"----\" line before the end of the file (every case "
          "needs one, followed by its expected output)",
          file, c.line, c.cmd));
    }
    ++i;  // the separator
    c.output_begin = i < lines.size() ? lines[i].begin : text.size();
    if (i + 1 < lines.size() && at(i) == kSeparator) {
      // Fenced: "----" then the output (blank lines allowed) then "----" "----".
      size_t j = i + 1;
      while (j + 1 < lines.size() && !(at(j) == kSeparator && at(j + 1) == kSeparator)) {
        c.expected += std::string(at(j)) + "\n";
        ++j;
      }
      if (j + 1 >= lines.size()) {
        return absl::InvalidArgumentError(fmt::format(
            "{}:{}: a fenced output (\"----\" twice) that is never closed by \"----\" twice", file,
            c.line));
      }
      i = j + 2;
    } else {
      while (i < lines.size() && !Trim(at(i)).empty()) {
        c.expected += std::string(at(i)) + "\n";
        ++i;
      }
    }
    c.output_end = i < lines.size() ? lines[i].begin : text.size();
    cases.push_back(std::move(c));
  }
  return cases;
}

absl::Status RunTestFile(
    const std::string& path, bool rewrite,
    const std::function<absl::StatusOr<std::string>(const TestCase&)>& run,
    const std::function<void(const TestCase&, const std::string& actual)>& report) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(fmt::format("cannot read test file {}", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  auto cases = ParseTestFile(path, text);
  if (!cases.ok()) return cases.status();
  std::string rewritten;
  size_t copied = 0;
  for (const TestCase& c : *cases) {
    absl::StatusOr<std::string> actual = run(c);
    if (!actual.ok()) {
      // A case the runner cannot run (an unknown command, a bad argument) fails, and a rewrite
      // keeps its expected output: only outputs are ever rewritten.
      report(c, fmt::format("the runner failed: {}\n", std::string(actual.status().message())));
      continue;
    }
    std::string out = *actual;
    if (!out.empty() && out.back() != '\n') out += '\n';
    if (!rewrite) {
      if (out != c.expected) report(c, out);
      continue;
    }
    rewritten.append(text, copied, c.output_begin - copied);
    if (c.output_begin == text.size() && !text.empty() && text.back() != '\n') rewritten += '\n';
    rewritten += FormatOutput(out);
    copied = c.output_end;
  }
  if (!rewrite) return absl::OkStatus();
  rewritten.append(text, copied, std::string::npos);
  std::ofstream outf(path, std::ios::binary | std::ios::trunc);
  outf << rewritten;
  if (!outf.flush()) return absl::InternalError(fmt::format("cannot write test file {}", path));
  return absl::OkStatus();
}

}  // namespace powercut::testing
