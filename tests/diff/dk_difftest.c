/* Description: dk_difftest -- one side of daxkit's differential tester.
 *
 * Runs a seeded random sequence of the file calls daxkit intercepts (open/creat/close, dup*, fcntl,
 * read/pread/readv/preadv/preadv2, write/pwrite/writev/pwritev/pwritev2, lseek, truncate, fallocate,
 * stat family, fsync, rename/unlink/link, stdio, sendfile, copy_file_range, mmap) in a directory and
 * writes a canonical log: one line per op, then the content of every fd still open, then a listing of
 * every file read twice -- through the file API (the library's view) and through raw system calls
 * (the kernel's view, which must agree after close). Run it once plainly and once under
 * libdaxkit.so; the logs must be identical. run-diff.py does that, and shrinks failures.
 *
 *   dk_difftest --dir D [--seed S] [--count K] [--ops N]      K sequences, seeds S..S+K-1
 *   dk_difftest --dir D --seed S --replay FILE                 an explicit op list (one op a line)
 *   dk_difftest --seed S --ops N --print-ops                   the op list that seed S generates
 *   dk_difftest --list DIR                                     raw listing of DIR only
 * Options: --exclude CLASSES (stdio,mmap,transfer,names: leave those op classes out of generated
 * sequences), --exact-holes (compare SEEK_DATA/SEEK_HOLE exactly), --keep (leave the files),
 * --exit-open (the last sequence ends with its fds and streams still open and its files kept: the
 * process exits with unflushed stdio buffers and unpublished appends; the driver then lists the
 * directory from outside, which checks what the library publishes at exit).
 * Each sequence runs in D/t<seed>, created empty. Exit: 0 ran, 2 usage or setup error. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dt_exec.h"

enum { OPS_MAX = 100000 };

struct args {
  const char *dir, *replay, *list;
  uint64_t seed;
  int count, ops, print_ops, keep, exact_holes, exit_open;
  unsigned exclude;
};

static int log_fd = 1;

static void usage(void) {
  fprintf(stderr, "usage: dk_difftest --dir D [--seed S] [--count K] [--ops N] [--replay FILE] "
                  "[--print-ops] [--exclude CLASSES] [--exact-holes] [--keep] [--exit-open] | --list DIR\n");
  exit(2);
}

static void parse_args(int argc, char **argv, struct args *a) {
  memset(a, 0, sizeof *a);
  a->seed = 1, a->count = 1, a->ops = 200;
  for (int i = 1; i < argc; i++) {
    const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(k, "--print-ops")) { a->print_ops = 1; continue; }
    if (!strcmp(k, "--keep")) { a->keep = 1; continue; }
    if (!strcmp(k, "--exact-holes")) { a->exact_holes = 1; continue; }
    if (!strcmp(k, "--exit-open")) { a->exit_open = 1; continue; }
    if (!v) usage();
    i++;
    if (!strcmp(k, "--dir")) a->dir = v;
    else if (!strcmp(k, "--seed")) a->seed = strtoull(v, NULL, 0);
    else if (!strcmp(k, "--count")) a->count = atoi(v);
    else if (!strcmp(k, "--ops")) a->ops = atoi(v);
    else if (!strcmp(k, "--replay")) a->replay = v;
    else if (!strcmp(k, "--list")) a->list = v;
    else if (!strcmp(k, "--exclude")) {
      int mask = dt_parse_classes(v);
      if (mask < 0) fprintf(stderr, "dk_difftest: --exclude takes stdio,mmap,transfer,names\n"), exit(2);
      a->exclude = (unsigned)mask;
    }
    else usage();
  }
  if (a->ops < 0 || a->ops > OPS_MAX || a->count < 1) usage();
  if (!a->dir && !a->print_ops && !a->list) usage();
}

/* ---------------------------------------------------------------- one sequence */

static int setup_seq(struct dt_ctx *c, const char *base, uint64_t seed) {
  char abs[PATH_MAX];
  if (!realpath(base, abs)) return fprintf(stderr, "dk_difftest: %s: %s\n", base, strerror(errno)), -1;
  snprintf(c->dir, sizeof c->dir, "%s/t%llu", abs, (unsigned long long)seed);
  dt_empty_dir(c->dir);
  if (mkdir(c->dir, 0755) != 0 && errno != EEXIST)
    return fprintf(stderr, "dk_difftest: mkdir %s: %s\n", c->dir, strerror(errno)), -1;
  c->dirfd = open(c->dir, O_RDONLY | O_DIRECTORY);
  if (c->dirfd < 0 || chdir(c->dir) != 0)
    return fprintf(stderr, "dk_difftest: open %s: %s\n", c->dir, strerror(errno)), -1;
  for (int i = 0; i < DT_FD_SLOTS; i++) c->fd[i] = -1;
  for (int i = 0; i < DT_STREAM_SLOTS; i++) c->st[i] = NULL, c->st_dir[i] = 0, c->st_gen[i] = 0;
  c->raw_gen = 0;
  return 0;
}

