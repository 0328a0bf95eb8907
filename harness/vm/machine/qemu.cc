#include "harness/vm/machine/qemu.h"

#include <fcntl.h>
#include <linux/kvm.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/image_io.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "fmt/ranges.h"

namespace powercut::vm {
namespace {

bool CpuHasVirtualization() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line);
    std::string w;
    while (words >> w) {
      if (w == "vmx" || w == "svm") return true;
    }
    return false;
  }
  return false;
}

bool KvmCreatesVm() {
  int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ioctl(fd, KVM_GET_API_VERSION, 0) == KVM_API_VERSION;
  if (ok) {
    int vm = ioctl(fd, KVM_CREATE_VM, 0);
    ok = vm >= 0;
    if (vm >= 0) close(vm);
  }
  close(fd);
  return ok;
}

// The file's text; "" when it is not there (yet).

}  // namespace

Accel ChooseAccel() {
  if (const char* env = std::getenv("POWERCUT_ACCEL"); env != nullptr) {
    std::string v(env);
    if (v == "kvm") return Accel::kKvm;
    if (v == "tcg") return Accel::kTcg;
  }
  return CpuHasVirtualization() && KvmCreatesVm() ? Accel::kKvm : Accel::kTcg;
}

const char* AccelName(Accel accel) {
  switch (accel) {
    case Accel::kKvm:
      return "kvm";
    case Accel::kTcg:
      return "tcg";
    case Accel::kAuto:
      break;
  }
  return "auto";
}

