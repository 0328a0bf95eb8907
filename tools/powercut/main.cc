// powercut: the crash-consistency tester's command line (docs/trace.md, docs/cache-models.md,
// docs/report.md). Exit codes: 0 ok / all states pass, 1 error or violations found, 2 usage.
#include <cstdio>
#include <exception>
#include <string>

#include "base/main_guard.h"
#include "base/mount_namespace.h"
#include "base/process.h"
#include "base/scratch_sweep.h"
#include "harness/product/matrix/builtin.h"
#include "tools/powercut/commands.h"
#include "tools/powercut/product_commands.h"
#include "tools/powercut/workload_catalog.h"

namespace powercut::cli {

int Fail(const std::string& message) {
  std::fprintf(stderr, "powercut: %s\n", message.c_str());
  return 1;
}

CLI::Option* AddCheckInOption(CLI::App* app, std::string* check_in) {
  return app
      ->add_option(
          "--check-in", *check_in,
          "where file-system crash states are judged: guest (the recording kernel, in warm "
          "guests; no root; the default) or host (this host's loop mounts and kernel; root)")
      ->check(CLI::IsMember({"guest", "host"}));
}

CLI::Option* AddFsOption(CLI::App* app, harness::FsKind* fs, const std::string& help) {
  return app
      ->add_option_function<std::string>(
          "--fs",
          [fs](const std::string& name) {
            auto kind = harness::ParseFsKind(name);
            if (!kind.ok()) throw CLI::ValidationError(std::string(kind.status().message()));
            *fs = *kind;
          },
          help)
      ->default_str(harness::FsName(*fs));
}

}  // namespace powercut::cli

namespace {

int Main(int argc, char** argv) {
  // Before any thread: host loop mounts of crash states stay private to powercut and its
  // checkers, and vanish with them even after SIGKILL (base/mount_namespace.h). Not root:
  // nothing moves.
  powercut::EnterOwnMountNamespace();
  // Ctrl-C (SIGINT), SIGTERM and SIGHUP kill qemu's process group, detach host loop mounts and
  // remove the run/work folders before powercut dies of the signal (harness/signal_cleanup.h).
  powercut::InstallInterruptHandlers();
  // What runs killed with SIGKILL left (a scheduler's time limit): scratch folders nobody holds
  // the lock of any more (base/scratch_sweep.h).
  if (const powercut::SweepResult swept =
          powercut::SweepDeadScratchFolders(powercut::ScratchParents());
      swept.folders > 0) {
    std::fprintf(stderr, "powercut: removed %d scratch folder(s) of dead runs (%.1f MiB)\n",
                 swept.folders, static_cast<double>(swept.bytes) / (1 << 20));
  }
  // The built-in cells' expected verdicts come from the linked workload catalog.
  powercut::product::SetBuiltinCatalog(powercut::cli::LinkedWorkloadCatalog);
  CLI::App app{"powercut: which acknowledged commits survive a power cut?"};
  app.require_subcommand(1);
  int exit_code = 0;
  powercut::cli::AddTraceCommands(app, &exit_code);
  powercut::cli::AddStateCommands(app, &exit_code);
  powercut::cli::AddCheckCommands(app, &exit_code);
  powercut::cli::AddProductCommands(app, &exit_code);
  powercut::cli::AddDiffCommand(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  return powercut::RunMainGuarded("powercut", 1, [&] { return Main(argc, argv); });
}
