// powercut trace show | replay | manifest
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "base/ack_id.h"
#include "base/image_io.h"
#include "fmt/format.h"
#include "harness/trace/manifest.h"
#include "harness/trace/trace_reader.h"
#include "harness/trace/trace_replay.h"
#include "nlohmann/json.hpp"
#include "tools/powercut/commands.h"
#include "tools/powercut/product_commands.h"

namespace powercut::cli {
namespace {

using harness::Trace;
using harness::TraceEntry;

std::string FlagsText(uint64_t flags) {
  std::string s;
  auto add = [&](uint64_t bit, const char* name) {
    if (flags & bit) s += (s.empty() ? "" : "|") + std::string(name);
  };
  add(harness::kFlagFlush, "FLUSH");
  add(harness::kFlagFua, "FUA");
  add(harness::kFlagDiscard, "DISCARD");
  add(harness::kFlagMark, "MARK");
  add(harness::kFlagMetadata, "METADATA");
  return s.empty() ? "WRITE" : s;
}

int Show(const std::string& log, const std::string& base, bool json) {
  harness::TraceReadOptions options;
  if (!base.empty()) {
    auto size = powercut::FileSize(base);
    if (!size.ok()) return Fail(std::string(size.status().message()));
    options.device_bytes = *size;
  }
  auto file = harness::TraceFile::Open(log, options);
  if (!file.ok()) return Fail(std::string(file.status().message()));
  const Trace& t = (*file)->trace();
  uint64_t writes = 0, flushes = 0, fuas = 0, discards = 0, marks = 0, acks = 0, bytes = 0;
  for (const TraceEntry& e : t.entries) {
    if (e.is_mark()) {
      ++marks;
      acks += AckIdFromMark(e.mark).has_value();
    } else if (e.is_discard()) {
      ++discards;
    } else if (e.header.nr_sectors > 0) {
      ++writes;
      bytes += e.header.nr_sectors * t.sector_size;
    }
    flushes += e.is_flush();
    fuas += e.is_fua();
  }
  if (json) {
    nlohmann::json entries = nlohmann::json::array();
    for (const TraceEntry& e : t.entries) {
      nlohmann::json j = {{"index", e.index},          {"log_offset", e.log_offset},
                          {"sector", e.header.sector}, {"nr_sectors", e.header.nr_sectors},
                          {"flags", e.header.flags},   {"flags_text", FlagsText(e.header.flags)}};
      if (e.is_mark()) j["mark"] = e.mark;
      entries.push_back(j);
    }
    nlohmann::json out = {{"log", log},
                          {"sector_size", t.sector_size},
                          {"super_nr_entries", t.super_nr_entries},
                          {"entries_read", t.entries.size()},
                          {"hash", t.hash.Hex()},
                          {"notes", t.notes},
                          {"summary",
                           {{"writes", writes},
                            {"write_bytes", bytes},
                            {"flushes", flushes},
                            {"fua", fuas},
                            {"discards", discards},
                            {"marks", marks},
                            {"acks", acks}}},
                          {"entries", entries}};
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf(
      "%s: dm-log-writes v1, sectorsize %u, superblock nr_entries %llu, %zu entries read, "
      "hash %s\n",
      log.c_str(), t.sector_size, static_cast<unsigned long long>(t.super_nr_entries),
      t.entries.size(), t.ShortHash().c_str());
  for (const auto& n : t.notes) std::printf("note: %s\n", n.c_str());
  for (const TraceEntry& e : t.entries) {
    std::string line =
        fmt::format("{:>6} @{:<10} {:<16}", e.index, e.log_offset, FlagsText(e.header.flags));
    if (e.is_mark()) {
      line += fmt::format(" \"{}\"", e.mark);
    } else if (e.header.nr_sectors > 0) {
      line += fmt::format(" sector {} x{} ({} bytes at {})", e.header.sector, e.header.nr_sectors,
                          e.header.nr_sectors * t.sector_size, e.header.sector * t.sector_size);
    }
    std::printf("%s\n", line.c_str());
  }
  std::printf(
      "summary: %llu writes (%llu bytes), %llu flushes, %llu FUA, %llu discards, %llu "
      "marks (%llu acks)\n",
      static_cast<unsigned long long>(writes), static_cast<unsigned long long>(bytes),
      static_cast<unsigned long long>(flushes), static_cast<unsigned long long>(fuas),
      static_cast<unsigned long long>(discards), static_cast<unsigned long long>(marks),
      static_cast<unsigned long long>(acks));
  return 0;
}

struct ShowArgs {
  std::string log, base;
  bool json = false;
};

void AddShowCommand(CLI::App* trace, int* exit_code) {
  auto show_args = std::make_shared<ShowArgs>();
  CLI::App* show = trace->add_subcommand("show", "print entries, flags, marks and counts");
  show->add_option("LOG", show_args->log, "the dm-log-writes log")->required();
  show->add_option("--base", show_args->base, "base image (checks entries lie inside it)");
  show->add_flag("--json", show_args->json, "JSON instead of text");
  show->callback([=] { *exit_code = Show(show_args->log, show_args->base, show_args->json); });
}

// The log, read with `base`'s size as the device's (entries must lie inside it).
absl::StatusOr<std::unique_ptr<harness::TraceFile>> OpenAgainstBase(const std::string& log,
                                                                    const std::string& base) {
  absl::StatusOr<uint64_t> size = powercut::FileSize(base);
  if (!size.ok()) return size.status();
  harness::TraceReadOptions options;
  options.device_bytes = *size;
  return harness::TraceFile::Open(log, options);
}

struct ReplayArgs {
  std::string log, base, out, end_mark;
  std::optional<uint64_t> end_entry;
};

int Replay(const ReplayArgs& a) {
  auto file = OpenAgainstBase(a.log, a.base);
  if (!file.ok()) return Fail(std::string(file.status().message()));
  for (const auto& n : (*file)->trace().notes) std::fprintf(stderr, "note: %s\n", n.c_str());
  harness::ReplayOptions ro;
  ro.end_entry = a.end_entry;
  if (!a.end_mark.empty()) ro.end_mark = a.end_mark;
  auto applied = harness::ReplayTrace(**file, a.base, a.out, ro);
  if (!applied.ok()) return Fail(std::string(applied.status().message()));
  std::printf("replayed %llu of %zu entries onto %s\n", static_cast<unsigned long long>(*applied),
              (*file)->trace().entries.size(), a.out.c_str());
  return 0;
}

void AddReplayCommand(CLI::App* trace, int* exit_code) {
  auto replay_args = std::make_shared<ReplayArgs>();
  CLI::App* replay = trace->add_subcommand(
      "replay", "apply a prefix of the log to a copy of the base image (xfstests' replay-log)");
  replay->add_option("--log", replay_args->log, "the dm-log-writes log")->required();
  replay->add_option("--base", replay_args->base, "the device image before recording")->required();
  replay->add_option("--out", replay_args->out, "the image to write")->required();
  auto* end_entry = replay->add_option("--end-entry", replay_args->end_entry,
                                       "last entry to apply (inclusive, from 0)");
  auto* end_mark = replay->add_option("--end-mark", replay_args->end_mark,
                                      "apply up to and including this mark");
  end_entry->excludes(end_mark);
  replay->callback([=] { *exit_code = Replay(*replay_args); });
}

struct ManifestArgs {
  std::string log, base, order = "completion";
};

int WriteManifestOf(const ManifestArgs& a) {
  auto order = harness::ParseOrderSemantics(a.order);
  // A name not in the vocabulary is bad usage: exit 2, before the log is read.
  if (!order.ok()) return CouldNotRun("--order: " + std::string(order.status().message()));
  auto file = OpenAgainstBase(a.log, a.base);
  if (!file.ok()) return Fail(std::string(file.status().message()));
  auto m = harness::MakeManifest(a.base, (*file)->trace().sector_size, *order,
                                 (*file)->trace().entries.size());
  if (!m.ok()) return Fail(std::string(m.status().message()));
  std::string path = harness::ManifestPathFor(a.log);
  if (auto s = harness::WriteManifest(path, *m); !s.ok()) return Fail(std::string(s.message()));
  std::printf("%s\n", path.c_str());
  return 0;
}

void AddManifestCommand(CLI::App* trace, int* exit_code) {
  auto manifest_args = std::make_shared<ManifestArgs>();
  CLI::App* manifest = trace->add_subcommand(
      "manifest", "write LOG.manifest.json: base image, hash, block size, order semantics");
  manifest->add_option("--log", manifest_args->log, "the dm-log-writes log")->required();
  manifest->add_option("--base", manifest_args->base, "the device image before recording")
      ->required();
  manifest->add_option("--order", manifest_args->order,
                       "completion (powercut's recorder) or flush-epoch (kernel dm-log-writes)");
  manifest->callback([=] { *exit_code = WriteManifestOf(*manifest_args); });
}

}  // namespace

void AddTraceCommands(CLI::App& app, int* exit_code) {
  CLI::App* trace = app.add_subcommand("trace", "read, replay and describe dm-log-writes traces");
  trace->require_subcommand(1);
  AddShowCommand(trace, exit_code);
  AddReplayCommand(trace, exit_code);
  AddManifestCommand(trace, exit_code);
}

}  // namespace powercut::cli
