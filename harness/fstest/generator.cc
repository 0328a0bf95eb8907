#include "harness/fstest/generator.h"

#include <algorithm>
#include <array>
#include <set>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "harness/fstest/model_fs.h"

namespace powercut::fstest {
// Named, not anonymous: WorkloadSpace::Core (declared in the header) holds a Range, and a type of
// an anonymous namespace in it would give Core internal linkage parts (-Wsubobject-linkage in the
// unity build of the main preset).
namespace ace_space {
enum class Range {
  kNone,
  kAppend,
  kOverlapUnalignedStart,
  kOverlapExtend,
  kOverlapStart,
  kAligned,
  kUnaligned
};
}  // namespace ace_space

namespace {

// The sizes CrashMonkey's ACE uses: a dependency or append writes 32 KiB; an unaligned overwrite
// is 5000 bytes at the start or across the end (2000 before it); O_DIRECT and mmap overwrites
// are 8 KiB at the start; an unaligned truncate keeps 2500 bytes.
constexpr uint64_t kAppendBytes = 32768;
constexpr uint64_t kUnalignedBytes = 5000;
constexpr uint64_t kExtendBefore = 2000;
constexpr uint64_t kOverlapBytes = 8192;
constexpr uint64_t kUnalignedTruncate = 2500;
constexpr char kXattrName[] = "user.fstest";
constexpr char kXattrValue[] = "v1";

using ace_space::Range;

std::string_view RangeName(Range r) {
  switch (r) {
    case Range::kNone:
      return "";
    case Range::kAppend:
      return "append";
    case Range::kOverlapUnalignedStart:
      return "overlap_unaligned_start";
    case Range::kOverlapExtend:
      return "overlap_extend";
    case Range::kOverlapStart:
      return "overlap_start";
    case Range::kAligned:
      return "aligned";
    case Range::kUnaligned:
      return "unaligned";
  }
  return "";
}

const std::vector<std::string> kFirstFiles = {"foo", "A/foo"};
const std::vector<std::string> kSecondFiles = {"bar", "A/bar"};
const std::vector<std::string> kFolders = {"A"};
const std::vector<std::string> kSecondFolders = {"B"};

bool IsFolderName(std::string_view p) { return p == "A" || p == "B" || p == "."; }

std::string SiblingOf(std::string_view p) {
  if (p == "A") return "B";
  if (p == "B") return "A";
  if (p == ".") return ".";
  const std::string parent = ParentPath(p);
  const std::string name = BaseName(p) == "foo" ? "bar" : "foo";
  return parent == "." ? name : parent + "/" + name;
}

}  // namespace

struct WorkloadSpace::Core {
  OpKind kind = OpKind::kCreat;
  std::string a, b;
  FallocMode mode = FallocMode::kDefault;
  Range range = Range::kNone;

