// The rocksdb and postgres stores as powercut-workload links them: each call hands the whole
// command line to powercut-workload-clients (clients_binary.h), which links the real ones
// (rocksdb_store.cc, postgres_client.cc). Every caller reaches these before it touches the target
// (DirectoryWorkload::Run checks the target, then calls the store first), so nothing is done twice.
#include "workloads/clients_binary.h"
#include "workloads/postgres_client.h"
#include "workloads/rocksdb_workload.h"

namespace powercut::workloads {

absl::Status RunRocksDb(const std::string& /*dir*/, const RocksDbOptions& /*options*/,
                        AckChannel& /*acks*/) {
  ExecClientsBinary("rocksdb");
}

absl::StatusOr<CheckResult> CheckRocksDb(const std::string& /*dir*/) {
  ExecClientsBinary("rocksdb");
}

absl::StatusOr<std::unique_ptr<DatabaseWorkload::Session>> OpenPostgres(
    const std::string& /*dir*/, const PostgresSettings& /*settings*/) {
  ExecClientsBinary("postgres");
}

absl::StatusOr<std::vector<DatabaseWorkload::Record>> ReadBackPostgres(
    const std::string& /*dir*/, std::vector<std::string>& /*notes*/) {
  ExecClientsBinary("postgres");
}

}  // namespace powercut::workloads
