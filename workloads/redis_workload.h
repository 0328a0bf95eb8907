// The redis workload: Redis 7 (Debian's redis-server) with the append-only file, one SET per
// commit, a real server in the guest (docs/your-database.md).
//
// Run: redis-server as the redis user, data in POWERCUT_DIR/redis (appendonly yes, appenddirname
// appendonlydir, no RDB snapshots), listening only on a unix socket in a private folder under
// /tmp (port 0). It is started in the foreground with --supervised systemd and NOTIFY_SOCKET
// pointing at our own datagram socket, so "READY=1" says it accepts commands (no polling). For
// id 1..count: SET commit:<id> <payload>, acked once the +OK reply arrived. The server is killed
// at the end (SIGKILL: the cut is what is tested; a clean shutdown would rewrite files).
//
// Check: the same server on the crash image (it loads the AOF; a truncated tail is loaded up to
// the last whole command, aof-load-truncated yes, Redis' default), KEYS commit:*, GET each,
// have/corrupt per key. A server that cannot load the image is DataLoss quoting its log.
//
// The client is a few lines of RESP over the socket: hiredis' headers (libhiredis-dev) would be
// one more package for three commands.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "workloads/ack_channel.h"
#include "workloads/check_result.h"

namespace powercut::workloads {

inline constexpr char kRedisDataDir[] = "redis";

struct RedisOptions {
  std::string appendfsync = "always";  // "always", "everysec" or "no"
  uint64_t count = 100;
  size_t value_size = 100;
  uint64_t seed = 1;
};

absl::Status RunRedis(const std::string& dir, const RedisOptions& options, AckChannel& acks);

// No POWERCUT_DIR/redis or no AOF yet: nothing was committed (OK).
absl::StatusOr<CheckResult> CheckRedis(const std::string& dir);

}  // namespace powercut::workloads
