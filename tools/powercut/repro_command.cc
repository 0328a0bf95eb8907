// powercut repro
#include <cstdio>
#include <memory>

#include "base/process.h"
#include "fmt/format.h"
#include "harness/product/matrix/builtin.h"
#include "harness/product/repro/repro.h"
#include "harness/product/run/run.h"
#include "harness/trace/manifest.h"
#include "harness/vm/warm/guest_judge.h"
#include "tools/powercut/commands.h"
#include "tools/powercut/product_commands.h"

namespace powercut::cli {

void AddReproCommand(CLI::App& app, int* exit_code) {
  struct Args {
    product::ReproOptions o;
    bool no_shrink = false, recheck = false;
    std::string check_in;
  };
  auto a = std::make_shared<Args>();
  CLI::App* r = app.add_subcommand(
      "repro",
      "write a self-contained reproducer of a violating crash state and shrink it to "
      "the fewest dropped/torn writes (exit 1 when the state violates)");
  r->add_option("state", a->o.state_id, "the state id (pc1_...)")->required();
  r->add_option("--trace", a->o.trace, "the trace the state came from")->required();
  r->add_option("--base", a->o.base, "base image (default: from the trace's manifest)");
  r->add_option("--checker", a->o.checker, "the checker command")->required();
  AddFsOption(r, &a->o.fs, harness::FsNames());
  r->add_option("--bundle", a->o.bundle, "write the reproducer into this folder");
  r->add_flag("--ordered", a->o.ordered, "judge with --ordered");
  r->add_flag("--fsck", a->o.fsck, "fsck the image before mounting");
  r->add_flag("--no-shrink", a->no_shrink, "bundle the state as it is");
  r->add_flag("--recheck", a->recheck, "only rebuild and check the state (no bundle, no shrink)");
  r->add_option("--checker-timeout", a->o.checker_timeout_s, "seconds per checker run");
  r->add_option("--nodes", a->o.cluster.nodes,
                "a cluster's state (docs/cluster.md): start this many nodes, each on its own "
                "disk's crash image, before the checker (as `run --nodes` did)");
  r->add_option("--node", a->o.cluster.node_command, "with --nodes: the run's node command");
  r->add_option("--keep-logs", a->o.keep_logs,
                "with --nodes: keep the nodes' logs of the original and the minimal state in "
                "DIR/<state id>/node-K.log");
  AddKernelOption(r, &a->o.kernel);
  AddCheckInOption(r, &a->check_in);
  r->callback([=] {
    product::ReproOptions o = a->o;
    o.powercut = SelfPath("powercut");
    o.shrink = !a->no_shrink && !a->recheck;
    if (a->recheck) o.bundle.clear();
    if (!a->recheck && o.bundle.empty()) {
      *exit_code = CouldNotRun("repro: pass --bundle DIR (or --recheck to only re-check)");
      return;
    }
    if (o.cluster.nodes == 0 && (!o.cluster.node_command.empty() || !o.keep_logs.empty())) {
      *exit_code = CouldNotRun(
          "repro: --node and --keep-logs are for a cluster's state: give --nodes N as well");
      return;
    }
    if (o.cluster.nodes > 0) {
      // The launcher starts every node on its crash image around the user's checker
      // (harness/product/repro/repro.h); its states are judged on this host's loop mounts.
      auto launcher = product::FindClusterLauncher(o.powercut);
      if (!launcher.ok()) {
        *exit_code = CouldNotRun(std::string(launcher.status().message()));
        return;
      }
      o.launcher = *launcher;
      o.cluster.checker_timeout_s = o.checker_timeout_s;
      if (a->check_in == "guest" || !product::MayLoopMount()) {
        *exit_code = CouldNotRun(
            "repro --nodes: a cluster's state is judged on this host's loop mounts, every node "
            "started here with its log kept, which needs root (CAP_SYS_ADMIN and "
            "/dev/loop-control); judging it in a guest (--check-in guest) is not built for repro "
            "yet (docs/cluster.md, \"Reproducing a state\")");
        return;
      }
    }
    auto judging =
        product::JudgeTrace(a->check_in, o.fs, o.powercut, o.kernel, o.trace, o.checker,
                            o.checker_timeout_s, o.fsck ? "--fsck runs on a host copy" : "");
    if (!judging.ok()) {
      *exit_code = CouldNotRun(std::string(judging.status().message()));
      return;
    }
    o.judges = judging->judges;
    auto result = product::Repro(o);
    if (!result.ok()) {
      *exit_code = CouldNotRun(std::string(result.status().message()));
      return;
    }
    std::printf("%s\n", result->verdict.c_str());
    if (!a->recheck && result->violates) {
      std::printf("minimal: %s\n  %zu candidate(s) checked\n", result->minimal_verdict.c_str(),
                  result->steps.size());
    }
    if (!result->note.empty()) std::printf("note: %s\n", result->note.c_str());
    std::printf("%s", product::GuestCheckPhasesLine(judging->phases->Mean()).c_str());
    if (!o.kernel.empty() && !o.judges) {
      // Said, not silently dropped: the state was judged by the host's kernel.
      std::printf("note: --kernel is for checks in a guest; this state was checked on the host\n");
    }
    for (const std::string& logs : result->node_logs) {
      std::printf("the nodes' logs: %s\n", logs.c_str());
    }
    if (!o.bundle.empty()) std::printf("bundle: %s (see README.md)\n", o.bundle.c_str());
    *exit_code = result->violates ? 1 : 0;
  });
}

}  // namespace powercut::cli
