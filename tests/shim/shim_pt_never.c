/* Description: the read/write family's first look (session 29, shim/rw.c DK_RW: upath/internal.h
 * up_fd_never_held): a number the library never held anything on passes straight to libc -- and a number it holds
 * anything on now never does, whatever the number held before. Each case makes a socket pair and a pipe (numbers
 * never held: their calls pass through, nothing counted), closes one end, and opens a managed file, which the
 * kernel gives that number (the lowest free): its write and read must be the library's (appends +1, reads +1, no
 * pass-through). With DAXKIT_ADOPT_AFTER_IOS (lazy adoption) the open leaves the number pending: its write adopts
 * it. "threads": a thread made first (upath/fdtab.c up_program_threads_begin marks every free number of the
 * table vacated; a never-held number's calls skip that look -- docs/design-upath.md).
 *   sock   the socket's number given to a managed file
 *   pipe   the pipe's write end's number given to a managed file
 * argv[1]: managed directory; argv[2]: case; argv[3] (optional): "threads". */
#include <pthread.h>
#include <sys/socket.h>

#include "shim_test.h"

static unsigned long long counter(const char *name) { return st_json_counter(st_stats_cli_json(), name); }

static void *nothing(void *arg) { return arg; }

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s DIR sock|pipe [threads]\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1], *c = argv[2];
    bool sock = strcmp(c, "sock") == 0;
    st_watchdog(60);
    st_require_library();
    if (argc > 3 && strcmp(argv[3], "threads") == 0) {
        pthread_t t;
        CHECK(pthread_create(&t, NULL, nothing, NULL) == 0 && pthread_join(t, NULL) == 0, "pthread_create");
    }
    int p[2];
    if (sock) OK(socketpair(AF_UNIX, SOCK_STREAM, 0, p));
    else OK(pipe(p));
    int w = sock ? p[0] : p[1], r = sock ? p[1] : p[0];
    char buf[256], got[256];
    memset(buf, 'x', sizeof buf);
    unsigned long long a0 = counter("appends"), d0 = counter("reads"), t0 = counter("passthrough");
    for (int i = 0; i < 100; i++) {
        CHECK(write(w, buf, 64) == 64, "%s: write: %s", c, strerror(errno));
        CHECK(read(r, got, 64) == 64, "%s: read: %s", c, strerror(errno));
    }
    CHECK(counter("appends") == a0 && counter("reads") == d0 && counter("passthrough") == t0,
          "%s: the calls of a number never held moved the library's counters", c);
    /* the number given to a managed file: the library's from its open on */
    OK(close(w));
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, st_fmt("never_%s.dat", c));
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    CHECK(fd == w, "%s: the open got %d, not the closed end's %d: the case proves nothing", c, fd, w);
    CHECK(write(fd, buf, sizeof buf) == (ssize_t)sizeof buf, "%s: write to the file: %s", c, strerror(errno));
    CHECK(pread(fd, got, sizeof got, 0) == (ssize_t)sizeof got && memcmp(got, buf, sizeof got) == 0,
          "%s: pread of the file", c);
    CHECK(lseek(fd, 0, SEEK_SET) == 0, "%s: lseek", c);
    CHECK(read(fd, got, 16) == 16, "%s: read of the file", c);
    unsigned long long a = counter("appends") - a0, d = counter("reads") - d0, t = counter("passthrough") - t0;
    CHECK(a == 1 && d >= 2 && t == 0, "%s: the managed file's calls at a number a socket or pipe had: appends +%llu "
          "(expected 1), reads +%llu (expected 2), passthrough +%llu (expected 0) -- the library's no more?", c, a, d, t);
    OK(close(fd));
    OK(close(r));
    printf("ok: %s%s (appends +%llu, reads +%llu)\n", c, argc > 3 ? " threads" : "", a, d);
    return 0;
}
