/* The op generator and the op text format.
 *
 * The generator keeps a rough model of the files (which names exist, their sizes, which slot points
 * to which file, with what access mode and position) so that it can aim offsets at EOF edges and
 * pick fds that mostly work. The model is only a bias: it never decides an expected result -- the
 * kernel run does that -- so being approximate (stdio buffering, failed ops) costs nothing. The op
 * list depends on the seed alone, never on what a run returned, so both sides run the same list. */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "dk_difftest.h"

static const char *const dt_names[DT_OP_KINDS] = {
#define X(id, name, fields) name,
    DT_OPS(X)
#undef X
};
static const char *const dt_fields[DT_OP_KINDS] = {
#define X(id, name, fields) fields,
    DT_OPS(X)
#undef X
};

enum { MODEL_INODES = 4096 };

struct model {
  unsigned exclude;                /* DT_CLASS_* left out */
  int name_ino[DT_NAMES];          /* -1: no such name */
  int64_t ino_size[MODEL_INODES];
  int inodes;
  struct { int ino; int acc; int append; int64_t pos; } fd[DT_FD_SLOTS]; /* ino -1: closed */
  int stream_ino[DT_STREAM_SLOTS];
  uint64_t rng;
};

/* ---------------------------------------------------------------- sizes and offsets */

/* Lengths biased to edges: 0, 1, page +/- 1, 2 MiB +/- 1, and a tail up to 4 MiB. */
static int64_t gen_len(struct model *m) {
  static const int64_t edges[] = {4095, 4096, 4097, 8191, 8192, 511, 512, 513};
  static const int64_t huge[] = {(2 << 20) - 1, 2 << 20, (2 << 20) + 1, DT_LEN_MAX};
  uint64_t r = dt_below(&m->rng, 100);
  if (r < 7) return 0;
  if (r < 15) return 1;
  if (r < 40) return 2 + (int64_t)dt_below(&m->rng, 63);
  if (r < 55) return edges[dt_below(&m->rng, sizeof edges / sizeof edges[0])];
  if (r < 78) return 1 + (int64_t)dt_below(&m->rng, 16384);
  if (r < 93) return 1 + (int64_t)dt_below(&m->rng, 256 << 10);
  if (r < 97) return huge[dt_below(&m->rng, sizeof huge / sizeof huge[0])];
  return 1 + (int64_t)dt_below(&m->rng, DT_LEN_MAX);
}

/* Offsets around EOF, page and 2 MiB boundaries, holes past EOF, and a few invalid ones. */
static int64_t gen_off(struct model *m, int64_t size) {
  static const int64_t big[] = {(2 << 20) - 1, 2 << 20, (2 << 20) + 1, (4 << 20) - 1, 4 << 20};
  uint64_t r = dt_below(&m->rng, 100);
  if (r < 10) return 0;
  if (r < 28) return size;
  if (r < 36) return size > 0 ? size - 1 : 1;
  if (r < 40) return size + 1;
  if (r < 55) return (int64_t)dt_below(&m->rng, (uint64_t)size + 1);
  if (r < 65) return (int64_t)dt_below(&m->rng, (uint64_t)size / 4096 + 3) * 4096 +
                     (int64_t)dt_below(&m->rng, 3) - 1 + (r & 1);
  if (r < 72) return big[dt_below(&m->rng, sizeof big / sizeof big[0])];
  if (r < 82) return size + (int64_t)dt_below(&m->rng, 64 << 10);
  if (r < 86) return (int64_t)dt_below(&m->rng, 5 << 20);
  if (r < 89) return -1;
  if (r < 90) return -4096;
  return (int64_t)dt_below(&m->rng, (uint64_t)size + 1);
}

/* ---------------------------------------------------------------- model helpers */

static int64_t *ino_size(struct model *m, int ino) {
  static int64_t none;
  none = 0;
  return ino >= 0 && ino < MODEL_INODES ? &m->ino_size[ino] : &none;
}

static int new_ino(struct model *m) {
  int ino = m->inodes < MODEL_INODES ? m->inodes++ : MODEL_INODES - 1;
  m->ino_size[ino] = 0;
  return ino;
}

/* An fd spec: mostly an open slot whose access mode suits the op (want: 0 any, 1 read, 2 write),
 * sometimes any slot (possibly empty or of the wrong mode), -1 or a never-open number. */
