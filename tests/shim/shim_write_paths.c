/* Description: which path served each write (io.c). Two fast paths repeat the conditions of the full forms'
 * first served case (session 27's final read): write_op (posix and sync modes: no atomic engine, no size limit,
 * no program view, inside the mapping limit) before write_op_full, and up_io_write (a posix overwrite of
 * published, mapped bytes on a medium whose overwrites are stores) before io_write_full. A change to one copy of
 * a condition and not the other serves a write the full form must -- a strict write unlogged, a handler's write
 * into a file its thread is changing, a size limit not applied -- often with the same bytes in the file, so the
 * differential tester does not see it. Each case here makes one write that one condition must send to the full
 * path (or none: the served case) and checks its count, the bytes read back, and the counters write_op_full and
 * io_write_full (one increment each at the full forms' entry): the exact path. Cases by SET:
 *   posix   (DAXKIT_ATOMIC=*.atom DAXKIT_ATOMIC_MMAP=*.amap) served overwrite (write and pwrite): 0 0; O_APPEND: 0 1;
 *           past the end: 0 1; O_DSYNC: 0 1; a DAXKIT_ATOMIC file: 1 0; a program view of another file live:
 *           1 0 (an append then: 0 1); past UP_MAP_MAX_BYTES: 1 0; a finite RLIMIT_FSIZE: 1 1, and 0 0 again
 *           once it is lifted
 *   sync    (DAXKIT_MODE=sync) overwrite: 0 1
 *   strict  (DAXKIT_MODE=strict) overwrite: 1 0 (write_op_full; strict logs and stages it, its checkpoint applies)
 *   pagecache (a page-cache medium: XFS) overwrite: 0 1 (the kernel's pwrite)
 *   handler (DAXKIT_TEST_CRASH=raise:10:publish.before_clear:2) a signal handler's overwrite of published, mapped
 *           bytes inside its thread's publish of the file (f->mu held): 0 1, served by the kernel (io_nested_by_kernel)
 * Left out: a write of more than DK_MAX_RW_BYTES (2 GiB of memory) and a read-only mapping (no read-write
 * descriptor to be had: not as root).
 * Usage: shim_write_paths DIR SET. Exit 0 pass, 1 fail, 77 skip. */
#include <sys/resource.h>
#include <sys/uio.h>

#include "shim_test.h"
#include "upath/internal.h" /* UP_MAP_MAX_BYTES */

#define FILE_BYTES (256u << 10)
#define PAGE 4096u

static char dir[PATH_MAX];
static uint64_t before[DK_C_COUNT], after[DK_C_COUNT];
static int cases;

static void snap(uint64_t *v) { CHECK(st_stats(getpid(), v), "no stats file (the library is not loaded?)"); }
static long delta(enum dk_counter c) { return (long)(after[c] - before[c]); }

static void fill(char *buf, size_t n, char c) { memset(buf, c, n); }

/* The bytes at [off, off+n) read back through the library are all `c`. */
static void expect_bytes(const char *name, int fd, uint64_t off, size_t n, char c) {
    static char got[PAGE];
    CHECK(n <= sizeof got, "%s: check of %zu bytes", name, n);
    ssize_t r = pread(fd, got, n, (off_t)off);
    CHECK(r == (ssize_t)n, "%s: read back %zd of %zu bytes at %llu (%s)", name, r, n, (unsigned long long)off,
          strerror(errno));
    for (size_t i = 0; i < n; i++)
        CHECK(got[i] == c, "%s: byte %llu is 0x%02x, not the write's 0x%02x", name, (unsigned long long)(off + i),
              (unsigned char)got[i], (unsigned char)c);
}

/* After one write: its count `r` (want `want`), the counters' change (want wof, iwf). */
static void expect_path(const char *name, ssize_t r, ssize_t want, long wof, long iwf) {
    int e = errno;
    snap(after);
    CHECK(r == want, "%s: the write returned %zd (%s), expected %zd", name, r, r < 0 ? strerror(e) : "-", want);
    long got_wof = delta(DK_C_write_op_full), got_iwf = delta(DK_C_io_write_full);
    printf("%-28s returned %zd  write_op_full +%ld  io_write_full +%ld\n", name, r, got_wof, got_iwf);
    if (got_wof != wof || got_iwf != iwf)
        FAIL("%s: write_op_full +%ld (expected +%ld), io_write_full +%ld (expected +%ld): %s%s", name, got_wof, wof,
             got_iwf, iwf,
             got_wof < wof   ? "write_op's fast path served a write write_op_full must (a condition missing from its copy) "
             : got_wof > wof ? "write_op's fast path declined a write it serves (a condition added to one copy only) "
                             : "",
             got_iwf < iwf   ? "up_io_write's fast path served a write io_write_full must (a condition missing from its copy)"
             : got_iwf > iwf ? "the write reached io_write_full (a condition added to up_io_write's copy only, or write_op's missing)"
                             : "");
    cases++;
}

