// Reading a WAL back: tail classification, recovery modes, repair. (Contract; see README.md.)
//
//   absl::StatusOr<RecoveryResult> Recover(const std::string& dir, const RecoverOptions& options);
//   RecoverOptions { wal::Env* env = nullptr; Mode mode = Mode::kTolerateTornTail; ... }
//   RecoveryResult { std::vector<RecoveredRecord> records /* {Lsn lsn; std::string payload;} */;
//                    TailState tail /* kClean, kTorn, kCorrupt */; ... }
//   absl::Status Repair(const std::string& dir, ...);
//   absl::StatusOr<std::unique_ptr<wal::Wal>> OpenAndRecover(dir, wal::WalOptions, ...);
//
// The recovery work replaces this placeholder with the real declarations.
#pragma once
