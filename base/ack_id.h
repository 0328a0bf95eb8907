// Commit ids of the workload protocol (docs/protocol.md): integers or tokens of [A-Za-z0-9_.:-],
// at most 64 characters. The one authority for both sides of the protocol: the workloads that
// write "ack <id>" (workloads/ack_channel.h) and the tester that reads those lines, records each
// as the trace mark "ack:<id>" and reads `have <id>` from checkers (harness/).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace powercut {

inline constexpr std::string_view kAckMarkPrefix = "ack:";
inline constexpr size_t kMaxAckIdBytes = 64;

// True when `id` is a protocol id: 1 to 64 characters of [A-Za-z0-9_.:-].
inline bool IsValidAckId(std::string_view id) {
  if (id.empty() || id.size() > kMaxAckIdBytes) return false;
  for (char c : id) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == ':' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// The id of an ack mark, or nullopt if `mark` is not "ack:<valid id>".
inline std::optional<std::string> AckIdFromMark(std::string_view mark) {
  if (mark.substr(0, kAckMarkPrefix.size()) != kAckMarkPrefix) return std::nullopt;
  std::string_view id = mark.substr(kAckMarkPrefix.size());
  if (!IsValidAckId(id)) return std::nullopt;
  return std::string(id);
}

}  // namespace powercut
