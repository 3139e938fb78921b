/* What both sides of the differential tester share (dk_difftest and dk_difftest_twoproc, session 13 --
 * they held copies of it, review 12 D1/D2): loading an op list, the directory listings with their file
 * digests, and emptying a sequence directory. Declared in dk_difftest.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dt_exec.h"

enum { NAMES_MAX = 256 };

int dt_load_oplist(const char *file, void *ops, size_t op_bytes, int max, int (*parse)(const char *line, void *op)) {
  FILE *f = fopen(file, "r");
  char line[1024];
  int n = 0;
  if (!f) return fprintf(stderr, "%s: %s\n", file, strerror(errno)), -1;
  while (fgets(line, sizeof line, f) && n < max) {
    char *p = line + strspn(line, " \t");
    if (*p == '#' || *p == '\n' || *p == 0) continue;
    if (parse(p, (char *)ops + (size_t)n * op_bytes) != 0) return fclose(f), -1;
    n++;
  }
  fclose(f);
  return n;
}

static int name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void list_line(int log_fd, char kind, const char *name, const struct stat *st, struct dt_hash *h) {
  dt_out("%c %s mode=%o sz=%lld nl=%lu h=%016llx\n", kind, name, st->st_mode, (long long)st->st_size,
         (unsigned long)st->st_nlink, (unsigned long long)dt_hash_final(h));
  dt_flush(log_fd);
}

/* The kernel's view: raw system calls, which no preload library can intercept. */
void dt_list_raw(const char *dir, unsigned char *buf, size_t buf_size, char kind, int log_fd) {
  char *names[NAMES_MAX], dents[16384];
  int n = 0, dfd = (int)syscall(SYS_openat, AT_FDCWD, dir, O_RDONLY | O_DIRECTORY);
  if (dfd < 0) return dt_out("%c cannot open directory e=%s\n", kind, strerrorname_np(errno)), dt_flush(log_fd);
  for (;;) {
    long got = syscall(SYS_getdents64, dfd, dents, sizeof dents);
    if (got <= 0) break;
    for (long off = 0; off < got;) {
      struct dirent64 *d = (struct dirent64 *)(dents + off);
      off += d->d_reclen;
      if (strcmp(d->d_name, ".") && strcmp(d->d_name, "..") && strcmp(d->d_name, ".daxkit") && n < NAMES_MAX)
        names[n++] = strdup(d->d_name);
    }
  }
  qsort(names, (size_t)n, sizeof names[0], name_cmp);
  for (int i = 0; i < n; i++) {
    struct stat st;
    struct dt_hash h;
    dt_hash_init(&h);
    if (syscall(SYS_newfstatat, dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) != 0) memset(&st, 0, sizeof st);
    int fd = S_ISREG(st.st_mode) ? (int)syscall(SYS_openat, dfd, names[i], O_RDONLY) : -1;
    for (long r; fd >= 0 && (r = syscall(SYS_read, fd, buf, buf_size)) > 0;) dt_hash_update(&h, buf, (size_t)r);
    if (fd >= 0) syscall(SYS_close, fd);
    list_line(log_fd, kind, names[i], &st, &h);
    free(names[i]);
  }
  syscall(SYS_close, dfd);
}

/* The program's view: opendir/readdir, lstat, open, read, close -- all through the library. */
void dt_list_lib(const char *dir, unsigned char *buf, size_t buf_size, int log_fd) {
  char *names[NAMES_MAX], path[PATH_MAX + 300];
  int n = 0;
  DIR *d = opendir(dir);
  if (!d) return dt_out("L cannot open directory e=%s\n", strerrorname_np(errno)), dt_flush(log_fd);
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, ".daxkit") && n < NAMES_MAX)
      names[n++] = strdup(e->d_name);
  closedir(d);
  qsort(names, (size_t)n, sizeof names[0], name_cmp);
  for (int i = 0; i < n; i++) {
    struct stat st;
    struct dt_hash h;
    dt_hash_init(&h);
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    if (lstat(path, &st) != 0) memset(&st, 0, sizeof st);
    int fd = S_ISREG(st.st_mode) ? open(path, O_RDONLY) : -1;
    for (ssize_t r; fd >= 0 && (r = read(fd, buf, buf_size)) > 0;) dt_hash_update(&h, buf, (size_t)r);
    if (fd >= 0) close(fd);
    list_line(log_fd, 'L', names[i], &st, &h);
    free(names[i]);
  }
}

/* Removes every entry of dir (flat: sequences create no subdirectories). */
void dt_empty_dir(const char *dir) {
  char path[PATH_MAX + 300];
  DIR *d = opendir(dir);
  if (!d) return;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (unlink(path) != 0) rmdir(path);
  }
  closedir(d);
}
