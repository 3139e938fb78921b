/* The op executor: runs one op against the file API and writes one canonical log line.
 *
 * A log line holds what a program can observe and must not differ between the kernel and daxkit:
 * the op with its arguments, the return value (fds canonicalised to "fd": numbering is not part of
 * the contract we compare), errno by name when the call failed, a hash of bytes read, and the
 * offsets a call updated. Stat results compare size, type, permissions and link count only (times,
 * inode numbers and st_blocks legitimately differ). SEEK_DATA/SEEK_HOLE results are compared by
 * validity unless exact_holes is set (a library that maps a file may turn holes into data). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "dt_exec.h"

/* glibc's fortify entry points (what -D_FORTIFY_SOURCE programs call); daxkit interposes them. */
extern ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
extern ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
extern ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen);

/* ---------------------------------------------------------------- log */

static char dt_line[8192];
static size_t dt_line_len;

void dt_out(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(dt_line + dt_line_len, sizeof dt_line - dt_line_len, fmt, ap);
  va_end(ap);
  if (n > 0) dt_line_len += (size_t)n;
  if (dt_line_len >= sizeof dt_line) dt_line_len = sizeof dt_line - 1;
}

/* Writes the line with a raw system call: the log goes to an unmanaged fd, and a raw write keeps
 * the tester's own output independent of the library under test (and flushed if it crashes). */
void dt_flush(int log_fd) {
  size_t done = 0;
  while (done < dt_line_len) {
    long n = syscall(SYS_write, log_fd, dt_line + done, dt_line_len - done);
    if (n <= 0) break;
    done += (size_t)n;
  }
  dt_line_len = 0;
}

static const char *err_name(int e) {
  const char *s = strerrorname_np(e);
  return s ? s : "E?";
}

/* "= r" or "= -1 e=ENAME". */
static void out_ret(long long r, int err) {
  if (r < 0) dt_out(" = %lld e=%s", r, err_name(err));
  else dt_out(" = %lld", r);
}

/* ---------------------------------------------------------------- hash and data */

void dt_hash_init(struct dt_hash *h) { memset(h, 0, sizeof *h); h->h = 0x84222325CBF29CE4ull; }

static inline void hash_word(struct dt_hash *h, uint64_t w) {
  h->h = (h->h ^ w) * 0x9E3779B97F4A7C15ull;
  h->h ^= h->h >> 29;
}

void dt_hash_update(struct dt_hash *h, const void *data, size_t len) {
  const unsigned char *p = data;
  h->total += len;
  while (len > 0 && h->npend > 0) {
    h->pend |= (uint64_t)*p++ << (8 * h->npend), len--;
    if (++h->npend == 8) hash_word(h, h->pend), h->pend = 0, h->npend = 0;
  }
  for (; len >= 8; p += 8, len -= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    hash_word(h, w);
  }
  while (len > 0) {
    h->pend |= (uint64_t)*p++ << (8 * h->npend), len--;
    h->npend++;
  }
}

uint64_t dt_hash_final(struct dt_hash *h) {
  struct dt_hash c = *h;
  hash_word(&c, c.pend ^ ((uint64_t)c.npend << 56));
  hash_word(&c, c.total);
  return c.h;
}

static uint64_t hash_buf(const void *data, size_t len) {
  struct dt_hash h;
  dt_hash_init(&h);
  dt_hash_update(&h, data, len);
  return dt_hash_final(&h);
}

/* Seeded pseudo-random bytes: misplaced or stale bytes change every later hash. */
static void fill_data(unsigned char *buf, int64_t len, int64_t seed) {
  uint64_t s = (uint64_t)seed ^ 0xD1B54A32D192ED03ull;
  int64_t i = 0;
  for (; i + 8 <= len; i += 8) {
    uint64_t w = dt_rand(&s);
    memcpy(buf + i, &w, 8);
  }
  uint64_t w = dt_rand(&s);
  for (; i < len; i++, w >>= 8) buf[i] = (unsigned char)w;
}

/* Printable text with newlines for fputs/fgets. */
static void fill_text(char *buf, int64_t len, int64_t seed) {
  uint64_t s = (uint64_t)seed;
  for (int64_t i = 0; i < len; i++) {
    uint64_t r = dt_rand(&s);
    buf[i] = r % 37 == 0 ? '\n' : (char)('a' + r % 26);
  }
  buf[len] = 0;
}

/* ---------------------------------------------------------------- slots and paths */

static int fd_of(struct dt_ctx *c, int64_t spec) {
  if (spec >= 0 && spec < DT_FD_SLOTS) return c->fd[spec];
  return spec == DT_FD_HIGH ? 100000 : -1;
}

static void path_of(struct dt_ctx *c, int64_t name, int rel, char *out, size_t out_size) {
  if (rel) snprintf(out, out_size, "f%d", (int)name);
  else snprintf(out, out_size, "%s/f%d", c->dir, (int)name);
}

