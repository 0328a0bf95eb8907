// powercut-workload: the built-in workloads of the crash tester and their checkers.
//
//   powercut-workload <workload> run [options]    commits, acking each on POWERCUT_ACK_FD
//   powercut-workload <workload> check            prints have/corrupt lines for a crash image
//
// Exit codes (docs/protocol.md): 0 success; 1 the workload failed (a write or barrier error: it
// stopped acking) or the checker found a store that does not open/recover; 2 bad usage or
// environment (missing POWERCUT_* variable, bad option, non-empty target).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/check_server.h"
#include "base/main_guard.h"
#include "base/process.h"
#include "workloads/ack_channel.h"
#include "workloads/catalog.h"
#include "workloads/check_result.h"
#include "workloads/clients_binary.h"
#include "workloads/workload.h"

namespace powercut::workloads {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

int ExitCodeFor(const absl::Status& status) {
  if (status.ok()) return kExitOk;
  return status.code() == absl::StatusCode::kInvalidArgument ? kExitUsage : kExitFailed;
}

int Report(const std::string& name, const absl::Status& status) {
  if (!status.ok()) {
    fmt::print(stderr, "powercut-workload {}: {}\n", name, std::string(status.message()));
  }
  return ExitCodeFor(status);
}

// Validates the environment (target, then ack channel) and runs `body`.
int RunForm(const std::string& name,
            const std::function<absl::Status(const Target&, AckChannel&)>& body) {
  absl::StatusOr<Target> target = TargetFromEnvironment();
  if (!target.ok()) return Report(name, target.status());
  absl::StatusOr<std::unique_ptr<AckChannel>> acks = AckChannel::FromEnvironment();
  if (!acks.ok()) return Report(name, acks.status());
  return Report(name, body(*target, **acks));
}

int CheckForm(const std::string& name,
              const std::function<absl::StatusOr<CheckResult>(const Target&)>& body) {
  absl::StatusOr<Target> target = TargetFromEnvironment();
  if (!target.ok()) return Report(name, target.status());
  absl::StatusOr<CheckResult> result = body(*target);
  if (!result.ok()) return Report(name, result.status());
  result->Print(name, stdout, stderr);
  return kExitOk;
}

int List(const std::string& binary, uint64_t count, bool json) {
  const std::vector<WorkloadConfig> catalog = Catalog();
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const WorkloadConfig& c : catalog) {
      // Verdicts that differ by a property of the tester's file-system table.
      nlohmann::json where = nlohmann::json::object();
      if (c.cache_off_out_of_place) {
        where["overwrites_out_of_place"]["off"] = ExpectedVerdictName(*c.cache_off_out_of_place);
      }
      if (c.cache_on_dsync_unflushed) {
        where["direct_dsync_overwrite_may_skip_flush"]["on"] =
            ExpectedVerdictName(*c.cache_on_dsync_unflushed);
      }
      out.push_back({{"name", c.name},
                     {"workload", c.workload},
                     {"setting", c.setting},
                     {"run", RunCommand(binary, c, count)},
                     {"check", CheckCommand(binary, c)},
                     {"expect",
                      {{"process_crash", ExpectedVerdictName(c.process_crash)},
                       {"off", ExpectedVerdictName(c.cache_off)},
                       {"on", ExpectedVerdictName(c.cache_on)},
                       {"lying", ExpectedVerdictName(c.cache_lying)}}},
                     {"expect_where", where},
                     {"documented", c.documented}});
    }
    fmt::print("{}\n", out.dump(2));
    return kExitOk;
  }
  fmt::print("{:<28} {:<9} {:<9} {:<9} {:<9} {}\n", "NAME", "PROCESS", "OFF", "ON", "LYING", "RUN");
  for (const WorkloadConfig& c : catalog) {
    fmt::print("{:<28} {:<9} {:<9} {:<9} {:<9} {}\n", c.name, ExpectedVerdictName(c.process_crash),
               ExpectedVerdictName(c.cache_off), ExpectedVerdictName(c.cache_on),
               ExpectedVerdictName(c.cache_lying), RunCommand(binary, c, count));
  }
  return kExitOk;
}

int Main(int argc, char** argv) {
  RememberCommandLine(argc, argv);
  // A tester that stops reading acks must surface as an error on write, not kill us silently.
  std::signal(SIGPIPE, SIG_IGN);

  CLI::App app{
      "powercut-workload: built-in crash-test workloads. Each has a 'run' form (needs "
      "POWERCUT_DIR or POWERCUT_DEV, and POWERCUT_ACK_FD) and a 'check' form (prints 'have <id>' "
      "per intact commit). See docs/protocol.md and docs/workloads.md."};
  app.require_subcommand(1);

  // list
  CLI::App* list = app.add_subcommand(
      "list", "print every configuration: run/check commands and expected verdicts");
  bool list_json = false;
  uint64_t list_count = 200;
  list->add_flag("--json", list_json, "JSON instead of a table");
  list->add_option("--count", list_count, "--count in the printed run commands")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);

  // <workload> run | check, one pair per workload (workloads/workload.h).
  struct Forms {
    Workload* workload;
    CLI::App* run;
    CLI::App* check;
  };
  const std::vector<std::unique_ptr<Workload>> workloads = AllWorkloads();
  std::vector<Forms> forms;
  for (const std::unique_ptr<Workload>& workload : workloads) {
    const WorkloadHelp help = workload->help();
    CLI::App* sub = app.add_subcommand(std::string(help.name), std::string(help.about));
    sub->require_subcommand(1);
    CLI::App* run = sub->add_subcommand("run", std::string(help.run));
    CLI::App* check = sub->add_subcommand("check", std::string(help.check));
    workload->AddOptions(*run, *check);
    forms.push_back({workload.get(), run, check});
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }

  if (*list) return List(SelfPath(argv[0]), list_count, list_json);
  for (const Forms& form : forms) {
    const std::string name(form.workload->help().name);
    if (*form.run) {
      return RunForm(name + " run", [&](const Target& target, AckChannel& acks) {
        return form.workload->Run(target, acks);
      });
    }
    if (*form.check) {
      return CheckForm(name + " check",
                       [&](const Target& target) { return form.workload->Check(target); });
    }
  }
  return kExitUsage;
}

}  // namespace
}  // namespace powercut::workloads

int main(int argc, char** argv) {
  // A resident checker in a checking guest (base/check_server.h): returns in each state's child.
  powercut::ServeChecksIfAsked();
  return powercut::RunMainGuarded("powercut-workload", 1,
                                  [&] { return powercut::workloads::Main(argc, argv); });
}
