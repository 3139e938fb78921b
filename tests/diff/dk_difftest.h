/* dk_difftest -- shared definitions of the differential tester: the op table, the op record, the
 * generator and the executor. See dk_difftest.c for the overview and docs/testing-diff.md for usage. */
#ifndef DK_DIFFTEST_H
#define DK_DIFFTEST_H

#include <stdint.h>
#include <stdio.h>

/* Slots: ops name fds, streams and files by slot so that an op list stays meaningful after the
 * shrinker deletes ops (an op on an empty slot then fails with EBADF on both sides alike). */
enum {
  DT_FD_SLOTS = 8,      /* fds open at once, several per file */
  DT_STREAM_SLOTS = 4,  /* FILE * open at once */
  DT_NAMES = 5,         /* file names f0..f4 in the sequence directory */
  DT_FD_NEG = DT_FD_SLOTS,      /* fd spec: -1 */
  DT_FD_HIGH = DT_FD_SLOTS + 1, /* fd spec: a number that is never open */
  DT_FD_SPECS = DT_FD_SLOTS + 2,
  DT_FIELDS_MAX = 7,
  DT_IOV_MAX_TEST = 1030, /* > IOV_MAX (1024) so that EINVAL is reachable */
};

/* Largest single transfer and largest offset the generator produces: 4 MiB ops and files of a few
 * MiB keep one sequence of 200 ops under ~50 ms while crossing 2 MiB region boundaries. */
#define DT_LEN_MAX ((int64_t)4 << 20)
#define DT_BUF_BYTES ((size_t)DT_LEN_MAX + 4096)
#define DT_MMAP_MAX ((int64_t)16 << 20)

/* X(id, name, fields): fields are the names of the op's integer arguments, in order. An "api" field
 * picks the entry point: 0 the plain symbol, 1 its 64 variant (pread64, lseek64, ...), 2 the fortify
 * variant (__read_chk, __pread_chk) where there is one. */
#define DT_OPS(X)                                                                   \
  X(OPEN, "open", "slot name flags form")                                           \
  X(CREAT, "creat", "slot name form")                                               \
  X(CLOSE, "close", "fd")                                                           \
  X(DUP, "dup", "fd slot")                                                          \
  X(DUP2, "dup2", "fd slot")                                                        \
  X(DUP3, "dup3", "fd slot cloexec")                                                \
  X(DUPFD, "fcntl_dupfd", "fd slot min cloexec")                                    \
  X(GETFL, "fcntl_getfl", "fd")                                                     \
  X(SETFL, "fcntl_setfl", "fd append")                                              \
  X(READ, "read", "fd len api")                                                         \
  X(PREAD, "pread", "fd off len api")                                                   \
  X(READV, "readv", "fd len iovcnt seed")                                           \
  X(PREADV, "preadv", "fd off len iovcnt seed")                                     \
  X(PREADV2, "preadv2", "fd off len iovcnt flags seed")                             \
  X(WRITE, "write", "fd len seed")                                                  \
  X(PWRITE, "pwrite", "fd off len seed api")                                            \
  X(WRITEV, "writev", "fd len iovcnt seed")                                         \
  X(PWRITEV, "pwritev", "fd off len iovcnt seed")                                   \
  X(PWRITEV2, "pwritev2", "fd off len iovcnt flags seed")                           \
  X(LSEEK, "lseek", "fd off whence api")                                                \
  X(FTRUNCATE, "ftruncate", "fd len api")                                               \
  X(TRUNCATE, "truncate", "name len form")                                          \
  X(FALLOCATE, "fallocate", "fd mode off len api")                                      \
  X(PFALLOCATE, "posix_fallocate", "fd off len api")                                    \
  X(FSTAT, "fstat", "fd kind")                                                      \
  X(STAT, "stat", "name kind")                                                      \
  X(FSYNC, "fsync", "fd kind")                                                      \
  X(RENAME, "rename", "from to kind")                                               \
  X(UNLINK, "unlink", "name kind")                                                  \
  X(LINK, "link", "from to")                                                        \
  X(FOPEN, "fopen", "sslot name mode form")                                         \
  X(FDOPEN, "fdopen", "sslot fd mode")                                              \
  X(FREAD, "fread", "sslot len")                                                    \
  X(FWRITE, "fwrite", "sslot len seed")                                             \
  X(FSEEK, "fseek", "sslot off whence")                                             \
  X(FTELL, "ftell", "sslot")                                                        \
  X(FFLUSH, "fflush", "sslot")                                                      \
  X(FCLOSE, "fclose", "sslot")                                                      \
  X(FGETS, "fgets", "sslot len")                                                    \
  X(FPUTS, "fputs", "sslot len seed")                                               \
  X(FFSTAT, "fileno_fstat", "sslot")                                                \
  X(SENDFILE, "sendfile", "out in off len")                                         \
  X(COPYRANGE, "copy_file_range", "in inoff out outoff len")                        \
  X(MMAPREAD, "mmap_read", "fd")                                                    \
  X(MMAPWRITE, "mmap_write", "fd off len seed sync")                                \
  X(READALL, "pread_all", "fd")