/* A slot about to receive a new fd: close what it held (the generator avoids this; a shrunk list
 * may not). Logged so that both sides show it. */
static void slot_release(struct dt_ctx *c, int64_t slot) {
  if (c->fd[slot] < 0) return;
  int r = close(c->fd[slot]);
  dt_out(" [closed prev=%d]", r);
  c->fd[slot] = -1;
}

static void out_fd(int r, int err, int64_t slot, struct dt_ctx *c) {
  if (r >= 0) {
    dt_out(" = fd");
    c->fd[slot] = r;
  } else {
    dt_out(" = -1 e=%s", err_name(err));
  }
}

/* ---------------------------------------------------------------- open, close, dup, fcntl */

static void ex_open(struct dt_ctx *c, const struct dt_op *op) {
  char path[PATH_MAX + 64];
  int64_t slot = op->v[0], form = op->v[3];
  int flags = (int)op->v[2], r;
  slot_release(c, slot);
  path_of(c, op->v[1], form == 1, path, sizeof path);
  errno = 0;
  switch (form) {
  case 1: r = open(path, flags, 0644); break;
  case 2: r = openat(c->dirfd, path + strlen(c->dir) + 1, flags, 0644); break;
  case 3: r = open64(path, flags, 0644); break;
  case 4: r = openat(AT_FDCWD, path, flags, 0644); break;
  default: r = open(path, flags, 0644); break;
  }
  out_fd(r, errno, slot, c);
}

static void ex_creat(struct dt_ctx *c, const struct dt_op *op) {
  char path[PATH_MAX + 64];
  slot_release(c, op->v[0]);
  path_of(c, op->v[1], 0, path, sizeof path);
  errno = 0;
  int r = op->v[2] ? creat64(path, 0644) : creat(path, 0644);
  out_fd(r, errno, op->v[0], c);
}

static void ex_close(struct dt_ctx *c, const struct dt_op *op) {
  errno = 0;
  int r = close(fd_of(c, op->v[0]));
  out_ret(r, errno);
  if (op->v[0] < DT_FD_SLOTS) c->fd[op->v[0]] = -1;
}

/* dup2/dup3 target: the destination slot's fd (replaced atomically), the source itself when the
 * slots are equal, or a fixed high number when the slot is empty. */
static void ex_dup(struct dt_ctx *c, const struct dt_op *op) {
  int src = fd_of(c, op->v[0]), r;
  int64_t slot = op->v[1];
  if (op->kind == DT_DUP || op->kind == DT_DUPFD) {
    slot_release(c, slot);
    errno = 0;
    if (op->kind == DT_DUP) r = dup(src);
    else r = fcntl(src, op->v[3] ? F_DUPFD_CLOEXEC : F_DUPFD, (int)op->v[2]);
    if (op->kind == DT_DUPFD && r >= 0 && r < op->v[2]) dt_out(" below-min=%d", r);
    out_fd(r, errno, slot, c);
    return;
  }
  int target = slot == op->v[0] ? src : c->fd[slot] >= 0 ? c->fd[slot] : 200 + (int)slot;
  errno = 0;
  if (op->kind == DT_DUP2) r = dup2(src, target);
  else r = dup3(src, target, op->v[2] ? O_CLOEXEC : 0);
  int err = errno;
  if (r >= 0 && r != target) dt_out(" wrong-target=%d", r);
  if (r >= 0) dt_out(" = target");
  else dt_out(" = -1 e=%s", err_name(err));
  if (r >= 0) c->fd[slot] = r;
}

/* True when a stream opened in append mode is open on the file `fd` refers to. */
/* A stream open on fd's file in append mode (append 1), or in another mode (append 0). */
static int stream_on(struct dt_ctx *c, int fd, int append) {
  struct stat a, b;
  if (fstat(fd, &a) != 0) return 0;
  for (int s = 0; s < DT_STREAM_SLOTS; s++)
    if (c->st[s] && c->st_append[s] == append && fstat(fileno(c->st[s]), &b) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino)
      return 1;
  return 0;
}
static int append_stream_on(struct dt_ctx *c, int fd) { return stream_on(c, fd, 1); }

static void ex_fcntl(struct dt_ctx *c, const struct dt_op *op) {
  int fd = fd_of(c, op->v[0]);
  errno = 0;
  int fl = fcntl(fd, F_GETFL);
  if (op->kind == DT_GETFL || fl < 0) {
    if (fl >= 0) dt_out(" = 0%o", fl);
    else out_ret(fl, errno);
    return;
  }
  /* An append-mode stream relies on O_APPEND (glibc's fdopen "a" sets it on the shared description); a
   * program clearing it under the stream leaves the stream's writes undefined, and glibc's file and cookie
   * streams then write at different places. The tester keeps it while such a stream is open on the file. */
  if (!op->v[1] && (fl & O_APPEND) && append_stream_on(c, fd)) return dt_out(" = kept (append stream open)");
  /* The other way round as well: O_APPEND set under a stream opened without it makes its writes land at the
   * end while glibc's file stream keeps counting from where it thought it wrote (ftell one record short);
   * a cookie stream asks the descriptor. Undefined for the program: not done while such a stream is open. */
  if (op->v[1] && !(fl & O_APPEND) && stream_on(c, fd, 0)) return dt_out(" = not set (stream open)");
  fl = op->v[1] ? fl | O_APPEND : fl & ~O_APPEND;
  errno = 0;
  int r = fcntl(fd, F_SETFL, fl);
  out_ret(r, errno);
  dt_out(" now=0%o", fcntl(fd, F_GETFL));
}

