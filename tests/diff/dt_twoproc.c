/* Description: dk_difftest_twoproc -- the differential tester's two-process side: two processes (fork)
 * take turns on one file, one op at a time in a seeded order, and every result is logged.
 *
 * Each sequence runs in D/t<seed>: a controller forks two workers, A and B, and hands each op of the op
 * list to its process over a pipe, waiting for the result before the next op (a token: the interleaving is
 * the op list's, identical on every run). Ops: open (plain, O_APPEND, O_RDONLY, O_TRUNC), close, pwrite,
 * write (at the descriptor's offset, or at the end under O_APPEND), seekend (lseek SEEK_END + a gap: the
 * next write goes past the end), lseek, read, pread, ftruncate, fsync, fstat and readall (fstat + pread of
 * the whole file), on three descriptor slots per process; slot 2 may be opened by the controller before the
 * fork ("preopen"), so A and B share that open file description (and its offset). Run it once plainly and
 * once under libdaxkit.so; the logs must be identical (run-diff.py does that with --tester and shrinks a
 * mismatch by deleting op lines).
 *
 * Without a discipline the processes share the file as unsynchronised programs would (only the token
 * orders them); what daxkit promises then is less than the kernel's (docs/guarantees.md, "Deviations":
 * other processes see appends at publish points, sizes are re-read at lock acquisitions and at a read at
 * the end, a truncation by another process can fault). Two disciplines hold the processes to what it does
 * promise:
 * --lock-at-switch: the contract for lock-disciplined programs. Each worker opens a descriptor of its own
 *   on the file at start (O_RDONLY|O_CREAT, never closed by ops) and the process that has the turn holds
 *   flock(LOCK_EX) on it: the turn passes by LOCK_UN (a publish point) in one process, then LOCK_EX (a size
 *   re-read) in the other (logged as "~ unlock" / "~ lock" lines). Must agree with the kernel in every mode.
 *   --lock-at-switch=fcntl: the same with a whole-file POSIX record lock (F_SETLKW, F_WRLCK; the descriptor
 *   O_RDWR) -- which the kernel drops when the process closes any descriptor of the file, as programs know
 *   (upath/reclock.c follows that); --lock-at-switch=ofd: an open file description lock (F_OFD_SETLKW).
 * --publish-at-switch: before the turn passes, the process that had it fsyncs its first open descriptor
 *   (a publish point; logged as a "~ publish" line), without locks: sizes stay as unsure as the doc says.
 * --grow-only: ftruncate never shrinks (the length becomes at least the size fstat reports to the process
 *   first; logged as "len'=") and open never passes O_TRUNC: leaves truncation by another process out.
 *
 *   dk_difftest_twoproc --dir D [--seed S] [--count K] [--ops N] [--publish-at-switch] [--keep]
 *   dk_difftest_twoproc --dir D --seed S --replay FILE        an explicit op list (one op a line)
 *   dk_difftest_twoproc --seed S --ops N --print-ops          the op list that seed S generates
 *   dk_difftest_twoproc --list DIR                            raw listing of DIR only
 * --exit-open: the last sequence's workers exit with their descriptors open (exit publishes); the driver
 * lists the directory from outside afterwards. --exclude shared,OP,...: no "preopen" (no descriptor shared
 * by the two processes), no ops of the kinds named. --final-only: op results are not logged (a worker's
 * death is): only the file the two leave is compared -- the claim "processes growing one file without
 * locks keep every byte, as with the kernel". --names (generation): also rename f <-> g, unlink either,
 * and open g now and then -- log rotation (rename, then a new f), a file removed or replaced while the
 * other process has it open. --mmap (generation): the program maps the file (MAP_SHARED, its size as fstat
 * says) and reads it whole, or stores a range clipped to the size. --fork (generation): a worker forks a
 * child that writes through an inherited descriptor (its shared offset) and exits. --plain-b: worker B runs
 * without the preload library (another program, not under daxkit; exec of this binary). --no-pos: the offset
 * after a read or write is not logged (review 12 finding 2 aside). Crash mode (session 13, docs/testing-diff.md
 * "Crash mode"): --crash[=both] (generation) puts "crash p=X" ops in the list -- X is SIGKILLed between two ops,
 * the survivor runs on, X's next op restarts X's program (exec: the library's start-up recovery);
 * --crash-fsync: the victim fsyncs its open descriptors before the kill; --recover-cli=PATH: `PATH recover
 * $DAXKIT_DIR` right after each kill; --crash-site=SITE:N[:P]: process P starts with DAXKIT_TEST_CRASH=SITE:N
 * (dies inside the library; crash-site.py compares it with two kernel runs). --exclusive (generation): the
 * file is open in one process at a time (an open while the other has descriptors becomes its close): for
 * DAXKIT_ATOMIC files, which one process routes at a time. Accepted and ignored for the
 * driver's sake: --exact-holes. Exit: 0 ran, 2
 * usage or setup error. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dt_exec.h"

enum { TP_SLOTS = 3, TP_SHARED_SLOT = 2, TP_OPS_MAX = 20000, TP_RESULT_MAX = 512, TP_OP_WAIT_MS = 60000 };
#define TP_FILE_MAX ((int64_t)3 << 20) /* offsets up to 3 MiB: crosses a 2 MiB region boundary */
#define TP_LEN_MAX ((int64_t)1 << 20)

/* X(id, name, fields) -- every op has p= (0 controller, 1 A, 2 B) first. */
#define TP_OPS(X)                          \
  X(PREOPEN, "preopen", "append")          \
  X(OPEN, "open", "fd flags name")         \
  X(CLOSE, "close", "fd")                  \
  X(PWRITE, "pwrite", "fd off len seed")   \
  X(WRITE, "write", "fd len seed")         \
  X(SEEKEND, "seekend", "fd gap")          \
  X(LSEEK, "lseek", "fd off")              \
  X(READ, "read", "fd len")                \
  X(PREAD, "pread", "fd off len")          \
  X(FTRUNCATE, "ftruncate", "fd len")      \
  X(FSYNC, "fsync", "fd")                  \
  X(FSTAT, "fstat", "fd")                  \
  X(READALL, "readall", "fd")              \
  X(RENAME, "rename", "from to")           \
  X(UNLINK, "unlink", "name")              \
  X(MMAPREAD, "mmap_read", "fd")           \
  X(MMAPWRITE, "mmap_write", "fd off len seed") \
  X(FORKWRITE, "fork_write", "fd len seed") \
  X(CRASH, "crash", "turn")

