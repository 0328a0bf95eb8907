#include "harness/product/fstest/fstest_report.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "absl/strings/str_split.h"
#include "base/ack_id.h"
#include "base/hash.h"
#include "base/image_io.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "harness/fs/file_system.h"
#include "harness/fstest/model_fs.h"
#include "harness/fstest/tree.h"
#include "harness/product/fstest/fstest_profiles.h"
#include "harness/product/fstest/fstest_run.h"
#include "harness/state/crash_state.h"
#include "harness/trace/trace_reader.h"
#include "nlohmann/json.hpp"

namespace powercut::product {
namespace {

using fstest::Op;
using fstest::OpKind;
using fstest::SyncWrite;
using fstest::Workload;

// A C string literal of a path of the language (its characters need no escaping).
std::string Quoted(std::string_view path) { return fmt::format("\"{}\"", path); }

std::string PathTag(std::string_view path) {
  return HashBytes({reinterpret_cast<const uint8_t*>(path.data()), path.size()}).Hex().substr(0, 8);
}

int FallocFlagsOf(fstest::FallocMode mode) {
  // FALLOC_FL_KEEP_SIZE 1, PUNCH_HOLE 2, ZERO_RANGE 16 (linux/falloc.h), written as the names.
  switch (mode) {
    case fstest::FallocMode::kDefault:
      return 0;
    case fstest::FallocMode::kKeepSize:
      return 1;
    case fstest::FallocMode::kPunchHole:
      return 3;
    case fstest::FallocMode::kZeroRange:
      return 16;
    case fstest::FallocMode::kZeroRangeKeepSize:
      return 17;
  }
  return 0;
}

// One operation as a C statement of the reproducer's workload().
std::string CStatement(const Op& op, unsigned* writes) {
  const std::string p = Quoted(op.path);
  switch (op.kind) {
    case OpKind::kCreat:
      return fmt::format("do_creat({});", p);
    case OpKind::kMkdir:
      return fmt::format("if (mkdir(at({}), 0755) != 0) fail(\"mkdir\", {});", p, p);
    case OpKind::kWrite:
    case OpKind::kDwrite:
      return fmt::format("do_write({}, \"{}\", {}, {}, {}, {}, {});", p, PathTag(op.path),
                         ++*writes, op.offset, op.length, op.kind == OpKind::kDwrite ? 1 : 0,
                         static_cast<int>(op.sync));
    case OpKind::kMmapwrite:
      return fmt::format("do_mmapwrite({}, \"{}\", {}, {}, {});", p, PathTag(op.path), ++*writes,
                         op.offset, op.length);
    case OpKind::kFalloc:
      return fmt::format("do_falloc({}, {}, {}, {});", p, FallocFlagsOf(op.mode), op.offset,
                         op.length);
    case OpKind::kTruncate:
      return fmt::format("if (truncate(at({}), {}) != 0) fail(\"truncate\", {});", p, op.length, p);
    case OpKind::kLink:
      return fmt::format("if (link(at({}), at({})) != 0) fail(\"link\", {});", p, Quoted(op.path2),
                         p);
    case OpKind::kSymlink:
      return fmt::format("if (symlink({}, at({})) != 0) fail(\"symlink\", {});", Quoted(op.path2),
                         p, p);
    case OpKind::kUnlink:
      return fmt::format("if (unlink(at({})) != 0) fail(\"unlink\", {});", p, p);
    case OpKind::kRemove:
      return fmt::format("if (remove(at({})) != 0) fail(\"remove\", {});", p, p);
    case OpKind::kRename:
      return fmt::format("if (rename(at({}), at({})) != 0) fail(\"rename\", {});", p,
                         Quoted(op.path2), p);
    case OpKind::kSetxattr:
      return fmt::format(
          "if (setxattr(at({}), \"{}\", \"{}\", {}, 0) != 0) fail(\"setxattr\", {});", p, op.name,
          op.value, op.value.size(), p);
    case OpKind::kRemovexattr:
      return fmt::format("if (removexattr(at({}), \"{}\") != 0) fail(\"removexattr\", {});", p,
                         op.name, p);
    case OpKind::kFsync:
      return fmt::format("do_persist({}, 0, 0, 0);", p);
    case OpKind::kFdatasync:
      return fmt::format("do_persist({}, 1, 0, 0);", p);
    case OpKind::kSyncFileRange:
      return fmt::format("do_persist({}, 2, {}, {});", p, op.offset, op.length);
    case OpKind::kSync:
      return "sync();\n  ack();";
  }
  return "";
}

constexpr char kCProlog[] = R"c(#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

/* A workload uses only some of the helpers below. */
#pragma GCC diagnostic ignored "-Wunused-function"

static const char *root, *mark_command;
static int points;

static void fail(const char *what, const char *path) {
  fprintf(stderr, "repro: %s %s: %s\n", what, path, strerror(errno));
  exit(1);
}

/* PATH under the root (two buffers: link and rename take two paths). */
static const char *at(const char *path) {
  static char buf[2][4096];
  static int which;
  which ^= 1;
  if (strcmp(path, ".") == 0) {
    snprintf(buf[which], sizeof buf[which], "%s", root);
  } else {
    snprintf(buf[which], sizeof buf[which], "%s/%s", root, path);
  }
  return buf[which];
}

/* Point K returned: say so, and mark the dm-log-writes log (the mark lands after every write that
   completed before it). */
static void ack(void) {
  char cmd[4200];
  ++points;
  printf("ack %d\n", points);
  fflush(stdout);
  if (mark_command == NULL) return;
  snprintf(cmd, sizeof cmd, "%s ack:%d", mark_command, points);
  if (system(cmd) != 0) {
    fprintf(stderr, "repro: %s failed\n", cmd);
    exit(1);
  }
}

/* The bytes write number COUNTER stores at [off, off + len) of the file tagged TAG. */
static char *content(const char *tag, unsigned counter, uint64_t off, uint64_t len) {
  char *buf = NULL;
  uint64_t i = 0;
  if (posix_memalign((void **)&buf, 4096, len ? len : 1) != 0) {
    fprintf(stderr, "repro: out of memory\n");
    exit(1);
  }
  while (i < len) {
    const uint64_t pos = off + i, start = pos / 32 * 32;
    char chunk[40];
    const int n = snprintf(chunk, sizeof chunk, "w%04u %010llx %s", counter % 10000,
                           (unsigned long long)(start % (1ULL << 40)), tag);
    uint64_t take = 32 - (pos - start);
    memset(chunk + n, ' ', 31 - n);
    chunk[31] = '\n';
    if (take > len - i) take = len - i;
    memcpy(buf + i, chunk + (pos - start), take);
    i += take;
  }
  return buf;
}

static void do_creat(const char *path) {
  const int fd = open(at(path), O_CREAT | O_WRONLY | O_TRUNC | O_NOFOLLOW, 0644);
  if (fd < 0) fail("creat", path);
  if (close(fd) != 0) fail("close", path);
}

/* SYNC: 0 none, 1 O_DSYNC, 2 O_SYNC, 3 pwritev2 RWF_DSYNC. A synchronous write is a point once it
   returned: acknowledged before the close. */
static void do_write(const char *path, const char *tag, unsigned counter, uint64_t off,
                     uint64_t len, int direct, int sync) {
  const int flags = O_WRONLY | O_NOFOLLOW | (direct ? O_DIRECT : 0) |
                    (sync == 1 ? O_DSYNC : 0) | (sync == 2 ? O_SYNC : 0);
  const int fd = open(at(path), flags);
  char *buf = content(tag, counter, off, len);
  uint64_t done = 0;
  if (fd < 0) fail("open", path);
  while (done < len) {
    ssize_t n;
    if (sync == 3) {
      struct iovec iov = {buf + done, len - done};
      n = pwritev2(fd, &iov, 1, (off_t)(off + done), RWF_DSYNC);
    } else {
      n = pwrite(fd, buf + done, len - done, (off_t)(off + done));
    }
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("pwrite", path);
    done += (uint64_t)n;
  }
  free(buf);
  if (sync) ack();
  if (close(fd) != 0) fail("close", path);
}

static void do_mmapwrite(const char *path, const char *tag, unsigned counter, uint64_t off,
                         uint64_t len) {
  const int fd = open(at(path), O_RDWR | O_NOFOLLOW);
  char *buf = content(tag, counter, off, len), *map;
  if (fd < 0) fail("open", path);
  if (fallocate(fd, 0, (off_t)off, (off_t)len) != 0) fail("fallocate", path);
  map = mmap(NULL, off + len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) fail("mmap", path);
  memcpy(map + off, buf, len);
  if (munmap(map, off + len) != 0) fail("munmap", path);
  free(buf);
  if (close(fd) != 0) fail("close", path);
}

static void do_falloc(const char *path, int mode, uint64_t off, uint64_t len) {
  const int fd = open(at(path), O_WRONLY | O_NOFOLLOW);
  if (fd < 0) fail("open", path);
  if (fallocate(fd, mode, (off_t)off, (off_t)len) != 0) fail("fallocate", path);
  if (close(fd) != 0) fail("close", path);
}

/* HOW: 0 fsync, 1 fdatasync, 2 sync_file_range WAIT_BEFORE|WRITE|WAIT_AFTER. */
static void do_persist(const char *path, int how, uint64_t off, uint64_t len) {
  const int fd = open(at(path), O_RDONLY | O_NOFOLLOW);
  int r;
  if (fd < 0) fail("open", path);
  if (how == 0) {
    r = fsync(fd);
  } else if (how == 1) {
    r = fdatasync(fd);
  } else {
    r = sync_file_range(fd, (off_t)off, (off_t)len,
                        SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                            SYNC_FILE_RANGE_WAIT_AFTER);
  }
  if (r != 0) fail(how == 0 ? "fsync" : how == 1 ? "fdatasync" : "sync_file_range", path);
  if (close(fd) != 0) fail("close", path);
  ack();
}
)c";

constexpr char kCEpilog[] = R"c(
static uint64_t le(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  int i;
  for (i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

/* Reads a dm-log-writes log (drivers/md/dm-log-writes.c): per "ack:K" mark, the writes that had
   completed since the last FLUSH and carried no FUA. A FLUSH makes every write completed before it
   durable; a FUA write is durable itself; the rest may still be in the drive's volatile cache. */
static int read_log(const char *device) {
  enum { kFlush = 1, kFua = 2, kDiscard = 4, kMark = 8 };
  unsigned char block[65536];
  uint64_t sectorsize, entries, pos, index, pending[64][3];
  int pending_count = 0, findings = 0;
  FILE *log = fopen(device, "rb");
  if (log == NULL || fread(block, 1, 512, log) != 512) fail("read", device);
  if (le(block, 8) != 0x6a736677736872ULL) {
    fprintf(stderr, "repro: %s is not a dm-log-writes log\n", device);
    return 2;
  }
  entries = le(block + 16, 8);
  sectorsize = le(block + 24, 4);
  if (sectorsize < 512 || sectorsize > sizeof block) return 2;
  pos = sectorsize;
  /* The superblock's count lags the entries (the kernel rewrites it after FUA and MARK entries):
     read on while the next block is an entry. */
  for (index = 0;; ++index) {
    uint64_t sector, count, flags, data_len;
    if (fseeko(log, (off_t)pos, SEEK_SET) != 0 || fread(block, 1, sectorsize, log) != sectorsize) {
      break;
    }
    sector = le(block, 8);
    count = le(block + 8, 8);
    flags = le(block + 16, 8);
    data_len = le(block + 24, 8);
    if ((flags == 0 && count == 0) || flags > 31 || (index >= entries && data_len > sectorsize)) {
      break;
    }
    if (flags & kMark) {
      char mark[512];
      const size_t n = data_len < sizeof mark - 1 ? (size_t)data_len : sizeof mark - 1;
      memcpy(mark, block + 32, n);
      mark[n] = 0;
      if (strncmp(mark, "ack:", 4) == 0) {
        int i;
        printf("entry %llu: mark %s: %d write(s) not durable%s\n", (unsigned long long)index, mark,
               pending_count, pending_count ? " (neither FUA nor followed by a FLUSH):" : "");
        for (i = 0; i < pending_count; ++i) {
          printf("    entry %llu: WRITE sector %llu, %llu sectors of %llu bytes\n",
                 (unsigned long long)pending[i][0], (unsigned long long)pending[i][1],
                 (unsigned long long)pending[i][2], (unsigned long long)sectorsize);
        }
        findings += pending_count > 0;
      }
      pos += sectorsize;
      continue;
    }
    if (flags & kFlush) pending_count = 0;
    if (count > 0 && !(flags & (kDiscard | kFua)) && pending_count < 64) {
      pending[pending_count][0] = index;
      pending[pending_count][1] = sector;
      pending[pending_count][2] = count;
      ++pending_count;
    }
    pos += sectorsize + ((flags & kDiscard) ? 0 : count * sectorsize);
  }
  fclose(log);
  printf("%llu entries; %d acknowledgement(s) given with writes not durable\n",
         (unsigned long long)index, findings);
  return findings > 0 ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc >= 3 && strcmp(argv[1], "run") == 0) {
    root = argv[2];
    mark_command = argc >= 4 ? argv[3] : NULL;
    umask(022);
    workload();
    return 0;
  }
  if (argc == 3 && strcmp(argv[1], "log") == 0) return read_log(argv[2]);
  fprintf(stderr, "usage: %s run DIR [MARK-COMMAND] | log LOGDEV\n", argv[0]);
  return 2;
}
)c";

// The `why` of a cell model without its point ("3: old-content wal.log: ..." -> the rest).
std::string WhyText(const std::string& why) {
  const size_t colon = why.find(": ");
  return colon == std::string::npos ? why : why.substr(colon + 2);
}

int PointOfWhy(const std::string& why) { return std::atoi(why.c_str()); }

std::string FlagsText(const harness::TraceEntry& e) {
  std::vector<std::string> flags;
  if (e.is_flush()) flags.emplace_back("FLUSH");
  if (e.is_fua()) flags.emplace_back("FUA");
  if (e.is_discard()) flags.emplace_back("DISCARD");
  if (e.is_mark()) return fmt::format("MARK  \"{}\"", e.mark);
  if (e.header.nr_sectors > 0 && !e.is_discard()) flags.insert(flags.begin(), "WRITE");
  return fmt::format("{}", fmt::join(flags, "|"));
}

// The entries around the violated acknowledgement: from the ack before it (or 12 entries back)
// to the first FLUSH after it, the writes the crash state dropped marked, and the writes that
// were not durable when the ack was given named.
absl::StatusOr<std::string> TraceExcerpt(const std::string& trace_path, int point,
                                         const std::set<uint64_t>& dropped) {
  ASSIGN_OR_RETURN(std::unique_ptr<harness::TraceFile> file, harness::TraceFile::Open(trace_path));
  const harness::Trace& t = file->trace();
  const std::string mark = fmt::format("{}{}", kAckMarkPrefix, point);
  const std::string before = fmt::format("{}{}", kAckMarkPrefix, point - 1);
  size_t at = t.entries.size();
  for (size_t i = 0; i < t.entries.size(); ++i) {
    if (t.entries[i].is_mark() && t.entries[i].mark == mark) at = i;
  }
  if (at == t.entries.size()) {
    return absl::NotFoundError(fmt::format("{} has no mark {}", trace_path, mark));
  }
  size_t from = at > 12 ? at - 12 : 0;
  for (size_t i = at; i-- > 0;) {
    if (t.entries[i].is_mark() && t.entries[i].mark == before) {
      from = std::max(from, i);
      break;
    }
  }
  size_t to = at;
  while (to + 1 < t.entries.size() && to < at + 12) {
    ++to;
    if (t.entries[to].is_flush()) break;
  }
  std::vector<uint64_t> not_durable;
  for (size_t i = at; i-- > 0;) {
    const harness::TraceEntry& e = t.entries[i];
    if (e.is_flush()) break;
    if (e.changes_content() && !e.is_fua() && !e.is_discard()) not_durable.push_back(e.index);
  }
  std::string out = fmt::format("entry  what (sectors of {} bytes)\n", t.sector_size);
  for (size_t i = from; i <= to; ++i) {
    const harness::TraceEntry& e = t.entries[i];
    std::string line = fmt::format("{:>5}  {}", e.index, FlagsText(e));
    if (e.changes_content()) {
      line += fmt::format(" sector {} x{}", e.header.sector, e.header.nr_sectors);
    }
    if (dropped.count(e.index) == 1) line += "   <- not on the disk in the crash state";
    if (i == at) line += "   <- the acknowledgement";
    out += line + "\n";
  }
  if (not_durable.empty()) {
    out += fmt::format("\nEvery write before {} was FUA or followed by a FLUSH.\n", mark);
  } else {
    std::reverse(not_durable.begin(), not_durable.end());
    out += fmt::format(
        "\nWhen {} was given (entry {}), {} write(s) had completed with neither FUA nor a FLUSH "
        "after them (entries {}): on a drive with a volatile write cache they may be lost with "
        "the power.\n",
        mark, t.entries[at].index, not_durable.size(), fmt::join(not_durable, ", "));
  }
  return out;
}

// Which write left each 4 KiB block of `bytes` ("write 3" from the content's chunk header,
// "zeros", "other"), runs of equal blocks joined.
std::string BlockWriters(std::string_view bytes) {
  std::vector<std::string> runs;
  std::string last;
  uint64_t run_start = 0;
  auto flush = [&](uint64_t end) {
    if (!last.empty()) runs.push_back(fmt::format("{}-{}: {}", run_start, end, last));
  };
  for (uint64_t off = 0; off < bytes.size(); off += fstest::kBlockHashBytes) {
    const std::string_view block = bytes.substr(off, fstest::kBlockHashBytes);
    std::string who = "other bytes";
    if (block.find_first_not_of('\0') == std::string_view::npos) {
      who = "zeros";
    } else if (block.size() >= 5 && block[0] == 'w') {
      who = fmt::format("write {}", std::atoi(std::string(block.substr(1, 4)).c_str()));
    }
    if (who != last) {
      flush(off);
      last = who;
      run_start = off;
    }
  }
  flush(bytes.size());
  return fmt::format("{}", fmt::join(runs, ", "));
}

// The tree the model holds right after point `point`: each path, its type, size and which write
// left each block.
std::string ExpectedTree(const Workload& w, int point) {
  fstest::ModelFs model;
  int seen = 0;
  for (const Op& op : w.ops) {
    (void)model.Apply(op);
    if (fstest::IsPersistencePoint(op) && ++seen == point) break;
  }
  std::string out;
  for (const std::string& path : model.AllPaths()) {
    const fstest::ModelFs::Inode& node = model.inode(*model.Lookup(path));
    if (node.type == fstest::NodeType::kFile) {
      out += fmt::format("{}  file, {} bytes: {}\n", path, node.data.size(),
                         node.data.empty() ? "empty" : BlockWriters(node.data));
    } else {
      out += fmt::format("{}  {}\n", path, fstest::NodeTypeName(node.type));
    }
  }
  return out;
}

std::string RunsTable(const std::vector<FsTestReportRun>& runs) {
  std::string out =
      "| kernel | file system | mkfs / mount options | drive cache | verdict |\n"
      "|---|---|---|---|---|\n";
  for (const FsTestReportRun& r : runs) {
    std::string options =
        r.mkfs_options.empty() && r.mount_options.empty()
            ? "defaults"
            : fmt::format("{} / {}", r.mkfs_options.empty() ? "-" : r.mkfs_options,
                          r.mount_options.empty() ? "-" : r.mount_options);
    std::string verdict = !r.ran       ? "could not run: " + r.why
                          : r.violates ? "**fails**: `" + r.why + "`"
                                       : "passes";
    const std::string fs = r.profile == "default" ? r.fs : fmt::format("{}:{}", r.fs, r.profile);
    out += fmt::format("| {} | {} | {} | {} | {} |\n", r.kernel.empty() ? "?" : r.kernel, fs,
                       options, r.cache, verdict);
  }
  return out;
}

// `off`: the finding holds with the drive's cache off, where every completed write is durable:
// no FLUSH or FUA is missing, what the file system rebuilt from the disk is wrong.
std::string Subject(const std::string& fs, const Op& point_op, const std::string& klass, bool off) {
  std::string what = fstest::OpText(point_op);
  if (point_op.kind == OpKind::kDwrite && point_op.sync == SyncWrite::kDsync) {
    what = "an O_DIRECT|O_DSYNC overwrite";
  }
  if (off) {
    return fmt::format(
        "{}: what `{}` promised is not what the mount rebuilds after a power cut ({}, with the "
        "drive's write cache off)",
        fs, what, klass);
  }
  return fmt::format("{}: {} acknowledged before it is durable ({} after a power cut)", fs, what,
                     klass);
}

// How to reproduce it: the script, a power cut by hand, powercut.
std::string Reproducing(const std::string& fs, int point, bool off) {
  std::string out = fmt::format(
      "- With only the kernel: `sudo sh repro.sh` (this folder) builds `repro.c` (the workload as "
      "a C\n  program: the same system calls and bytes), makes {0} on a loop device, records the "
      "workload\n  through dm-log-writes with a mark after each acknowledgement and prints, per "
      "mark, the writes\n  that were neither FUA nor followed by a FLUSH when it was given. Exit 1 "
      "means some were.\n",
      fs);
  if (off) {
    out += fmt::format(
        "  Here none need be: replay the log up to the mark `ack:{0}` onto a fresh device\n"
        "  (`replay-log --log LOGDEV --replay DEV --end-mark ack:{0}`, xfstests' tool), mount it\n"
        "  and look at the file.\n"
        "- As a power cut: run `./repro run MOUNTPOINT` on {1} on any drive and cut the power "
        "right\n"
        "  after it prints `ack {0}`; then mount and look at the file (`ls -l`, `hexdump -C`: "
        "each\n"
        "  32-byte chunk names the write that left it, `w0002 ...`).\n"
        "- With powercut: `powercut fstest run --workloads workload.fst --fs {1} --cache off`.",
        point, fs);
  } else {
    out += fmt::format(
        "- As a power cut: run `./repro run MOUNTPOINT` on {1} on a drive with a volatile write "
        "cache and\n  cut the power right after it prints `ack {0}`; then mount and look at the "
        "file's blocks\n  (`hexdump -C`: each 32-byte chunk names the write that left it, `w0002 "
        "...`).\n"
        "- With powercut: `powercut fstest run --workloads workload.fst --fs {1} --cache on`.",
        point, fs);
  }
  return out;
}

}  // namespace