/* ---------------------------------------------------------------- data ops */

/* Splits len bytes of buf into cnt iovecs with seeded sizes (some empty). cnt outside 1..IOV_MAX
 * is passed through unchanged so that the call fails with EINVAL. */
static void build_iov(struct dt_ctx *c, unsigned char *buf, int64_t len, int64_t cnt, int64_t seed) {
  uint64_t s = (uint64_t)seed;
  int n = cnt < 0 ? 0 : cnt > DT_IOV_MAX_TEST ? DT_IOV_MAX_TEST : (int)cnt;
  int64_t left = len;
  for (int i = 0; i < n; i++) {
    int64_t part = i == n - 1 ? left : dt_below(&s, 4) == 0 ? 0 : (int64_t)dt_below(&s, (uint64_t)left + 1);
    c->iov[i].iov_base = buf + (len - left);
    c->iov[i].iov_len = (size_t)part;
    left -= part;
  }
}

static void out_read(struct dt_ctx *c, ssize_t r, int err) {
  out_ret(r, err);
  if (r > 0) dt_out(" h=%016llx", (unsigned long long)hash_buf(c->rbuf, (size_t)r));
}

static void ex_read(struct dt_ctx *c, const struct dt_op *op) {
  int fd = fd_of(c, op->v[0]);
  const int64_t *v = op->v;
  ssize_t r;
  int64_t len = op->kind == DT_READ ? v[1] : op->kind == DT_READV ? v[1] : v[2];
  if (len > DT_LEN_MAX) len = DT_LEN_MAX;
  memset(c->rbuf, 0xA5, (size_t)len);
  errno = 0;
  switch (op->kind) {
  case DT_READ: r = v[2] == 2 ? __read_chk(fd, c->rbuf, (size_t)len, DT_BUF_BYTES) : read(fd, c->rbuf, (size_t)len); break;
  case DT_PREAD:
    r = v[3] == 1 ? pread64(fd, c->rbuf, (size_t)len, v[1])
      : v[3] == 2 ? (v[1] & 1 ? __pread64_chk : __pread_chk)(fd, c->rbuf, (size_t)len, v[1], DT_BUF_BYTES)
                  : pread(fd, c->rbuf, (size_t)len, v[1]);
    break;
  case DT_READV: build_iov(c, c->rbuf, len, v[2], v[3]); r = readv(fd, c->iov, (int)v[2]); break;
  case DT_PREADV: build_iov(c, c->rbuf, len, v[3], v[4]); r = preadv(fd, c->iov, (int)v[3], v[1]); break;
  default: build_iov(c, c->rbuf, len, v[3], v[5]); r = preadv2(fd, c->iov, (int)v[3], v[1], (int)v[4]); break;
  }
  out_read(c, r, errno);
}

static void ex_write(struct dt_ctx *c, const struct dt_op *op) {
  int fd = fd_of(c, op->v[0]);
  const int64_t *v = op->v;
  ssize_t r;
  int64_t len, seed;
  switch (op->kind) {
  case DT_WRITE: len = v[1], seed = v[2]; break;
  case DT_PWRITE: len = v[2], seed = v[3]; break;
  case DT_WRITEV: len = v[1], seed = v[3]; break;
  case DT_PWRITEV: len = v[2], seed = v[4]; break;
  default: len = v[2], seed = v[5]; break;
  }
  if (len > DT_LEN_MAX) len = DT_LEN_MAX;
  fill_data(c->wbuf, len, seed);
  errno = 0;
  switch (op->kind) {
  case DT_WRITE: r = write(fd, c->wbuf, (size_t)len); break;
  case DT_PWRITE: r = (v[4] ? pwrite64 : pwrite)(fd, c->wbuf, (size_t)len, v[1]); break;
  case DT_WRITEV: build_iov(c, c->wbuf, len, v[2], seed); r = writev(fd, c->iov, (int)v[2]); break;
  case DT_PWRITEV: build_iov(c, c->wbuf, len, v[3], seed); r = pwritev(fd, c->iov, (int)v[3], v[1]); break;
  default: build_iov(c, c->wbuf, len, v[3], seed); r = pwritev2(fd, c->iov, (int)v[3], v[1], (int)v[4]); break;
  }
  out_ret(r, errno);
}

