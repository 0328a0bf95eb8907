#include "harness/fstest/promises.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "base/status_macros.h"
#include "fmt/format.h"
#include "fmt/ranges.h"

namespace powercut::fstest {

std::string Listing(const std::vector<std::string>& entries) {
  return fmt::format("{}", fmt::join(entries, "/"));
}
namespace {

// (path, aspect, offset, length): a file may hold several range promises, one per range.
using Key = std::tuple<std::string, Aspect, uint64_t, uint64_t>;

Key KeyOf(const std::string& path, Aspect aspect) { return {path, aspect, 0, 0}; }

// The bytes of [offset, offset + length) of the file at `path` in `model` (shorter where the
// file ends first), or nullopt when no file is there.
std::optional<std::string> RangeOf(const ModelFs& model, const std::string& path, uint64_t offset,
                                   uint64_t length) {
  const std::optional<uint64_t> n = model.Lookup(path);
  if (!n || model.inode(*n).type != NodeType::kFile) return std::nullopt;
  const std::string& data = model.inode(*n).data;
  return offset >= data.size() ? std::string() : data.substr(offset, length);
}

// The hashes the range of `path` held after each of the first `count` operations (and before
// them), but `current`: what an old-content range is. Replayed on a fresh model, since ranges are
// rare and History keeps only whole contents.
std::vector<std::string> OlderRanges(const Workload& w, size_t count, const std::string& path,
                                     uint64_t offset, uint64_t length, const std::string& current) {
  ModelFs model;
  std::vector<std::string> out;
  for (size_t i = 0; i <= count; ++i) {
    if (const std::optional<std::string> bytes = RangeOf(model, path, offset, length)) {
      const std::string hash = DataHash(*bytes);
      if (hash != current && std::find(out.begin(), out.end(), hash) == out.end()) {
        out.push_back(hash);
      }
    }
    if (i < count) (void)model.Apply(w.ops[i]);
  }
  return out;
}

bool AtOrBelow(std::string_view path, std::string_view top) {
  if (path == top) return true;
  if (top == ".") return true;
  return path.size() > top.size() && path.substr(0, top.size()) == top && path[top.size()] == '/';
}

// Every content and listing each path held after each operation so far.
class History {
 public:
  void Record(const ModelFs& model) {
    const Tree tree = ModelTree(model);
    for (const auto& [path, node] : tree.nodes) {
      std::vector<std::string>& seen =
          node.type == NodeType::kDir ? listings_[path] : contents_[path];
      const std::string value =
          node.type == NodeType::kDir ? Listing(node.entries) : node.data_hash;
      if (std::find(seen.begin(), seen.end(), value) == seen.end()) seen.push_back(value);
    }
  }
  std::vector<std::string> Older(const std::string& path, Aspect aspect,
                                 const std::string& current) const {
    const auto& map = aspect == Aspect::kEntries ? listings_ : contents_;
    auto it = map.find(path);
    std::vector<std::string> out;
    if (it == map.end()) return out;
    for (const std::string& v : it->second) {
      if (v != current) out.push_back(v);
    }
    return out;
  }