/* A file of FILE_BYTES published (written and fsynced), then overwritten until a write is served fast -- the
 * library maps a file after a few of its calls (DAXKIT_MAP_AFTER_IOS) -- when `fast` (the set serves some). */
static int prepared(const char *name, bool fast, int oflags) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, name);
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC | oflags, 0644));
    static char buf[FILE_BYTES];
    fill(buf, sizeof buf, 'p');
    CHECK(write(fd, buf, sizeof buf) == (ssize_t)sizeof buf, "%s: the first write", name);
    OK(fsync(fd));
    for (int i = 0; i < 64; i++) {
        snap(before);
        CHECK(pwrite(fd, buf, PAGE, 0) == (ssize_t)PAGE, "%s: warm-up write", name);
        snap(after);
        if (fast && !delta(DK_C_write_op_full) && !delta(DK_C_io_write_full)) return fd;
        if (!fast && i >= 16) return fd;
    }
    FAIL("%s: 64 overwrites of published bytes and none served by the fast paths (not mapped?)", name);
}

static void one_pwrite(const char *name, int fd, uint64_t off, size_t n, char c, long wof, long iwf) {
    static char buf[PAGE];
    fill(buf, n, c);
    snap(before);
    ssize_t r = pwrite(fd, buf, n, (off_t)off);
    expect_path(name, r, (ssize_t)n, wof, iwf);
    expect_bytes(name, fd, off, n, c);
}

/* A write() of n bytes `c` through wfd (its offset, or the end: O_APPEND) that must land at `at` (read back
 * through rfd). */
static void one_write(const char *name, int wfd, int rfd, uint64_t at, size_t n, char c, long wof, long iwf) {
    static char buf[PAGE];
    fill(buf, n, c);
    snap(before);
    ssize_t r = write(wfd, buf, n);
    expect_path(name, r, (ssize_t)n, wof, iwf);
    expect_bytes(name, rfd, at, n, c);
}

static void set_posix(void) {
    int fd = prepared("f", true, 0);
    one_pwrite("overwrite (pwrite)", fd, PAGE, PAGE, 'a', 0, 0);
    OK(lseek(fd, 2 * PAGE, SEEK_SET));
    one_write("overwrite (write)", fd, fd, 2 * PAGE, 100, 'w', 0, 0);

    /* up_io_write's refusals, through write_op's fast path */
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "f");
    int afd = OK(open(path, O_WRONLY | O_APPEND));
    uint64_t size = (uint64_t)st_fsize(fd);
    one_write("append (O_APPEND)", afd, fd, size, 100, 'n', 0, 1);
    size += 100;
    one_pwrite("past the end", fd, size, 100, 'e', 0, 1);
    size += 100;
    one_pwrite("across the end", fd, size - 50, 100, 'x', 0, 1);
    size += 50;
    int sfd = OK(open(path, O_RDWR | O_DSYNC));
    one_pwrite("overwrite (O_DSYNC)", sfd, 0, PAGE, 's', 0, 1);
    OK(close(sfd));
    one_pwrite("overwrite again", fd, 0, PAGE, 'b', 0, 0);

    /* write_op's refusals */
    int tfd = prepared("t.atom", false, 0);
    one_pwrite("DAXKIT_ATOMIC file", tfd, PAGE, PAGE, 't', 1, 0);
    OK(close(tfd));

    int vfd = prepared("v.amap", false, 0);
    snap(before);
    char *view = mmap(NULL, FILE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, vfd, 0);
    CHECK(view != MAP_FAILED, "mmap of v.amap: %s", strerror(errno));
    snap(after);
    if (!delta(DK_C_atomic_mmap_wp)) {
        NOTE("DAXKIT_ATOMIC_MMAP: the view of v.amap was not made failure-atomic here (atomic_mmap_kernel +%ld): "
             "the view cases are not run", delta(DK_C_atomic_mmap_kernel));
    } else {
        one_pwrite("view live: overwrite", fd, PAGE, PAGE, 'v', 1, 0);
        one_write("view live: append", afd, fd, size, 100, 'q', 0, 1);
        size += 100;
    }
    OK(munmap(view, FILE_BYTES));
    OK(close(vfd));
    one_pwrite("view gone: overwrite", fd, PAGE, PAGE, 'c', 0, 0);

    int bfd = prepared("big", true, 0);
    one_pwrite("past UP_MAP_MAX_BYTES", bfd, UP_MAP_MAX_BYTES - 50, 100, 'm', 1, 0);
    OK(close(bfd));

    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {1ull << 30, RLIM_INFINITY};
    OK(setrlimit(RLIMIT_FSIZE, &rl));
    one_pwrite("RLIMIT_FSIZE 1 GiB", fd, 0, PAGE, 'l', 1, 1);
    rl.rlim_cur = RLIM_INFINITY;
    OK(setrlimit(RLIMIT_FSIZE, &rl));
    one_pwrite("RLIMIT_FSIZE lifted", fd, 0, PAGE, 'u', 0, 0);
    OK(close(afd));
    OK(close(fd));
}

