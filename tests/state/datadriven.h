// Data-driven test files in the style of CockroachDB's datadriven package (used by Pebble's
// testdata/): a file is a sequence of cases, each a command line with arguments, optional input
// lines, a `----` separator and the expected output:
//
//   # comments and blank lines between cases are kept as they are
//   states model=on point=5 atomic=(512)
//   optional input line
//   ----
//   expected output, up to the first blank line
//
// Output that holds blank lines is fenced by a doubled separator (`----` `----` before it and
// after it). Arguments are `key`, `key=value` or `key=(v1, v2)`.
//
// Hand-written (about 200 lines): the reference implementation is a Go package and Debian ships
// no C++ one; docs of the format: tests/state/README.md.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace powercut::testing {

struct CaseArg {
  std::string key;
  std::vector<std::string> values;  // empty for a bare key
};

struct TestCase {
  std::string file;
  int line = 0;     // of the command, 1-based
  std::string cmd;  // the command line's first word
  std::vector<CaseArg> args;
  std::string input;     // lines between the command and `----`, joined with '\n'
  std::string expected;  // the output as written in the file (ends with '\n' unless empty)
  // Where the output block lies in the file's text (after the command's `----` line; with the
  // fences when fenced), for rewriting.
  size_t output_begin = 0;
  size_t output_end = 0;

  const CaseArg* Find(std::string_view key) const;
  bool Has(std::string_view key) const { return Find(key) != nullptr; }
  // The single value of `key`, or `fallback` when absent. Bare keys have the value "".
  std::string Get(std::string_view key, std::string_view fallback = "") const;
  // "file:line: cmd" for messages.
  std::string Where() const;
};

// Runs every case of `path` through `run`, which returns the case's actual output (or an error:
// the case cannot run, which is reported and never rewritten). Without `rewrite`, a case whose
// output differs from the expected one is reported with both (through `report`, as a gtest failure)
// and the file is left alone. With `rewrite`, the file is written back with every output replaced
// by the actual one (everything else byte for byte). Returns an error only when the file cannot be
// read, parsed or written.
absl::Status RunTestFile(
    const std::string& path, bool rewrite,
    const std::function<absl::StatusOr<std::string>(const TestCase&)>& run,
    const std::function<void(const TestCase&, const std::string& actual)>& report);

// Parses a file's text (for tests of the parser itself and for RunTestFile).
absl::StatusOr<std::vector<TestCase>> ParseTestFile(const std::string& file, std::string_view text);

}  // namespace powercut::testing
