/* Description: one run of the fault-injection matrix (faults.sh drives it with DAXKIT_TEST_FAIL set to
 * 'call:nth:errno[:sticky]'). The program overwrites and appends (small, 3 MiB, unaligned), calls fsync,
 * fdatasync and close, and keeps a shadow of what the kernel file must hold. Rules checked:
 *   - a call that fails reports the injected errno (never a different one, never a silent wrong result),
 *     and a write that fails leaves the size unchanged;
 *   - after fsync/fdatasync/close returns 0, the file seen WITHOUT the library (shim_check) equals the
 *     shadow exactly: no acknowledged byte lost, nothing extra;
 *   - after a failed fsync, retrying (the fault is one-shot unless sticky) succeeds and the data is there;
 *   - with a sticky fault, no fsync may claim success unless the data is really in the file.
 * At the end the shadow is written to argv[2] so faults.sh can check the file after this process exits
 * (a failed close keeps a rescue descriptor and publishes at exit).
 * argv[1]: managed directory; argv[2]: where to write the expected final image. Exit 0/1. */
#include "shim_test.h"

static int inj_errno;         /* the injected errno (from DAXKIT_TEST_FAIL) */
static bool inj_sticky;
static bool inj_short;        /* SHORT: a kernel call moves half its bytes and says so */
static uint8_t *shadow;
static size_t shadow_len, logical_len;
static const char *path;
static int errors_seen;

static int errno_of(const char *name) {
    static const struct { const char *n; int e; } t[] = {{"EIO", EIO}, {"ENOSPC", ENOSPC}, {"EINTR", EINTR},
                                                         {"ENOMEM", ENOMEM}, {"EDQUOT", EDQUOT}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(t[i].n, name)) return t[i].e;
    return atoi(name);
}

static void parse_spec(void) {
    const char *spec = getenv("DAXKIT_TEST_FAIL");
    if (!spec || !*spec) return;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", spec);
    char *call = strtok(buf, ":"), *nth = strtok(NULL, ":"), *err = strtok(NULL, ":"), *st = strtok(NULL, ":");
    CHECK(call && nth && err, "bad DAXKIT_TEST_FAIL '%s'", spec);
    inj_short = !strcmp(err, "SHORT");
    inj_errno = inj_short ? 0 : errno_of(err);
    inj_sticky = st && !strcmp(st, "sticky");
}

static void errno_ok(const char *what, int e) {
    errors_seen++;
    CHECK(inj_errno && e == inj_errno, "%s failed with errno %d (%s); the injected error was %d (%s)", what, e,
          strerror(e), inj_errno, inj_errno ? strerror(inj_errno) : "none");
}

static void shadow_put(uint64_t off, const uint8_t *buf, size_t n) {
    if (off + n > shadow_len) {
        shadow = realloc(shadow, off + n);
        memset(shadow + shadow_len, 0, off + n - shadow_len);
        shadow_len = off + n;
    }
    memcpy(shadow + off, buf, n);
}

static void verify(const char *after) {
    CHECK(st_check_image(path, shadow, shadow_len),
          "after %s returned 0, the file seen without the library differs from what was acknowledged", after);
}

static int short_counts; /* short counts the program saw (SHORT faults) */

/* The rest of a write that came back short, until done or failed (with the injected errno). */
static void do_write_rest(int fd, uint64_t off, size_t n, const uint8_t *buf) {
    while (n) {
        ssize_t w = pwrite(fd, buf, n, (off_t)off);
        if (w < 0) {
            errno_ok("pwrite (the rest of a short one)", errno);
            return;
        }
        CHECK(w > 0, "pwrite of the rest of a short write returned 0");
        shadow_put(off, buf, (size_t)w);
        if (off + (uint64_t)w > logical_len) logical_len = off + (uint64_t)w;
        off += (uint64_t)w, buf += w, n -= (size_t)w;
    }
}

/* The file's size by fstat. The program's own fstat passes through the table the fault is injected into,
 * so the nth fstat may be this one: it must fail with the injected errno, and (one-shot) the retry works. */
static off_t fsize(int fd) {
    struct stat st;
    for (int attempt = 0; attempt < 4; attempt++) {
        if (fstat(fd, &st) == 0) return st.st_size;
        errno_ok("fstat", errno);
    }
    FAIL("fstat(%d) failed 4 times in a row (errno %d, %s)", fd, errno, strerror(errno));
}