static volatile ssize_t h_ret = -2;
static volatile int h_errno, h_fd = -1, h_cues;
static void on_cue(int sig) {
    (void)sig;
    int e = errno;
    h_cues++;
    static char hb[100];
    memset(hb, 'H', sizeof hb);
    h_ret = pwrite(h_fd, hb, sizeof hb, 0); /* published bytes: the publish moved pub_size before the cue */
    h_errno = errno;
    errno = e;
}

static void set_handler(void) {
    /* Published and mapped first (a handler's overwrite of bytes not mapped yet goes to the full path anyway):
     * 16 KiB staged and published (the cue's first publish), overwritten until served fast; then 4 KiB more
     * staged (below DAXKIT_STAGE_SPILL_BYTES, 64 KiB), whose publish at the fsync is the cue's second. */
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "h");
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    static char buf[4 * PAGE];
    fill(buf, sizeof buf, 'p');
    CHECK(write(fd, buf, sizeof buf) == (ssize_t)sizeof buf, "the first write");
    OK(fsync(fd));
    CHECK(!h_cues, "the cue fired at the first publish (DAXKIT_TEST_CRASH=raise:10:publish.before_clear:2 expected)");
    bool fast = false;
    for (int i = 0; i < 64 && !fast; i++) {
        snap(before);
        CHECK(pwrite(fd, buf, PAGE, 0) == (ssize_t)PAGE, "warm-up write");
        snap(after);
        fast = !delta(DK_C_write_op_full) && !delta(DK_C_io_write_full);
    }
    CHECK(fast, "64 overwrites of published bytes and none served by the fast paths (not mapped?)");
    CHECK(pwrite(fd, buf, PAGE, sizeof buf) == (ssize_t)PAGE, "the append");
    h_fd = fd;
    struct sigaction sa = {.sa_handler = on_cue};
    sigaction(SIGUSR1, &sa, NULL);
    snap(before);
    OK(fsync(fd)); /* the second publish: the cue publish.before_clear, f->mu held */
    snap(after);
    if (!h_cues) SKIP("the cue did not fire (DAXKIT_TEST_CRASH unset, or not a test build)");
    errno = h_errno;
    expect_path("handler inside the publish", h_ret, 100, 0, 1);
    CHECK(delta(DK_C_io_nested_by_kernel) == 1, "the handler's overwrite: io_nested_by_kernel +%ld, expected +1",
          delta(DK_C_io_nested_by_kernel));
    expect_bytes("handler inside the publish", fd, 0, 100, 'H');
    OK(close(fd));
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: shim_write_paths DIR posix|sync|strict|pagecache|handler\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IONBF, 0);
    st_watchdog(100); /* a fast path that took a lock its handler's thread holds would hang */
    snprintf(dir, sizeof dir, "%s", argv[1]);
    const char *set = argv[2], *m = getenv("DAXKIT_MODE");
    const char *mode = m && *m ? m : "posix";
    if (!strcmp(set, "posix") || !strcmp(set, "handler") || !strcmp(set, "pagecache"))
        CHECK(!strcmp(mode, "posix"), "SET %s runs in posix mode, not %s", set, mode);
    else
        CHECK(!strcmp(mode, set), "SET %s runs with DAXKIT_MODE=%s, not %s", set, set, mode);
    if (!strcmp(set, "posix")) {
        const char *a = getenv("DAXKIT_ATOMIC"), *v = getenv("DAXKIT_ATOMIC_MMAP");
        CHECK(a && !strcmp(a, "*.atom") && v && !strcmp(v, "*.amap"), "SET posix needs DAXKIT_ATOMIC=*.atom "
              "DAXKIT_ATOMIC_MMAP=*.amap");
        set_posix();
    } else if (!strcmp(set, "handler")) {
        set_handler();
    } else {
        int fd = prepared("f", false, 0);
        bool strict = !strcmp(set, "strict");
        one_pwrite("overwrite", fd, PAGE, PAGE, 'o', strict ? 1 : 0, strict ? 0 : 1);
        OK(close(fd));
    }
    printf("ok: %d writes, each served by the path its conditions choose (SET %s)\n", cases, set);
    return 0;
}