static int pick_fd_for(struct model *m, int want) {
  uint64_t r = dt_below(&m->rng, 100);
  if (r < 2) return DT_FD_NEG;
  if (r < 3) return DT_FD_HIGH;
  int start = (int)dt_below(&m->rng, DT_FD_SLOTS), any = -1;
  if (r < 7) return start;
  for (int i = 0; i < DT_FD_SLOTS; i++) {
    int s = (start + i) % DT_FD_SLOTS;
    if (m->fd[s].ino < 0) continue;
    if (any < 0) any = s;
    if ((want == 1 && m->fd[s].acc == O_WRONLY) || (want == 2 && m->fd[s].acc == O_RDONLY)) continue;
    return s;
  }
  return any >= 0 ? any : start;
}
static int pick_fd(struct model *m) { return pick_fd_for(m, 0); }

static int pick_free_slot(struct model *m) {
  int start = (int)dt_below(&m->rng, DT_FD_SLOTS);
  for (int i = 0; i < DT_FD_SLOTS; i++) {
    int s = (start + i) % DT_FD_SLOTS;
    if (m->fd[s].ino < 0) return s;
  }
  return start; /* all busy: the executor closes the old fd first */
}

static int pick_stream(struct model *m, int want_open) {
  int start = (int)dt_below(&m->rng, DT_STREAM_SLOTS);
  for (int i = 0; i < DT_STREAM_SLOTS; i++) {
    int s = (start + i) % DT_STREAM_SLOTS;
    if ((m->stream_ino[s] >= 0) == want_open) return s;
  }
  return start;
}

static int64_t fd_size(struct model *m, int spec) {
  return spec < DT_FD_SLOTS ? *ino_size(m, m->fd[spec].ino) : 0;
}

/* Records a write of len bytes at off (or at the position / EOF) in the model. */
static void model_write(struct model *m, int spec, int64_t off, int64_t len, int positional) {
  if (spec >= DT_FD_SLOTS || m->fd[spec].ino < 0 || m->fd[spec].acc == O_RDONLY) return;
  int64_t *size = ino_size(m, m->fd[spec].ino);
  int64_t at = m->fd[spec].append ? *size : positional ? off : m->fd[spec].pos;
  if (at < 0) return;
  if (at + len > *size) *size = at + len;
  if (!positional) m->fd[spec].pos = at + len;
}

/* ---------------------------------------------------------------- per-op generation */

static void gen_open(struct model *m, struct dt_op *op, int force_creat) {
  static const int acc[] = {O_RDONLY, O_WRONLY, O_RDWR, O_RDWR, O_RDWR};
  int slot = pick_free_slot(m), name = (int)dt_below(&m->rng, DT_NAMES);
  int flags = acc[dt_below(&m->rng, 5)];
  if (force_creat || dt_below(&m->rng, 100) < 65) flags |= O_CREAT;
  if ((flags & O_CREAT) && dt_below(&m->rng, 100) < 10) flags |= O_EXCL;
  if (dt_below(&m->rng, 100) < 8) flags |= O_TRUNC;
  if (dt_below(&m->rng, 100) < 25) flags |= O_APPEND;
  if (dt_below(&m->rng, 100) < 10) flags |= O_CLOEXEC;
  op->kind = DT_OPEN;
  op->v[0] = slot, op->v[1] = name, op->v[2] = flags, op->v[3] = (int64_t)dt_below(&m->rng, 5);
  int ino = m->name_ino[name];
  if ((ino >= 0 && (flags & O_EXCL)) || (ino < 0 && !(flags & O_CREAT))) return; /* fails */
  if (ino < 0) ino = m->name_ino[name] = new_ino(m);
  if (flags & O_TRUNC) *ino_size(m, ino) = 0;
  m->fd[slot].ino = ino, m->fd[slot].acc = flags & O_ACCMODE;
  m->fd[slot].append = !!(flags & O_APPEND), m->fd[slot].pos = 0;
}

