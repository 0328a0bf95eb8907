#include "harness/vm/guest/guest_job.h"

#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace powercut::vm {

using nlohmann::json;

std::string JobFileName(const char* stem, uint64_t job_id, const char* extension) {
  return job_id == 0 ? fmt::format("{}.{}", stem, extension)
                     : fmt::format("{}-{}.{}", stem, job_id, extension);
}

namespace {
json JobToJson(const GuestJob& job) {
  json j = {{"mode", job.mode == GuestJob::Mode::kCheck ? "check" : "workload"},
            {"fs", harness::FsName(job.fs)},
            {"disk_serial", job.disk_serial},
            {"log_writes_serial", job.log_writes_serial},
            {"flakey", job.flakey ? std::string(FlakeyModeName(*job.flakey)) : ""},
            {"flakey_after_acks", job.flakey_after_acks},
            {"flakey_heal_ms", job.flakey_heal_ms},
            {"flakey_disk", job.flakey_disk},
            {"command", job.command},
            {"checker", job.checker},
            {"mount_options", job.mount_options},
            {"job_id", job.job_id},
            {"head_hash_bytes", job.head_hash_bytes},
            {"state_token", job.state_token},
            {"checker_timeout_s", job.checker_timeout_s},
            {"fstest_promises", job.fstest_promises},
            {"boot_checks", job.boot_checks},
            {"resident_checker", job.resident_checker},
            {"sync_acks", job.sync_acks},
            {"node_cut_disk", job.node_cut_disk},
            {"checks", json::array()},
            {"extra_disks", json::array()}};
  for (const GuestExtraDisk& d : job.extra_disks) {
    j["extra_disks"].push_back({{"disk_serial", d.disk_serial},
                                {"fs", harness::FsName(d.fs)},
                                {"state_token", d.state_token}});
  }
  for (const GuestCheck& c : job.checks) {
    j["checks"].push_back({{"disk_serial", c.disk_serial},
                           {"fs", harness::FsName(c.fs)},
                           {"command", c.command},
                           {"mount_options", c.mount_options}});
  }
  return j;
}
}  // namespace

std::string GuestJobToJson(const GuestJob& job) { return JobToJson(job).dump(2); }

std::string GuestJobToLine(const GuestJob& job) {
  return JobToJson(job).dump(-1, ' ', false, json::error_handler_t::replace);
}

absl::StatusOr<GuestJob> GuestJobFromJson(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("job.json: not a JSON object");
  }
  GuestJob job;
  try {
    job.mode =
        j.value("mode", "workload") == "check" ? GuestJob::Mode::kCheck : GuestJob::Mode::kWorkload;
    absl::StatusOr<harness::FsKind> fs =
        harness::ParseFsKind(j.at("fs").get<std::string>(), "job.json: \"fs\"");
    if (!fs.ok()) return fs.status();
    job.fs = *fs;
    job.disk_serial = j.value("disk_serial", job.disk_serial);
    job.log_writes_serial = j.value("log_writes_serial", "");
    if (std::string flakey = j.value("flakey", ""); !flakey.empty()) {
      absl::StatusOr<FlakeyMode> mode = ParseFlakeyMode(flakey, "job.json: \"flakey\"");
      if (!mode.ok()) return mode.status();
      job.flakey = *mode;
    }
    job.flakey_after_acks = j.value("flakey_after_acks", int64_t{0});
    job.flakey_heal_ms = j.value("flakey_heal_ms", int64_t{0});
    job.flakey_disk = j.value("flakey_disk", uint32_t{0});
    job.command = j.value("command", "");
    job.checker = j.value("checker", "");
    job.mount_options = j.value("mount_options", "");
    job.job_id = j.value("job_id", uint64_t{0});
    job.head_hash_bytes = j.value("head_hash_bytes", uint64_t{0});
    job.state_token = j.value("state_token", "");
    job.checker_timeout_s = j.value("checker_timeout_s", 0.0);
    job.fstest_promises = j.value("fstest_promises", "");
    job.boot_checks = j.value("boot_checks", true);
    job.resident_checker = j.value("resident_checker", false);
    job.sync_acks = j.value("sync_acks", false);
    job.node_cut_disk = j.value("node_cut_disk", int32_t{-1});
    for (const json& d : j.value("extra_disks", json::array())) {
      absl::StatusOr<harness::FsKind> disk_fs =
          harness::ParseFsKind(d.at("fs").get<std::string>(), "job.json: extra_disks[].fs");
      if (!disk_fs.ok()) return disk_fs.status();
      job.extra_disks.push_back({.disk_serial = d.value("disk_serial", ""),
                                 .fs = *disk_fs,
                                 .state_token = d.value("state_token", "")});
    }
    for (const json& c : j.value("checks", json::array())) {
      absl::StatusOr<harness::FsKind> check_fs =
          harness::ParseFsKind(c.at("fs").get<std::string>(), "job.json: checks[].fs");
      if (!check_fs.ok()) return check_fs.status();
      job.checks.push_back({.disk_serial = c.value("disk_serial", ""),
                            .fs = *check_fs,
                            .command = c.value("command", ""),
                            .mount_options = c.value("mount_options", "")});
    }
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(fmt::format("job.json: {}", e.what()));
  }
  return job;
}