/* pwrite of n pattern bytes at off; on failure the injected errno and an unchanged size. */
static void do_write(int fd, uint64_t off, size_t n, uint32_t seed) {
    uint8_t *buf = malloc(n);
    st_fill(buf, seed, off, n);
    off_t before = fsize(fd);
    errno = 0;
    ssize_t w = pwrite(fd, buf, n, (off_t)off);
    if (w < 0) {
        errno_ok("pwrite", errno);
        CHECK(fsize(fd) == before, "a failed pwrite changed the size from %lld to %lld", (long long)before,
              (long long)fsize(fd));
    } else {
        /* a short count only after a fault (the kernel's own, passed on; or the head of a write across the
         * end stored before its appending part failed): the program writes the rest, as programs do */
        CHECK((size_t)w == n || ((inj_short || inj_errno) && w > 0), "short pwrite %zd of %zu", w, n);
        shadow_put(off, buf, (size_t)w);
        if (off + (uint64_t)w > logical_len) logical_len = off + (uint64_t)w;
        if ((size_t)w < n) {
            short_counts++;
            do_write_rest(fd, off + (uint64_t)w, n - (size_t)w, buf + w);
        }
    }
    free(buf);
}

/* fsync or fdatasync; retried after a failure (up to 3 times unless sticky). */
static void do_sync(int fd, bool data) {
    const char *name = data ? "fdatasync" : "fsync";
    for (int attempt = 0; attempt < 4; attempt++) {
        errno = 0;
        int r = data ? fdatasync(fd) : fsync(fd);
        if (r == 0) {
            verify(name);
            return;
        }
        errno_ok(name, errno);
    }
    CHECK(inj_sticky, "%s still fails after 3 retries with a one-shot fault", name);
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    CHECK(argc > 2, "usage: shim_faults DIR EXPECT_OUT");
    parse_spec();
    uint64_t v[DK_C_COUNT];
    if (!st_stats(getpid(), v)) {
        /* a fault during the library's start-up (its own mmap/ftruncate) may leave it inactive: a correct
         * fallback, as long as everything below still holds */
        CHECK(inj_errno, "libdaxkit.so is not active and no fault was injected: check LD_PRELOAD/DAXKIT_DIR");
        NOTE("library inactive after a fault at start-up (fallback to the kernel); checking kernel semantics");
    }
    st_watchdog(30);
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, "faults");
    path = p;
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        errno_ok("open", errno);
        return 0;
    }
    /* 1: appends only, then fsync */
    do_write(fd, 0, 10000, 1);
    do_write(fd, 10000, 333, 2);
    do_sync(fd, false);
    /* 2: overwrite published bytes, a 3 MiB unaligned append across staging slots, a small one */
    do_write(fd, 100, 5000, 3);
    do_write(fd, shadow_len, (3u << 20) + 123, 4);
    do_write(fd, shadow_len, 100, 5);
    do_sync(fd, true);
    /* 3: overwrite straddling the end (part overwrite, part append), a far write leaving a hole */
    do_write(fd, shadow_len - 50, 4096, 6);
    do_write(fd, shadow_len + (5u << 20), 4096, 7);
    do_sync(fd, false);
    /* 4: appends, then close without fsync */
    do_write(fd, shadow_len, 20000, 8);
    errno = 0;
    if (close(fd) == 0) verify("close");
    else errno_ok("close", errno);
    /* the final image for faults.sh (checked after exit: a failed close publishes at exit) */
    const char *img = st_expect_file(shadow, shadow_len);
    char cmd[PATH_MAX];
    snprintf(cmd, sizeof cmd, "%s", argv[2]);
    CHECK(syscall(SYS_renameat, AT_FDCWD, img, AT_FDCWD, cmd) == 0, "rename %s -> %s: %s", img, cmd, strerror(errno));
    printf("ok: %s: %d injected error(s) reached the program with the right errno, %d short count(s); "
           "acknowledged data intact\n",
           getenv("DAXKIT_TEST_FAIL") ? getenv("DAXKIT_TEST_FAIL") : "no fault", errors_seen, short_counts);
    return 0;
}
