// The JSON manifest beside a trace (docs/trace.md): which base image the log applies to (path,
// size, XXH3-128 hash), the device block size, the disk's logical and physical sector sizes, how
// its file system was made, and the order semantics of the log's entries.
//
// Validate() rejects a manifest that does not match its log (block size) or its image (size,
// hash), with an error naming both files and what to do.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "harness/trace/disk_layout.h"

namespace powercut::harness {

enum class OrderSemantics {
  // powercut's recorder: entries in device completion order; an ack mark follows every request
  // completed before the ack. All cache models are exact.
  kCompletion,
  // the kernel's dm-log-writes: plain writes are logged when the next flush completes; marks land
  // before completed-but-unflushed writes. Cache "off" is exact only at flush/FUA points.
  kFlushEpoch,
};

const char* OrderSemanticsName(OrderSemantics order);  // "completion" / "flush-epoch"
absl::StatusOr<OrderSemantics> ParseOrderSemantics(const std::string& name);

// One disk of a set recorded on one clock (docs/trace.md, "Several disks"): where it lies in the
// set's address space and what the guest saw; the fields mean what TraceManifest's do for one disk.
struct DiskManifest {
  uint64_t offset = 0;
  uint64_t bytes = 0;
  uint32_t logical_sector = 0;
  uint32_t physical_sector = 0;
  std::string fs;  // "" = raw
  std::string mkfs_command;
  uint32_t fs_block_size = 0;
};

struct TraceManifest {
  std::string base_image;  // path; relative paths are relative to the manifest's folder
  uint64_t base_image_bytes = 0;
  std::string base_image_hash;  // "xxh3-128:<32 hex>"
  uint32_t block_size = 512;    // = the log's sectorsize
  OrderSemantics order = OrderSemantics::kCompletion;
  uint64_t log_entries = 0;  // informational: entries when the manifest was written
  // The recorded disk as the guest saw it. 0 = not recorded (manifests written before the
  // geometry was): readers then take the log's sectorsize for both.
  uint32_t logical_sector = 0;
  uint32_t physical_sector = 0;
  // How the file system was made ("" = raw disk or unknown): the report shows it.
  std::string fs;
  std::string mkfs_command;
  uint32_t fs_block_size = 0;  // 0 = unknown
  // Several disks on one clock: the base image is the set's concatenated image and the log one
  // log over it (harness/trace/disk_layout.h). Empty: one disk (every single-disk manifest; the
  // field is written only for two or more).
  std::vector<DiskManifest> disks;
};

// The set's layout (the default one-disk layout when `disks` is empty).
absl::StatusOr<DiskLayout> LayoutOf(const TraceManifest& manifest);
// The layout of the manifest beside `trace_path`; one disk when there is none.
absl::StatusOr<DiskLayout> LayoutBeside(const std::string& trace_path);

// "<log>.manifest.json".
std::string ManifestPathFor(const std::string& log_path);

absl::StatusOr<TraceManifest> ReadManifest(const std::string& manifest_path);
absl::Status WriteManifest(const std::string& manifest_path, const TraceManifest& manifest);

// Builds a manifest for `base_image` (hashing it).
absl::StatusOr<TraceManifest> MakeManifest(const std::string& base_image, uint32_t block_size,
                                           OrderSemantics order, uint64_t log_entries);

// Resolves base_image against the manifest's folder.
std::string ResolveBaseImage(const std::string& manifest_path, const TraceManifest& manifest);

// The base image of the trace at `trace_path`: `base` when given, else the one its manifest
// names. Reads the manifest beside the trace into `*manifest` when there is one; without a
// manifest, `base` must be given (InvalidArgument says to pass --base). Validation against the
// log and the image is the caller's (ValidateManifest).
absl::StatusOr<std::string> ResolveBase(const std::string& trace_path, const std::string& base,
                                        std::optional<TraceManifest>* manifest);

// Checks the image at `image_path` has the manifest's size and hash, and that `log_sector_size`
// equals the manifest's block size.
absl::Status ValidateManifest(const TraceManifest& manifest, const std::string& manifest_path,
                              uint32_t log_sector_size, const std::string& image_path);

}  // namespace powercut::harness