  std::vector<std::string> Used() const {
    std::vector<std::string> out = {a};
    if (!b.empty()) out.push_back(b);
    return out;
  }
  std::string Describe() const {
    std::string out(OpName(kind));
    if (kind == OpKind::kFalloc) out += fmt::format(" {}", FallocModeName(mode));
    if (range != Range::kNone) out += fmt::format(" {}", RangeName(range));
    out += " " + a;
    if (!b.empty()) out += " " + b;
    return out;
  }
};

namespace {

using Core = WorkloadSpace::Core;

std::vector<Core> CoreOperations() {
  std::vector<Core> out;
  const std::vector<std::string> any_file = {"foo", "A/foo", "bar", "A/bar"};
  for (const std::string& f : kFirstFiles) out.push_back({.kind = OpKind::kCreat, .a = f});
  for (const std::string& d : kFolders) out.push_back({.kind = OpKind::kMkdir, .a = d});
  for (const std::string& f : kFirstFiles) {
    for (FallocMode m : {FallocMode::kZeroRange, FallocMode::kZeroRangeKeepSize,
                         FallocMode::kPunchHole, FallocMode::kKeepSize, FallocMode::kDefault}) {
      for (Range r : {Range::kAppend, Range::kOverlapUnalignedStart, Range::kOverlapExtend}) {
        out.push_back({.kind = OpKind::kFalloc, .a = f, .mode = m, .range = r});
      }
    }
  }
  for (const std::string& f : kFirstFiles) {
    for (Range r : {Range::kAppend, Range::kOverlapUnalignedStart, Range::kOverlapExtend}) {
      out.push_back({.kind = OpKind::kWrite, .a = f, .range = r});
    }
  }
  for (OpKind k : {OpKind::kDwrite, OpKind::kMmapwrite}) {
    for (const std::string& f : kFirstFiles) {
      for (Range r : {Range::kAppend, Range::kOverlapStart}) {
        out.push_back({.kind = k, .a = f, .range = r});
      }
    }
  }
  for (const std::string& from : any_file) {
    for (const std::string& to : kSecondFiles) {
      if (from != to) out.push_back({.kind = OpKind::kLink, .a = from, .b = to});
    }
  }
  for (OpKind k : {OpKind::kUnlink, OpKind::kRemove}) {
    for (const std::string& f : any_file) out.push_back({.kind = k, .a = f});
  }
  for (const std::string& from : any_file) {
    for (const std::string& to : kSecondFiles) {
      if (from != to) out.push_back({.kind = OpKind::kRename, .a = from, .b = to});
    }
  }
  for (const std::string& from : {kFolders[0], kSecondFolders[0]}) {
    for (const std::string& to : kSecondFolders) {
      if (from != to) out.push_back({.kind = OpKind::kRename, .a = from, .b = to});
    }
  }
  for (OpKind k : {OpKind::kSetxattr, OpKind::kRemovexattr}) {
    for (const std::string& f : kFirstFiles) out.push_back({.kind = k, .a = f});
  }
  for (const std::string& f : kFirstFiles) {
    for (Range r : {Range::kAligned, Range::kUnaligned}) {
      out.push_back({.kind = OpKind::kTruncate, .a = f, .range = r});
    }
  }
  return out;
}

// The `--persist` names of the synchronous writes (the WAL's barrier names where they exist).
constexpr std::array<std::pair<SyncWrite, std::string_view>, 3> kSyncWritePersistNames = {{
    {SyncWrite::kDsync, "odsync"},
    {SyncWrite::kSync, "osync"},
    {SyncWrite::kRwfDsync, "rwf_dsync"},
}};

// One persistence choice after a core operation: a point after it, or the core write made
// synchronous (its own point), or neither (between core operations only).
struct PersistChoice {
  std::optional<Op> point;
  SyncWrite write = SyncWrite::kNone;
};

// The persistence choices after a core operation: fsync (and fdatasync, when asked, of files) of
// every file in the range of the files used (the files, their siblings and their parents, sorted),
// sync, a core write or dwrite made synchronous (when asked), and between core operations none.
std::vector<PersistChoice> PersistenceChoices(const std::vector<std::string>& range,
                                              const GeneratorOptions& options, bool last,
                                              OpKind core) {
  std::vector<PersistChoice> out;
  const std::vector<OpKind>& kinds = options.persistence;
  auto wanted = [&kinds](OpKind k) {
    return std::find(kinds.begin(), kinds.end(), k) != kinds.end();
  };
  for (const std::string& path : range) {
    if (wanted(OpKind::kFsync)) out.push_back({Op{.kind = OpKind::kFsync, .path = path}});
    if (wanted(OpKind::kFdatasync) && !IsFolderName(path)) {
      out.push_back({Op{.kind = OpKind::kFdatasync, .path = path}});
    }
  }
  if (wanted(OpKind::kSync)) out.push_back({Op{.kind = OpKind::kSync}});
  if (TakesSyncWrite(core)) {
    for (SyncWrite w : options.sync_writes) out.push_back({.write = w});
  }
  if (!last) out.push_back({});
  return out;
}

std::vector<std::string> FileRange(const std::vector<const Core*>& sequence) {
  std::set<std::string> range;
  for (const Core* c : sequence) {
    for (const std::string& u : c->Used()) {
      range.insert(u);
      range.insert(SiblingOf(u));
      range.insert(ParentPath(u));
    }
  }
  return {range.begin(), range.end()};
}

// Builds one workload, inserting each operation's dependencies as ACE does.
class Builder {
 public:
  explicit Builder(Workload* w) : w_(w) {}

