/* The workload fst-c81cde49813e3c36 as a standalone program (written by `powercut fstest report`;
 * docs/fstest.md). It needs only Linux and libc:
 *
 *   cc -O2 -o repro repro.c
 *   ./repro run DIR [MARK-COMMAND]   the workload in DIR, the root of a fresh file system;
 *                                    after each persistence point it prints "ack K" and
 *                                    runs `MARK-COMMAND ack:K` (repro.sh: a dm-log-writes
 *                                    mark)
 *   ./repro log LOGDEV               per ack mark of a dm-log-writes log, the writes not
 *                                    yet durable when it was given (exit 1: some were)
 *
 * Every write stores powercut's bytes: at each 32-byte-aligned offset O the chunk
 * "wNNNN OOOOOOOOOO <path tag>      \n" (NNNN the write's number), so a hexdump of a
 * crash image shows which write left each block.
 */
#define _GNU_SOURCE
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

static void workload(void) {
  /* creat wal.log */
  do_creat("wal.log");
  /* write wal.log 0 65536 */
  do_write("wal.log", "01e23177", 1, 0, 65536, 0, 0);
  /* fsync wal.log */
  do_persist("wal.log", 0, 0, 0);
  /* dwrite wal.log 4096 4096 dsync */
  do_write("wal.log", "01e23177", 2, 4096, 4096, 1, 1);
}

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