std::vector<FsTestReportRun> ReportRuns(const MatrixReport& report) {
  std::vector<FsTestReportRun> out;
  const std::string mkfs = report.parameters.value("mkfs_options", "");
  const std::string mount = report.parameters.value("mount_options", "");
  for (const CellResult& c : report.cells) {
    for (const CellModel& m : c.models) {
      const FsTestProfile& profile = CellProfile(c);
      out.push_back({.kernel = c.kernel,
                     .fs = c.fs,
                     .profile = profile.name,
                     .mkfs_options = ProfileMkfsOptions(profile, mkfs),
                     .mount_options = ProfileMountOptions(profile, mount),
                     .cache = m.cache,
                     .ran = c.ran,
                     .violates = m.violations > 0,
                     .why = c.ran ? m.why : c.error.substr(0, c.error.find('\n'))});
    }
  }
  return out;
}

std::string ReproducerC(const Workload& w) {
  std::string body;
  unsigned writes = 0;
  for (const Op& op : w.ops) {
    body += fmt::format("  /* {} */\n  {}\n", fstest::OpText(op), CStatement(op, &writes));
  }
  return fmt::format(
      "/* The workload {} as a standalone program (written by `powercut fstest report`;\n"
      " * docs/fstest.md). It needs only Linux and libc:\n"
      " *\n"
      " *   cc -O2 -o repro repro.c\n"
      " *   ./repro run DIR [MARK-COMMAND]   the workload in DIR, the root of a fresh file "
      "system;\n"
      " *                                    after each persistence point it prints \"ack K\" and\n"
      " *                                    runs `MARK-COMMAND ack:K` (repro.sh: a dm-log-writes\n"
      " *                                    mark)\n"
      " *   ./repro log LOGDEV               per ack mark of a dm-log-writes log, the writes not\n"
      " *                                    yet durable when it was given (exit 1: some were)\n"
      " *\n"
      " * Every write stores powercut's bytes: at each 32-byte-aligned offset O the chunk\n"
      " * \"wNNNN OOOOOOOOOO <path tag>      \\n\" (NNNN the write's number), so a hexdump of a\n"
      " * crash image shows which write left each block.\n"
      " */\n{}\nstatic void workload(void) {{\n{}}}\n{}",
      fstest::WorkloadId(w), kCProlog, body, kCEpilog);
}