static void gen_dup(struct model *m, struct dt_op *op, enum dt_op_kind kind) {
  int fd = pick_fd(m), slot = (int)dt_below(&m->rng, DT_FD_SLOTS);
  if (kind == DT_DUP || kind == DT_DUPFD) slot = pick_free_slot(m);
  if (kind == DT_DUP2 && dt_below(&m->rng, 100) < 10 && fd < DT_FD_SLOTS) slot = fd;
  op->kind = kind, op->v[0] = fd, op->v[1] = slot;
  if (kind == DT_DUP3) op->v[2] = (int64_t)dt_below(&m->rng, 2);
  if (kind == DT_DUPFD) op->v[2] = (int64_t)dt_below(&m->rng, 60), op->v[3] = (int64_t)dt_below(&m->rng, 2);
  if (fd < DT_FD_SLOTS && m->fd[fd].ino >= 0 && slot != fd) m->fd[slot] = m->fd[fd];
}

static int gen_iovcnt(struct model *m) {
  uint64_t r = dt_below(&m->rng, 100);
  if (r < 2) return 0;
  if (r < 3) return DT_IOV_MAX_TEST;
  if (r < 4) return -1;
  if (r < 5) return 1024;
  return 1 + (int)dt_below(&m->rng, 8);
}

static void gen_rw(struct model *m, struct dt_op *op, enum dt_op_kind kind) {
  int reading = kind == DT_READ || kind == DT_PREAD || kind == DT_READV || kind == DT_PREADV || kind == DT_PREADV2;
  int fd = pick_fd_for(m, reading ? 1 : 2);
  int64_t size = fd_size(m, fd), len = gen_len(m), off = gen_off(m, size);
  if (reading && size > 0 && dt_below(&m->rng, 2)) off = (int64_t)dt_below(&m->rng, (uint64_t)size);
  if ((kind == DT_PREADV2 || kind == DT_PWRITEV2) && dt_below(&m->rng, 4) == 0) off = -1; /* current position */
  int64_t seed = (int64_t)(dt_rand(&m->rng) >> 1);
  int n = 0;
  op->kind = kind, op->v[n++] = fd;
  switch (kind) {
  case DT_READ: op->v[n++] = len, op->v[n++] = (int64_t)dt_below(&m->rng, 4) == 0 ? 2 : 0; break;
  case DT_PREAD: op->v[n++] = off, op->v[n++] = len, op->v[n++] = (int64_t)dt_below(&m->rng, 3); break;
  case DT_READV: op->v[n++] = len, op->v[n++] = gen_iovcnt(m), op->v[n++] = seed; break;
  case DT_PREADV: op->v[n++] = off, op->v[n++] = len, op->v[n++] = gen_iovcnt(m), op->v[n++] = seed; break;
  case DT_PREADV2: {
    static const int64_t fl[] = {0, 0, 0, RWF_HIPRI, 0x40000000};
    op->v[n++] = off, op->v[n++] = len, op->v[n++] = gen_iovcnt(m);
    op->v[n++] = fl[dt_below(&m->rng, 5)], op->v[n++] = seed;
    break;
  }
  case DT_WRITE: op->v[n++] = len, op->v[n++] = seed; model_write(m, fd, 0, len, 0); break;
  case DT_PWRITE:
    op->v[n++] = off, op->v[n++] = len, op->v[n++] = seed, op->v[n++] = (int64_t)dt_below(&m->rng, 2);
    model_write(m, fd, off, len, 1);
    break;
  case DT_WRITEV:
    op->v[n++] = len, op->v[n++] = gen_iovcnt(m), op->v[n++] = seed;
    model_write(m, fd, 0, len, 0);
    break;
  case DT_PWRITEV:
    op->v[n++] = off, op->v[n++] = len, op->v[n++] = gen_iovcnt(m), op->v[n++] = seed;
    model_write(m, fd, off, len, 1);
    break;
  case DT_PWRITEV2: {
    static const int64_t fl[] = {0, 0, RWF_APPEND, RWF_APPEND, RWF_DSYNC, RWF_SYNC, 0x40000000};
    op->v[n++] = off, op->v[n++] = len, op->v[n++] = gen_iovcnt(m);
    op->v[n++] = fl[dt_below(&m->rng, 7)], op->v[n++] = seed;
    model_write(m, fd, off, len, off != -1 && op->v[4] != RWF_APPEND);
    break;
  }
  default: break;
  }
}