  void Emit(Op op) {
    (void)model_.Apply(op);  // every emitted op is valid by construction (tests prove it)
    w_->ops.push_back(std::move(op));
  }
  uint64_t Size(const std::string& path) const {
    const std::optional<uint64_t> n = model_.Lookup(path);
    return n ? model_.inode(*n).data.size() : 0;
  }
  bool Exists(const std::string& path) const { return model_.Exists(path); }
  bool IsDir(const std::string& path) const {
    const std::optional<uint64_t> n = model_.Lookup(path);
    return n && model_.inode(*n).type == NodeType::kDir;
  }

  void EnsureFolder(const std::string& path) {
    if (path == "." || IsDir(path)) return;
    EnsureFolder(ParentPath(path));
    if (Exists(path)) EnsureAbsent(path);
    Emit({.kind = OpKind::kMkdir, .path = path});
  }
  void EnsureFile(const std::string& path) {
    EnsureFolder(ParentPath(path));
    if (IsDir(path)) EnsureAbsent(path);
    if (!Exists(path)) Emit({.kind = OpKind::kCreat, .path = path});
  }
  void EnsureData(const std::string& path) {
    EnsureFile(path);
    if (Size(path) == 0) {
      Emit({.kind = OpKind::kWrite, .path = path, .offset = 0, .length = kAppendBytes});
    }
  }
  void EnsureAbsent(const std::string& path) {
    if (!Exists(path)) return;
    if (IsDir(path)) {
      const std::optional<uint64_t> n = model_.Lookup(path);
      std::vector<std::string> names;
      for (const auto& entry : model_.inode(*n).entries) names.push_back(entry.first);
      for (const std::string& name : names) EnsureAbsent(path + "/" + name);
      Emit({.kind = OpKind::kRemove, .path = path});
    } else {
      Emit({.kind = OpKind::kUnlink, .path = path});
    }
  }

  // The folders the core operation needs to exist (made before the first core operation and
  // persisted by a sync: the setup).
  void Folders(const Core& c) {
    EnsureFolder(ParentPath(c.a));
    if (!c.b.empty()) EnsureFolder(ParentPath(c.b));
    if (c.kind == OpKind::kRename && IsFolderName(c.a)) EnsureFolder(c.a);
  }

  // Everything else the core operation needs, then the operation itself.
  void AddCore(const Core& c, SyncWrite sync) {
    Folders(c);
    Op op{.kind = c.kind, .path = c.a, .path2 = c.b, .sync = sync};
    switch (c.kind) {
      case OpKind::kCreat:
      case OpKind::kMkdir:
        EnsureAbsent(c.a);
        break;
      case OpKind::kWrite:
      case OpKind::kFalloc:
      case OpKind::kDwrite:
      case OpKind::kMmapwrite:
        PrepareDataOp(c, op);
        break;
      case OpKind::kTruncate:
        EnsureData(c.a);
        op.length = c.range == Range::kAligned ? 0 : kUnalignedTruncate;
        break;
      case OpKind::kLink:
        EnsureFile(c.a);
        EnsureAbsent(c.b);
        break;
      case OpKind::kRename:
        if (IsFolderName(c.a)) {
          EnsureFolder(c.a);
          EnsureAbsent(c.b);
        } else {
          EnsureFile(c.a);
          if (IsDir(c.b)) EnsureAbsent(c.b);
        }
        break;
      case OpKind::kUnlink:
      case OpKind::kRemove:
        EnsureFile(c.a);
        break;
      case OpKind::kSetxattr:
        EnsureFile(c.a);
        op.name = kXattrName;
        op.value = kXattrValue;
        break;
      case OpKind::kRemovexattr:
        PrepareRemovexattr(c, op);
        break;
      default:
        break;
    }
    Emit(std::move(op));
  }

