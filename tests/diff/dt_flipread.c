/* Description: a deliberately wrong "library" for the differential tester's self-test.
 *
 * Preloaded in place of libdaxkit.so, it flips the first byte returned by pread()/pread64() on
 * regular files whose path contains DK_FLIP_MATCH (default "/managed/"), so run-diff.py must
 * report a mismatch and shrink it to a handful of ops. Everything else passes through. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);

static int fd_matches(int fd) {
  char link[64], path[PATH_MAX];
  const char *match = getenv("DK_FLIP_MATCH");
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return 0;
  path[n] = 0;
  return strstr(path, match && *match ? match : "/managed/") != NULL;
}

static ssize_t flip(ssize_t r, int fd, void *buf) {
  if (r > 0 && fd_matches(fd)) ((unsigned char *)buf)[0] ^= 0x01;
  return r;
}

ssize_t pread(int fd, void *buf, size_t n, off_t off) {
  static pread_fn real;
  if (!real) real = (pread_fn)dlsym(RTLD_NEXT, "pread");
  return flip(real(fd, buf, n, off), fd, buf);
}

ssize_t pread64(int fd, void *buf, size_t n, off_t off) {
  static pread_fn real;
  if (!real) real = (pread_fn)dlsym(RTLD_NEXT, "pread64");
  return flip(real(fd, buf, n, off), fd, buf);
}