enum tp_kind {
#define X(id, name, fields) TP_##id,
  TP_OPS(X)
#undef X
  TP_KINDS,
  TP_PUBLISH = 100, /* internal: the fsync of --publish-at-switch */
  TP_FINISH,        /* internal: read every open descriptor, close it (or not: exit_open), exit */
  TP_LOCK,          /* internal: --lock-at-switch, flock(LOCK_EX) on the worker's lock descriptor */
  TP_UNLOCK,        /* internal: --lock-at-switch, flock(LOCK_UN) */
  TP_SYNCALL,       /* internal: --crash-fsync, fsync of every open descriptor before the kill */
};
static const char *const kind_name[] = {
#define X(id, name, fields) name,
    TP_OPS(X)
#undef X
};
static const char *const kind_fields[] = {
#define X(id, name, fields) fields,
    TP_OPS(X)
#undef X
};

struct tp_op {
  int kind, p;
  int64_t v[4];
};

/* open flags by index; O_TRUNC is rare in the generator. */
static const int open_flags[] = {O_RDWR | O_CREAT, O_RDWR | O_CREAT | O_APPEND, O_RDONLY, O_WRONLY | O_CREAT | O_APPEND,
                                 O_RDWR | O_CREAT | O_TRUNC};
enum { OPEN_FLAG_KINDS = sizeof open_flags / sizeof open_flags[0] };

/* ---------------------------------------------------------------- generator, format, parse */

static int64_t gen_len(uint64_t *s) {
  uint64_t r = dt_below(s, 100);
  if (r < 50) return 1 + (int64_t)dt_below(s, 512);
  if (r < 85) return 1 + (int64_t)dt_below(s, 64 << 10);
  if (r < 97) return 1 + (int64_t)dt_below(s, 512 << 10);
  return 1 + (int64_t)dt_below(s, TP_LEN_MAX);
}

static int64_t gen_off(uint64_t *s) {
  uint64_t r = dt_below(s, 10);
  if (r < 5) return (int64_t)dt_below(s, 64 << 10);
  if (r < 7) return ((int64_t)2 << 20) - 4096 + (int64_t)dt_below(s, 8192); /* around the 2 MiB boundary */
  return (int64_t)dt_below(s, (uint64_t)TP_FILE_MAX);
}

/* What shapes a generated list (the options --exclude, --names, --mmap, --fork, --crash, --exclusive). */
struct tp_gen {
  unsigned exclude;
  int names, mmaps, forks, crashes, exclusive;
};

