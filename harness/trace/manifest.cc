#include "harness/trace/manifest.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/hash.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace powercut::harness {

const char* OrderSemanticsName(OrderSemantics order) {
  return order == OrderSemantics::kCompletion ? "completion" : "flush-epoch";
}

absl::StatusOr<OrderSemantics> ParseOrderSemantics(const std::string& name) {
  if (name == "completion") return OrderSemantics::kCompletion;
  if (name == "flush-epoch") return OrderSemantics::kFlushEpoch;
  return absl::InvalidArgumentError(
      fmt::format("order semantics \"{}\": expected \"completion\" or \"flush-epoch\"", name));
}

std::string ManifestPathFor(const std::string& log_path) { return log_path + ".manifest.json"; }

namespace {

absl::StatusOr<nlohmann::json> ReadJsonObject(const std::string& manifest_path) {
  std::ifstream in(manifest_path);
  if (!in) {
    return absl::NotFoundError(fmt::format(
        "manifest {}: cannot open it (write one with `powercut trace manifest`, or pass --base)",
        manifest_path));
  }
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(fmt::format("manifest {}: not a JSON object", manifest_path));
  }
  return j;
}

// The fields every manifest has: the base image, the block size and the order semantics.
absl::Status ReadRequiredFields(const nlohmann::json& j, const std::string& manifest_path,
                                TraceManifest& m) {
  auto need = [&](const char* key, auto check) -> absl::Status {
    if (!j.contains(key) || !check(j[key])) {
      return absl::InvalidArgumentError(fmt::format(
          "manifest {}: field \"{}\" is missing or has the wrong type", manifest_path, key));
    }
    return absl::OkStatus();
  };
  auto is_string = [](const nlohmann::json& v) { return v.is_string(); };
  auto is_uint = [](const nlohmann::json& v) { return v.is_number_unsigned(); };
  RETURN_IF_ERROR(need("base_image", is_string));
  RETURN_IF_ERROR(need("base_image_bytes", is_uint));
  RETURN_IF_ERROR(need("base_image_hash", is_string));
  RETURN_IF_ERROR(need("block_size", is_uint));
  RETURN_IF_ERROR(need("order", is_string));
  m.base_image = j["base_image"].get<std::string>();
  m.base_image_bytes = j["base_image_bytes"].get<uint64_t>();
  m.base_image_hash = j["base_image_hash"].get<std::string>();
  uint64_t block = j["block_size"].get<uint64_t>();
  if (block < 512 || block > 65536 || (block & (block - 1)) != 0) {
    return absl::InvalidArgumentError(fmt::format(
        "manifest {}: block_size {} is not a power of two in [512, 65536]", manifest_path, block));
  }
  m.block_size = static_cast<uint32_t>(block);
  auto order = ParseOrderSemantics(j["order"].get<std::string>());
  if (!order.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("manifest {}: {}", manifest_path, std::string(order.status().message())));
  }
  m.order = *order;
  return absl::OkStatus();
}

// The optional fields of the whole device: entry count, sector sizes, file system.
absl::Status ReadDeviceFields(const nlohmann::json& j, const std::string& manifest_path,
                              TraceManifest& m) {
  if (j.contains("log_entries") && j["log_entries"].is_number_unsigned()) {
    m.log_entries = j["log_entries"].get<uint64_t>();
  }
  for (auto [key, field] : {std::pair{"logical_sector", &m.logical_sector},
                            std::pair{"physical_sector", &m.physical_sector},
                            std::pair{"fs_block_size", &m.fs_block_size}}) {
    if (!j.contains(key)) continue;
    uint64_t v = j[key].is_number_unsigned() ? j[key].get<uint64_t>() : 1;
    if (v < 512 || v > 65536 || (v & (v - 1)) != 0) {
      return absl::InvalidArgumentError(
          fmt::format("manifest {}: {} is not a power of two in [512, 65536]", manifest_path, key));
    }
    *field = static_cast<uint32_t>(v);
  }
  if (m.physical_sector != 0 && m.logical_sector > m.physical_sector) {
    return absl::InvalidArgumentError(
        fmt::format("manifest {}: logical_sector {} is larger than physical_sector {}",
                    manifest_path, m.logical_sector, m.physical_sector));
  }
  if (j.contains("fs") && j["fs"].is_string()) m.fs = j["fs"].get<std::string>();
  if (j.contains("mkfs") && j["mkfs"].is_string()) m.mkfs_command = j["mkfs"].get<std::string>();
  return absl::OkStatus();
}

