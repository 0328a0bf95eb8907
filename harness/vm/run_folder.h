// The private folder one guest shares with the host over 9p (tag powercut: the guest's
// /run/powercut), and reading back what the agent wrote there. Sockets live there too, so the
// path is short (unix socket paths are limited to 107 bytes).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "harness/trace/disk_geometry.h"
#include "harness/vm/guest_job.h"
#include "harness/vm/qemu.h"

namespace powercut::vm {

// /tmp/powercut-vm-XXXXXX, registered with the interrupt cleanup; removed on destruction.
class RunFolder {
 public:
  static absl::StatusOr<RunFolder> Create();
  RunFolder(RunFolder&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  RunFolder(const RunFolder&) = delete;
  ~RunFolder();
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  explicit RunFolder(std::string path);
  std::string path_;
};

std::string ReadAll(const std::string& path);
absl::Status WriteAll(const std::string& path, const std::string& text);

// Reads the agent's result file `name`; a missing one means the guest died before the agent
// finished (the error quotes the console).
absl::StatusOr<GuestResult> ReadGuestResult(const RunFolder& run, const std::string& name,
                                            const Qemu& qemu);
// A failed guest step as an error naming the step, with the last console lines.
absl::Status GuestStepError(const GuestResult& r, const Qemu& qemu);
// The disk of `geometry` as the agent saw it; a guest that saw other sector sizes would make
// every later judgement about atomic units wrong, so it is an error.
absl::Status CheckGuestGeometry(const GuestResult& r, const harness::DiskGeometry& geometry);

}  // namespace powercut::vm
