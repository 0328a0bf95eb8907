#include "harness/vm/warm/recording.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "base/image_io.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/trace/manifest.h"
#include "harness/trace/trace_reader.h"
#include "harness/vm/machine/disk_image.h"
#include "harness/vm/machine/guest_config.h"

namespace powercut::vm {
namespace {

namespace fs = std::filesystem;

bool LogWrites(const RunSpec& spec) {
  return spec.recording == Recording::kLogWrites || spec.also_log_writes;
}

// What both manifests say about the disk and its file system (docs/trace.md).
void DescribeDisk(const RunSpec& spec, const RunResult& result, harness::TraceManifest* m) {
  const harness::FileSystem& file_system = harness::FileSystemOf(spec.fs);
  m->logical_sector = result.geometry.logical_sector;
  m->physical_sector = result.geometry.physical_sector;
  m->fs = file_system.raw() ? "" : file_system.name;
  m->mkfs_command = result.mkfs_command;
  m->fs_block_size = result.fs_block_size;
}

// The NBD recorder names the base image by the path it hashed; the output folder must stay
// movable, so name it relative to the manifest's folder (as for dm-log-writes).
absl::Status WriteNbdManifest(const RunSpec& spec, const RecordingDisks& disks,
                              harness::Recorder* recorder, RunResult* result) {
  RETURN_IF_ERROR(recorder->Finish());
  result->trace_entries = recorder->entries();
  result->manifest = harness::ManifestPathFor(result->trace);
  ASSIGN_OR_RETURN(harness::TraceManifest m, harness::ReadManifest(result->manifest));
  m.base_image = fs::path(result->base_image)
                     .lexically_relative(fs::path(result->manifest).parent_path())
                     .string();
  DescribeDisk(spec, *result, &m);
  if (!disks.extras.empty()) {
    // Several disks: the manifest lists them all (disk 1 described as above).
    m.disks.clear();
    m.disks.push_back({.offset = 0,
                       .bytes = disks.bytes,
                       .logical_sector = m.logical_sector,
                       .physical_sector = m.physical_sector,
                       .fs = m.fs,
                       .mkfs_command = m.mkfs_command,
                       .fs_block_size = m.fs_block_size});
    for (size_t i = 0; i < disks.extras.size(); ++i) {
      const RecordingDisks::Extra& e = disks.extras[i];
      const harness::FileSystem& file_system = harness::FileSystemOf(e.fs);
      m.disks.push_back({.offset = disks.layout.OffsetOf(static_cast<uint32_t>(i + 1)),
                         .bytes = e.bytes,
                         .logical_sector = e.geometry.logical_sector,
                         .physical_sector = e.geometry.physical_sector,
                         .fs = file_system.raw() ? "" : file_system.name,
                         .mkfs_command = e.mkfs_command,
                         .fs_block_size = e.fs_block_size});
    }
  }
  return harness::WriteManifest(result->manifest, m);
}

// Several disks: disk K's image copied into the set's concatenated image `set` at its offset.
absl::Status CopyIntoSet(const std::string& disk, const std::string& set, uint64_t offset,
                         uint64_t bytes) {
  int in = ::open(disk.c_str(), O_RDONLY | O_CLOEXEC);
  int out = ::open(set.c_str(), O_RDWR | O_CLOEXEC);
  absl::Status s = in < 0 || out < 0
                       ? absl::InternalError(fmt::format("cannot open {} or {}", disk, set))
                       : powercut::CopyRangeOnto(in, 0, out, offset, bytes, disk, set);
  if (in >= 0) ::close(in);
  if (out >= 0) ::close(out);
  return s;
}

// base.img or final.img of a set: disk 1's image grown to the set's size, the others copied in.
absl::Status ConcatenateSet(const RecordingDisks& disks, const std::vector<std::string>& extras,
                            const std::string& set) {
  std::error_code ec;
  fs::resize_file(set, disks.layout.total_bytes(), ec);
  if (ec) return absl::InternalError(fmt::format("cannot resize {}: {}", set, ec.message()));
  for (size_t i = 0; i < extras.size(); ++i) {
    RETURN_IF_ERROR(CopyIntoSet(extras[i], set, disks.layout.OffsetOf(static_cast<uint32_t>(i + 1)),
                                disks.extras[i].bytes));
  }
  return absl::OkStatus();
}

// Keeps only the used part of the log device (that is the trace) and writes its manifest, in
// flush-epoch order.
absl::Status WriteLogWritesTrace(const RunSpec& spec, const RecordingDisks& disks,
                                 RunResult* result) {
  std::error_code ec;
  ASSIGN_OR_RETURN(uint64_t used, LogWritesUsedBytes(disks.log_disk));
  fs::resize_file(disks.log_disk, used, ec);
  std::string trace = disks.out + (spec.also_log_writes ? "/log-writes.log" : "/trace.log");
  fs::rename(disks.log_disk, trace, ec);
  if (ec) return absl::InternalError(fmt::format("cannot move {} to {}", disks.log_disk, trace));
  ASSIGN_OR_RETURN(auto file,
                   harness::TraceFile::Open(trace, {.device_bytes = disks.bytes, .name = trace}));
  ASSIGN_OR_RETURN(
      harness::TraceManifest m,
      harness::MakeManifest(result->base_image, file->trace().sector_size,
                            harness::OrderSemantics::kFlushEpoch, file->trace().entries.size()));
  m.base_image = "base.img";
  DescribeDisk(spec, *result, &m);
  std::string manifest = harness::ManifestPathFor(trace);
  RETURN_IF_ERROR(harness::WriteManifest(manifest, m));
  if (spec.also_log_writes) {
    result->log_writes_trace = trace;
    result->log_writes_manifest = manifest;
  } else {
    result->trace = trace;
    result->manifest = manifest;
    result->trace_entries = file->trace().entries.size();
  }
  return absl::OkStatus();
}

// A disk of `bytes` (0: the file system's default) must hold the file system.
absl::Status ValidateDiskSize(harness::FsKind fs, uint64_t bytes) {
  const harness::FileSystem& file_system = harness::FileSystemOf(fs);
  const uint64_t b = bytes != 0 ? bytes : file_system.default_image_bytes;
  if (b < file_system.min_image_bytes || b % 4096 != 0) {
    return absl::InvalidArgumentError(
        fmt::format("disk size {} bytes: {} needs at least {} bytes, in whole 4 KiB blocks", b,
                    file_system.name, file_system.min_image_bytes));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateRunSpec(const RunSpec& spec) {
  RETURN_IF_ERROR(ValidateCommand(spec.command, "workload"));
  RETURN_IF_ERROR(ValidateKeepPaths(spec.keep_paths));
  if (spec.output_dir.empty()) {
    return absl::InvalidArgumentError("no output folder for the trace and images");
  }
  if (spec.also_log_writes && spec.recording != Recording::kNbd) {
    return absl::InvalidArgumentError("also_log_writes needs the NBD recording");
  }
  if (spec.flakey && LogWrites(spec)) {
    return absl::InvalidArgumentError("dm-flakey and dm-log-writes cannot be combined in one run");
  }
  // Several disks: recorded by the NBD recorder, or not recorded at all under dm-flakey (one of
  // them failing); never with dm-log-writes (it logs one disk).
  if (!spec.extra_disks.empty() &&
      (spec.also_log_writes || spec.recording == Recording::kLogWrites ||
       (spec.recording == Recording::kNone && !spec.flakey))) {
    return absl::InvalidArgumentError(
        "several disks are recorded by the NBD recorder only (or run unrecorded under "
        "dm-flakey), without dm-log-writes");
  }
  if (spec.flakey_disk > spec.extra_disks.size()) {
    return absl::InvalidArgumentError(fmt::format("dm-flakey on disk {}: the run has {} disk(s)",
                                                  spec.flakey_disk + 1,
                                                  spec.extra_disks.size() + 1));
  }
  if (spec.node_cut_disk >= 0 &&
      (spec.recording != Recording::kNbd || spec.also_log_writes || spec.flakey ||
       spec.cut.when != CutSpec::When::kNever ||
       static_cast<size_t>(spec.node_cut_disk) > spec.extra_disks.size())) {
    return absl::InvalidArgumentError(fmt::format(
        "a node cut of disk {} needs the NBD recording of a set that has that disk, without "
        "dm-log-writes, dm-flakey or a live cut of the whole set (the run has {} disk(s))",
        spec.node_cut_disk + 1, spec.extra_disks.size() + 1));
  }
  for (const RunSpec::ExtraDisk& d : spec.extra_disks) {
    RETURN_IF_ERROR(ValidateDiskSize(d.fs, d.bytes));
  }
  return ValidateDiskSize(spec.fs, spec.disk_bytes);
}

absl::Status BaseImageCache::MakeDisk(harness::FsKind fs, const harness::DiskGeometry& geometry,
                                      uint64_t bytes, const std::string& disk, RunResult* result,
                                      const std::string& mkfs_options) {
  const auto key = std::make_tuple(static_cast<int>(fs), geometry.logical_sector,
                                   geometry.physical_sector, bytes, mkfs_options);
  auto it = made_.find(key);
  if (it == made_.end()) {
    if (dir_.path().empty()) {
      // Beside the recordings: a disk-backed folder (sparse files, no tmpfs memory).
      ASSIGN_OR_RETURN(dir_, ScratchDir::Create("powercut-base", "/var/tmp"));
    }
    Made m;
    m.image = dir_ / fmt::format("fs{}.img", made_.size());
    RETURN_IF_ERROR(CreateSparseImage(m.image, bytes));
    ASSIGN_OR_RETURN(m.mkfs_command, MakeFileSystem(fs, geometry, m.image, mkfs_options));
    ASSIGN_OR_RETURN(m.block_size, FileSystemBlockSize(fs, m.image));
    it = made_.emplace(key, std::move(m)).first;
  }
  RETURN_IF_ERROR(powercut::CopySparse(it->second.image, disk));
  result->mkfs_command = it->second.mkfs_command;
  result->fs_block_size = it->second.block_size;
  return absl::OkStatus();
}

absl::StatusOr<RecordingDisks> PrepareDisks(const RunSpec& spec, RunResult* result,
                                            BaseImageCache* cache) {
  std::error_code ec;
  fs::create_directories(spec.output_dir, ec);
  RecordingDisks disks;
  disks.out = fs::absolute(spec.output_dir).lexically_normal().string();
  disks.disk = disks.out + "/disk.img";
  disks.geometry = harness::GeometryOf(spec.sector);
  const harness::FileSystem& file_system = harness::FileSystemOf(spec.fs);
  disks.bytes = spec.disk_bytes != 0 ? spec.disk_bytes : file_system.default_image_bytes;
  result->base_image = disks.out + "/base.img";
  result->final_image = disks.out + "/final.img";
  result->ack_log = disks.out + "/acks.jsonl";
  result->console_log = disks.out + "/console.log";
  result->workload_log = disks.out + "/workload.log";
  result->workload_output = disks.out + "/output.txt";
  result->geometry = disks.geometry;
  if (cache != nullptr) {
    RETURN_IF_ERROR(cache->MakeDisk(spec.fs, disks.geometry, disks.bytes, disks.disk, result,
                                    spec.mkfs_options));
  } else {
    RETURN_IF_ERROR(CreateSparseImage(disks.disk, disks.bytes));
    ASSIGN_OR_RETURN(result->mkfs_command,
                     MakeFileSystem(spec.fs, disks.geometry, disks.disk, spec.mkfs_options));
    ASSIGN_OR_RETURN(result->fs_block_size, FileSystemBlockSize(spec.fs, disks.disk));
  }
  RETURN_IF_ERROR(powercut::CopySparse(disks.disk, result->base_image));
  if (!spec.extra_disks.empty()) {
    std::vector<uint64_t> sizes = {disks.bytes};
    std::vector<std::string> paths;
    for (size_t i = 0; i < spec.extra_disks.size(); ++i) {
      const RunSpec::ExtraDisk& d = spec.extra_disks[i];
      RecordingDisks::Extra e;
      e.fs = d.fs;
      e.bytes = d.bytes != 0 ? d.bytes : harness::FileSystemOf(d.fs).default_image_bytes;
      e.geometry = harness::GeometryOf(d.sector.value_or(spec.sector));
      e.path = fmt::format("{}/disk-{}.img", disks.out, i + 2);
      RunResult made;  // mkfs_command and fs_block_size of this disk
      if (cache != nullptr) {
        RETURN_IF_ERROR(
            cache->MakeDisk(d.fs, e.geometry, e.bytes, e.path, &made, spec.mkfs_options));
      } else {
        RETURN_IF_ERROR(CreateSparseImage(e.path, e.bytes));
        ASSIGN_OR_RETURN(made.mkfs_command,
                         MakeFileSystem(d.fs, e.geometry, e.path, spec.mkfs_options));
        ASSIGN_OR_RETURN(made.fs_block_size, FileSystemBlockSize(d.fs, e.path));
      }
      e.mkfs_command = made.mkfs_command;
      e.fs_block_size = made.fs_block_size;
      sizes.push_back(e.bytes);
      paths.push_back(e.path);
      disks.extras.push_back(std::move(e));
    }
    disks.layout = harness::DiskLayout::Packed(sizes);
    RETURN_IF_ERROR(ConcatenateSet(disks, paths, result->base_image));
  }
  if (LogWrites(spec)) {
    // The log holds a copy of every write plus one block per entry.
    disks.log_disk = disks.out + "/log-writes.img";
    RETURN_IF_ERROR(CreateSparseImage(disks.log_disk, disks.bytes * 2 + (64ull << 20)));
  }
  return disks;
}

absl::StatusOr<Recorders> StartRecorder(const RunSpec& spec, const RecordingDisks& disks,
                                        const std::string& socket_path, RunResult* result) {
  Recorders r;
  if (spec.recording != Recording::kNbd) return r;
  result->trace = disks.out + "/trace.log";
  harness::Recorder::Options ro;
  ro.log_path = result->trace;
  // One log over the set: its sectorsize addresses every disk, so the smallest logical sector.
  ro.sector_size = disks.geometry.logical_sector;
  for (const RecordingDisks::Extra& e : disks.extras) {
    ro.sector_size = std::min(ro.sector_size, e.geometry.logical_sector);
  }
  ro.device_bytes = disks.bytes;
  ro.disks = disks.layout;
  ro.base_image = result->base_image;
  ASSIGN_OR_RETURN(r.recorder, harness::Recorder::Create(ro));
  NbdServer::Options no;
  no.socket_path = socket_path;
  no.image_path = disks.disk;
  no.recorder = r.recorder.get();
  no.atomic_unit = disks.geometry.physical_sector;  // the live cut tears at the physical sector
  ASSIGN_OR_RETURN(r.nbd, NbdServer::Start(no));
  for (size_t i = 0; i < disks.extras.size(); ++i) {
    NbdServer::Options extra = no;
    extra.socket_path = fmt::format("{}.disk{}", socket_path, i + 2);
    extra.image_path = disks.extras[i].path;
    extra.disk = static_cast<uint32_t>(i + 1);
    extra.atomic_unit = disks.extras[i].geometry.physical_sector;
    ASSIGN_OR_RETURN(auto server, NbdServer::Start(extra));
    r.extra_nbd.push_back(std::move(server));
  }
  return r;
}

std::vector<GuestDisk> GuestDisksFor(const RunSpec& spec, const RecordingDisks& disks,
                                     const Recorders& recorders) {
  std::vector<GuestDisk> out;
  out.push_back({.nbd_socket = recorders.nbd != nullptr ? recorders.nbd->socket_path() : "",
                 .image_file = recorders.nbd != nullptr ? "" : disks.disk,
                 .cache = spec.disk_cache,
                 .geometry = disks.geometry});
  if (!disks.log_disk.empty()) {
    // dm-log-writes writes its log in the data disk's logical sectors: same geometry.
    out.push_back({.nbd_socket = "", .image_file = disks.log_disk, .geometry = disks.geometry});
  }
  for (size_t i = 0; i < disks.extras.size(); ++i) {     // disks 2..N of a set
    const bool served = i < recorders.extra_nbd.size();  // unrecorded (dm-flakey): the file
    out.push_back({.nbd_socket = served ? recorders.extra_nbd[i]->socket_path() : "",
                   .image_file = served ? "" : disks.extras[i].path,
                   .cache = spec.disk_cache,
                   .geometry = disks.extras[i].geometry});
  }
  return out;
}

absl::Status WriteRecordingOutputs(const RunSpec& spec, const RecordingDisks& disks,
                                   harness::Recorder* recorder, RunResult* result) {
  if (recorder != nullptr) RETURN_IF_ERROR(WriteNbdManifest(spec, disks, recorder, result));
  std::error_code ec;
  if (!disks.log_disk.empty() && !result->power_cut) {
    RETURN_IF_ERROR(WriteLogWritesTrace(spec, disks, result));
  } else if (!disks.log_disk.empty()) {
    fs::remove(disks.log_disk, ec);
  }
  fs::rename(disks.disk, result->final_image, ec);
  if (ec) {
    return absl::InternalError(
        fmt::format("cannot move {} to {}", disks.disk, result->final_image));
  }
  if (!disks.extras.empty()) {
    std::vector<std::string> finals;
    for (const RecordingDisks::Extra& e : disks.extras) finals.push_back(e.path);
    RETURN_IF_ERROR(ConcatenateSet(disks, finals, result->final_image));
    for (const std::string& f : finals) fs::remove(f, ec);
  }
  return absl::OkStatus();
}

}  // namespace powercut::vm
