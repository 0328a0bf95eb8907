// powercut-fstest-exec: the workload of a file-system test (docs/fstest.md). It runs in the guest
// on the recorded disk, as `powercut fstest run` starts it, or by hand on any folder:
//
//   powercut-fstest-exec run --hex HEX            the workload's text, hex-encoded (one word, so
//                                                 the command line needs no quoting)
//   powercut-fstest-exec run FILE [--dir DIR]     a workload file
//
// It works under $POWERCUT_DIR (or --dir), writes `ack <k>` to $POWERCUT_ACK_FD after the k-th
// persistence point returned (and, with $POWERCUT_ACK_SYNC_FD, waits for `ok <k>` there: the
// tester recorded the ack, so no later operation's write can land before it), then the expected
// state as one JSON line
// {"point": k, "by": "<op>", "tree": {...}} to $POWERCUT_OUTPUT (a file; stdout when unset).
// Exit 0 when every operation ran; 1 naming the operation the kernel refused; 2 on bad usage.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/escaping.h"
#include "base/image_io.h"
#include "base/main_guard.h"
#include "base/status_macros.h"
#include "base/write_fully.h"
#include "fmt/format.h"
#include "harness/fstest/executor.h"
#include "harness/fstest/workload.h"

namespace {

// Reads `ok <point>` from the synchronous-ack descriptor (docs/protocol.md).
absl::Status AwaitOk(int fd, int point) {
  std::string line;
  char c = 0;
  while (true) {
    const ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return absl::UnavailableError(fmt::format(
          "POWERCUT_ACK_SYNC_FD closed before ack {} was confirmed: the tester is gone", point));
    }
    if (c == '\n') break;
    line.push_back(c);
  }
  if (line != fmt::format("ok {}", point)) {
    return absl::DataLossError(
        fmt::format("POWERCUT_ACK_SYNC_FD said \"{}\", expected \"ok {}\"", line, point));
  }
  return absl::OkStatus();
}

int Fail(const std::string& message, int code) {
  std::fprintf(stderr, "powercut-fstest-exec: %s\n", message.c_str());
  return code;
}

int Run(const std::string& file, const std::string& hex, std::string dir) {
  std::string text;
  std::string source = file;
  if (!hex.empty()) {
    if (hex.size() % 2 != 0 ||
        hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
      return Fail("--hex: not a hex string", 2);
    }
    text = absl::HexStringToBytes(hex);
    source = "workload";
  } else {
    auto read = powercut::ReadWholeFile(file);
    if (!read.ok()) return Fail(std::string(read.status().message()), 2);
    text = *read;
  }
  auto workload = powercut::fstest::ParseWorkload(text, source);
  if (!workload.ok()) return Fail(std::string(workload.status().message()), 2);
  if (absl::Status s = powercut::fstest::ValidateWorkload(*workload); !s.ok()) {
    return Fail(std::string(s.message()), 2);
  }
  if (dir.empty()) {
    const char* env = std::getenv("POWERCUT_DIR");
    if (env == nullptr || *env == '\0') {
      return Fail("no folder to work in: set POWERCUT_DIR or pass --dir", 2);
    }
    dir = env;
  }
  int ack_fd = -1;
  if (const char* env = std::getenv("POWERCUT_ACK_FD"); env != nullptr && *env != '\0') {
    ack_fd = std::atoi(env);
  }
  int out_fd = STDOUT_FILENO;
  if (const char* env = std::getenv("POWERCUT_OUTPUT"); env != nullptr && *env != '\0') {
    out_fd = ::open(env, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (out_fd < 0) {
      return Fail(fmt::format("POWERCUT_OUTPUT {}: {}", env, std::strerror(errno)), 2);
    }
  }
  powercut::fstest::ExecuteHooks hooks;
  int sync_fd = -1;
  if (const char* env = std::getenv("POWERCUT_ACK_SYNC_FD"); env != nullptr && *env != '\0') {
    sync_fd = std::atoi(env);
  }
  hooks.ack = [ack_fd, sync_fd](int point) {
    if (ack_fd < 0) return absl::OkStatus();
    RETURN_IF_ERROR(powercut::WriteFully(ack_fd, fmt::format("ack {}\n", point)));
    if (sync_fd < 0) return absl::OkStatus();
    return AwaitOk(sync_fd, point);
  };
  hooks.snapshot = [out_fd](int point, const powercut::fstest::Op& op,
                            const powercut::fstest::Tree& tree) {
    const nlohmann::json line = {{"point", point},
                                 {"by", powercut::fstest::OpText(op)},
                                 {"tree", powercut::fstest::TreeToJson(tree)}};
    return powercut::WriteFully(out_fd, line.dump() + "\n");
  };
  if (absl::Status s = powercut::fstest::Execute(*workload, dir, hooks); !s.ok()) {
    return Fail(std::string(s.message()), 1);
  }
  if (out_fd != STDOUT_FILENO && ::close(out_fd) != 0) {
    return Fail(fmt::format("POWERCUT_OUTPUT: close: {}", std::strerror(errno)), 1);
  }
  return 0;
}

int Main(int argc, char** argv) {
  CLI::App app{"powercut-fstest-exec: runs a file-system test workload (docs/fstest.md)"};
  app.require_subcommand(1);
  CLI::App* run = app.add_subcommand("run", "run a workload under $POWERCUT_DIR (or --dir)");
  std::string file, hex, dir;
  run->add_option("file", file, "a workload file");
  run->add_option("--hex", hex, "the workload's text, hex-encoded");
  run->add_option("--dir", dir, "the folder to work in (default $POWERCUT_DIR)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (file.empty() == hex.empty()) return Fail("run: give a workload FILE or --hex HEX (one)", 2);
  return Run(file, hex, dir);
}

}  // namespace

int main(int argc, char** argv) {
  return powercut::RunMainGuarded("powercut-fstest-exec", 2, [&] { return Main(argc, argv); });
}