/* Final state: what every open fd sees, then closes, then both listings. With exit_open nothing is
 * closed and the raw listing is left to the driver, after the process has exited. */
static void finish_seq(struct dt_ctx *c, int keep, int exit_open) {
  /* What a stream still buffers is in the file only after a flush (glibc's file and cookie streams buffer
   * differently after a positioning: CI seed 454735868000), so the descriptors' view is taken after one --
   * or, when the streams stay open for exit to flush, left to the listing after exit. */
  int streams_open = 0;
  for (int i = 0; i < DT_STREAM_SLOTS; i++) {
    if (!c->st[i]) continue;
    streams_open = 1;
    if (!exit_open) dt_out("F st%d fflush=%d\n", i, fflush(c->st[i]));
  }
  for (int i = 0; i < DT_FD_SLOTS; i++) {
    if (c->fd[i] < 0) continue;
    dt_out("F fd%d", i);
    if (exit_open && streams_open) {
      dt_out(" left open (streams open: checked after exit)\n"), dt_flush(log_fd);
      continue;
    }
    dt_read_all(c, c->fd[i]);
    if (exit_open) {
      dt_out(" left open\n"), dt_flush(log_fd);
      continue;
    }
    dt_out(" close=%d\n", close(c->fd[i]));
    dt_flush(log_fd);
    c->fd[i] = -1;
  }
  if (exit_open) {
    dt_list_lib(c->dir, c->rbuf, DT_LEN_MAX, log_fd);
    return;
  }
  for (int i = 0; i < DT_STREAM_SLOTS; i++) {
    if (!c->st[i]) continue;
    dt_out("F st%d fclose=%d\n", i, fclose(c->st[i]));
    dt_flush(log_fd);
    c->st[i] = NULL;
  }
  dt_list_lib(c->dir, c->rbuf, DT_LEN_MAX, log_fd);
  dt_list_raw(c->dir, c->rbuf, DT_LEN_MAX, 'R', log_fd);
  close(c->dirfd);
  if (chdir("/") != 0) perror("chdir /");
  if (!keep) {
    dt_empty_dir(c->dir);
    rmdir(c->dir);
  }
}

static void run_seq(struct dt_ctx *c, uint64_t seed, const struct dt_op *ops, int n, int keep, int exit_open) {
  char text[512];
  dt_out("== seed %llu ops %d\n", (unsigned long long)seed, n);
  dt_flush(log_fd);
  for (int i = 0; i < n; i++) {
    dt_format(&ops[i], text, sizeof text);
    dt_out("%d %s", i, text);
    dt_exec(c, &ops[i]);
    dt_out("\n");
    dt_flush(log_fd);
  }
  finish_seq(c, keep, exit_open);
}

static int parse_line(const char *line, void *op) { return dt_parse(line, op); }

int main(int argc, char **argv) {
  struct args a;
  static struct dt_ctx c;
  parse_args(argc, argv, &a);
  c.rbuf = malloc(DT_BUF_BYTES);
  c.wbuf = malloc(DT_BUF_BYTES);
  struct dt_op *ops = calloc(OPS_MAX, sizeof *ops);
  if (!c.rbuf || !c.wbuf || !ops) return fprintf(stderr, "dk_difftest: out of memory\n"), 2;
  c.exact_holes = a.exact_holes;
  if (a.list) return dt_list_raw(a.list, c.rbuf, DT_LEN_MAX, 'R', log_fd), 0;
  if (a.print_ops) {
    char text[512];
    dt_generate(a.seed, a.ops, a.exclude, ops);
    for (int i = 0; i < a.ops; i++) dt_format(&ops[i], text, sizeof text), printf("%s\n", text);
    return 0;
  }
  if (a.replay) {
    int n = dt_load_oplist(a.replay, ops, sizeof *ops, OPS_MAX, parse_line);
    if (n < 0 || setup_seq(&c, a.dir, a.seed) != 0) return 2;
    run_seq(&c, a.seed, ops, n, a.keep, a.exit_open);
    return 0;
  }
  for (int k = 0; k < a.count; k++) {
    uint64_t seed = a.seed + (uint64_t)k;
    dt_generate(seed, a.ops, a.exclude, ops);
    if (setup_seq(&c, a.dir, seed) != 0) return 2;
    run_seq(&c, seed, ops, a.ops, a.keep, a.exit_open && k == a.count - 1);
  }
  return 0;
}