namespace {

// The machine, the guest's kernel and its command line, the console and the two 9p shares.
std::vector<std::string> MachineArgs(const QemuOptions& o, Accel accel) {
  return {
      "qemu-system-x86_64",
      "-nodefaults",
      "-no-user-config",
      "-display",
      "none",
      "-no-reboot",
      "-machine",
      accel == Accel::kKvm ? "pc,accel=kvm" : "pc,accel=tcg",
      "-cpu",
      accel == Accel::kKvm ? "host" : "max",
      "-m",
      std::to_string(o.memory_mib),
      "-smp",
      std::to_string(o.cpus),
      "-kernel",
      o.kernel,
      "-initrd",
      o.initramfs,
      "-append",
      // no_timer_check: under TCG on a loaded host the kernel's IO-APIC timer check can miss its
      // ticks and panic at boot ("IO-APIC + timer doesn't work!"; seen twice at load 11-17).
      // mitigations=off: the guest runs only the user's own programs, and the speculative-
      // execution defences cost every system call and program start of an emulated CPU (guest
      // checks of one SQLite recording 31.3 s -> 23.7 s, docs/run.md "Where the time goes"); no
      // file system or block layer behaviour depends on them.
      fmt::format(
          "console=ttyS0 panic=-1 quiet loglevel=4 8250.nr_uarts=1 no_timer_check mitigations=off "
          "powercut.agent={} powercut.modules={} powercut.keep={}{}",
          o.agent, fmt::join(o.guest_modules, ","), fmt::join(o.keep_paths, ","),
          o.serve ? " powercut.serve=1" : ""),
      "-chardev",
      fmt::format("file,id=console,path={}", o.console_log),
      "-serial",
      "chardev:console",
      "-virtfs",
      "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
      "-virtfs",
      fmt::format("local,path={},mount_tag=powercut,security_model=none,multidevs=remap",
                  o.run_dir),
  };
}

// The agent's virtio-serial port and the QMP monitor, where the options name their sockets.
void AddPortArgs(const QemuOptions& o, std::vector<std::string>* argv) {
  if (!o.ack_socket.empty()) {
    for (const std::string& a :
         {std::string("-chardev"), fmt::format("socket,id=ack,path={}", o.ack_socket),
          std::string("-device"), std::string("virtio-serial-pci"), std::string("-device"),
          std::string("virtserialport,chardev=ack,name=powercut.ack")}) {
      argv->push_back(a);
    }
  }
  if (!o.qmp_socket.empty()) {
    for (const std::string& a :
         {std::string("-chardev"), fmt::format("socket,id=qmp,path={}", o.qmp_socket),
          std::string("-mon"), std::string("chardev=qmp,mode=control")}) {
      argv->push_back(a);
    }
  }
}

// Disk `i` of the boot: a virtio-blk disk with serial powercut<i> and the disk's sector sizes.
void AddDiskArgs(const GuestDisk& d, size_t i, std::vector<std::string>* argv) {
  std::string drive;
  if (!d.nbd_socket.empty()) {
    // writeback: the guest sees a volatile cache and sends FLUSH (the recorder needs them).
    drive = fmt::format(
        "if=none,id=disk{},driver=raw,file.driver=nbd,file.server.type=unix,"
        "file.server.path={},cache.writeback={}",
        i, d.nbd_socket, d.cache == DiskCache::kWriteThrough ? "off" : "on");
  } else {
    // The host's durability of a scratch image does not matter; the guest still sees a
    // volatile write cache (write back), which dm-log-writes needs to see FLUSH/FUA.
    // DiskCache asks for a real write-back or write-through drive (walbench cache).
    const char* cache = d.cache == DiskCache::kWriteBack      ? "writeback"
                        : d.cache == DiskCache::kWriteThrough ? "writethrough"
                                                              : "unsafe";
    drive = fmt::format("if=none,id=disk{},format=raw,file={},cache={}", i, d.image_file, cache);
  }
  argv->emplace_back("-drive");
  argv->push_back(drive);
  argv->emplace_back("-device");
  argv->push_back(
      fmt::format("virtio-blk-pci,drive=disk{},serial=powercut{},logical_block_size={},"
                  "physical_block_size={}",
                  i, i, d.geometry.logical_sector, d.geometry.physical_sector));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Qemu>> Qemu::Start(const QemuOptions& o) {
  Accel accel = o.accel == Accel::kAuto ? ChooseAccel() : o.accel;
  std::vector<std::string> argv = MachineArgs(o, accel);
  AddPortArgs(o, &argv);
  for (size_t i = 0; i < o.disks.size(); ++i) AddDiskArgs(o.disks[i], i, &argv);
  ASSIGN_OR_RETURN(ChildProcess process, ChildProcess::Spawn(argv, o.console_log + ".qemu"));
  pid_t pid = process.pid();
  auto qemu = std::unique_ptr<Qemu>(new Qemu(std::move(process), accel, o.console_log));
  qemu->pid_ = pid;
  return qemu;
}

Qemu::~Qemu() { Kill(); }

void Qemu::Kill() {
  process_.Kill();
  pid_ = -1;
}

void Qemu::SignalKill() {
  pid_t pid = pid_.load();
  if (pid > 0) kill(-pid, SIGKILL);
}

std::optional<int> Qemu::Poll(std::chrono::milliseconds timeout) {
  std::optional<int> code = process_.WaitFor(timeout);
  if (code.has_value()) pid_ = -1;
  return code;
}

absl::StatusOr<int> Qemu::WaitForExit(std::chrono::milliseconds timeout) {
  std::optional<int> code = process_.WaitFor(timeout);
  if (code.has_value()) {
    pid_ = -1;
    return *code;
  }
  process_.Kill();
  pid_ = -1;
  return absl::DeadlineExceededError(
      fmt::format("guest did not power off within {} s and was killed; last console lines:\n{}",
                  timeout.count() / 1000, ConsoleTail()));
}

std::string Qemu::ConsoleTail(int lines) const {
  std::string text = ReadWholeFile(console_log_).value_or("");
  std::string qemu_err = ReadWholeFile(console_log_ + ".qemu").value_or("");
  if (!qemu_err.empty()) text += "[qemu] " + qemu_err;
  return LastLines(text, lines);
}

}  // namespace powercut::vm