static void gen_lseek(struct model *m, struct dt_op *op) {
  static const int whence[] = {SEEK_SET, SEEK_SET, SEEK_CUR, SEEK_END, SEEK_END, SEEK_DATA, SEEK_HOLE, 5};
  int fd = pick_fd(m), w = whence[dt_below(&m->rng, 8)];
  int64_t size = fd_size(m, fd), off = gen_off(m, size);
  if (w == SEEK_END || w == SEEK_CUR) {
    int64_t pos = w == SEEK_END ? size : fd < DT_FD_SLOTS ? m->fd[fd].pos : 0;
    uint64_t r = dt_below(&m->rng, 6);
    off = r == 0 ? 0 : r == 1 ? -1 : r == 2 ? -(pos + 1) : r == 3 ? -pos : off - pos;
  }
  op->kind = DT_LSEEK, op->v[0] = fd, op->v[1] = off, op->v[2] = w, op->v[3] = (int64_t)dt_below(&m->rng, 2);
  if (fd < DT_FD_SLOTS && w <= SEEK_END) {
    int64_t base = w == SEEK_SET ? 0 : w == SEEK_CUR ? m->fd[fd].pos : size;
    if (base + off >= 0) m->fd[fd].pos = base + off;
  }
}

static void gen_truncate(struct model *m, struct dt_op *op, int by_fd) {
  int fd = pick_fd_for(m, 2), name = (int)dt_below(&m->rng, DT_NAMES);
  int ino = by_fd ? (fd < DT_FD_SLOTS ? m->fd[fd].ino : -1) : m->name_ino[name];
  int64_t size = *ino_size(m, ino);
  uint64_t r = dt_below(&m->rng, 100);
  int64_t len = r < 35 ? (int64_t)dt_below(&m->rng, (uint64_t)size + 1)
              : r < 42 ? 0 : r < 44 ? -1 : gen_off(m, size);
  if (len < 0 && r >= 47) len = 4096;
  if (by_fd) op->kind = DT_FTRUNCATE, op->v[0] = fd, op->v[1] = len, op->v[2] = (int64_t)dt_below(&m->rng, 2);
  else op->kind = DT_TRUNCATE, op->v[0] = name, op->v[1] = len, op->v[2] = (int64_t)dt_below(&m->rng, 2);
  if (ino >= 0 && len >= 0 && (!by_fd || m->fd[fd].acc != O_RDONLY)) *ino_size(m, ino) = len;
}

static void gen_fallocate(struct model *m, struct dt_op *op, int posix) {
  static const int64_t modes[] = {0, 0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                                  FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, FALLOC_FL_ZERO_RANGE,
                                  FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE};
  int fd = pick_fd_for(m, 2);
  int64_t size = fd_size(m, fd), off = gen_off(m, size), len = gen_len(m);
  int64_t mode = modes[dt_below(&m->rng, 8)];
  if (len == 0 && dt_below(&m->rng, 2)) len = 4096;
  int64_t api = (int64_t)dt_below(&m->rng, 2);
  if (posix) op->kind = DT_PFALLOCATE, op->v[0] = fd, op->v[1] = off, op->v[2] = len, op->v[3] = api, mode = 0;
  else op->kind = DT_FALLOCATE, op->v[0] = fd, op->v[1] = mode, op->v[2] = off, op->v[3] = len, op->v[4] = api;
  if (fd < DT_FD_SLOTS && m->fd[fd].ino >= 0 && !(mode & FALLOC_FL_KEEP_SIZE) && off >= 0 && len > 0 &&
      off + len > size && m->fd[fd].acc != O_RDONLY)
    *ino_size(m, m->fd[fd].ino) = off + len;
}

static void gen_names(struct model *m, struct dt_op *op, enum dt_op_kind kind) {
  int a = (int)dt_below(&m->rng, DT_NAMES), b = (int)dt_below(&m->rng, DT_NAMES);
  op->kind = kind, op->v[0] = a;
  if (kind == DT_UNLINK) { op->v[1] = (int64_t)dt_below(&m->rng, 2); m->name_ino[a] = -1; return; }
  op->v[1] = b;
  if (kind == DT_RENAME) {
    op->v[2] = (int64_t)dt_below(&m->rng, 3);
    if (a != b && m->name_ino[a] >= 0) m->name_ino[b] = m->name_ino[a], m->name_ino[a] = -1;
  } else if (m->name_ino[a] >= 0 && m->name_ino[b] < 0) {
    m->name_ino[b] = m->name_ino[a];
  }
}