std::string ReproducerShell(const std::string& fs, const std::string& mkfs_options,
                            const std::string& mount_options) {
  absl::StatusOr<harness::FsKind> kind = harness::ParseFsKind(fs, "--fs");
  std::vector<std::string> extra = absl::StrSplit(mkfs_options, ' ', absl::SkipEmpty());
  std::vector<std::string> mkfs = {"mkfs." + fs};
  uint64_t image_bytes = uint64_t{256} << 20;
  if (kind.ok()) {
    mkfs = harness::FileSystemOf(*kind).MkfsArgv(4096, extra);
    // The row's image placeholder: the script's loop device goes there ("$data", after it).
    std::erase(mkfs, "{image}");
    image_bytes = std::max(image_bytes, harness::FileSystemOf(*kind).default_image_bytes);
  }
  return fmt::format(
      R"sh(#!/bin/sh
# Records repro.c's workload on {fs} through dm-log-writes and prints, for every acknowledgement,
# the writes that were not durable when it was given (repro.c, `log`). Needs root, a C compiler,
# losetup, dmsetup, {mkfs0} and the kernel's dm-log-writes; uses two sparse files in WORKDIR.
#   sudo sh repro.sh [WORKDIR]     (exit 1: an acknowledgement was given with writes not durable)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=${{1:-/var/tmp/powercut-fstest-report}}
mkdir -p "$work" && cd "$work"
cc -O2 -o repro "$here/repro.c"
truncate -s {bytes} data.img && truncate -s {bytes} log.img
data=$(losetup -f --show data.img)
log=$(losetup -f --show log.img)
cleanup() {{ umount mnt 2>/dev/null || true; dmsetup remove powercut-lw 2>/dev/null || true
  losetup -d "$data" "$log"; }}
trap cleanup EXIT
{mkfs} "$data"
modprobe dm-log-writes
dd if=/dev/zero of="$log" bs=1M count=1 conv=notrunc status=none
dmsetup create powercut-lw --table "0 $(blockdev --getsz "$data") log-writes $data $log"
mkdir -p mnt
mount {mount}/dev/mapper/powercut-lw mnt
./repro run mnt "dmsetup message powercut-lw 0 mark"
umount mnt
dmsetup remove powercut-lw
./repro log "$log"
)sh",
      fmt::arg("fs", fs), fmt::arg("mkfs0", mkfs.front()), fmt::arg("bytes", image_bytes),
      fmt::arg("mkfs", harness::ShellJoin(mkfs)),
      fmt::arg("mount", mount_options.empty() ? std::string()
                                              : "-o " + harness::ShellJoin({mount_options}) + " "));
}

