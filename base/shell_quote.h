// A text as one word for /bin/sh, for commands that are built here and run by a shell (the
// cluster launcher's wrapped commands, the walbench guest commands).
#pragma once

#include <string>

namespace powercut {

// `text` in single quotes, each ' as '\''.
inline std::string ShellQuote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

}  // namespace powercut