static void gen_stdio(struct model *m, struct dt_op *op, uint64_t r) {
  int s = pick_stream(m, 1), len = (int)(gen_len(m) % (256 << 10));
  int64_t seed = (int64_t)(dt_rand(&m->rng) >> 1);
  op->v[0] = s;
  if (r < 8) {
    s = pick_stream(m, 0);
    int name = (int)dt_below(&m->rng, DT_NAMES), mode = (int)dt_below(&m->rng, 7);
    op->kind = DT_FOPEN, op->v[0] = s, op->v[1] = name, op->v[2] = mode, op->v[3] = (int64_t)dt_below(&m->rng, 2);
    if (m->name_ino[name] < 0 && mode >= 2) m->name_ino[name] = new_ino(m);
    if (mode == 2 || mode == 3) *ino_size(m, m->name_ino[name]) = 0;
    m->stream_ino[s] = m->name_ino[name];
  } else if (r < 12) {
    s = pick_stream(m, 0);
    op->kind = DT_FDOPEN, op->v[0] = s, op->v[1] = pick_fd(m), op->v[2] = (int64_t)dt_below(&m->rng, 7);
    m->stream_ino[s] = op->v[1] < DT_FD_SLOTS ? m->fd[op->v[1]].ino : -1;
  } else if (r < 22) op->kind = DT_FREAD, op->v[1] = len;
  else if (r < 32) op->kind = DT_FWRITE, op->v[1] = len, op->v[2] = seed;
  else if (r < 38) {
    static const int whence[] = {SEEK_SET, SEEK_CUR, SEEK_END, 9};
    op->kind = DT_FSEEK, op->v[1] = gen_off(m, *ino_size(m, m->stream_ino[s]));
    op->v[2] = whence[dt_below(&m->rng, 4)];
    if (op->v[2] != SEEK_SET) op->v[1] = (int64_t)dt_below(&m->rng, 9000) - 4500;
  } else if (r < 41) op->kind = DT_FTELL;
  else if (r < 45) op->kind = DT_FFLUSH;
  else if (r < 52) op->kind = DT_FCLOSE, m->stream_ino[s] = -1;
  else if (r < 58) op->kind = DT_FGETS, op->v[1] = 1 + (int64_t)dt_below(&m->rng, 300);
  else if (r < 64) op->kind = DT_FPUTS, op->v[1] = 1 + (int64_t)dt_below(&m->rng, 600), op->v[2] = seed;
  else op->kind = DT_FFSTAT;
}

static void gen_transfer(struct model *m, struct dt_op *op, int copy_range) {
  int a = pick_fd_for(m, 1), b = pick_fd_for(m, 2);
  int64_t len = gen_len(m);
  int64_t ia = dt_below(&m->rng, 3) ? gen_off(m, fd_size(m, a)) : -1;
  if (!copy_range) {
    op->kind = DT_SENDFILE, op->v[0] = b, op->v[1] = a, op->v[2] = ia, op->v[3] = len;
    model_write(m, b, 0, len, 0);
    return;
  }
  int64_t ob = dt_below(&m->rng, 3) ? gen_off(m, fd_size(m, b)) : -1;
  op->kind = DT_COPYRANGE, op->v[0] = a, op->v[1] = ia, op->v[2] = b, op->v[3] = ob, op->v[4] = len;
  model_write(m, b, ob, len, ob != -1);
}

