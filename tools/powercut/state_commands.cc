// powercut state materialize | list
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "base/image_io.h"
#include "harness/check/engine.h"
#include "harness/state/cache_model.h"
#include "harness/state/crash_state.h"
#include "harness/state/materialize.h"
#include "harness/state/state_generator.h"
#include "harness/trace/manifest.h"
#include "harness/trace/trace_reader.h"
#include "tools/powercut/commands.h"

namespace powercut::cli {

void AddStateCommands(CLI::App& app, int* exit_code) {
  CLI::App* state = app.add_subcommand("state", "crash states: list them, rebuild one");
  state->require_subcommand(1);

  struct MaterializeArgs {
    std::string trace, base, id, out;
  };
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

  struct ListArgs {
    std::string trace, cache = "off,on,lying", points = "ack,flush", window = "16";
    uint32_t unit = 0, k = 10, samples = 32;
    uint64_t seed = 1;
    bool no_torn = false;
  };
  auto l = std::make_shared<ListArgs>();
  CLI::App* list = state->add_subcommand("list", "print the crash state ids `check` would test");
  list->add_option("--trace", l->trace, "the dm-log-writes log")->required();
  list->add_option("--cache", l->cache, "cache models: off,on,lying");
  list->add_option("--points", l->points, std::string(harness::kPointChoices));
  list->add_option("--window", l->window, "lying window: entries (16) or bytes (64KiB)");
  list->add_option("--atomic", l->unit, "atomic unit in bytes (512 or 4096)");
  list->add_option("--max-exhaustive", l->k, "enumerate all subsets up to this many writes");
  list->add_option("--samples", l->samples, "random subsets per point beyond that");
  list->add_option("--seed", l->seed, "seed for sampling");
  list->add_flag("--no-torn", l->no_torn, "no torn-write variants");
  list->callback([=] {
    // The trace as `check` reads it: its manifest, when there is one, gives the disks of a set,
    // the physical sector (the default atomic unit) and the order semantics.
    std::optional<harness::TraceManifest> manifest;
    const std::string manifest_path = harness::ManifestPathFor(l->trace);
    std::error_code ec;
    harness::TraceReadOptions read_options;
    if (std::filesystem::exists(manifest_path, ec)) {
      auto read = harness::ReadManifest(manifest_path);
      auto layout = read.ok() ? harness::LayoutOf(*read) : read.status();
      if (!layout.ok()) {
        *exit_code = Fail(std::string(layout.status().message()));
        return;
      }
      manifest = *read;
      read_options.disks = *layout;
    }
    auto file = harness::TraceFile::Open(l->trace, read_options);
    if (!file.ok()) {
      *exit_code = Fail(std::string(file.status().message()));
      return;
    }
    const harness::Trace& t = (*file)->trace();
    const uint32_t physical = manifest ? manifest->physical_sector : 0;
    const bool flush_epoch = manifest && manifest->order == harness::OrderSemantics::kFlushEpoch;
    auto points = harness::ParsePointSelection(l->points);
    if (!points.ok()) {
      *exit_code = Fail(std::string(points.status().message()));
      return;
    }
    harness::StateOptions so;
    so.max_exhaustive = l->k;
    so.samples = l->samples;
    so.torn = !l->no_torn;
    harness::TraceIndex index(t);
    size_t start = 0;
    while (start <= l->cache.size()) {
      size_t comma = l->cache.find(',', start);
      std::string name = l->cache.substr(start, comma == std::string::npos ? comma : comma - start);
      auto model = harness::ParseCacheModel(name);
      if (!model.ok()) {
        *exit_code = Fail(std::string(model.status().message()));
        return;
      }
      if (model->mode == harness::CacheMode::kLying && name == "lying") {
        if (auto s = harness::ParseWindow(l->window, &*model); !s.ok()) {
          *exit_code = Fail(std::string(s.message()));
          return;
        }
      }
      model->atomic_unit = l->unit ? l->unit : physical != 0 ? physical : t.sector_size;
      const bool flush_only = flush_epoch && model->mode == harness::CacheMode::kOff;
      for (uint64_t p : harness::SelectPoints(index, *points, l->seed, flush_only)) {
        std::vector<harness::CrashState> states;
        harness::StatesAtPoint(index, index.View(p, *model), *model, so, l->seed, &states);
        for (const auto& s : states) {
          std::printf("%s\n", harness::EncodeStateId(t.ShortHash(), s).c_str());
        }
      }
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  });
}

}  // namespace powercut::cli