 private:
  std::map<std::string, std::vector<std::string>> contents_;
  std::map<std::string, std::vector<std::string>> listings_;
};

// The snapshot must show exactly the model's tree: the same paths, types and contents.
absl::Status CheckSnapshot(const Tree& snapshot, const ModelFs& model, int point,
                           const std::string& by) {
  const Tree expected = ModelTree(model);
  auto fail = [&](const std::string& what) {
    return absl::DataLossError(fmt::format(
        "right after point {} ({}) the file system showed {}: without any crash, it does not "
        "show what the workload did",
        point, by, what));
  };
  for (const auto& [path, want] : expected.nodes) {
    auto it = snapshot.nodes.find(path);
    if (it == snapshot.nodes.end()) {
      return fail(fmt::format("no {} (a {})", path, NodeTypeName(want.type)));
    }
    const Node& got = it->second;
    if (!got.error.empty()) return fail(fmt::format("{} unreadable ({})", path, got.error));
    if (got.type != want.type) {
      return fail(fmt::format("{} as a {}, not a {}", path, NodeTypeName(got.type),
                              NodeTypeName(want.type)));
    }
    if (want.type == NodeType::kFile &&
        (got.data_hash != want.data_hash || got.size != want.size)) {
      return fail(fmt::format("{} with other content ({} bytes, the workload wrote {})", path,
                              got.size, want.size));
    }
    if (want.type == NodeType::kSymlink && got.target != want.target) {
      return fail(fmt::format("{} pointing to {}, not {}", path, got.target, want.target));
    }
    if (got.xattrs != want.xattrs) return fail(fmt::format("{} with other xattrs", path));
  }
  for (const auto& [path, got] : snapshot.nodes) {
    if (expected.nodes.count(path) == 0) {
      return fail(fmt::format("{}, which the workload never made", path));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view AspectName(Aspect aspect) {
  switch (aspect) {
    case Aspect::kName:
      return "name";
    case Aspect::kData:
      return "data";
    case Aspect::kMeta:
      return "meta";
    case Aspect::kEntries:
      return "entries";
    case Aspect::kRange:
      return "range";
  }
  return "?";
}

absl::StatusOr<std::vector<PointPromises>> PromisesAtPoints(const Workload& workload,
                                                            const std::vector<Tree>& snapshots) {
  if (snapshots.size() != workload.PersistencePoints()) {
    return absl::InvalidArgumentError(
        fmt::format("the workload has {} persistence points but {} expected states were taken",
                    workload.PersistencePoints(), snapshots.size()));
  }
  ModelFs model;
  History history;
  history.Record(model);
  std::map<Key, Promise> active;
  std::vector<PointPromises> out;
  auto lapse_path = [&active](const std::string& path, std::initializer_list<Aspect> aspects) {
    for (Aspect a : aspects) active.erase(KeyOf(path, a));
  };
  // A range promise lapses when its bytes change or the file no longer reaches its end.
  auto lapse_changed_ranges = [&active, &model]() {
    for (auto it = active.begin(); it != active.end();) {
      const Promise& p = it->second;
      if (p.aspect != Aspect::kRange) {
        ++it;
        continue;
      }
      const std::optional<std::string> bytes = RangeOf(model, p.path, p.offset, p.length);
      const bool kept = bytes && bytes->size() == p.length && DataHash(*bytes) == p.range_hash;
      it = kept ? std::next(it) : active.erase(it);
    }
  };
  for (size_t index = 0; index < workload.ops.size(); ++index) {
    const Op& op = workload.ops[index];
    // A synchronous write changes the file, then is a point: was the rest of its data promised
    // (or was there none), so that the whole data is bound after it?
    bool whole_data = false;
    if (op.sync != SyncWrite::kNone) {
      const std::optional<std::string> before = RangeOf(model, op.path, 0, kMaxFileBytes);
      whole_data = active.count(KeyOf(op.path, Aspect::kData)) == 1 ||
                   (before.has_value() && before->empty());
    }
    if (!IsPersistencePoint(op) || op.sync != SyncWrite::kNone) {
      ModelFs::Effects fx;
      if (absl::Status s = model.Apply(op, &fx); !s.ok()) {
        return absl::InvalidArgumentError(
            fmt::format("{}:{}: {}: {}", workload.source, op.line, OpText(op), StatusMessage(s)));
      }
      for (const std::string& gone : fx.unnamed) {
        for (auto it = active.begin(); it != active.end();) {
          const std::string& path = std::get<0>(it->first);
          it = AtOrBelow(path, gone) && path != "." ? active.erase(it) : std::next(it);
        }
      }
      for (uint64_t ino : fx.data) {
        for (const std::string& p : model.PathsOf(ino)) lapse_path(p, {Aspect::kData});
      }
      for (uint64_t ino : fx.meta) {
        for (const std::string& p : model.PathsOf(ino)) lapse_path(p, {Aspect::kMeta});
      }
      for (uint64_t ino : fx.entries) {
        for (const std::string& p : model.PathsOf(ino)) {
          lapse_path(p, {Aspect::kEntries, Aspect::kMeta});
        }
      }
      lapse_changed_ranges();
      history.Record(model);
      if (!IsPersistencePoint(op)) continue;
    }
    const int point = static_cast<int>(out.size()) + 1;
    const Tree& snapshot = snapshots[point - 1];
    const std::string by = OpText(op);
    RETURN_IF_ERROR(CheckSnapshot(snapshot, model, point, by));
    auto bind = [&](const std::string& path, Aspect aspect) {
      const Node& node = snapshot.nodes.at(path);
      Promise p{.path = path, .aspect = aspect, .point = point, .by = by, .expected = node};
      if (aspect == Aspect::kData) p.older = history.Older(path, aspect, node.data_hash);
      if (aspect == Aspect::kEntries) p.older = history.Older(path, aspect, Listing(node.entries));
      active[KeyOf(path, aspect)] = std::move(p);
    };
    // The bytes a synchronous write stored, and a size reaching past them.
    auto bind_range = [&](const Op& write) {
      const std::string bytes = *RangeOf(model, write.path, write.offset, write.length);
      Promise p{.path = write.path,
                .aspect = Aspect::kRange,
                .point = point,
                .by = by,
                .expected = snapshot.nodes.at(write.path),
                .offset = write.offset,
                .length = write.length,
                .range_hash = DataHash(bytes)};
      p.older = OlderRanges(workload, index, write.path, write.offset, write.length, p.range_hash);
      active[{write.path, Aspect::kRange, write.offset, write.length}] = std::move(p);
    };
    auto bind_object = [&](const std::string& path, bool data_only) {
      const Node& node = snapshot.nodes.at(path);
      if (path != ".") bind(path, Aspect::kName);
      if (node.type == NodeType::kFile) bind(path, Aspect::kData);
      if (node.type == NodeType::kDir) bind(path, Aspect::kEntries);
      if (!data_only && node.type != NodeType::kSymlink) bind(path, Aspect::kMeta);
    };
    switch (op.kind) {
      case OpKind::kFsync:
        bind_object(op.path, false);
        break;
      case OpKind::kFdatasync:
        bind_object(op.path, true);
        break;
      case OpKind::kSync:
        for (const auto& entry : snapshot.nodes) bind_object(entry.first, false);
        break;
      case OpKind::kWrite:
      case OpKind::kDwrite:
        // As fdatasync (O_SYNC: fsync) of the range: Linux's generic_write_sync is
        // vfs_fsync_range over the bytes written, so other dirty data of the file may still be
        // delayed, and with it the size it reaches and the blocks it allocates.
        bind(op.path, Aspect::kName);
        if (whole_data) {
          bind(op.path, Aspect::kData);
        } else {
          bind_range(op);
        }
        if (op.sync == SyncWrite::kSync) {
          bind(op.path, Aspect::kMeta);
          active[KeyOf(op.path, Aspect::kMeta)].with_blocks = whole_data;
        }
        break;
      default:
        break;  // sync_file_range promises nothing
    }
    PointPromises pp{.point = point, .by = by};
    for (const auto& entry : active) pp.promises.push_back(entry.second);
    out.push_back(std::move(pp));
  }
  return out;
}

nlohmann::json PromisesToJson(const std::vector<PointPromises>& points) {
  nlohmann::json out = nlohmann::json::array();
  for (const PointPromises& pp : points) {
    nlohmann::json promises = nlohmann::json::array();
    for (const Promise& p : pp.promises) {
      nlohmann::json j = {{"path", p.path},
                          {"aspect", std::string(AspectName(p.aspect))},
                          {"point", p.point},
                          {"by", p.by},
                          {"expected", NodeToJson(p.expected)}};
      if (!p.older.empty()) j["older"] = p.older;
      if (p.aspect == Aspect::kRange) {
        j["offset"] = p.offset;
        j["length"] = p.length;
        j["range_hash"] = p.range_hash;
      }
      if (!p.with_blocks) j["with_blocks"] = false;
      promises.push_back(std::move(j));
    }
    out.push_back({{"point", pp.point}, {"by", pp.by}, {"promises", std::move(promises)}});
  }
  return out;
}

absl::StatusOr<std::vector<PointPromises>> PromisesFromJson(const nlohmann::json& j) {
  std::vector<PointPromises> out;
  try {
    for (const nlohmann::json& jp : j) {
      PointPromises pp;
      pp.point = jp.at("point").get<int>();
      pp.by = jp.at("by").get<std::string>();
      for (const nlohmann::json& jpr : jp.at("promises")) {
        Promise p;
        p.path = jpr.at("path").get<std::string>();
        const std::string aspect = jpr.at("aspect").get<std::string>();
        bool known = false;
        for (Aspect a :
             {Aspect::kName, Aspect::kData, Aspect::kMeta, Aspect::kEntries, Aspect::kRange}) {
          if (AspectName(a) == aspect) {
            p.aspect = a;
            known = true;
          }
        }
        if (!known) return absl::InvalidArgumentError(fmt::format("unknown aspect {}", aspect));
        p.point = jpr.at("point").get<int>();
        p.by = jpr.at("by").get<std::string>();
        ASSIGN_OR_RETURN(p.expected, NodeFromJson(jpr.at("expected")));
        if (jpr.contains("older")) p.older = jpr.at("older").get<std::vector<std::string>>();
        if (p.aspect == Aspect::kRange) {
          p.offset = jpr.at("offset").get<uint64_t>();
          p.length = jpr.at("length").get<uint64_t>();
          p.range_hash = jpr.at("range_hash").get<std::string>();
        }
        p.with_blocks = jpr.value("with_blocks", true);
        pp.promises.push_back(std::move(p));
      }
      out.push_back(std::move(pp));
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(fmt::format("the promises are malformed: {}", e.what()));
  }
  return out;
}

}  // namespace powercut::fstest
