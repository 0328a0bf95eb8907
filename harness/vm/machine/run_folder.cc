#include "harness/vm/machine/run_folder.h"

#include <filesystem>
#include <fstream>

#include "base/image_io.h"
#include "base/process.h"
#include "fmt/format.h"

namespace powercut::vm {

namespace fs = std::filesystem;

absl::StatusOr<RunFolder> CreateRunFolder() { return ScratchDir::Create("powercut-vm", "/tmp"); }

// The file's text; "" when it is not there (yet).

absl::Status WriteAll(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return absl::UnavailableError(fmt::format("cannot write {}", path));
  return absl::OkStatus();
}

absl::StatusOr<GuestResult> ReadGuestResult(const RunFolder& run, const std::string& name,
                                            const Qemu& qemu) {
  std::string text = ReadWholeFile(run / name).value_or("");
  if (text.empty()) {
    return absl::InternalError(fmt::format(
        "guest: the agent wrote no result (the guest failed before or during the job); last "
        "console lines:\n{}",
        qemu.ConsoleTail()));
  }
  return GuestResultFromJson(text);
}

absl::Status GuestStepError(const GuestResult& r, const Qemu& qemu) {
  return absl::FailedPreconditionError(
      fmt::format("guest step {} failed: {}\nlast console lines:\n{}", r.failed_step, r.error,
                  qemu.ConsoleTail()));
}

absl::Status CheckGuestGeometry(const GuestResult& r, const harness::DiskGeometry& geometry) {
  if (r.logical_block_size == 0 && r.physical_block_size == 0) return absl::OkStatus();
  if (r.logical_block_size != geometry.logical_sector ||
      r.physical_block_size != geometry.physical_sector) {
    return absl::InternalError(fmt::format(
        "the guest saw {}-byte logical and {}-byte physical sectors on the disk under test, "
        "not the {} and {} asked for (does this qemu support virtio-blk logical_block_size and "
        "physical_block_size?)",
        r.logical_block_size, r.physical_block_size, geometry.logical_sector,
        geometry.physical_sector));
  }
  return absl::OkStatus();
}

}  // namespace powercut::vm