static void ex_lseek(struct dt_ctx *c, const struct dt_op *op) {
  int fd = fd_of(c, op->v[0]), whence = (int)op->v[2];
  int64_t off = op->v[1];
  errno = 0;
  off_t r = op->v[3] ? lseek64(fd, off, whence) : lseek(fd, off, whence);
  int err = errno;
  if (c->exact_holes || (whence != SEEK_DATA && whence != SEEK_HOLE)) return out_ret(r, err);
  /* Validity only: a hole may be reported as data, never data as a hole past what exists. */
  struct stat st;
  if (fstat(fd, &st) != 0 || off < 0 || off >= st.st_size) return out_ret(r, err);
  int ok = whence == SEEK_DATA ? (r < 0 ? err == ENXIO : r >= off && r < st.st_size)
                               : (r >= off && r <= st.st_size);
  dt_out(ok ? " = valid" : " = invalid(%lld e=%s)", (long long)r, err_name(err));
  lseek(fd, off, SEEK_SET); /* both sides continue from the same position */
}

static void ex_truncate(struct dt_ctx *c, const struct dt_op *op) {
  char path[PATH_MAX + 64];
  int r;
  errno = 0;
  if (op->kind == DT_FTRUNCATE) {
    r = (op->v[2] ? ftruncate64 : ftruncate)(fd_of(c, op->v[0]), op->v[1]);
  } else {
    path_of(c, op->v[0], (int)op->v[2], path, sizeof path);
    r = (op->v[2] ? truncate64 : truncate)(path, op->v[1]); /* form: relative path + truncate64 */
  }
  out_ret(r, errno);
}

static void ex_fallocate(struct dt_ctx *c, const struct dt_op *op) {
  int fd = fd_of(c, op->v[0]);
  errno = 0;
  if (op->kind == DT_FALLOCATE) {
    int r = (op->v[4] ? fallocate64 : fallocate)(fd, (int)op->v[1], op->v[2], op->v[3]);
    return out_ret(r, errno);
  }
  int r = (op->v[3] ? posix_fallocate64 : posix_fallocate)(fd, op->v[1], op->v[2]); /* returns the error */
  if (r == 0) dt_out(" = 0");
  else dt_out(" = %s", err_name(r));
}

/* ---------------------------------------------------------------- metadata */

static void out_stat(int r, int err, long long size, unsigned mode, unsigned long nlink) {
  if (r != 0) return out_ret(r, err);
  const char *t = S_ISREG(mode) ? "reg" : S_ISDIR(mode) ? "dir" : S_ISLNK(mode) ? "lnk" : "other";
  dt_out(" = 0 sz=%lld t=%s nl=%lu m=%o", size, t, nlink, mode & 07777);
}

static void do_statx(int dirfd, const char *path, int flags) {
  struct statx sx;
  errno = 0;
  int r = statx(dirfd, path, flags, STATX_BASIC_STATS, &sx);
  if (r == 0 && !(sx.stx_mask & STATX_SIZE)) dt_out(" no-size-in-mask");
  out_stat(r, errno, (long long)sx.stx_size, sx.stx_mode, sx.stx_nlink);
}

static void ex_fstat(struct dt_ctx *c, const struct dt_op *op) {
  int fd = fd_of(c, op->v[0]), r;
  struct stat st;
  struct stat64 st64;
  errno = 0;
  switch (op->v[1]) {
  case 1: r = fstatat(fd, "", &st, AT_EMPTY_PATH); break;
  case 2: return do_statx(fd, "", AT_EMPTY_PATH);
  case 3:
    r = fstat64(fd, &st64);
    return out_stat(r, errno, (long long)st64.st_size, st64.st_mode, st64.st_nlink);
  default: r = fstat(fd, &st); break;
  }
  out_stat(r, errno, (long long)st.st_size, st.st_mode, st.st_nlink);
}

static void ex_stat(struct dt_ctx *c, const struct dt_op *op) {
  char path[PATH_MAX + 64], rel[32];
  struct stat st;
  int r;
  path_of(c, op->v[0], 0, path, sizeof path);
  path_of(c, op->v[0], 1, rel, sizeof rel);
  errno = 0;
  switch (op->v[1]) {
  case 1: r = lstat(path, &st); break;
  case 2: r = fstatat(c->dirfd, rel, &st, 0); break;
  case 3: return do_statx(AT_FDCWD, path, 0);
  case 4: r = stat(rel, &st); break;
  case 5: r = fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW); break;
  default: r = stat(path, &st); break;
  }
  out_stat(r, errno, (long long)st.st_size, st.st_mode, st.st_nlink);
}

static void ex_fsync(struct dt_ctx *c, const struct dt_op *op) {
  int fd = fd_of(c, op->v[0]), r;
  errno = 0;
  if (op->v[1] == 1) r = fdatasync(fd);
  else if (op->v[1] == 2) r = sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
  else r = fsync(fd);
  out_ret(r, errno);
}

