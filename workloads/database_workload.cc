#include "workloads/database_workload.h"

#include <fmt/format.h>

#include "base/status_macros.h"
#include "workloads/payload.h"

namespace powercut::workloads {

void DatabaseWorkload::AddOptions(CLI::App& run, CLI::App& /*check*/) {
  AddCountOption(run, count_, count_help_);
  AddPayloadOptions(run, value_size_, seed_, value_);
  AddSettings(run);
}

absl::Status DatabaseWorkload::RunIn(const std::string& dir, AckChannel& acks) {
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Open(dir));
  for (uint64_t id = 1; id <= count_; ++id) {
    const std::string id_text = std::to_string(id);
    const std::string value = MakePayload(id_text, FillerSize(seed_, id, value_size_));
    if (absl::Status status = session->Commit(id_text, value); !status.ok()) {
      return absl::Status(status.code(), fmt::format("id {}: {}; stopped, no further acks", id,
                                                     std::string(status.message())));
    }
    RETURN_IF_ERROR(acks.Ack(id_text));
  }
  return session->Finish();
}

absl::StatusOr<CheckResult> DatabaseWorkload::CheckIn(const std::string& dir) {
  CheckResult result;
  ASSIGN_OR_RETURN(const std::vector<Record> records, ReadBack(dir, result.notes));
  for (const Record& r : records) {
    if (r.intact && VerifyPayload(r.id, r.value)) {
      result.have.push_back(r.id);
    } else {
      result.corrupt.push_back(r.id);
      result.notes.push_back(fmt::format("{} {}: the value does not verify", value_, r.id));
    }
  }
  return result;
}

WorkloadConfig DatabaseWorkload::Entry(std::string name, std::string setting,
                                       std::vector<std::string> run_args, Expectation off_and_on,
                                       std::string documented) const {
  WorkloadConfig c{.name = std::move(name),
                   .workload = std::string(help().name),
                   .setting = std::move(setting),
                   .run_args = std::move(run_args)};
  c.cache_off = c.cache_on = off_and_on;
  c.documented = std::move(documented);
  return c;
}

}  // namespace powercut::workloads
