// Ctrl-C during `powercut run` (real VM): qemu dies and the run's folders are removed
// (harness/signal_cleanup.h, powercut::InstallInterruptHandlers). The workload acks once and then
// sleeps, so the signal arrives while the guest runs and the recorder writes.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "tests/product/test_util.h"

namespace powercut::product {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

using testing::ProcessAlive;
using testing::ReadFile;

// The first child of `parent` whose command name starts with "qemu".
std::optional<pid_t> QemuChildOf(pid_t parent) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string status = ReadFile(entry.path() / "status");
    auto at = status.find("\nPPid:\t");
    if (at == std::string::npos || std::stoi(status.substr(at + 7)) != parent) continue;
    if (ReadFile(entry.path() / "comm").rfind("qemu", 0) == 0) return std::stoi(name);
  }
  return std::nullopt;
}

// The first occurrence of `prefix` followed by a mkdtemp suffix in `text`, or "".
std::string FolderIn(const std::string& text, const std::string& prefix) {
  auto at = text.find(prefix);
  if (at == std::string::npos) return "";
  return text.substr(at, prefix.size() + 6);
}

// The /var/tmp/powercut-run-XXXXXX folder that `pid` holds a file open in, or "".
std::string RunFolderOf(pid_t pid) {
  std::error_code ec;
  for (const auto& fd :
       fs::directory_iterator(fs::path("/proc") / std::to_string(pid) / "fd", ec)) {
    std::string target = fs::read_symlink(fd.path(), ec).string();
    std::string folder = FolderIn(target, "/var/tmp/powercut-run-");
    if (!folder.empty()) return folder;
  }
  return "";
}

TEST(InterruptVm, SigintKillsQemuAndRemovesRunFolders) {
  pid_t powercut = ::fork();
  ASSERT_GE(powercut, 0);
  if (powercut == 0) {
    ::execl(POWERCUT_BIN, POWERCUT_BIN, "run", "--workload",
            "echo \"ack 1\" >&\"$POWERCUT_ACK_FD\"; sleep 600", "--checker", "true", "--fs", "ext4",
            "--quiet", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::optional<pid_t> qemu;
  std::string vm_folder;
  std::string run_folder;
  // Whatever happens below: no process and no folder left behind.
  struct Cleanup {
    pid_t powercut;
    std::optional<pid_t>* qemu;
    std::string* vm_folder;
    std::string* run_folder;
    bool reaped = false;
    ~Cleanup() {
      if (!reaped) {
        ::kill(powercut, SIGKILL);
        ::waitpid(powercut, nullptr, 0);
      }
      if (qemu->has_value() && ProcessAlive(**qemu)) ::kill(**qemu, SIGKILL);
      std::error_code ec;
      if (!vm_folder->empty()) fs::remove_all(*vm_folder, ec);
      if (!run_folder->empty()) fs::remove_all(*run_folder, ec);
    }
  } cleanup{powercut, &qemu, &vm_folder, &run_folder};

  // Wait until the guest runs the workload: qemu is up and the first ack is recorded.
  const auto deadline = Clock::now() + std::chrono::seconds(240);
  bool acked = false;
  while (!acked && Clock::now() < deadline) {
    ASSERT_EQ(::waitpid(powercut, nullptr, WNOHANG), 0) << "powercut run exited early";
    if (!qemu) qemu = QemuChildOf(powercut);
    if (qemu && vm_folder.empty()) {
      std::string cmdline = ReadFile(fs::path("/proc") / std::to_string(*qemu) / "cmdline");
      for (char& c : cmdline) c = c == '\0' ? ' ' : c;
      vm_folder = FolderIn(cmdline, "/tmp/powercut-vm-");
    }
    if (run_folder.empty()) run_folder = RunFolderOf(powercut);
    acked = !run_folder.empty() &&
            ReadFile(run_folder + "/acks.jsonl").find("\"1\"") != std::string::npos;
    if (!acked) std::this_thread::sleep_for(std::chrono::milliseconds(200));  // polling only
  }
  ASSERT_TRUE(acked) << "the workload's ack never reached " << run_folder;
  ASSERT_TRUE(qemu.has_value());
  ASSERT_FALSE(vm_folder.empty()) << "no /tmp/powercut-vm- folder on qemu's command line";
  ASSERT_TRUE(fs::exists(vm_folder));

  ASSERT_EQ(::kill(powercut, SIGINT), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(powercut, &status, 0), powercut);
  cleanup.reaped = true;
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGINT);
  // SIGKILL is delivered at once, but qemu takes a moment to release its memory and exit.
  const auto qemu_deadline = Clock::now() + std::chrono::seconds(20);
  while (ProcessAlive(*qemu) && Clock::now() < qemu_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_FALSE(ProcessAlive(*qemu)) << "qemu " << *qemu << " outlived powercut";
  EXPECT_FALSE(fs::exists(vm_folder)) << vm_folder;
  EXPECT_FALSE(fs::exists(run_folder)) << run_folder;
}

}  // namespace
}  // namespace powercut::product