static void ex_names(struct dt_ctx *c, const struct dt_op *op) {
  char a[PATH_MAX + 64], b[PATH_MAX + 64], ra[32], rb[32];
  int r;
  path_of(c, op->v[0], 0, a, sizeof a);
  path_of(c, op->v[0], 1, ra, sizeof ra);
  path_of(c, op->v[1], 0, b, sizeof b);
  path_of(c, op->v[1], 1, rb, sizeof rb);
  errno = 0;
  if (op->kind == DT_UNLINK) r = op->v[1] ? unlinkat(c->dirfd, ra, 0) : unlink(a);
  else if (op->kind == DT_LINK) r = link(a, b);
  else if (op->v[2] == 1) r = renameat(c->dirfd, ra, c->dirfd, rb);
  else if (op->v[2] == 2) r = renameat2(c->dirfd, ra, c->dirfd, rb, RENAME_NOREPLACE);
  else r = rename(a, b);
  out_ret(r, errno);
}

/* ---------------------------------------------------------------- stdio */

static const char *const fmodes[] = {"r", "r+", "w", "w+", "a", "a+", "wx"};
static void other_streams_before_stream(struct dt_ctx *c, int64_t s);

static void ex_fopen(struct dt_ctx *c, const struct dt_op *op) {
  char path[PATH_MAX + 64];
  int64_t s = op->v[0];
  const char *mode = fmodes[op->v[2] % 7];
  if (c->st[s]) { /* as DT_FCLOSE: an active stream is flushed first (its read-ahead is undefined) */
    if (c->st_dir[s]) dt_out(" [fflush prev=%d]", fflush(c->st[s]));
    dt_out(" [fclosed prev=%d]", fclose(c->st[s])), c->st[s] = NULL;
  }
  errno = 0;
  if (op->kind == DT_FOPEN) {
    path_of(c, op->v[1], (int)op->v[3], path, sizeof path);
    c->st[s] = op->v[3] ? fopen64(path, mode) : fopen(path, mode);
  } else {
    /* A stream over an O_APPEND descriptor opened without 'a': its writes land at the end, but glibc's
     * file streams keep counting from where they thought they were (ftell after a write is off by what
     * the append skipped), while cookie streams ask the descriptor. The tester opens such a stream in
     * append mode, which makes the position defined (the end after every write) on both sides.
     * The new stream is a handle of the descriptor's open file description, and glibc's fdopen in append
     * mode moves its offset: the active streams are flushed first (POSIX 2.5.1), as before any other use
     * of a handle (CI seed 455382517487: a read-ahead seek-back landed relative to the moved offset). */
    other_streams_before_stream(c, s);
    int fl = fcntl(fd_of(c, op->v[1]), F_GETFL);
    if (fl >= 0 && (fl & O_APPEND) && mode[0] != 'a') mode = strchr(mode, '+') ? "a+" : mode[0] == 'r' ? mode : "a";
    /* And an append-mode fdopen sets O_APPEND on a description that lacks it -- under the streams already
     * open on the file without it, whose glibc file streams then count from where they thought they wrote
     * (CI seed 692563333109, session 13: ftell 28,214 where the kernel's file had the record at 1..28,215; the
     * cookie stream said 28,215). Such an fdopen opens the stream in the same mode without 'a' instead. */
    else if (fl >= 0 && !(fl & O_APPEND) && mode[0] == 'a' && stream_on(c, fd_of(c, op->v[1]), 0))
      mode = strchr(mode, '+') ? "r+" : "w";
    int fd = dup(fd_of(c, op->v[1])); /* the stream owns its own fd: no double close */
    c->st[s] = fd < 0 ? NULL : fdopen(fd, mode);
    if (fd >= 0 && !c->st[s]) {
      int err = errno;
      close(fd);
      errno = err;
    }
  }
  c->st_dir[s] = 0;
  c->st_gen[s] = c->raw_gen;
  c->st_wronly[s] = !strchr(mode, '+') && mode[0] != 'r';
  c->st_append[s] = mode[0] == 'a';
  if (c->st[s]) dt_out(" = ok");
  else dt_out(" = NULL e=%s", err_name(errno));
}

/* C (7.21.5.3): output may not be directly followed by input without fflush or a positioning call, nor
 * input by output without a positioning call. glibc's file and cookie streams differ in that undefined
 * case, so the tester makes the sequence defined, identically in both runs. */
static void stdio_direction(struct dt_ctx *c, int64_t s, FILE *f, unsigned char dir) {
  if (c->st_dir[s] == 2 && dir == 1) dt_out(" [fflush=%d]", fflush(f));
  if (c->st_dir[s] == 1 && dir == 2) dt_out(" [fseek=%d]", fseek(f, 0, SEEK_CUR));
  c->st_dir[s] = dir;
}