static void generate(uint64_t seed, int n, const struct tp_gen *g, struct tp_op *ops) {
  unsigned exclude = g->exclude;
  int names = g->names, mmaps = g->mmaps, forks = g->forks, crashes = g->crashes;
  uint64_t s = seed * 0x2545F4914F6CDD1Dull + 0x7A11ull;
  int i = 0, p = 1 + (int)dt_below(&s, 2);
  unsigned open_mask[3] = {0, 0, 0}; /* per process: slots the generator expects open (a guess: no results) */
  /* --crash: one process killed at a seeded step, sometimes later the other too ("both in turn"); after a
   * kill the survivor runs 1-16 ops alone (its acknowledged writes must outlive the victim's recovery),
   * then the victim's next op restarts it. Drawn from a stream of their own: without --crash a seed's ops
   * are what they were. */
  uint64_t cs = seed * 0x9E3779B97F4A7C15ull + 0xC4A5ull;
  int crash_at[2] = {-1, -1}, crash_p[2] = {0, 0}, force_p = 0, force_until = -1;
  if (crashes && n >= 8) {
    crash_at[0] = n / 8 + (int)dt_below(&cs, (uint64_t)n / 2 + 1), crash_p[0] = 1 + (int)dt_below(&cs, 2);
    if (crashes > 1 || dt_below(&cs, 2))
      crash_at[1] = crash_at[0] + 4 + (int)dt_below(&cs, (uint64_t)n / 3 + 1), crash_p[1] = 3 - crash_p[0];
  }
  if (n > 0 && dt_below(&s, 3) == 0 && !(exclude & (1u << TP_PREOPEN)) && !g->exclusive) {
    ops[i++] = (struct tp_op){TP_PREOPEN, 0, {(int64_t)dt_below(&s, 2)}};
    open_mask[1] = open_mask[2] = 1u << TP_SHARED_SLOT;
  }
  /* Each process starts by opening slot 0 (plain or O_APPEND) so that most ops have a descriptor. */
  for (int q = 1; q <= 2 - (g->exclusive != 0) && i < n; q++) {
    ops[i++] = (struct tp_op){TP_OPEN, q, {0, (int64_t)dt_below(&s, 2)}};
    open_mask[q] |= 1u;
  }
  for (; i < n; i++) {
    int crashed = 0;
    for (int c = 0; c < 2; c++)
      if (i == crash_at[c]) {
        ops[i] = (struct tp_op){TP_CRASH, crash_p[c], {0}};
        open_mask[crash_p[c]] = 0, crashed = 1;
        p = force_p = 3 - crash_p[c], force_until = i + 1 + 1 + (int)dt_below(&cs, 16);
      }
    if (crashed) continue;
    if (dt_below(&s, 100) < 45) p = 3 - p; /* the turn passes */
    if (i < force_until) p = force_p;
    unsigned mask_before = open_mask[p];
    struct tp_op *o = &ops[i];
    memset(o, 0, sizeof *o);
    o->p = p;
    /* mostly an open slot: a closed one gives EBADF on both sides, a little of which is enough */
    int64_t fd = (int64_t)dt_below(&s, TP_SLOTS);
    for (int tries = 0; tries < 8 && !(open_mask[p] & (1u << fd)) && dt_below(&s, 20) != 0; tries++)
      fd = (int64_t)dt_below(&s, TP_SLOTS);
    uint64_t r = dt_below(&s, 100);
    if (!open_mask[p] && r >= 10) r = dt_below(&s, 6);
    /* --exclude: an excluded kind is drawn again (the kinds' share of r below, in order) */
    static const int first_r[] = {[TP_OPEN] = 0, [TP_CLOSE] = 6, [TP_PWRITE] = 10, [TP_WRITE] = 24, [TP_SEEKEND] = 42,
                                  [TP_LSEEK] = 48, [TP_READ] = 52, [TP_PREAD] = 60, [TP_FTRUNCATE] = 72,
                                  [TP_FSYNC] = 78, [TP_FSTAT] = 84, [TP_READALL] = 92};
    for (int tries = 0; tries < 64; tries++) {
      int kind = TP_READALL;
      for (int k = TP_OPEN; k < TP_READALL; k++)
        if ((int)r >= first_r[k] && (int)r < first_r[k + 1]) kind = k;
      if (!(exclude & (1u << kind))) break;
      r = dt_below(&s, 100);
    }
    if (r < 6) {
      o->kind = TP_OPEN, o->v[0] = fd, o->v[1] = dt_below(&s, 40) == 0 ? 4 : (int64_t)dt_below(&s, 4);
      if (open_mask[p] & (1u << fd)) o->v[0] = fd = (int64_t)dt_below(&s, TP_SLOTS);
      open_mask[p] |= 1u << fd;
    } else if (r < 10) {
      o->kind = TP_CLOSE, o->v[0] = fd, open_mask[p] &= ~(1u << fd);
    }
    else if (r < 24) o->kind = TP_PWRITE, o->v[0] = fd, o->v[1] = gen_off(&s), o->v[2] = gen_len(&s), o->v[3] = (int64_t)dt_rand(&s) >> 1;
    else if (r < 42) o->kind = TP_WRITE, o->v[0] = fd, o->v[1] = gen_len(&s), o->v[2] = (int64_t)dt_rand(&s) >> 1;
    else if (r < 48) o->kind = TP_SEEKEND, o->v[0] = fd, o->v[1] = dt_below(&s, 2) ? 0 : (int64_t)dt_below(&s, 256 << 10);
    else if (r < 52) o->kind = TP_LSEEK, o->v[0] = fd, o->v[1] = gen_off(&s);
    else if (r < 60) o->kind = TP_READ, o->v[0] = fd, o->v[1] = gen_len(&s);
    else if (r < 72) o->kind = TP_PREAD, o->v[0] = fd, o->v[1] = gen_off(&s), o->v[2] = gen_len(&s);
    else if (r < 78) o->kind = TP_FTRUNCATE, o->v[0] = fd, o->v[1] = dt_below(&s, 2) ? gen_off(&s) : (int64_t)dt_below(&s, 8192);
    else if (r < 84) o->kind = TP_FSYNC, o->v[0] = fd;
    else if (r < 92) o->kind = TP_FSTAT, o->v[0] = fd;
    else o->kind = TP_READALL, o->v[0] = fd;
    if (mmaps && dt_below(&s, 100) < 5) { /* the program maps the file: reads it, or stores into it */
      if (dt_below(&s, 2)) *o = (struct tp_op){TP_MMAPREAD, p, {fd}};
      else *o = (struct tp_op){TP_MMAPWRITE, p, {fd, gen_off(&s), gen_len(&s), (int64_t)dt_rand(&s) >> 1}};
    }
    if (forks && dt_below(&s, 100) < 4) *o = (struct tp_op){TP_FORKWRITE, p, {fd, gen_len(&s), (int64_t)dt_rand(&s) >> 1}};
    /* --names: rotation (rename f -> g, then f made anew), unlink of an open file, rename over it */
    if (names && o->kind == TP_OPEN && dt_below(&s, 4) == 0) o->v[2] = 1;
    if (names && dt_below(&s, 100) < 4) {
      int64_t a = (int64_t)dt_below(&s, 2);
      if (dt_below(&s, 3) == 0) *o = (struct tp_op){TP_UNLINK, p, {a}};
      else *o = (struct tp_op){TP_RENAME, p, {a, 1 - a}};
    }
    /* --exclusive: the file is open in one process at a time (a DAXKIT_ATOMIC file is routed for one
     * process; a second one's open waits): an open while the other has descriptors becomes its close */
    if (g->exclusive && o->kind == TP_OPEN && open_mask[3 - p]) {
      int q = 3 - p, slot = __builtin_ctz(open_mask[q]);
      open_mask[p] = mask_before;
      *o = (struct tp_op){TP_CLOSE, q, {slot}};
      open_mask[q] &= ~(1u << slot);
    }
  }
}

static void format_op(const struct tp_op *o, char *buf, size_t size) {
  int len = snprintf(buf, size, "%s p=%c", kind_name[o->kind], "CAB"[o->p]);
  const char *f = kind_fields[o->kind];
  for (int k = 0; *f && len < (int)size; k++) {
    size_t w = strcspn(f, " ");
    len += snprintf(buf + len, size - (size_t)len, " %.*s=%lld", (int)w, f, (long long)o->v[k]);
    f += w + (f[w] == ' ');
  }
}

/* Parses "name p=X field=value ...": fields by name, missing ones 0. Returns 0 or -1. */
static int parse_op(const char *line, struct tp_op *o) {
  char name[32];
  int used = 0;
  memset(o, 0, sizeof *o);
  if (sscanf(line, "%31s%n", name, &used) != 1) return -1;
  o->kind = -1;
  for (int k = 0; k < TP_KINDS; k++)
    if (!strcmp(name, kind_name[k])) o->kind = k;
  if (o->kind < 0) return fprintf(stderr, "dk_difftest_twoproc: unknown op '%s'\n", name), -1;
  const char *p = line + used;
  char key[32], val[32];
  int n;
  while (sscanf(p, " %31[^= \n]=%31s%n", key, val, &n) == 2) {
    p += n;
    if (!strcmp(key, "p")) {
      o->p = val[0] == 'A' ? 1 : val[0] == 'B' ? 2 : 0;
      continue;
    }
    const char *f = kind_fields[o->kind];
    for (int k = 0; *f; k++) {
      size_t w = strcspn(f, " ");
      if (strlen(key) == w && !strncmp(key, f, w)) o->v[k] = strtoll(val, NULL, 0);
      f += w + (f[w] == ' ');
    }
  }
  return 0;
}

static int parse_line(const char *line, void *op) { return parse_op(line, op); }

/* ---------------------------------------------------------------- the worker */

struct worker {
  int fd[TP_SLOTS];
  int lock_fd;    /* --lock-at-switch: the descriptor the worker locks, -1 without */
  int lock_kind;  /* 1 flock, 2 fcntl (POSIX record lock), 3 open file description lock */
  int grow_only;  /* --grow-only */
  const char *path;  /* the file "f"; name 1 is "g" in the same directory */
  const char *dir;
  unsigned char *rbuf, *wbuf;
};