  void Persist(const Op& op) {
    if (op.kind != OpKind::kSync) {
      if (IsFolderName(op.path)) {
        EnsureFolder(op.path);
      } else {
        EnsureFile(op.path);
      }
    }
    Emit(op);
  }

 private:
  // A write, falloc, direct write or mmap write: a file with data to work on, and the range
  // the core's Range names.
  void PrepareDataOp(const Core& c, Op& op) {
    // ACE gives every falloc, and every overwrite, data to work on first.
    if (c.range == Range::kAppend && c.kind != OpKind::kFalloc) {
      EnsureFile(c.a);
    } else {
      EnsureData(c.a);
    }
    const uint64_t size = Size(c.a);
    const bool aligned = c.kind == OpKind::kDwrite || c.kind == OpKind::kMmapwrite;
    switch (c.range) {
      case Range::kAppend:
        op.offset =
            aligned ? (size + kDirectAlignment - 1) / kDirectAlignment * kDirectAlignment : size;
        op.length = kAppendBytes;
        break;
      case Range::kOverlapUnalignedStart:
        op.length = kUnalignedBytes;
        break;
      case Range::kOverlapExtend:
        op.offset = size > kExtendBefore ? size - kExtendBefore : 0;
        op.length = kUnalignedBytes;
        break;
      case Range::kOverlapStart:
        op.length = kOverlapBytes;
        break;
      default:
        break;
    }
    op.mode = c.mode;
  }

  // removexattr needs an xattr to remove: set one first where the file has none.
  void PrepareRemovexattr(const Core& c, Op& op) {
    EnsureFile(c.a);
    const std::optional<uint64_t> n = model_.Lookup(c.a);
    if (model_.inode(*n).xattrs.count(kXattrName) == 0) {
      Emit({.kind = OpKind::kSetxattr, .path = c.a, .name = kXattrName, .value = kXattrValue});
    }
    op.name = kXattrName;
  }

