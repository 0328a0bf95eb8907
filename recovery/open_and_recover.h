// OpenAndRecover: the way back after a crash or a fenced log: Recover, Repair when the tail is
// torn (or, in point-in-time mode, corrupt), then wal::Wal::Open, which continues at the LSN after
// the last recovered record.
//
// Guarantees: the records in `*out` are exactly the log's content when the WAL is returned, and
// the WAL continues at out->next_lsn. A directory that does not exist yet is created by Wal::Open
// (when options.create_if_missing) and recovers as an empty log. Salvage mode is refused
// (InvalidArgument): a log with holes cannot be continued; absolute and tolerate-torn-tail modes
// fail on the damage they reject, before anything is written.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "recovery/recovery.h"
#include "wal/wal.h"

namespace powercut::recovery {

absl::StatusOr<std::unique_ptr<wal::Wal>> OpenAndRecover(const std::string& dir,
                                                         const wal::WalOptions& options,
                                                         Mode mode = Mode::kTolerateTornTail,
                                                         RecoveryResult* out = nullptr);

}  // namespace powercut::recovery
