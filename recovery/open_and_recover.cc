#include "recovery/open_and_recover.h"

#include <fmt/format.h>

#include "base/status_macros.h"
#include "recovery/repair.h"

namespace powercut::recovery {

absl::StatusOr<std::unique_ptr<wal::Wal>> OpenAndRecover(const std::string& dir,
                                                         const wal::WalOptions& options, Mode mode,
                                                         RecoveryResult* out) {
  if (mode == Mode::kSalvage) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: salvage mode reads a damaged log but cannot reopen it for writing (its records may "
        "have holes); use Recover with salvage to copy the records out",
        dir));
  }
  wal::Env* env = options.env != nullptr ? options.env : wal::Env::Default();
  ASSIGN_OR_RETURN(const bool exists, env->Exists(dir));
  RecoveryResult result;
  if (exists) {
    RecoverOptions recover;
    recover.env = env;
    recover.mode = mode;
    ASSIGN_OR_RETURN(result, Recover(dir, recover));
    if (result.tail != TailState::kClean || !result.temp_files.empty()) {
      RETURN_IF_ERROR(Repair(result, env).status());
    }
  } else {
    result.dir = dir;
    result.mode = mode;
  }
  ASSIGN_OR_RETURN(std::unique_ptr<wal::Wal> wal, wal::Wal::Open(dir, options));
  if (wal->LastLsn() + 1 != result.next_lsn && !(result.segments.empty() && wal->LastLsn() == 0)) {
    return absl::InternalError(fmt::format(
        "{}: recovery ends at LSN {} but the reopened WAL continues after LSN {}; this is a bug, "
        "please report it with the output of `waldump {}`",
        dir, result.next_lsn - 1, wal->LastLsn(), dir));
  }
  if (out != nullptr) *out = std::move(result);
  return wal;
}

}  // namespace powercut::recovery
