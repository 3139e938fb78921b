/* The executor's state and entry points (dt_exec.c). */
#ifndef DT_EXEC_H
#define DT_EXEC_H

#include <limits.h>
#include <stdio.h>
#include <sys/uio.h>

#include "dk_difftest.h"

struct dt_ctx {
  int fd[DT_FD_SLOTS];          /* -1: empty */
  FILE *st[DT_STREAM_SLOTS];    /* NULL: empty */
  unsigned char st_dir[DT_STREAM_SLOTS]; /* last data direction: 0 none, 1 input, 2 output, 3 positioned (may hold read-ahead) */
  unsigned st_gen[DT_STREAM_SLOTS];      /* raw_gen when the stream was last the active handle */
  unsigned raw_gen;                      /* raw descriptor operations so far */
  unsigned char st_wronly[DT_STREAM_SLOTS]; /* opened "w", "a" or "wx": reading it is not compared */
  unsigned char st_append[DT_STREAM_SLOTS]; /* opened "a" or "a+": its writes rely on O_APPEND */
  int dirfd;                    /* the sequence directory, for the *at calls */
  char dir[PATH_MAX + 32];         /* absolute path of the sequence directory */
  int exact_holes;              /* compare SEEK_DATA/SEEK_HOLE results exactly */
  unsigned char *rbuf, *wbuf;   /* DT_BUF_BYTES each */
  struct iovec iov[DT_IOV_MAX_TEST];
};

/* A streaming 64-bit hash (not cryptographic: it only has to change when a byte does). */
struct dt_hash {
  uint64_t h, pend, total;
  int npend;
};
void dt_hash_init(struct dt_hash *h);
void dt_hash_update(struct dt_hash *h, const void *data, size_t len);
uint64_t dt_hash_final(struct dt_hash *h);

/* Appends to the current log line; dt_flush writes it (raw write(2)) to log_fd. */
void dt_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void dt_flush(int log_fd);

/* Runs one op and appends its result to the current log line. */
void dt_exec(struct dt_ctx *c, const struct dt_op *op);
/* fstat + pread of the whole file behind fd; appends size, nlink and hash. */
void dt_read_all(struct dt_ctx *c, int fd);

#endif
