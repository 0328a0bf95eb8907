#include "harness/product/run/recordings.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "base/image_io.h"
#include "base/scratch_dir.h"
#include "fmt/format.h"
#include "harness/check/engine.h"
#include "harness/trace/manifest.h"

namespace powercut::product {
namespace {

namespace fs = std::filesystem;

uint64_t BytesOnDisk(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

// rename(2), or a sparse copy and unlink when `to` is on another file system.
absl::Status MoveFile(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) == 0) return absl::OkStatus();
  if (errno != EXDEV) {
    return absl::InternalError(
        fmt::format("cannot move {} to {}: {}", from, to, std::strerror(errno)));
  }
  if (auto s = CopySparse(from, to); !s.ok()) return s;
  std::error_code ec;
  fs::remove(from, ec);
  return absl::OkStatus();
}

// Every verdict of the report rebuilds from (trace, base); `why_not` replaces the commands when
// the recording is gone.
void RewriteRebuild(harness::CheckReport* report, const std::string& powercut,
                    const std::string& trace, const std::string& base, const std::string& why_not) {
  auto fix = [&](harness::Verdict& v) {
    v.rebuild =
        why_not.empty() ? harness::RebuildCommand(powercut, trace, base, v.state_id) : why_not;
    if (!v.repro.empty()) {
      v.repro = why_not.empty()
                    ? harness::ReproCommand(powercut, trace, v.state_id, report->repro_args)
                    : why_not;
    }
  };
  for (harness::ModelResult& m : report->results) {
    for (auto* v : {&m.first_violation, &m.worst_violation, &m.first_could_not_check,
                    &m.first_fs_unrecoverable, &m.first_fs_repaired, &m.first_unavailable}) {
      if (v->has_value()) fix(**v);
    }
    for (harness::Verdict& v : m.examples) fix(v);
  }
  if (why_not.empty()) {
    report->trace_path = trace;
    report->base_image = base;
  }
}

}  // namespace

void KeepRecording(const std::string& trace, const std::string& name, const std::string& powercut,
                   RecordingStore* store, RunOutcome* out) {
  if (!out->report) return;
  absl::MutexLock lock(store->mu.get());
  std::string manifest_path = harness::ManifestPathFor(trace);
  auto manifest = harness::ReadManifest(manifest_path);
  if (!manifest.ok()) {
    out->notes.push_back(
        fmt::format("recording not kept: {}", std::string(manifest.status().message())));
    return;
  }
  std::string base = harness::ResolveBaseImage(manifest_path, *manifest);
  uint64_t bytes = BytesOnDisk(trace) + BytesOnDisk(manifest_path) + BytesOnDisk(base);
  // A cluster's nodes' logs beside the trace go with it (the report names them).
  std::vector<harness::DiskSummary*> logs;
  for (harness::DiskSummary& d : out->report->disks) {
    if (d.log.empty()) continue;
    logs.push_back(&d);
    bytes += BytesOnDisk(d.log);
  }
  auto drop = [&](const std::string& why) {
    store->dropped.push_back({.name = name, .bytes = bytes, .why = why});
    std::string text = fmt::format("recording not kept ({}): rerun with --keep DIR", why);
    RewriteRebuild(&*out->report, powercut, "", "", text);
    out->notes.push_back(text);
    auto timeline = BuildTimeline(trace, *out->report);  // its summaries quote the commands
    if (timeline.ok()) out->timeline = std::move(*timeline);
  };
  if (store->kept_bytes + bytes > store->cap_bytes) {
    drop(fmt::format("{} would exceed the --recordings-cap of {} ({} already kept)",
                     FormatBytes(bytes), FormatBytes(store->cap_bytes),
                     FormatBytes(store->kept_bytes)));
    return;
  }
  if (store->dir.empty()) {
    auto folder = ScratchDir::Create("powercut-recordings", "/var/tmp");
    if (!folder.ok()) {
      drop(std::string(folder.status().message()));
      return;
    }
    store->dir = folder->Release();  // kept: the recordings outlive the run
  }
  std::string leaf = name;
  std::replace(leaf.begin(), leaf.end(), '/', '_');
  std::error_code ec;
  fs::create_directories(store->dir, ec);
  std::string dest = fs::absolute(fs::path(store->dir) / leaf).lexically_normal().string();
  for (int i = 2; fs::exists(dest, ec); ++i) {
    dest = fs::absolute(fs::path(store->dir) / fmt::format("{}-{}", leaf, i)).string();
  }
  fs::create_directories(dest, ec);
  std::string new_trace = dest + "/trace.log";
  std::string new_base = dest + "/base.img";
  absl::Status moved = MoveFile(trace, new_trace);
  // A base image outside the run's folder is not the run's to take: copy it.
  bool own_base = fs::path(base).parent_path() == fs::path(trace).parent_path();
  if (moved.ok()) moved = own_base ? MoveFile(base, new_base) : CopySparse(base, new_base);
  if (moved.ok()) {
    manifest->base_image = "base.img";  // beside the manifest, so the folder stays movable
    moved = harness::WriteManifest(harness::ManifestPathFor(new_trace), *manifest);
  }
  for (harness::DiskSummary* d : logs) {
    if (!moved.ok()) break;  // the recording itself did not follow: nothing is kept
    // A log that cannot follow is said, not a reason to lose the recording.
    const std::string to = dest + "/" + fs::path(d->log).filename().string();
    if (absl::Status log_moved = MoveFile(d->log, to); log_moved.ok()) {
      d->log = to;
    } else {
      out->notes.push_back(
          fmt::format("a node's log was not kept: {}", std::string(log_moved.message())));
      d->log.clear();
      d->log_bytes = 0;
    }
  }
  if (!moved.ok()) {
    fs::remove_all(dest, ec);
    drop(std::string(moved.message()));
    return;
  }
  bytes = BytesOnDisk(new_trace) + BytesOnDisk(harness::ManifestPathFor(new_trace)) +
          BytesOnDisk(new_base);
  for (const harness::DiskSummary* d : logs) bytes += d->log.empty() ? 0 : BytesOnDisk(d->log);
  store->kept_bytes += bytes;
  store->kept.push_back({.name = name, .path = dest, .bytes = bytes});
  RewriteRebuild(&*out->report, powercut, new_trace, new_base, "");
  auto timeline = BuildTimeline(new_trace, *out->report);
  if (timeline.ok()) out->timeline = std::move(*timeline);
  out->recording_dir = dest;
  out->recording_bytes = bytes;
}