// One disk of "disks": where it lies in the recorded device and how it was formatted.
absl::StatusOr<DiskManifest> ReadDisk(const nlohmann::json& d, const std::string& manifest_path,
                                      size_t number_in_list) {
  if (!d.is_object() || !d.contains("offset") || !d["offset"].is_number_unsigned() ||
      !d.contains("bytes") || !d["bytes"].is_number_unsigned()) {
    return absl::InvalidArgumentError(
        fmt::format("manifest {}: disk {} of \"disks\" needs unsigned \"offset\" and \"bytes\"",
                    manifest_path, number_in_list));
  }
  DiskManifest disk;
  disk.offset = d["offset"].get<uint64_t>();
  disk.bytes = d["bytes"].get<uint64_t>();
  auto number = [&](const char* key) -> uint32_t {
    return d.contains(key) && d[key].is_number_unsigned() ? d[key].get<uint32_t>() : 0;
  };
  disk.logical_sector = number("logical_sector");
  disk.physical_sector = number("physical_sector");
  disk.fs_block_size = number("fs_block_size");
  if (d.contains("fs") && d["fs"].is_string()) disk.fs = d["fs"].get<std::string>();
  if (d.contains("mkfs") && d["mkfs"].is_string()) {
    disk.mkfs_command = d["mkfs"].get<std::string>();
  }
  return disk;
}

// The disks of a set recorded as one device, checked to tile the base image.
absl::Status ReadDisks(const nlohmann::json& j, const std::string& manifest_path,
                       TraceManifest& m) {
  if (!j.contains("disks")) return absl::OkStatus();
  if (!j["disks"].is_array()) {
    return absl::InvalidArgumentError(
        fmt::format("manifest {}: field \"disks\" is not a list", manifest_path));
  }
  for (const nlohmann::json& d : j["disks"]) {
    ASSIGN_OR_RETURN(DiskManifest disk, ReadDisk(d, manifest_path, m.disks.size() + 1));
    m.disks.push_back(std::move(disk));
  }
  auto layout = LayoutOf(m);
  if (!layout.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("manifest {}: {}", manifest_path, std::string(layout.status().message())));
  }
  if (layout->several() && layout->total_bytes() > m.base_image_bytes) {
    return absl::InvalidArgumentError(
        fmt::format("manifest {}: its disks end at byte {}, beyond the {}-byte base image",
                    manifest_path, layout->total_bytes(), m.base_image_bytes));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TraceManifest> ReadManifest(const std::string& manifest_path) {
  ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonObject(manifest_path));
  TraceManifest m;
  RETURN_IF_ERROR(ReadRequiredFields(j, manifest_path, m));
  RETURN_IF_ERROR(ReadDeviceFields(j, manifest_path, m));
  RETURN_IF_ERROR(ReadDisks(j, manifest_path, m));
  return m;
}