namespace {

json ResultToJson(const GuestResult& r) {
  json j = {{"ok", r.ok},
            {"failed_step", r.failed_step},
            {"error", r.error},
            {"exit_code", r.exit_code},
            {"acks", r.acks},
            {"invalid_ack_lines", r.invalid_ack_lines},
            {"acked", r.acked},
            {"acks_before_cut", r.acks_before_cut},
            {"flakey_healed", r.flakey_healed},
            {"checker_exit_code", r.checker_exit_code},
            {"have", r.have},
            {"corrupt", r.corrupt},
            {"device_cache", r.device_cache},
            {"logical_block_size", r.logical_block_size},
            {"physical_block_size", r.physical_block_size},
            {"ready_seconds", r.ready_seconds},
            {"leftover_processes", r.leftover_processes},
            {"head_hash_direct", r.head_hash_direct},
            {"head_hash_cached", r.head_hash_cached},
            {"checker_stdout", r.checker_stdout},
            {"checker_stderr_tail", r.checker_stderr_tail},
            {"checker_signal", r.checker_signal},
            {"checker_timed_out", r.checker_timed_out},
            {"fs_steps", json::array()},
            {"fs_repaired", r.fs_repaired},
            {"fs_unrecoverable", r.fs_unrecoverable},
            {"kernel", r.kernel},
            {"phases", json::array()},
            {"checks", json::array()}};
  for (const auto& [name, seconds] : r.phases) j["phases"].push_back({name, seconds});
  for (const GuestResult::FsStep& s : r.fs_steps) {
    j["fs_steps"].push_back({{"disk", s.disk},
                             {"name", s.name},
                             {"exit_code", s.exit_code},
                             {"changed", s.changed},
                             {"detail", s.detail}});
  }
  for (const GuestResult& c : r.checks) j["checks"].push_back(ResultToJson(c));
  return j;
}

// Throws json::exception on a field of the wrong type.
GuestResult ResultFromJson(const json& j) {
  GuestResult r;
  r.ok = j.value("ok", false);
  r.failed_step = j.value("failed_step", "");
  r.error = j.value("error", "");
  r.exit_code = j.value("exit_code", -1);
  r.acks = j.value("acks", uint64_t{0});
  r.invalid_ack_lines = j.value("invalid_ack_lines", uint64_t{0});
  r.acked = j.value("acked", std::vector<std::string>{});
  r.acks_before_cut = j.value("acks_before_cut", int64_t{-1});
  r.flakey_healed = j.value("flakey_healed", false);
  r.checker_exit_code = j.value("checker_exit_code", -1);
  r.have = j.value("have", std::vector<std::string>{});
  r.corrupt = j.value("corrupt", std::vector<std::string>{});
  r.device_cache = j.value("device_cache", "");
  r.logical_block_size = j.value("logical_block_size", uint32_t{0});
  r.physical_block_size = j.value("physical_block_size", uint32_t{0});
  r.ready_seconds = j.value("ready_seconds", 0.0);
  r.leftover_processes = j.value("leftover_processes", uint64_t{0});
  r.head_hash_direct = j.value("head_hash_direct", "");
  r.head_hash_cached = j.value("head_hash_cached", "");
  r.checker_stdout = j.value("checker_stdout", "");
  r.checker_stderr_tail = j.value("checker_stderr_tail", "");
  r.checker_signal = j.value("checker_signal", 0);
  r.checker_timed_out = j.value("checker_timed_out", false);
  for (const json& s : j.value("fs_steps", json::array())) {
    r.fs_steps.push_back({.disk = s.value("disk", ""),
                          .name = s.value("name", ""),
                          .exit_code = s.value("exit_code", 0),
                          .changed = s.value("changed", false),
                          .detail = s.value("detail", "")});
  }
  r.fs_repaired = j.value("fs_repaired", false);
  r.fs_unrecoverable = j.value("fs_unrecoverable", false);
  r.kernel = j.value("kernel", "");
  for (const json& p : j.value("phases", json::array())) {
    r.phases.emplace_back(p.at(0).get<std::string>(), p.at(1).get<double>());
  }
  for (const json& c : j.value("checks", json::array())) r.checks.push_back(ResultFromJson(c));
  return r;
}

}  // namespace

std::string GuestResultToJson(const GuestResult& r) {
  return ResultToJson(r).dump(2, ' ', false, json::error_handler_t::replace);
}

std::string GuestResultToLine(const GuestResult& r) {
  return ResultToJson(r).dump(-1, ' ', false, json::error_handler_t::replace);
}

absl::StatusOr<GuestResult> GuestResultFromJson(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("result.json: not a JSON object");
  }
  try {
    return ResultFromJson(j);
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(fmt::format("result.json: {}", e.what()));
  }
}

}  // namespace powercut::vm