nlohmann::json RecordingStore::ToJson() const {
  auto list = [](const std::vector<Entry>& entries) {
    nlohmann::json a = nlohmann::json::array();
    for (const Entry& e : entries) {
      nlohmann::json j = {{"name", e.name}, {"bytes", e.bytes}};
      if (!e.path.empty()) j["path"] = e.path;
      if (!e.why.empty()) j["why"] = e.why;
      a.push_back(j);
    }
    return a;
  };
  return {{"dir", dir},
          {"cap_bytes", cap_bytes},
          {"kept_bytes", kept_bytes},
          {"kept", list(kept)},
          {"dropped", list(dropped)}};
}

std::string RecordingStore::Summary() const {
  if (kept.empty() && dropped.empty()) return "";
  std::string s =
      fmt::format("recordings of failing runs: {} kept in {} ({} of the {} cap)", kept.size(),
                  dir.empty() ? "-" : dir, FormatBytes(kept_bytes), FormatBytes(cap_bytes));
  if (!dropped.empty()) {
    s += fmt::format("; {} dropped:", dropped.size());
    for (const Entry& e : dropped) s += fmt::format(" {} ({})", e.name, e.why);
  }
  return s;
}

absl::StatusOr<RecordingStore> RecordingStoreFor(const std::string& dir, const std::string& cap,
                                                 const std::vector<std::string>& reports) {
  RecordingStore store;
  auto bytes = ParseByteSize(cap, "--recordings-cap");
  if (!bytes.ok()) return bytes.status();
  store.cap_bytes = *bytes;
  store.dir = dir;
  for (const std::string& report : reports) {
    if (store.dir.empty() && !report.empty()) {
      store.dir = (fs::absolute(report).parent_path() / "recordings").string();
    }
  }
  return store;
}

absl::StatusOr<uint64_t> ParseByteSize(const std::string& text, const std::string& flag) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  std::string unit = text.substr(digits);
  uint64_t shift = unit.empty() || unit == "B" ? 0
                   : unit == "KiB"             ? 10
                   : unit == "MiB"             ? 20
                   : unit == "GiB"             ? 30
                   : unit == "TiB"             ? 40
                                               : 64;
  if (digits == 0 || digits > 12 || shift == 64) {
    return absl::InvalidArgumentError(fmt::format(
        "{} {}: expected a size in bytes (4096) or with a unit (512MiB, 1GiB, 2TiB)", flag, text));
  }
  return std::stoull(text.substr(0, digits)) << shift;
}

std::string FormatBytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(units)) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

}  // namespace powercut::product