/* POSIX 2.5.1 (handles of one open file description): before another handle is used, a stream must be
 * flushed (for an input stream fflush puts the descriptor's offset back at the stream's position); a
 * stream used after a handle moved the offset must be positioned first. glibc's file streams and cookie
 * streams buffer differently (block size, read-ahead), so the undefined cases differ; the tester follows
 * the rules, identically in both runs: writing streams are flushed before any raw descriptor operation
 * (the bytes reach the file at a defined point), every active stream before one that uses or moves a
 * file offset, and a stream is positioned at its descriptor's offset before use after such an operation. */
static int moves_offset(const struct dt_op *op) {
  switch (op->kind) {
  /* neither moves an offset nor changes a file: streams may keep their buffers across these */
  case DT_PREAD: case DT_PREADV: case DT_FSTAT: case DT_STAT: case DT_GETFL: case DT_READALL:
  case DT_MMAPREAD: case DT_FSYNC: return 0;
  case DT_PREADV2: return op->v[1] == -1;
  default: return 1; /* moves an offset or changes a file a stream may have buffered */
  }
}

static void handles_before_raw(struct dt_ctx *c, const struct dt_op *op) {
  int moves = moves_offset(op);
  for (int s = 0; s < DT_STREAM_SLOTS; s++)
    if (c->st[s] && (c->st_dir[s] == 2 || (moves && (c->st_dir[s] == 1 || c->st_dir[s] == 3)))) {
      dt_out(" [fflush st%d=%d]", s, fflush(c->st[s]));
      c->st_dir[s] = 0;
    }
  if (moves) c->raw_gen++;
}

/* The same rules between two streams (which may share an open file description through dup/fdopen):
 * every other active stream is flushed before this one is used, and counts as a handle that moved the
 * offset. */
static void other_streams_before_stream(struct dt_ctx *c, int64_t s) {
  for (int o = 0; o < DT_STREAM_SLOTS; o++)
    if (o != s && c->st[o] && c->st_dir[o]) {
      dt_out(" [fflush st%d=%d]", o, fflush(c->st[o]));
      c->st_dir[o] = 0;
      c->raw_gen++;
    }
}

static void handles_before_stream(struct dt_ctx *c, int64_t s, FILE *f) {
  other_streams_before_stream(c, s);
  if (c->st_gen[s] == c->raw_gen) return;
  c->st_gen[s] = c->raw_gen;
  off_t pos = lseek(fileno(f), 0, SEEK_CUR);
  if (pos >= 0) dt_out(" [fseek=%d]", fseeko(f, pos, SEEK_SET));
  c->st_dir[s] = c->st_wronly[s] ? 0 : 3; /* the positioning may have read ahead (see DT_FSEEK) */
}

static void ex_stdio(struct dt_ctx *c, const struct dt_op *op) {
  FILE *f = c->st[op->v[0]];
  int64_t len = op->v[1] > DT_LEN_MAX ? DT_LEN_MAX : op->v[1];
  if (!f) return dt_out(" = no-stream");
  /* Reading a write-only stream is a program error whose outcome glibc's file streams decide by request
   * size against the file's block size (a large read goes to the descriptor, a small one sets the error
   * indicator, and either may drop buffered output): not compared. */
  if ((op->kind == DT_FREAD || op->kind == DT_FGETS) && c->st_wronly[op->v[0]]) return dt_out(" = skipped (write-only stream)");
  handles_before_stream(c, op->v[0], f);
  if (op->kind == DT_FREAD || op->kind == DT_FGETS) stdio_direction(c, op->v[0], f, 1);
  if (op->kind == DT_FWRITE || op->kind == DT_FPUTS) stdio_direction(c, op->v[0], f, 2);
  errno = 0;
  switch (op->kind) {
  case DT_FREAD: {
    memset(c->rbuf, 0xA5, (size_t)len);
    size_t n = fread(c->rbuf, 1, (size_t)len, f);
    dt_out(" = %zu eof=%d err=%d h=%016llx", n, feof(f), ferror(f),
           (unsigned long long)hash_buf(c->rbuf, n));
    break;
  }
  case DT_FWRITE:
    fill_data(c->wbuf, len, op->v[2]);
    dt_out(" = %zu err=%d", fwrite(c->wbuf, 1, (size_t)len, f), ferror(f));
    break;
  case DT_FSEEK: {
    int r = fseek(f, op->v[1], (int)op->v[2]);
    out_ret(r, errno);
    /* Only a positioning that happened makes the next op defined. glibc may fill its buffer while it
     * positions (a seek to the end reads the last block): the descriptor's offset is then past the stream's
     * position until an fflush, which POSIX 2.5.1 asks for before another handle is used. */
    if (r == 0) c->st_dir[op->v[0]] = c->st_wronly[op->v[0]] ? 0 : 3;
    break;
  }
  case DT_FTELL: out_ret(ftell(f), errno); break;
  case DT_FFLUSH: {
    int r = fflush(f);
    out_ret(r, errno);
    if (r == 0 && (c->st_dir[op->v[0]] == 2 || c->st_dir[op->v[0]] == 3)) c->st_dir[op->v[0]] = 0;
    break;
  }
  case DT_FCLOSE:
    /* POSIX has fclose of a seekable input stream set the descriptor's offset to the stream's position;
     * glibc does not (its bug 12724, fixed and reverted), so an active stream is flushed first. That
     * includes one whose last use was output of nothing: a zero-length fputs after a positioning that read
     * ahead leaves glibc's read buffer in place (CI seed 446529792060), so the direction the tester
     * recorded is not enough to tell. Flushing a writing stream first is what fclose does anyway. */
    if (c->st_dir[op->v[0]]) dt_out(" [fflush=%d]", fflush(f));
    out_ret(fclose(f), errno), c->st[op->v[0]] = NULL;
    break;
  case DT_FGETS: {
    char *p = fgets((char *)c->rbuf, (int)len, f);
    if (!p) dt_out(" = NULL eof=%d err=%d", feof(f), ferror(f));
    else dt_out(" = %zu h=%016llx", strlen(p), (unsigned long long)hash_buf(p, strlen(p)));
    break;
  }
  case DT_FPUTS: {
    fill_text((char *)c->wbuf, len, op->v[2]);
    int r = fputs((char *)c->wbuf, f);
    dt_out(r >= 0 ? " = ok" : " = EOF err=%d", ferror(f));
    break;
  }
  default: {
    /* The size includes what the stream has handed to the descriptor so far, which is the stream's choice
     * (glibc's file streams buffer st_blksize bytes -- 2 MiB on huge tmpfs --, cookie streams less): a
     * writing stream is flushed first, so the size is defined (seed 878060071050, session 29: the kernel's
     * file stream held all 408 bytes of an fputs, the cookie stream had passed 93 on). */
    if (c->st_dir[op->v[0]] == 2) dt_out(" [fflush=%d]", fflush(f)), c->st_dir[op->v[0]] = 0;
    struct stat st;
    int r = fstat(fileno(f), &st);
    out_stat(r, errno, (long long)st.st_size, st.st_mode, st.st_nlink);
    break;
  }
  }
}