static char result[TP_RESULT_MAX];
static int result_len;

static void res(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void res(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(result + result_len, sizeof result - (size_t)result_len, fmt, ap);
  va_end(ap);
  if (n > 0) result_len += n;
  if (result_len >= (int)sizeof result) result_len = (int)sizeof result - 1;
}

static void res_ret(long long r, int err) {
  if (r < 0) res(" = %lld e=%s", r, strerrorname_np(err) ? strerrorname_np(err) : "E?");
  else res(" = %lld", r);
}

static void fill(unsigned char *buf, int64_t len, int64_t seed) {
  uint64_t s = (uint64_t)seed ^ 0xD1B54A32D192ED03ull;
  int64_t i = 0;
  for (; i + 8 <= len; i += 8) {
    uint64_t w = dt_rand(&s);
    memcpy(buf + i, &w, 8);
  }
  for (uint64_t w = dt_rand(&s); i < len; i++, w >>= 8) buf[i] = (unsigned char)w;
}

static uint64_t hash(const void *p, size_t n) {
  struct dt_hash h;
  dt_hash_init(&h);
  dt_hash_update(&h, p, n);
  return dt_hash_final(&h);
}

/* Name 0 is the file "f" (w->path), any other "g" (a rotated log, a file renamed over "f"). */
static const char *name_path(struct worker *w, int64_t name) {
  static char buf[PATH_MAX + 64];
  if (name == 0) return w->path;
  snprintf(buf, sizeof buf, "%s/g", w->dir);
  return buf;
}

static int slot_fd(struct worker *w, int64_t slot) { return slot >= 0 && slot < TP_SLOTS ? w->fd[slot] : -1; }

/* The offset after a call, through the library (its view of the descriptor). */
static int no_pos; /* --no-pos */
static void res_pos(int fd) {
  if (!no_pos) res(" pos=%lld", (long long)lseek(fd, 0, SEEK_CUR));
}

static void read_all(struct worker *w, int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return res(" fstat e=%s", strerrorname_np(errno));
  struct dt_hash h;
  dt_hash_init(&h);
  int64_t got = 0;
  for (ssize_t r; (r = pread(fd, w->rbuf, TP_LEN_MAX, got)) > 0;) got += r, dt_hash_update(&h, w->rbuf, (size_t)r);
  res(" sz=%lld got=%lld h=%016llx", (long long)st.st_size, (long long)got, (unsigned long long)dt_hash_final(&h));
}

static void worker_exec(struct worker *w, const struct tp_op *o) {
  int fd = slot_fd(w, o->v[0]);
  long long r;
  errno = 0;
  switch (o->kind) {
  case TP_OPEN:
    if (fd >= 0) res(" (close=%d)", close(fd)), w->fd[o->v[0]] = -1;
    if (o->v[0] < 0 || o->v[0] >= TP_SLOTS || o->v[1] < 0 || o->v[1] >= OPEN_FLAG_KINDS) return res(" = bad");
    r = open(name_path(w, o->v[2]), open_flags[o->v[1]] & ~(w->grow_only ? O_TRUNC : 0), 0644);
    res(r >= 0 ? " = fd" : ""), r < 0 ? res_ret(r, errno) : (void)0;
    if (r >= 0) w->fd[o->v[0]] = (int)r;
    return;
  case TP_CLOSE:
    r = close(fd);
    res_ret(r, errno);
    if (fd >= 0) w->fd[o->v[0]] = -1;
    return;
  case TP_PWRITE:
    fill(w->wbuf, o->v[2], o->v[3]);
    r = pwrite(fd, w->wbuf, (size_t)o->v[2], o->v[1]);
    return res_ret(r, errno);
  case TP_WRITE:
    fill(w->wbuf, o->v[1], o->v[2]);
    r = write(fd, w->wbuf, (size_t)o->v[1]);
    res_ret(r, errno);
    return r >= 0 ? res_pos(fd) : (void)0;
  case TP_SEEKEND:
    r = lseek(fd, o->v[1], SEEK_END);
    return res_ret(r, errno);
  case TP_LSEEK:
    r = lseek(fd, o->v[1], SEEK_SET);
    return res_ret(r, errno);
  case TP_READ:
    r = read(fd, w->rbuf, (size_t)o->v[1]);
    res_ret(r, errno);
    if (r >= 0) res(" h=%016llx", (unsigned long long)hash(w->rbuf, (size_t)r)), res_pos(fd);
    return;
  case TP_PREAD:
    r = pread(fd, w->rbuf, (size_t)o->v[2], o->v[1]);
    res_ret(r, errno);
    if (r >= 0) res(" h=%016llx", (unsigned long long)hash(w->rbuf, (size_t)r));
    return;
  case TP_FTRUNCATE: {
    int64_t len = o->v[1];
    struct stat st;
    if (w->grow_only && fstat(fd, &st) == 0 && st.st_size > len) res(" len'=%lld", (long long)(len = st.st_size));
    r = ftruncate(fd, len);
    return res_ret(r, errno);
  }
  case TP_FSYNC:
  case TP_PUBLISH:
    r = fsync(fd);
    return res_ret(r, errno);
  case TP_FSTAT: {
    struct stat st;
    r = fstat(fd, &st);
    res_ret(r, errno);
    if (r == 0) res(" sz=%lld", (long long)st.st_size);
    return;
  }
  case TP_READALL:
    if (fd < 0) return res(" = -1 e=EBADF");
    return read_all(w, fd);
  case TP_RENAME: {
    char from[PATH_MAX + 64];
    snprintf(from, sizeof from, "%s", name_path(w, o->v[0]));
    r = rename(from, name_path(w, o->v[1]));
    return res_ret(r, errno);
  }
  case TP_UNLINK:
    r = unlink(name_path(w, o->v[0]));
    return res_ret(r, errno);
  case TP_FORKWRITE: { /* a child writes through the inherited descriptor (the shared offset) and exits */
    pid_t c = fork();
    if (c == 0) {
      fill(w->wbuf, o->v[1], o->v[2]);
      ssize_t n = write(fd, w->wbuf, (size_t)o->v[1]);
      exit(n == o->v[1] ? 0 : n < 0 ? 10 + (errno & 63) : 2);
    }
    int st = 0;
    if (c < 0 || waitpid(c, &st, 0) != c) return res(" = fork failed");
    res(" = child %s %d", WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    return res_pos(fd);
  }
  case TP_MMAPREAD:
  case TP_MMAPWRITE: { /* the program's own MAP_SHARED mapping of [0, size as fstat says) */
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) return res(" = -1 e=%s", strerrorname_np(errno));
    if (st.st_size == 0) return res(" = empty");
    int wr = o->kind == TP_MMAPWRITE;
    void *m = mmap(NULL, (size_t)st.st_size, wr ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) return res(" = -1 e=%s", strerrorname_np(errno));
    if (wr) { /* the range clipped to the size: a store past the end would be the kernel's SIGBUS */
      int64_t off = o->v[1] % st.st_size, len = o->v[2] < st.st_size - off ? o->v[2] : st.st_size - off;
      fill(w->wbuf, len, o->v[3]);
      memcpy((char *)m + off, w->wbuf, (size_t)len);
      res(" = %lld sz=%lld", (long long)len, (long long)st.st_size);
    } else {
      res(" = 0 sz=%lld h=%016llx", (long long)st.st_size, (unsigned long long)hash(m, (size_t)st.st_size));
    }
    munmap(m, (size_t)st.st_size);
    return;
  }
  }
  res(" = unknown op");
}

/* Message to a worker: the op. Reply: a length-prefixed result line. Raw system calls on the pipes: the
 * library under test sees only the file's calls. */
static int xfer(int fd, void *buf, size_t n, int out) {
  for (size_t done = 0; done < n;) {
    long r = syscall(out ? SYS_write : SYS_read, fd, (char *)buf + done, n - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    done += (size_t)r;
  }
  return 0;
}

static void reply(int out) {
  int len = result_len;
  if (xfer(out, &len, sizeof len, 1) || xfer(out, result, (size_t)len, 1)) _exit(3);
  result_len = 0;
}

static void worker_main(struct worker *w, int in, int out, int exit_open) {
  struct tp_op o;
  while (xfer(in, &o, sizeof o, 0) == 0) {
    if (o.kind == TP_FINISH) {
      for (int i = 0; i < TP_SLOTS; i++) {
        if (w->fd[i] < 0) continue;
        res(" fd%d", i);
        read_all(w, w->fd[i]);
        if (!exit_open) res(" close=%d", close(w->fd[i])), w->fd[i] = -1;
      }
      reply(out);
      exit(0); /* exit(), not _exit(): the library's exit path publishes, as in any program */
    }
    if (o.kind == TP_LOCK || o.kind == TP_UNLOCK) {
      long long r;
      if (w->lock_kind == 1) {
        r = flock(w->lock_fd, o.kind == TP_LOCK ? LOCK_EX : LOCK_UN);
      } else { /* the whole file; a POSIX lock also goes when the process closes any descriptor of the file */
        struct flock fl = {.l_type = o.kind == TP_LOCK ? F_WRLCK : F_UNLCK, .l_whence = SEEK_SET};
        r = fcntl(w->lock_fd, w->lock_kind == 2 ? F_SETLKW : F_OFD_SETLKW, &fl);
      }
      res_ret(r, errno);
    } else if (o.kind == TP_SYNCALL) { /* --crash-fsync: what posix mode promises to keep is what was fsynced */
      for (int i = 0; i < TP_SLOTS; i++)
        if (w->fd[i] >= 0) res(" fd%d", i), res_ret(fsync(w->fd[i]), errno);
    } else if (o.kind == TP_PUBLISH) {
      int fd = -1;
      for (int i = 0; i < TP_SLOTS && fd < 0; i++) fd = w->fd[i];
      struct tp_op f = {TP_PUBLISH, o.p, {0}};
      if (fd >= 0) {
        for (int i = 0; i < TP_SLOTS; i++)
          if (w->fd[i] == fd) f.v[0] = i;
        res(" fd=%d", (int)f.v[0]);
        worker_exec(w, &f);
      } else {
        res(" none open");
      }
    } else {
      worker_exec(w, &o);
    }
    reply(out);
  }
  exit(0);
}

/* ---------------------------------------------------------------- the controller */

struct proc {
  pid_t pid;
  int to, from; /* pipes: ops to the worker, results from it */
  int dead;
  int hung;     /* killed by the controller after TP_OP_WAIT_MS */
  int killed;   /* died by SIGKILL: a crash op's, or its own at a DAXKIT_TEST_CRASH site */
  int crashed;  /* crash mode: dead by a crash, restarted at its next op */
};

static int log_fd = 1;

static void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_line(const char *fmt, ...) {
  char line[TP_RESULT_MAX + 256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof line - 1) n = (int)sizeof line - 1;
  xfer(log_fd, line, (size_t)n, 1);
}

static const char *death(struct proc *pr) {
  static char why[64];
  int st;
  if (waitpid(pr->pid, &st, 0) != pr->pid) return "lost";
  pr->dead = 1;
  pr->killed = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL && !pr->hung;
  if (WIFSIGNALED(st)) snprintf(why, sizeof why, "died signal %s", sigabbrev_np(WTERMSIG(st)));
  else snprintf(why, sizeof why, "exited %d", WEXITSTATUS(st));
  return why;
}

/* Sends op to its worker and returns its result line; a dead or hung worker is logged as such. */
static const char *run_on(struct proc *pr, const struct tp_op *o) {
  static char buf[TP_RESULT_MAX + 64];
  int len;
  if (pr->dead) return " = worker gone";
  if (xfer(pr->to, (void *)o, sizeof *o, 1) != 0) return snprintf(buf, sizeof buf, " = worker %s", death(pr)), buf;
  struct pollfd pf = {pr->from, POLLIN, 0};
  if (poll(&pf, 1, TP_OP_WAIT_MS) == 0) {
    kill(pr->pid, SIGKILL);
    pr->hung = 1;
    return snprintf(buf, sizeof buf, " = worker hung (%d s; killed): %s", TP_OP_WAIT_MS / 1000, death(pr)), buf;
  }
  if (xfer(pr->from, &len, sizeof len, 0) != 0 || len < 0 || len >= TP_RESULT_MAX || xfer(pr->from, buf, (size_t)len, 0) != 0)
    return snprintf(buf, sizeof buf, " = worker %s", death(pr)), buf;
  buf[len] = 0;
  return buf;
}

static int plain_b;

struct args {
  const char *dir, *replay, *list;
  uint64_t seed;
  int count, ops, print_ops, keep, exit_open, publish_at_switch, lock_at_switch, grow_only, final_only, names, mmaps, forks;
  int crash, crash_fsync;   /* --crash[=both], --crash-fsync */
  int exclusive;            /* --exclusive (generation) */
  const char *recover_cli;  /* --recover-cli=PATH: `PATH recover DAXKIT_DIR` right after each crash */
  char crash_site[160];     /* --crash-site=SITE:N[:P]: "SITE:N" for DAXKIT_TEST_CRASH of process P's first start */
  int crash_site_p;
  unsigned exclude;
};

/* --plain-b: worker B runs without the preload library -- another program, not under daxkit, on the same
 * file: it execs this binary (the preload dropped from the environment) with its pipes and state in argv. */
static void exec_worker(struct worker *w, int in, int out, int exit_open, int preload, const char *crash_spec) {
  char args[8][PATH_MAX + 64];
  snprintf(args[0], sizeof args[0], "%d", in);
  snprintf(args[1], sizeof args[1], "%d", out);
  snprintf(args[2], sizeof args[2], "%s", w->path);
  snprintf(args[3], sizeof args[3], "%s", w->dir);
  snprintf(args[4], sizeof args[4], "%d", w->grow_only);
  snprintf(args[5], sizeof args[5], "%d", w->lock_kind);
  snprintf(args[6], sizeof args[6], "%d", w->fd[TP_SHARED_SLOT]);
  snprintf(args[7], sizeof args[7], "%d", exit_open);
  fcntl(in, F_SETFD, 0), fcntl(out, F_SETFD, 0);
  if (!preload) unsetenv("LD_PRELOAD");
  if (crash_spec) setenv("DAXKIT_TEST_CRASH", crash_spec, 1);
  else unsetenv("DAXKIT_TEST_CRASH");
  execl("/proc/self/exe", "dk_difftest_twoproc", "--worker", args[0], args[1], args[2], args[3], args[4], args[5],
        args[6], args[7], (char *)NULL);
  _exit(4);
}

static int worker_entry(char **argv) {
  static struct worker w;
  int in = atoi(argv[0]), out = atoi(argv[1]), exit_open = atoi(argv[7]);
  w.path = argv[2], w.dir = argv[3], w.grow_only = atoi(argv[4]), w.lock_kind = atoi(argv[5]);
  w.rbuf = malloc((size_t)TP_LEN_MAX), w.wbuf = malloc((size_t)TP_LEN_MAX);
  if (!w.rbuf || !w.wbuf) return 2;
  for (int i = 0; i < TP_SLOTS; i++) w.fd[i] = -1;
  w.fd[TP_SHARED_SLOT] = atoi(argv[6]);
  w.lock_fd = w.lock_kind ? open(w.path, (w.lock_kind == 1 ? O_RDONLY : O_RDWR) | O_CREAT, 0644) : -1;
  worker_main(&w, in, out, exit_open);
  return 0;
}


/* A worker: forked (the controller's image and library state), or, with exec set, a new program image --
 * without the preload library for --plain-b's B (plain), with it for a restart after a crash (the library
 * starts anew and recovers what the dead process left) and for --crash-site's victim (crash_spec). */
static int start_worker(struct proc *pr, struct worker *w, int shared_fd, int exit_open, int lock, int plain,
                        int exec, const char *crash_spec) {
  int to[2], from[2];
  if (pipe2(to, O_CLOEXEC) || pipe2(from, O_CLOEXEC)) return -1;
  pr->pid = fork();
  if (pr->pid < 0) return -1;
  if (pr->pid == 0) {
    close(to[1]), close(from[0]);
    if (plain || exec || crash_spec) {
      w->fd[TP_SHARED_SLOT] = shared_fd, w->lock_kind = lock;
      exec_worker(w, to[0], from[1], exit_open, !plain, crash_spec);
    }
    for (int i = 0; i < TP_SLOTS; i++) w->fd[i] = -1;
    w->fd[TP_SHARED_SLOT] = shared_fd;
    w->lock_kind = lock;
    w->lock_fd = lock ? open(w->path, (lock == 1 ? O_RDONLY : O_RDWR) | O_CREAT, 0644) : -1;
    worker_main(w, to[0], from[1], exit_open);
  }
  close(to[0]), close(from[1]);
  pr->to = to[1], pr->from = from[0], pr->dead = pr->hung = pr->killed = pr->crashed = 0;
  return 0;
}

/* --recover-cli: `daxkit recover` of the managed directories (DAXKIT_DIR; not run on the kernel side, which
 * has none: its line reads the same). Its output goes to stderr; the log gets its exit status. */
static const char *run_recover(const char *cli) {
  static char buf[64];
  const char *dirs = getenv("DAXKIT_DIR");
  if (!cli || !dirs || !*dirs) return " = 0";
  pid_t c = fork();
  if (c == 0) {
    char *argv[18] = {(char *)cli, "recover"}, list[PATH_MAX];
    int n = 2;
    snprintf(list, sizeof list, "%s", dirs);
    for (char *save = NULL, *t = strtok_r(list, ":", &save); t && n < 17; t = strtok_r(NULL, ":", &save)) argv[n++] = t;
    argv[n] = NULL;
    dup2(2, 1);
    unsetenv("LD_PRELOAD"), unsetenv("DAXKIT_TEST_CRASH");
    execv(cli, argv);
    _exit(127);
  }
  int st = 0;
  if (c < 0 || waitpid(c, &st, 0) != c) return " = fork failed";
  if (WIFEXITED(st)) snprintf(buf, sizeof buf, " = %d", WEXITSTATUS(st));
  else snprintf(buf, sizeof buf, " = signal %s", sigabbrev_np(WTERMSIG(st)));
  return buf;
}

static void start_both(const struct args *a, struct proc *pr, struct worker *w, int shared, int exit_open) {
  for (int q = 1; q <= 2; q++) {
    const char *spec = a->crash_site[0] && a->crash_site_p == q ? a->crash_site : NULL;
    if (start_worker(&pr[q], w, shared, exit_open, a->lock_at_switch, plain_b && q == 2, 0, spec) != 0)
      fprintf(stderr, "dk_difftest_twoproc: fork: %s\n", strerror(errno)), exit(2);
  }
}

/* The crashed process's program starts again (a new image: under daxkit the library's start-up recovery
 * runs), with no descriptor open; logged as "~ restart". */
static void restart(const struct args *a, struct proc *pr, int q, struct worker *w, int exit_open) {
  int rc = start_worker(pr, w, -1, exit_open, a->lock_at_switch, plain_b && q == 2, 1, NULL);
  log_line("~ restart p=%c = %s\n", "CAB"[q], rc == 0 ? "started" : strerror(errno));
}

/* After a crash (the crash op's kill, or a worker's own SIGKILL at a --crash-site): the process counts as
 * crashed -- its next op restarts it -- and --recover-cli recovers at once. */
static void after_crash(const struct args *a, struct proc *pr, int q, int *last) {
  pr->crashed = 1;
  close(pr->to), close(pr->from);
  pr->to = pr->from = -1;
  if (*last == q) *last = 0; /* a dead process neither publishes nor unlocks: its flock went with it */
  if (a->recover_cli) log_line("~ recover%s\n", run_recover(a->recover_cli));
}

static void run_seq(const struct args *a, uint64_t seed, const struct tp_op *ops, int n, int exit_open,
                    struct worker *w) {
  char dir[PATH_MAX + 32], abs[PATH_MAX], path[PATH_MAX + 64], text[256];
  if (!realpath(a->dir, abs)) fprintf(stderr, "dk_difftest_twoproc: %s: %s\n", a->dir, strerror(errno)), exit(2);
  snprintf(dir, sizeof dir, "%s/t%llu", abs, (unsigned long long)seed);
  dt_empty_dir(dir);
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) fprintf(stderr, "dk_difftest_twoproc: mkdir %s: %s\n", dir, strerror(errno)), exit(2);
  snprintf(path, sizeof path, "%s/f", dir);
  w->path = path, w->dir = dir;
  log_line("== seed %llu ops %d\n", (unsigned long long)seed, n);
  struct proc pr[3] = {{0}};
  int shared = -1, started = 0, last = 0, crash_mode = a->crash || a->crash_site[0];
  for (int i = 0; i < n; i++) crash_mode |= ops[i].kind == TP_CRASH; /* a replayed list: its crash ops */
  /* crash mode: a worker dead by SIGKILL (the crash op's, or its own at --crash-site) has crashed */
#define CRASH_CHECK(q) \
  do { if (crash_mode && pr[q].dead && pr[q].killed && !pr[q].crashed && pr[q].to >= 0) after_crash(a, &pr[q], q, &last); } while (0)
  for (int i = 0; i < n; i++) {
    const struct tp_op *o = &ops[i];
    format_op(o, text, sizeof text);
    if (o->p == 0 || o->kind == TP_PREOPEN) {
      if (started || o->kind != TP_PREOPEN || o->p != 0) {
        log_line("%d %s = skipped (controller ops come first)\n", i, text);
        continue;
      }
      if (shared >= 0) close(shared);
      shared = open(path, o->v[0] ? O_RDWR | O_CREAT | O_APPEND : O_RDWR | O_CREAT, 0644);
      log_line("%d %s = %s\n", i, text, shared >= 0 ? "fd" : strerrorname_np(errno));
      continue;
    }
    if (!started) {
      started = 1;
      start_both(a, pr, w, shared, exit_open);
      if (shared >= 0) close(shared), shared = -1;
    }
    /* a crash op kills between two ops (turn=0), or, with turn=1, once its process has taken the turn as for
     * an op of its own -- the place of an op it never ran (crash-site.py's kernel runs) */
    int take_turn = o->kind != TP_CRASH || o->v[0];
    if (o->kind != TP_CRASH && pr[o->p].crashed) restart(a, &pr[o->p], o->p, w, exit_open);
    if (take_turn) {
      if (a->publish_at_switch && last && last != o->p) {
        struct tp_op pub = {TP_PUBLISH, last, {0}};
        log_line("~ publish p=%c%s\n", "CAB"[last], run_on(&pr[last], &pub));
        CRASH_CHECK(last);
      }
      if (a->lock_at_switch && last != o->p) {
        struct tp_op un = {TP_UNLOCK, last, {0}}, lk = {TP_LOCK, o->p, {0}};
        if (last) {
          log_line("~ unlock p=%c%s\n", "CAB"[last], run_on(&pr[last], &un));
          CRASH_CHECK(last);
        }
        log_line("~ lock p=%c%s\n", "CAB"[o->p], run_on(&pr[o->p], &lk));
        CRASH_CHECK(o->p);
      }
      last = o->p;
    }
    if (o->kind == TP_CRASH) { /* SIGKILL between two ops: every op it ran has returned (is acknowledged) */
      struct proc *v = &pr[o->p];
      if (v->dead) {
        log_line("%d %s = gone\n", i, text);
        continue;
      }
      if (a->crash_fsync) {
        struct tp_op sy = {TP_SYNCALL, o->p, {0}};
        log_line("~ fsync p=%c%s\n", "CAB"[o->p], run_on(v, &sy));
      }
      if (!v->dead) kill(v->pid, SIGKILL), log_line("%d %s = %s\n", i, text, death(v));
      v->killed = 1;
      CRASH_CHECK(o->p);
      continue;
    }
    const char *r = run_on(&pr[o->p], o);
    log_line("%d %s%s\n", i, text, a->final_only && !strstr(r, "worker") ? "" : r);
    CRASH_CHECK(o->p);
  }
  if (!started) start_both(a, pr, w, shared, exit_open);
  if (shared >= 0) close(shared);
  /* crash mode: a process still dead is started once more, so that its recovery has run before the end */
  for (int q = 1; q <= 2; q++)
    if (pr[q].crashed) restart(a, &pr[q], q, w, exit_open);
#undef CRASH_CHECK
  /* Finish: the last process first (after its publish), then the other; each reads every descriptor it
   * has open and closes it; then the listings. */
  int first = last ? last : 1;
  for (int k = 0, q = first; k < 2; k++, q = 3 - q) {
    if (a->lock_at_switch && (k == 1 || !last)) { /* the last turn's process holds it; its exit lets it go */
      struct tp_op lk = {TP_LOCK, q, {0}};
      log_line("~ lock p=%c%s\n", "CAB"[q], run_on(&pr[q], &lk));
    }
    struct tp_op fin = {TP_FINISH, q, {0}};
    const char *r = run_on(&pr[q], &fin);
    log_line("F p=%c%s\n", "CAB"[q], a->final_only && !strstr(r, "worker") ? "" : r);
    if (!pr[q].dead) {
      const char *why = death(&pr[q]);
      if (strcmp(why, "exited 0")) log_line("F p=%c %s\n", "CAB"[q], why);
    }
    close(pr[q].to), close(pr[q].from);
  }
  dt_list_lib(dir, w->rbuf, TP_LEN_MAX, log_fd);
  if (exit_open) return;
  dt_list_raw(dir, w->rbuf, TP_LEN_MAX, 'R', log_fd);
  if (!a->keep) dt_empty_dir(dir), rmdir(dir);
}

static void usage(void) {
  fprintf(stderr, "usage: dk_difftest_twoproc --dir D [--seed S] [--count K] [--ops N] [--replay FILE] "
                  "[--lock-at-switch] [--publish-at-switch] [--grow-only] [--exclude shared] [--print-ops] [--keep] [--exit-open] "
                  "[--crash[=both]] [--crash-fsync] [--recover-cli=PATH] [--crash-site=SITE:N[:A|B]] [--exclusive] | --list DIR\n");
  exit(2);
}

static void parse_args(int argc, char **argv, struct args *a) {
  memset(a, 0, sizeof *a);
  a->seed = 1, a->count = 1, a->ops = 200;
  for (int i = 1; i < argc; i++) {
    const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(k, "--print-ops")) { a->print_ops = 1; continue; }
    if (!strcmp(k, "--keep")) { a->keep = 1; continue; }
    if (!strcmp(k, "--exit-open")) { a->exit_open = 1; continue; }
    if (!strcmp(k, "--publish-at-switch")) { a->publish_at_switch = 1; continue; }
    if (!strcmp(k, "--lock-at-switch")) { a->lock_at_switch = 1; continue; }
    if (!strcmp(k, "--lock-at-switch=fcntl")) { a->lock_at_switch = 2; continue; }
    if (!strcmp(k, "--lock-at-switch=ofd")) { a->lock_at_switch = 3; continue; }
    if (!strcmp(k, "--grow-only")) { a->grow_only = 1; continue; }
    if (!strcmp(k, "--final-only")) { a->final_only = 1; continue; }
    if (!strcmp(k, "--names")) { a->names = 1; continue; }
    if (!strcmp(k, "--mmap")) { a->mmaps = 1; continue; }
    if (!strcmp(k, "--fork")) { a->forks = 1; continue; }
    if (!strcmp(k, "--crash")) { a->crash = 1; continue; }
    if (!strcmp(k, "--crash=both")) { a->crash = 2; continue; }
    if (!strcmp(k, "--crash-fsync")) { a->crash_fsync = 1; continue; }
    if (!strcmp(k, "--exclusive")) { a->exclusive = 1; continue; }
    if (!strncmp(k, "--recover-cli=", 14)) { a->recover_cli = k + 14; continue; }
    if (!strncmp(k, "--crash-site=", 13)) {
      snprintf(a->crash_site, sizeof a->crash_site, "%s", k + 13);
      char *last = strrchr(a->crash_site, ':'), *first = strchr(a->crash_site, ':');
      a->crash_site_p = 1;
      if (!first) usage();
      if (last != first && (last[1] == 'A' || last[1] == 'B') && !last[2]) a->crash_site_p = last[1] == 'A' ? 1 : 2, *last = 0;
      continue;
    }
    if (!strcmp(k, "--exact-holes") || !strcmp(k, "--keep-going")) continue;
    if (!v) usage();
    i++;
    if (!strcmp(k, "--dir")) a->dir = v;
    else if (!strcmp(k, "--seed")) a->seed = strtoull(v, NULL, 0);
    else if (!strcmp(k, "--count")) a->count = atoi(v);
    else if (!strcmp(k, "--ops")) a->ops = atoi(v);
    else if (!strcmp(k, "--replay")) a->replay = v;
    else if (!strcmp(k, "--list")) a->list = v;
    else if (!strcmp(k, "--exclude")) {
      char list[256];
      snprintf(list, sizeof list, "%s", v);
      for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int kind = !strcmp(t, "shared") ? TP_PREOPEN : -1;
        for (int q = TP_OPEN; q < TP_KINDS && kind < 0; q++)
          if (!strcmp(t, kind_name[q])) kind = q;
        if (kind < 0) fprintf(stderr, "dk_difftest_twoproc: --exclude takes shared and op names\n"), exit(2);
        a->exclude |= 1u << kind;
      }
    }
    else usage();
  }
  if (a->ops < 0 || a->ops > TP_OPS_MAX || a->count < 1) usage();
  if (!a->dir && !a->print_ops && !a->list) usage();
}

