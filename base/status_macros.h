// Early-return helpers for absl::Status / absl::StatusOr, used across the tree.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define POWERCUT_CONCAT_INNER(a, b) a##b
#define POWERCUT_CONCAT(a, b) POWERCUT_CONCAT_INNER(a, b)

// Returns from the enclosing function if `expr` (an absl::Status) is not OK.
#define RETURN_IF_ERROR(expr)                            \
  do {                                                   \
    ::absl::Status powercut_status_ = (expr);            \
    if (!powercut_status_.ok()) return powercut_status_; \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, F())`: declares x from an OK StatusOr or returns its status. It is
// several statements: under an `if`, brace it.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(POWERCUT_CONCAT(powercut_statusor_, __LINE__), lhs, expr)
// `tmp` is a name and `lhs` may be a declaration (`auto x`): neither can be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)

namespace powercut {

// The message of `status` as a std::string_view. Debian's Abseil has its own absl::string_view,
// which fmt cannot format: use fmt::format("{}", StatusMessage(s)).
inline std::string_view StatusMessage(const absl::Status& status) {
  return std::string_view(status.message().data(), status.message().size());
}

}  // namespace powercut