/* ---------------------------------------------------------------- transfers and mappings */

/* sendfile within one file over overlapping ranges copies in chunks whose size depends on the page
 * cache's state (holes vs populated pages give different chunks, hence different bytes, on the kernel
 * path alone), so its result is not defined: the length is cut to the part before the overlap. Both runs
 * see the same offsets and sizes, so they cut alike. */
static size_t sendfile_defined_len(int out, int in, long long in_off, size_t n) {
  struct stat so, si;
  if (fstat(out, &so) != 0 || fstat(in, &si) != 0) return n;
  if (so.st_dev != si.st_dev || so.st_ino != si.st_ino) return n;
  off_t from = in_off == -1 ? lseek(in, 0, SEEK_CUR) : (off_t)in_off;
  int fl = fcntl(out, F_GETFL);
  off_t to = fl != -1 && (fl & O_APPEND) ? so.st_size : lseek(out, 0, SEEK_CUR);
  if (from < 0 || to < 0) return n;
  unsigned long long gap = (unsigned long long)(to > from ? to - from : from - to);
  return gap < n ? (size_t)gap : n;
}

static void ex_transfer(struct dt_ctx *c, const struct dt_op *op) {
  ssize_t r;
  if (op->kind == DT_SENDFILE) {
    off_t off = op->v[2];
    size_t n = sendfile_defined_len(fd_of(c, op->v[0]), fd_of(c, op->v[1]), op->v[2], (size_t)op->v[3]);
    errno = 0;
    r = sendfile(fd_of(c, op->v[0]), fd_of(c, op->v[1]), op->v[2] == -1 ? NULL : &off, n);
    out_ret(r, errno);
    if (op->v[2] != -1) dt_out(" off=%lld", (long long)off);
    return;
  }
  off_t in = op->v[1], out = op->v[3];
  errno = 0;
  r = copy_file_range(fd_of(c, op->v[0]), op->v[1] == -1 ? NULL : &in, fd_of(c, op->v[2]),
                      op->v[3] == -1 ? NULL : &out, (size_t)op->v[4], 0);
  out_ret(r, errno);
  dt_out(" in=%lld out=%lld", (long long)in, (long long)out);
}

/* Touching a mapping can raise SIGBUS (pages past EOF, a full medium); that is a result to compare,
 * so it is caught around the tester's own loads and stores only -- a SIGBUS anywhere else still
 * kills the process and shows up as a crash. */
static sigjmp_buf bus_jmp;
static volatile sig_atomic_t bus_armed;

static void on_sigbus(int sig) {
  if (!bus_armed) {
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  siglongjmp(bus_jmp, 1);
}

static int guarded_access(struct dt_ctx *c, void *p, size_t len, int64_t off, int64_t n, int write,
                          uint64_t *hash) {
  static int installed;
  if (!installed) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigbus;
    sigaction(SIGBUS, &sa, NULL);
    installed = 1;
  }
  if (sigsetjmp(bus_jmp, 1)) {
    bus_armed = 0;
    return -1;
  }
  bus_armed = 1;
  if (write) memcpy((char *)p + off, c->wbuf, (size_t)n);
  else *hash = hash_buf(p, len);
  bus_armed = 0;
  return 0;
}

