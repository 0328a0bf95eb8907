// powercut state materialize | list
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/image_io.h"
#include "harness/check/engine.h"
#include "harness/product/run/run.h"
#include "harness/state/cache_model.h"
#include "harness/state/crash_state.h"
#include "harness/state/materialize.h"
#include "harness/state/state_generator.h"
#include "harness/trace/manifest.h"
#include "harness/trace/trace_reader.h"
#include "tools/powercut/commands.h"
#include "tools/powercut/product_commands.h"

namespace powercut::cli {
namespace {

struct MaterializeArgs {
  std::string trace, base, id, out;
};

void AddMaterializeCommand(CLI::App* state, int* exit_code) {
  auto m = std::make_shared<MaterializeArgs>();
  CLI::App* materialize =
      state->add_subcommand("materialize", "rebuild exactly the image of one crash state");
  materialize->add_option("--trace", m->trace, "the dm-log-writes log")->required();
  materialize->add_option("--base", m->base, "base image (default: from LOG.manifest.json)");
  materialize->add_option("--state", m->id, "state id, as printed by `powercut check`")->required();
  materialize->add_option("--out", m->out, "the image to write")->required();
  materialize->callback([=] {
    absl::Status s = harness::MaterializeState(m->trace, m->base, m->id, m->out);
    if (!s.ok()) {
      *exit_code = Fail(std::string(s.message()));
      return;
    }
    std::printf("%s\n", m->out.c_str());
  });
}

struct ListArgs {
  std::string trace, cache = "off,on,lying", points = "acks,flushes", window = "16";
  uint32_t unit = 0, k = 10, samples = 32;
  uint64_t seed = 1;
  bool no_torn = false;
};

// The trace as `check` reads it: its manifest, when there is one, gives the disks of a set, the
// physical sector (the default atomic unit) and the order semantics.
struct ListedTrace {
  std::unique_ptr<harness::TraceFile> file;
  std::optional<harness::TraceManifest> manifest;
};

absl::StatusOr<ListedTrace> OpenListedTrace(const std::string& trace) {
  ListedTrace out;
  const std::string manifest_path = harness::ManifestPathFor(trace);
  std::error_code ec;
  harness::TraceReadOptions read_options;
  if (std::filesystem::exists(manifest_path, ec)) {
    absl::StatusOr<harness::TraceManifest> read = harness::ReadManifest(manifest_path);
    if (!read.ok()) return read.status();
    absl::StatusOr<harness::DiskLayout> layout = harness::LayoutOf(*read);
    if (!layout.ok()) return layout.status();
    out.manifest = *std::move(read);
    read_options.disks = *std::move(layout);
  }
  absl::StatusOr<std::unique_ptr<harness::TraceFile>> file =
      harness::TraceFile::Open(trace, read_options);
  if (!file.ok()) return file.status();
  out.file = *std::move(file);
  return out;
}

// Prints the state ids of every model at every selected point, as `check` would test them.
void PrintStateIds(const ListArgs& l, const ListedTrace& listed,
                   std::vector<harness::CacheModel> models, const harness::PointSelection& points) {
  const harness::Trace& t = listed.file->trace();
  const uint32_t physical = listed.manifest ? listed.manifest->physical_sector : 0;
  const bool flush_epoch =
      listed.manifest && listed.manifest->order == harness::OrderSemantics::kFlushEpoch;
  harness::StateOptions so;
  so.max_exhaustive = l.k;
  so.samples = l.samples;
  so.torn = !l.no_torn;
  harness::TraceIndex index(t);
  for (harness::CacheModel& model : models) {
    model.atomic_unit = l.unit ? l.unit : physical != 0 ? physical : t.sector_size;
    const bool flush_only = flush_epoch && model.mode == harness::CacheMode::kOff;
    for (uint64_t p : harness::SelectPoints(index, points, l.seed, flush_only)) {
      std::vector<harness::CrashState> states;
      harness::StatesAtPoint(index, index.View(p, model), model, so, l.seed, &states);
      for (const auto& s : states) {
        std::printf("%s\n", harness::EncodeStateId(t.ShortHash(), s).c_str());
      }
    }
  }
}

// `state list`; returns the exit code: 2 for bad usage (checked before the trace is read), 1
// when the trace cannot be read.
int ListStates(const ListArgs& l) {
  // The same parsers, and so the same names and messages, as `check`, `run` and `matrix`.
  absl::StatusOr<std::vector<harness::CacheModel>> models =
      harness::ParseCacheModels(l.cache, l.window);
  if (!models.ok()) return CouldNotRun(std::string(models.status().message()));
  absl::StatusOr<harness::PointSelection> points = harness::ParsePointSelection(l.points);
  if (!points.ok()) return CouldNotRun(std::string(points.status().message()));
  absl::StatusOr<ListedTrace> listed = OpenListedTrace(l.trace);
  if (!listed.ok()) return Fail(std::string(listed.status().message()));
  PrintStateIds(l, *listed, *std::move(models), *points);
  return 0;
}

void AddListCommand(CLI::App* state, int* exit_code) {
  auto l = std::make_shared<ListArgs>();
  CLI::App* list = state->add_subcommand("list", "print the crash state ids `check` would test");
  list->add_option("--trace", l->trace, "the dm-log-writes log")->required();
  list->add_option("--cache", l->cache, "cache models, comma-separated: off,on,lying or all");
  list->add_option("--points", l->points, std::string(harness::kPointChoices));
  list->add_option("--window", l->window, "lying window: entries (16) or bytes (64KiB)");
  list->add_option("--atomic", l->unit, "atomic unit in bytes (512 or 4096)");
  list->add_option("--max-exhaustive", l->k, "enumerate all subsets up to this many writes");
  list->add_option("--samples", l->samples, "random subsets per point beyond that");
  list->add_option("--seed", l->seed, "seed for sampling");
  list->add_flag("--no-torn", l->no_torn, "no torn-write variants");
  list->callback([=] { *exit_code = ListStates(*l); });
}

}  // namespace

void AddStateCommands(CLI::App& app, int* exit_code) {
  CLI::App* state = app.add_subcommand("state", "crash states: list them, rebuild one");
  state->require_subcommand(1);
  AddMaterializeCommand(state, exit_code);
  AddListCommand(state, exit_code);
}

}  // namespace powercut::cli
