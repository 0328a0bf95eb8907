// The private folder one guest shares with the host over 9p (tag powercut: the guest's
// /run/powercut), and reading back what the agent wrote there. Sockets live there too, so the
// path is short (unix socket paths are limited to 107 bytes).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/scratch_dir.h"
#include "harness/trace/disk_geometry.h"
#include "harness/vm/guest/guest_job.h"
#include "harness/vm/machine/qemu.h"

namespace powercut::vm {

// The run folder is a ScratchDir (base/scratch_dir.h) under /tmp: private, removed on
// destruction and on a fatal signal.
using RunFolder = ScratchDir;
absl::StatusOr<RunFolder> CreateRunFolder();

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