int main(int argc, char **argv) {
  struct args a;
  static struct worker w;
  if (argc == 10 && !strcmp(argv[1], "--worker")) return worker_entry(argv + 2);
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--plain-b")) plain_b = 1, argv[i] = "--keep-going";
    else if (!strcmp(argv[i], "--no-pos")) no_pos = 1, argv[i] = "--keep-going";
  parse_args(argc, argv, &a);
  const struct tp_gen gen = {a.exclude, a.names, a.mmaps, a.forks, a.crash, a.exclusive};
  w.grow_only = a.grow_only;
  signal(SIGPIPE, SIG_IGN); /* a dead worker is logged, not fatal to the controller */
  w.rbuf = malloc((size_t)TP_LEN_MAX), w.wbuf = malloc((size_t)TP_LEN_MAX);
  struct tp_op *ops = calloc(TP_OPS_MAX, sizeof *ops);
  if (!w.rbuf || !w.wbuf || !ops) return fprintf(stderr, "dk_difftest_twoproc: out of memory\n"), 2;
  if (a.list) {
    /* the driver's after-exit listing: raw, with the line prefix the driver rewrites */
    dt_list_raw(a.list, w.rbuf, TP_LEN_MAX, 'R', log_fd);
    return 0;
  }
  if (a.print_ops) {
    char text[256];
    generate(a.seed, a.ops, &gen, ops);
    for (int i = 0; i < a.ops; i++) format_op(&ops[i], text, sizeof text), printf("%s\n", text);
    return 0;
  }
  if (a.replay) {
    int n = dt_load_oplist(a.replay, ops, sizeof *ops, TP_OPS_MAX, parse_line);
    if (n < 0) return 2;
    run_seq(&a, a.seed, ops, n, a.exit_open, &w);
    return 0;
  }
  for (int k = 0; k < a.count; k++) {
    generate(a.seed + (uint64_t)k, a.ops, &gen, ops);
    run_seq(&a, a.seed + (uint64_t)k, ops, a.ops, a.exit_open && k == a.count - 1, &w);
  }
  return 0;
}