/* Op mix in percent-like weights; data ops dominate, the rest each appear a few times per sequence. */
static void gen_one(struct model *m, struct dt_op *op) {
  memset(op, 0, sizeof *op);
  uint64_t r = dt_below(&m->rng, 1000);
  int fd = pick_fd(m), open_slots = 0;
  for (int i = 0; i < DT_FD_SLOTS; i++) open_slots += m->fd[i].ino >= 0;
  if (open_slots < 2 && r < 700) return gen_open(m, op, 1); /* keep fds to work on */
  if (r < 70) return gen_open(m, op, 0);
  if (r < 80) {
    op->kind = DT_CREAT, op->v[0] = pick_free_slot(m), op->v[1] = (int64_t)dt_below(&m->rng, DT_NAMES);
    op->v[2] = (int64_t)dt_below(&m->rng, 2);
    int ino = m->name_ino[op->v[1]] >= 0 ? m->name_ino[op->v[1]] : (m->name_ino[op->v[1]] = new_ino(m));
    *ino_size(m, ino) = 0;
    m->fd[op->v[0]].ino = ino, m->fd[op->v[0]].acc = O_WRONLY, m->fd[op->v[0]].append = 0, m->fd[op->v[0]].pos = 0;
    return;
  }
  if (r < 120) {
    op->kind = DT_CLOSE, op->v[0] = fd;
    if (fd < DT_FD_SLOTS) m->fd[fd].ino = -1;
    return;
  }
  if (r < 130) return gen_dup(m, op, DT_DUP);
  if (r < 140) return gen_dup(m, op, DT_DUP2);
  if (r < 146) return gen_dup(m, op, DT_DUP3);
  if (r < 152) return gen_dup(m, op, DT_DUPFD);
  if (r < 158) { op->kind = DT_GETFL, op->v[0] = fd; return; }
  if (r < 170) {
    op->kind = DT_SETFL, op->v[0] = fd, op->v[1] = (int64_t)dt_below(&m->rng, 2);
    if (fd < DT_FD_SLOTS) m->fd[fd].append = (int)op->v[1];
    return;
  }
  static const enum dt_op_kind rw[] = {DT_READ, DT_READ, DT_PREAD, DT_PREAD, DT_READV, DT_PREADV, DT_PREADV2,
                                       DT_WRITE, DT_WRITE, DT_WRITE, DT_PWRITE, DT_PWRITE, DT_WRITEV,
                                       DT_PWRITEV, DT_PWRITEV2, DT_PWRITEV2};
  if (r < 560) return gen_rw(m, op, rw[dt_below(&m->rng, sizeof rw / sizeof rw[0])]);
  if (r < 620) return gen_lseek(m, op);
  if (r < 645) return gen_truncate(m, op, 1);
  if (r < 655) return gen_truncate(m, op, 0);
  if (r < 670) return gen_fallocate(m, op, 0);
  if (r < 675) return gen_fallocate(m, op, 1);
  if (r < 700) { op->kind = DT_FSTAT, op->v[0] = fd, op->v[1] = (int64_t)dt_below(&m->rng, 4); return; }
  if (r < 715) {
    op->kind = DT_STAT, op->v[0] = (int64_t)dt_below(&m->rng, DT_NAMES), op->v[1] = (int64_t)dt_below(&m->rng, 6);
    return;
  }
  if (r < 735) { op->kind = DT_FSYNC, op->v[0] = fd, op->v[1] = (int64_t)dt_below(&m->rng, 3); return; }
  if (r < 767 && (m->exclude & DT_CLASS_NAMES)) return gen_one(m, op);
  if (r < 750) return gen_names(m, op, DT_RENAME);
  if (r < 762) return gen_names(m, op, DT_UNLINK);
  if (r < 767) return gen_names(m, op, DT_LINK);
  if (r < 880 && (m->exclude & DT_CLASS_STDIO)) return gen_one(m, op);
  if (r < 880) return gen_stdio(m, op, dt_below(&m->rng, 70));
  if (r < 915 && (m->exclude & DT_CLASS_TRANSFER)) return gen_one(m, op);
  if (r < 895) return gen_transfer(m, op, 0);
  if (r < 915) return gen_transfer(m, op, 1);
  if (r < 955 && (m->exclude & DT_CLASS_MMAP)) return gen_one(m, op);
  if (r < 935) { op->kind = DT_MMAPREAD, op->v[0] = pick_fd_for(m, 1); return; }
  if (r < 955) {
    fd = pick_fd_for(m, 1);
    op->kind = DT_MMAPWRITE, op->v[0] = fd, op->v[1] = gen_off(m, fd_size(m, fd));
    op->v[2] = gen_len(m), op->v[3] = (int64_t)(dt_rand(&m->rng) >> 1), op->v[4] = (int64_t)dt_below(&m->rng, 2);
    return;
  }
  op->kind = DT_READALL, op->v[0] = pick_fd_for(m, 1);
}