enum dt_op_kind {
#define X(id, name, fields) DT_##id,
  DT_OPS(X)
#undef X
  DT_OP_KINDS
};

struct dt_op {
  enum dt_op_kind kind;
  int64_t v[DT_FIELDS_MAX];
};

/* Op classes that --exclude can leave out of generated sequences (e.g. while a known library defect in
 * one class is being fixed, so the other classes keep being tested). */
enum {
  DT_CLASS_STDIO = 1u << 0,    /* fopen ... fileno_fstat */
  DT_CLASS_MMAP = 1u << 1,     /* mmap_read, mmap_write */
  DT_CLASS_TRANSFER = 1u << 2, /* sendfile, copy_file_range */
  DT_CLASS_NAMES = 1u << 3,    /* rename, unlink, link */
};
/* Parses "stdio,mmap,..." into a class mask. Returns -1 on an unknown name. */
int dt_parse_classes(const char *list);

/* Generates `count` ops for `seed` into ops[], leaving out the classes in exclude_mask.
 * Deterministic: depends on (seed, count, exclude_mask) only. */
void dt_generate(uint64_t seed, int count, unsigned exclude_mask, struct dt_op *ops);
/* Formats an op as "name field=value ..." (no newline). Returns the length written. */
int dt_format(const struct dt_op *op, char *buf, size_t buf_size);
/* Parses a line written by dt_format. Returns 0, or -1 (with a message on stderr). */
int dt_parse(const char *line, struct dt_op *op);

/* splitmix64: a small seeded generator; every random choice and every data byte comes from it. */
static inline uint64_t dt_rand(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static inline uint64_t dt_below(uint64_t *state, uint64_t bound) {
  return bound == 0 ? 0 : dt_rand(state) % bound;
}

/* Shared by both testers (dt_files.c). dt_load_oplist: reads an op list (one op a line, '#' comments) into
 * ops[] (op_bytes each, at most max) with parse; returns the count, or -1 with a message on stderr.
 * dt_list_raw: one line per entry of dir ("KIND name mode= sz= nl= h="), read with raw system calls (the
 * kernel's view); dt_list_lib: the same ("L") through the file API (the program's view). dt_empty_dir: removes
 * every entry of a flat directory. */
int dt_load_oplist(const char *file, void *ops, size_t op_bytes, int max, int (*parse)(const char *line, void *op));
void dt_list_raw(const char *dir, unsigned char *buf, size_t buf_size, char kind, int log_fd);
void dt_list_lib(const char *dir, unsigned char *buf, size_t buf_size, int log_fd);
void dt_empty_dir(const char *dir);

#endif