/* Maps the whole file (size from fstat, at most DT_MMAP_MAX) and hashes it, or stores seeded bytes
 * into it; mapping a file is a publish point for daxkit. */
static void ex_mmap(struct dt_ctx *c, const struct dt_op *op) {
  int fd = fd_of(c, op->v[0]);
  struct stat st;
  errno = 0;
  if (fstat(fd, &st) != 0) return out_ret(-1, errno);
  size_t len = (size_t)(st.st_size > DT_MMAP_MAX ? DT_MMAP_MAX : st.st_size);
  int write = op->kind == DT_MMAPWRITE;
  dt_out(" sz=%lld", (long long)st.st_size);
  void *p = mmap(NULL, len, write ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return dt_out(" = MAP_FAILED e=%s", err_name(errno));
  uint64_t h = 0;
  if (!write) {
    if (guarded_access(c, p, len, 0, 0, 0, &h) != 0) dt_out(" = SIGBUS");
    else dt_out(" = ok h=%016llx", (unsigned long long)h);
  } else {
    int64_t off = op->v[1] < 0 ? -op->v[1] : op->v[1], n = op->v[2];
    off %= (int64_t)len;
    if (n > (int64_t)len - off) n = (int64_t)len - off;
    fill_data(c->wbuf, n, op->v[3]);
    if (guarded_access(c, p, len, off, n, 1, &h) != 0) dt_out(" = SIGBUS");
    else dt_out(" = ok at=%lld n=%lld", (long long)off, (long long)n);
    if (op->v[4]) dt_out(" msync=%d", msync(p, len, MS_SYNC));
  }
  dt_out(" munmap=%d", munmap(p, len));
}

/* fstat then pread of the whole file through the fd: the content as this fd sees it. */
void dt_read_all(struct dt_ctx *c, int fd) {
  struct stat st;
  struct dt_hash h;
  errno = 0;
  if (fstat(fd, &st) != 0) return out_ret(-1, errno);
  dt_hash_init(&h);
  int64_t done = 0;
  while (done < st.st_size) {
    int64_t want = st.st_size - done > DT_LEN_MAX ? DT_LEN_MAX : st.st_size - done;
    ssize_t r = pread(fd, c->rbuf, (size_t)want, done);
    if (r <= 0) {
      dt_out(" short-at=%lld r=%zd e=%s", (long long)done, r, r < 0 ? err_name(errno) : "-");
      break;
    }
    dt_hash_update(&h, c->rbuf, (size_t)r);
    done += r;
  }
  dt_out(" = sz=%lld nl=%lu h=%016llx", (long long)st.st_size, (unsigned long)st.st_nlink,
         (unsigned long long)dt_hash_final(&h));
}

/* ---------------------------------------------------------------- dispatch */

void dt_exec(struct dt_ctx *c, const struct dt_op *op) {
  int stream_op = op->kind >= DT_FREAD && op->kind <= DT_FFSTAT;
  if (!stream_op && op->kind != DT_FOPEN && op->kind != DT_FDOPEN) handles_before_raw(c, op);
  switch (op->kind) {
  case DT_OPEN: return ex_open(c, op);
  case DT_CREAT: return ex_creat(c, op);
  case DT_CLOSE: return ex_close(c, op);
  case DT_DUP: case DT_DUP2: case DT_DUP3: case DT_DUPFD: return ex_dup(c, op);
  case DT_GETFL: case DT_SETFL: return ex_fcntl(c, op);
  case DT_READ: case DT_PREAD: case DT_READV: case DT_PREADV: case DT_PREADV2: return ex_read(c, op);
  case DT_WRITE: case DT_PWRITE: case DT_WRITEV: case DT_PWRITEV: case DT_PWRITEV2: return ex_write(c, op);
  case DT_LSEEK: return ex_lseek(c, op);
  case DT_FTRUNCATE: case DT_TRUNCATE: return ex_truncate(c, op);
  case DT_FALLOCATE: case DT_PFALLOCATE: return ex_fallocate(c, op);
  case DT_FSTAT: return ex_fstat(c, op);
  case DT_STAT: return ex_stat(c, op);
  case DT_FSYNC: return ex_fsync(c, op);
  case DT_RENAME: case DT_UNLINK: case DT_LINK: return ex_names(c, op);
  case DT_FOPEN: case DT_FDOPEN: return ex_fopen(c, op);
  case DT_SENDFILE: case DT_COPYRANGE: return ex_transfer(c, op);
  case DT_MMAPREAD: case DT_MMAPWRITE: return ex_mmap(c, op);
  case DT_READALL: return dt_read_all(c, fd_of(c, op->v[0]));
  default: return ex_stdio(c, op);
  }
}
