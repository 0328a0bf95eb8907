// The shape every built-in database workload shares (postgres, redis, lmdb, etcd), so that each
// of them holds only what is its own.
//
// A database workload commits one record per transaction: key = the commit id (1..--count, in
// order), value = a self-verifying payload (payload.h) of about --value-size bytes (--seed draws
// the sizes). The run form opens the store (Open: set-up, server start, connection), commits the
// records one at a time and acks each once the database said it committed, then ends the session
// (Session::Finish). The check form has the database read the crash image back (ReadBack: the
// server started on it with its own recovery, every record listed) and sorts each record into
// `have` (its payload verifies) or `corrupt`.
//
// What a subclass adds: its help, its settings (AddSettings), Open, ReadBack and its catalog
// entries (Entry builds one). A store that fails while committing stops the run with no further
// acks; a store that cannot be read back is the checker's error (exit 1: a violation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "workloads/workload.h"

namespace powercut::workloads {

class DatabaseWorkload : public DirectoryWorkload {
 public:
  // `count_help` names what --count counts, e.g. "rows (transactions)"; `value` names a
  // record's value in the help of --value-size and --seed, e.g. "payload".
  DatabaseWorkload(std::string count_help, std::string value)
      : count_help_(std::move(count_help)), value_(std::move(value)) {}

  // --count, --value-size, --seed, then the workload's own settings (AddSettings).
  void AddOptions(CLI::App& run, CLI::App& check) final;

  // A run's open store.
  class Session {
   public:
    virtual ~Session() = default;
    // Commits `id` -> `value`; returns once the database reported the commit done.
    virtual absl::Status Commit(const std::string& id, const std::string& value) = 0;
    // After the last ack: ends as the run's end should (postgres: a clean shutdown). The
    // destructor may do the rest (a server still running is killed, as the cut would).
    virtual absl::Status Finish() { return absl::OkStatus(); }
  };

  // One record a check read back. `intact` false: the database's own check of the record failed
  // (postgres: its checksum column), so it is corrupt whatever its payload says.
  struct Record {
    std::string id;
    std::string value;
    bool intact = true;
  };

 protected:
  // The settings under test, added to the run form (their values kept in the subclass).
  virtual void AddSettings(CLI::App& run) = 0;
  // Sets up the store in `dir` (POWERCUT_DIR; InvalidArgument when it already holds one) and
  // opens a session on it.
  virtual absl::StatusOr<std::unique_ptr<Session>> Open(const std::string& dir) = 0;
  // Every record of the crash image in `dir`. A store whose set-up never finished has none (say
  // why in `notes`); one the database cannot open or recover is an error quoting the database.
  virtual absl::StatusOr<std::vector<Record>> ReadBack(const std::string& dir,
                                                       std::vector<std::string>& notes) = 0;

  // A catalog entry of this workload (help().name): `off_and_on` is the verdict under cache off
  // and on; a process crash survives and a lying cache loses unless the caller changes them.
  WorkloadConfig Entry(std::string name, std::string setting, std::vector<std::string> run_args,
                       Expectation off_and_on, std::string documented) const;

 private:
  absl::Status RunIn(const std::string& dir, AckChannel& acks) final;
  absl::StatusOr<CheckResult> CheckIn(const std::string& dir) final;

  std::string count_help_;
  std::string value_;
  uint64_t count_ = 100;
  size_t value_size_ = 100;
  uint64_t seed_ = 1;
};

}  // namespace powercut::workloads