  Workload* w_;
  ModelFs model_;
};

uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

absl::Status ParsePersistence(std::string_view text, GeneratorOptions* options) {
  std::vector<OpKind> points;
  std::vector<SyncWrite> writes;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view word = text.substr(start, comma - start);
    start = comma + 1;
    const auto write = std::find_if(kSyncWritePersistNames.begin(), kSyncWritePersistNames.end(),
                                    [word](const auto& entry) { return entry.second == word; });
    if (write != kSyncWritePersistNames.end()) {
      if (std::find(writes.begin(), writes.end(), write->first) == writes.end()) {
        writes.push_back(write->first);
      }
      continue;
    }
    const std::optional<OpKind> kind = OpKindFromName(word);
    if (!kind ||
        (*kind != OpKind::kFsync && *kind != OpKind::kFdatasync && *kind != OpKind::kSync)) {
      return absl::InvalidArgumentError(fmt::format(
          "--persist {}: \"{}\" is not fsync, fdatasync, sync, odsync, osync or rwf_dsync "
          "(comma-separated)",
          text, word));
    }
    if (std::find(points.begin(), points.end(), *kind) == points.end()) points.push_back(*kind);
  }
  options->persistence = std::move(points);
  options->sync_writes = std::move(writes);
  return absl::OkStatus();
}

std::string PersistenceText(const GeneratorOptions& options) {
  std::vector<std::string_view> names;
  for (OpKind k : options.persistence) names.push_back(OpName(k));
  for (SyncWrite w : options.sync_writes) {
    for (const auto& [write, name] : kSyncWritePersistNames) {
      if (write == w) names.push_back(name);
    }
  }
  return fmt::format("{}", fmt::join(names, ","));
}

absl::StatusOr<WorkloadSpace> WorkloadSpace::Make(const GeneratorOptions& options) {
  if (options.seq < 1 || options.seq > kMaxSequenceLength) {
    return absl::InvalidArgumentError(
        fmt::format("--seq {}: the sequence length is 1 to {} core operations", options.seq,
                    kMaxSequenceLength));
  }
  if (options.persistence.empty()) {
    // A synchronous write is a point only after a core write: the others need one of these.
    return absl::InvalidArgumentError(
        "--persist: name at least one of fsync, fdatasync, sync (odsync, osync and rwf_dsync "
        "only make core writes synchronous)");
  }
  WorkloadSpace space;
  space.options_ = options;
  space.cores_ = std::make_shared<const std::vector<Core>>(CoreOperations());
  const std::vector<Core>& cores = *space.cores_;
  uint64_t sequences = 1;
  for (int i = 0; i < options.seq; ++i) sequences *= cores.size();
  space.starts_.reserve(sequences);
  std::vector<const Core*> sequence(options.seq);
  for (uint64_t s = 0; s < sequences; ++s) {
    uint64_t rest = s;
    for (int i = options.seq - 1; i >= 0; --i) {
      sequence[i] = &cores[rest % cores.size()];
      rest /= cores.size();
    }
    const std::vector<std::string> range = FileRange(sequence);
    uint64_t count = 1;
    for (int i = 0; i < options.seq; ++i) {
      count *= PersistenceChoices(range, options, i + 1 == options.seq, sequence[i]->kind).size();
    }
    space.starts_.push_back(space.total_);
    space.total_ += count;
  }
  return space;
}

Workload WorkloadSpace::At(uint64_t index) const {
  const std::vector<Core>& cores = *cores_;
  const auto it = std::upper_bound(starts_.begin(), starts_.end(), index) - 1;
  const uint64_t s = static_cast<uint64_t>(it - starts_.begin());
  uint64_t within = index - *it;
  std::vector<const Core*> sequence(options_.seq);
  uint64_t rest = s;
  for (int i = options_.seq - 1; i >= 0; --i) {
    sequence[i] = &cores[rest % cores.size()];
    rest /= cores.size();
  }
  const std::vector<std::string> range = FileRange(sequence);
  std::vector<std::vector<PersistChoice>> choices;
  for (int i = 0; i < options_.seq; ++i) {
    choices.push_back(
        PersistenceChoices(range, options_, i + 1 == options_.seq, sequence[i]->kind));
  }
  std::vector<size_t> picked(options_.seq);
  for (int i = options_.seq - 1; i >= 0; --i) {
    picked[i] = within % choices[i].size();
    within /= choices[i].size();
  }

  Workload w;
  w.source = fmt::format("seq-{}", options_.seq);
  Builder b(&w);
  // The setup: the folders the first core operation needs, made and persisted.
  b.Folders(*sequence[0]);
  if (!w.ops.empty()) b.Emit({.kind = OpKind::kSync});
  std::vector<std::string> described;
  for (int i = 0; i < options_.seq; ++i) {
    const PersistChoice& choice = choices[i][picked[i]];
    b.AddCore(*sequence[i], choice.write);
    if (choice.point) b.Persist(*choice.point);
    std::string then = "no persistence point";
    if (choice.point) then = OpText(*choice.point);
    if (choice.write != SyncWrite::kNone) {
      then = fmt::format("no other point (the write is {})", SyncWriteName(choice.write));
    }
    described.push_back(fmt::format("{}, then {}", sequence[i]->Describe(), then));
  }
  w.description = fmt::format("seq-{} #{}: {}", options_.seq, index, fmt::join(described, "; "));
  return w;
}

std::vector<uint64_t> WorkloadSpace::Sample(uint64_t n, uint64_t seed) const {
  std::vector<uint64_t> out;
  if (n >= total_) {
    out.resize(total_);
    for (uint64_t i = 0; i < total_; ++i) out[i] = i;
    return out;
  }
  std::set<uint64_t> picked;
  uint64_t state = seed;
  while (picked.size() < n) picked.insert(SplitMix64(&state) % total_);
  return {picked.begin(), picked.end()};
}

}  // namespace powercut::fstest