int dt_parse_classes(const char *list) {
  static const struct { const char *name; unsigned bit; } classes[] = {
      {"stdio", DT_CLASS_STDIO}, {"mmap", DT_CLASS_MMAP}, {"transfer", DT_CLASS_TRANSFER}, {"names", DT_CLASS_NAMES}};
  unsigned mask = 0;
  while (list && *list) {
    size_t w = strcspn(list, ","), i = 0;
    while (i < sizeof classes / sizeof classes[0] && (strlen(classes[i].name) != w || strncmp(classes[i].name, list, w)))
      i++;
    if (w > 0 && i == sizeof classes / sizeof classes[0]) return -1;
    if (w > 0) mask |= classes[i].bit;
    list += w + (list[w] == ',');
  }
  return (int)mask;
}

void dt_generate(uint64_t seed, int count, unsigned exclude_mask, struct dt_op *ops) {
  static struct model m; /* ~33 KiB: static keeps it off the stack */
  memset(&m, 0, sizeof m);
  m.exclude = exclude_mask;
  m.rng = seed * 0x2545F4914F6CDD1Dull + 1;
  for (int i = 0; i < DT_NAMES; i++) m.name_ino[i] = -1;
  for (int i = 0; i < DT_FD_SLOTS; i++) m.fd[i].ino = -1;
  for (int i = 0; i < DT_STREAM_SLOTS; i++) m.stream_ino[i] = -1;
  for (int i = 0; i < count; i++) gen_one(&m, &ops[i]);
}

/* ---------------------------------------------------------------- text format */

int dt_format(const struct dt_op *op, char *buf, size_t buf_size) {
  int n = snprintf(buf, buf_size, "%s", dt_names[op->kind]);
  const char *f = dt_fields[op->kind];
  for (int i = 0; *f && n < (int)buf_size; i++) {
    int w = (int)strcspn(f, " ");
    n += snprintf(buf + n, buf_size - (size_t)n, " %.*s=%lld", w, f, (long long)op->v[i]);
    f += w;
    while (*f == ' ') f++;
  }
  return n;
}

/* Fields that index a table must be in range: a replay file is input, not trusted. */
static int field_check(const char *f, int w, long long v) {
  if (w == 4 && strncmp(f, "slot", 4) == 0) return v >= 0 && v < DT_FD_SLOTS ? 0 : -1;
  if (w == 5 && strncmp(f, "sslot", 5) == 0) return v >= 0 && v < DT_STREAM_SLOTS ? 0 : -1;
  if ((w == 2 && strncmp(f, "fd", 2) == 0) || (w == 2 && strncmp(f, "in", 2) == 0) ||
      (w == 3 && strncmp(f, "out", 3) == 0))
    return v >= 0 && v < DT_FD_SPECS ? 0 : -1;
  if ((w == 4 && strncmp(f, "name", 4) == 0) || (w == 4 && strncmp(f, "from", 4) == 0) ||
      (w == 2 && strncmp(f, "to", 2) == 0))
    return v >= 0 && v < DT_NAMES ? 0 : -1;
  return 0;
}

int dt_parse(const char *line, struct dt_op *op) {
  char name[64];
  int used = 0;
  memset(op, 0, sizeof *op);
  if (sscanf(line, "%63s%n", name, &used) != 1) return -1;
  int k = 0;
  while (k < DT_OP_KINDS && strcmp(dt_names[k], name) != 0) k++;
  if (k == DT_OP_KINDS) {
    fprintf(stderr, "dk_difftest: unknown op '%s' in: %s\n", name, line);
    return -1;
  }
  op->kind = (enum dt_op_kind)k;
  const char *p = line + used, *f = dt_fields[k];
  for (int i = 0; *f; i++) {
    int w = (int)strcspn(f, " "), got = 0;
    long long v;
    char key[32];
    if (sscanf(p, " %31[^=]=%lld%n", key, &v, &got) != 2 || strncmp(key, f, (size_t)w) != 0 ||
        key[w] != 0) {
      fprintf(stderr, "dk_difftest: expected field '%.*s' in: %s\n", w, f, line);
      return -1;
    }
    if (field_check(f, w, v) != 0) {
      fprintf(stderr, "dk_difftest: field '%.*s' out of range in: %s\n", w, f, line);
      return -1;
    }
    op->v[i] = v;
    p += got;
    f += w;
    while (*f == ' ') f++;
  }
  return 0;
}