absl::StatusOr<FsTestReport> MakeFsTestReport(const std::string& bundle,
                                              const std::vector<FsTestReportRun>& runs) {
  ASSIGN_OR_RETURN(std::string repro_text, ReadWholeFile(bundle + "/fstest-repro.json"));
  const nlohmann::json repro = nlohmann::json::parse(repro_text, nullptr, false);
  if (repro.is_discarded() || !repro.contains("minimal")) {
    return absl::InvalidArgumentError(
        fmt::format("{}/fstest-repro.json is not a `powercut fstest repro` result", bundle));
  }
  if (!repro.value("violates", false)) {
    return absl::FailedPreconditionError(
        fmt::format("{}: the workload did not violate, there is nothing to report", bundle));
  }
  ASSIGN_OR_RETURN(
      fstest::Workload w,
      fstest::ParseWorkload(repro.at("minimal").at("text").get<std::string>(), "workload.fst"));
  const nlohmann::json& state = repro.at("state");
  const std::string why = state.value("minimal_verdict", repro.value("verdict", ""));
  const std::string klass = repro.value("class", "");
  // The violated point: the one the minimal state's id names through its `why` ("3: ...").
  const std::string state_id = state.value("minimal_state", "");
  int point = 0;
  for (const FsTestReportRun& r : runs) {
    if (r.violates && point == 0) point = PointOfWhy(r.why);
  }
  const size_t why_at = why.find("why ");
  if (point == 0 && why_at != std::string::npos) point = std::atoi(why.c_str() + why_at + 4);
  if (point == 0) point = 1;
  const Op* point_op = nullptr;
  int seen = 0;
  for (const Op& op : w.ops) {
    if (fstest::IsPersistencePoint(op) && ++seen == point) point_op = &op;
  }
  if (point_op == nullptr) {
    return absl::InvalidArgumentError(fmt::format("the minimal workload has no point {}", point));
  }
  std::set<uint64_t> dropped;
  if (state.contains("minimal_dropped_entries")) {
    for (const auto& e : state.at("minimal_dropped_entries")) dropped.insert(e.get<uint64_t>());
  }
  std::string excerpt;
  if (absl::StatusOr<std::string> e = TraceExcerpt(bundle + "/recording/trace.log", point, dropped);
      e.ok()) {
    excerpt = *e;
  } else {
    excerpt = fmt::format("(no trace excerpt: {})\n", StatusMessage(e.status()));
  }
  std::string fs, found;
  for (const FsTestReportRun& r : runs) {
    if (r.violates) {
      if (fs.empty()) fs = r.fs;
      if (found.empty()) found = WhyText(r.why);
    }
  }
  if (fs.empty() && !runs.empty()) fs = runs.front().fs;
  if (found.empty()) found = why;
  const FsTestReportRun* failing = nullptr;
  bool off = false;  // it fails with the cache off too
  for (const FsTestReportRun& r : runs) {
    if (r.violates && failing == nullptr) failing = &r;
    off = off || (r.violates && r.cache == "off");
  }
  FsTestReport report;
  report.c_program = ReproducerC(w);
  report.shell = ReproducerShell(fs, failing ? failing->mkfs_options : "",
                                 failing ? failing->mount_options : "");
  const std::string subject = Subject(fs, *point_op, klass, off);
  report.markdown = fmt::format(
      R"md(# {subject}

Found by powercut's file-system test (`powercut fstest`, docs/fstest.md): a workload is recorded
through a dm-log-writes-format block device in a qemu guest, every crash state a power cut could
leave at each acknowledged persistence point is rebuilt (with the drive's write cache off: the
completed writes; on: any writes completed since the last FLUSH may be missing, FUA writes never),
and the file system, mounted by the same kernel, is checked against what the point promised.

## The workload (shrunk: {ops} operations, workload id {id})

```
{text}```

Point {point} is `{point_text}`; once it returned, the file system promised what
docs/fstest.md ("The promises") lists for it: {promise}.

## Expected and found

Expected right after point {point} (as the guest read it then; block by block, which write left
it):

```
{expected}```

Found in the crash state `{state}` (the disk as it was when point {point} was acknowledged, without
the writes marked below):

```
{found}
```

## Where it fails and where it passes

{table}
## The trace around the acknowledgement

{trace_note}

```
{excerpt}```

## Reproducing it

{reproducing}
)md",
      fmt::arg("subject", subject), fmt::arg("ops", w.ops.size()),
      fmt::arg("id", fstest::WorkloadId(w)), fmt::arg("text", fstest::WorkloadText(w, false)),
      fmt::arg("point", point), fmt::arg("point_text", fstest::OpText(*point_op)),
      fmt::arg("promise",
               point_op->sync != SyncWrite::kNone
                   ? "the range's bytes and a size reaching them (the whole file where its other "
                     "data was promised before), and its name"
                   : "the data, names or entries that point binds"),
      fmt::arg("expected", ExpectedTree(w, point)), fmt::arg("state", state_id),
      fmt::arg("found", found), fmt::arg("table", RunsTable(runs)),
      fmt::arg("trace_note",
               std::string(off ? "With the drive's write cache off every completed write is on "
                                 "the disk: the crash state is the disk exactly as it was when "
                                 "the point was acknowledged, and no FLUSH or FUA is missing; "
                                 "the mount (its recovery) rebuilds the wrong file. "
                               : "") +
                   "The recording (`recording/trace.log`, dm-log-writes v1; `powercut trace "
                   "show` lists it all), from the acknowledgement before to the first FLUSH "
                   "after:"),
      fmt::arg("excerpt", excerpt), fmt::arg("reproducing", Reproducing(fs, point, off)));
  return report;
}

absl::Status WriteFsTestReport(const FsTestReport& report, const Workload& workload,
                               const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError(fmt::format("{}: {}", dir, ec.message()));
  RETURN_IF_ERROR(PublishFile(dir + "/REPORT.md", report.markdown));
  RETURN_IF_ERROR(PublishFile(dir + "/repro.c", report.c_program));
  RETURN_IF_ERROR(PublishFile(dir + "/repro.sh", report.shell));
  return PublishFile(dir + "/workload.fst", fstest::WorkloadText(workload, false));
}

}  // namespace powercut::product