absl::Status WriteManifest(const std::string& manifest_path, const TraceManifest& m) {
  nlohmann::json j = {{"format", "dm-log-writes-v1"},
                      {"base_image", m.base_image},
                      {"base_image_bytes", m.base_image_bytes},
                      {"base_image_hash", m.base_image_hash},
                      {"block_size", m.block_size},
                      {"order", OrderSemanticsName(m.order)},
                      {"log_entries", m.log_entries}};
  if (m.logical_sector != 0) j["logical_sector"] = m.logical_sector;
  if (m.physical_sector != 0) j["physical_sector"] = m.physical_sector;
  if (!m.fs.empty()) j["fs"] = m.fs;
  if (!m.mkfs_command.empty()) j["mkfs"] = m.mkfs_command;
  if (m.fs_block_size != 0) j["fs_block_size"] = m.fs_block_size;
  if (m.disks.size() > 1) {
    nlohmann::json disks = nlohmann::json::array();
    for (const DiskManifest& d : m.disks) {
      nlohmann::json disk = {{"offset", d.offset}, {"bytes", d.bytes}};
      if (d.logical_sector != 0) disk["logical_sector"] = d.logical_sector;
      if (d.physical_sector != 0) disk["physical_sector"] = d.physical_sector;
      if (!d.fs.empty()) disk["fs"] = d.fs;
      if (!d.mkfs_command.empty()) disk["mkfs"] = d.mkfs_command;
      if (d.fs_block_size != 0) disk["fs_block_size"] = d.fs_block_size;
      disks.push_back(disk);
    }
    j["disks"] = disks;
  }
  std::string tmp = manifest_path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(2) << "\n";
    if (!out) return absl::InternalError(fmt::format("manifest {}: write failed", tmp));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, manifest_path, ec);
  if (ec) {
    return absl::InternalError(
        fmt::format("manifest {}: rename from {}: {}", manifest_path, tmp, ec.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<TraceManifest> MakeManifest(const std::string& base_image, uint32_t block_size,
                                           OrderSemantics order, uint64_t log_entries) {
  struct stat st;
  if (::stat(base_image.c_str(), &st) != 0) {
    return absl::NotFoundError(fmt::format("base image {}: cannot stat it", base_image));
  }
  ASSIGN_OR_RETURN(Hash128 hash, HashFile(base_image));
  TraceManifest m;
  m.base_image = base_image;
  m.base_image_bytes = static_cast<uint64_t>(st.st_size);
  m.base_image_hash = "xxh3-128:" + hash.Hex();
  m.block_size = block_size;
  m.order = order;
  m.log_entries = log_entries;
  return m;
}

absl::StatusOr<DiskLayout> LayoutOf(const TraceManifest& manifest) {
  std::vector<DiskExtent> extents;
  for (const DiskManifest& d : manifest.disks) extents.push_back({d.offset, d.bytes});
  return DiskLayout::FromExtents(std::move(extents));
}

absl::StatusOr<DiskLayout> LayoutBeside(const std::string& trace_path) {
  const std::string path = ManifestPathFor(trace_path);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return DiskLayout();
  ASSIGN_OR_RETURN(TraceManifest m, ReadManifest(path));
  return LayoutOf(m);
}

std::string ResolveBaseImage(const std::string& manifest_path, const TraceManifest& m) {
  std::filesystem::path p(m.base_image);
  if (p.is_absolute()) return m.base_image;
  return (std::filesystem::path(manifest_path).parent_path() / p).string();
}

absl::Status ValidateManifest(const TraceManifest& m, const std::string& manifest_path,
                              uint32_t log_sector_size, const std::string& image_path) {
  if (m.block_size != log_sector_size) {
    return absl::InvalidArgumentError(fmt::format(
        "manifest {} says block size {}, but the log's superblock says sectorsize {}: the "
        "manifest belongs to another log",
        manifest_path, m.block_size, log_sector_size));
  }
  struct stat st;
  if (::stat(image_path.c_str(), &st) != 0) {
    return absl::NotFoundError(
        fmt::format("base image {} (from manifest {}): cannot stat it", image_path, manifest_path));
  }
  if (static_cast<uint64_t>(st.st_size) != m.base_image_bytes) {
    return absl::InvalidArgumentError(
        fmt::format("base image {} is {} bytes, manifest {} says {}: wrong or modified image",
                    image_path, st.st_size, manifest_path, m.base_image_bytes));
  }
  ASSIGN_OR_RETURN(Hash128 hash, HashFile(image_path));
  std::string got = "xxh3-128:" + hash.Hex();
  if (got != m.base_image_hash) {
    return absl::InvalidArgumentError(fmt::format(
        "base image {} hashes to {}, manifest {} says {}: the image was modified since recording "
        "(use the original base image)",
        image_path, got, manifest_path, m.base_image_hash));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ResolveBase(const std::string& trace_path, const std::string& base,
                                        std::optional<TraceManifest>* manifest) {
  std::string manifest_path = ManifestPathFor(trace_path);
  std::error_code ec;
  if (std::filesystem::exists(manifest_path, ec)) {
    ASSIGN_OR_RETURN(TraceManifest m, ReadManifest(manifest_path));
    *manifest = m;
    return base.empty() ? ResolveBaseImage(manifest_path, m) : base;
  }
  if (base.empty()) {
    return absl::InvalidArgumentError(fmt::format(
        "trace {}: no manifest {} beside it, so the base image is unknown: pass --base IMG",
        trace_path, manifest_path));
  }
  return base;
}

}  // namespace powercut::harness
