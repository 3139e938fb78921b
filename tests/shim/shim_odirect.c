/* A program's own O_DIRECT descriptor of a file it appends to through a plain one (review 11, finding 15):
 * the O_DIRECT descriptor is served by the kernel, after the library publishes the file's staged appends.
 * The publish went through the O_DIRECT descriptor itself and failed there (an unaligned copy: EINVAL), so
 * its read saw an empty file, and the appends, still staged, were copied over its write at the next publish
 * point (close, exit). Run on a managed file and on a file of the same medium outside DAXKIT_DIR (the kernel's
 * answers), call by call, then the two files compared byte for byte without the library.
 *   argv[1]: managed directory (its parent is not managed); argv[2]: "after" (O_DIRECT opened after the
 *   appends, default) or "before" (opened first: its every call publishes what was appended since).
 * The O_DIRECT alignment rule stays the kernel's: an unaligned buffer gets EINVAL on both. */
#include "shim_test.h"

enum { STEPS = 12 };
struct result {
    long long r;
    int err;
    uint32_t sum; /* of the bytes read, when the step reads */
};

static const char *const names[STEPS] = {
    "write(fd, 6000 'a')",          "pwrite(fd, 'XY', 10)",          "pread(dfd, 8 KiB, 0)",
    "pread(dfd, unaligned buffer)", "pwrite(dfd, 4 KiB 'D', 4096)",  "pread(fd, 4, 4096) after it",
    "lseek(fd, 0, SEEK_END)",       "write(fd, 100 'b') at the end", "pread(dfd, 12 KiB, 0)",
    "pwrite(dfd, 4 KiB 'E', 8192)", "pread(fd, 8, 8188)",            "fstat(fd) size"};

#define STEP(i, call, buf)                                                                       \
    do {                                                                                         \
        errno = 0;                                                                               \
        long long r_ = (long long)(call);                                                        \
        out[i] = (struct result){r_, r_ < 0 ? errno : 0, 0};                                     \
        if ((buf) != NULL && r_ > 0) out[i].sum = st_sum((const uint8_t *)(buf), (size_t)r_);    \
    } while (0)

/* false when the medium refuses O_DIRECT (then the test skips) */
static bool run(const char *dir, const char *name, bool before, struct result *out) {
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, name);
    static char a[8192], c[64];
    void *buf;
    if (posix_memalign(&buf, 4096, 16384)) FAIL("posix_memalign");
    memset(a, 'a', sizeof a);
    int fd = OK(open(p, O_RDWR | O_CREAT | O_TRUNC, 0644));
    int dfd = -1;
    if (before && (dfd = open(p, O_RDWR | O_DIRECT)) < 0) return false;
    STEP(0, write(fd, a, 6000), (void *)NULL);
    STEP(1, pwrite(fd, "XY", 2, 10), (void *)NULL);
    if (!before && (dfd = open(p, O_RDWR | O_DIRECT)) < 0) return false;
    memset(buf, 0, 16384);
    STEP(2, pread(dfd, buf, 8192, 0), buf);
    STEP(3, pread(dfd, (char *)buf + 1, 4096, 0), (void *)NULL);
    memset(buf, 'D', 4096);
    STEP(4, pwrite(dfd, buf, 4096, 4096), (void *)NULL);
    memset(c, 0, sizeof c);
    STEP(5, pread(fd, c, 4, 4096), c);
    STEP(6, lseek(fd, 0, SEEK_END), (void *)NULL);
    memset(a, 'b', 100);
    STEP(7, write(fd, a, 100), (void *)NULL);
    memset(buf, 0, 16384);
    STEP(8, pread(dfd, buf, 12288, 0), buf);
    memset(buf, 'E', 4096);
    STEP(9, pwrite(dfd, buf, 4096, 8192), (void *)NULL);
    STEP(10, pread(fd, c, 8, 8188), c);
    struct stat st;
    OK(fstat(fd, &st));
    out[11] = (struct result){(long long)st.st_size, 0, 0};
    OK(close(dfd));
    OK(close(fd)); /* a publish point: staged appends must not land over the O_DIRECT writes */
    free(buf);
    return true;
}

int main(int argc, char **argv) {
    if (argc < 2) SKIP("usage: shim_odirect DIR [after|before]");
    bool before = argc > 2 && !strcmp(argv[2], "before");
    st_watchdog(60);
    char plain[PATH_MAX];
    snprintf(plain, sizeof plain, "%s/..", argv[1]);
    struct result k[STEPS], d[STEPS];
    if (!run(plain, "odirect-kernel", before, k)) SKIP("the medium refuses O_DIRECT opens (%s)", strerror(errno));
    if (!run(argv[1], "odirect", before, d)) FAIL("O_DIRECT open of the managed file failed: %s", strerror(errno));
    int bad = 0;
    for (int i = 0; i < STEPS; i++) {
        if (k[i].r == d[i].r && k[i].err == d[i].err && k[i].sum == d[i].sum) continue;
        NOTE("%s: kernel %lld (errno %d, sum %08x), daxkit %lld (errno %d, sum %08x)", names[i], k[i].r, k[i].err,
             k[i].sum, d[i].r, d[i].err, d[i].sum);
        bad++;
    }
    CHECK(k[3].err == EINVAL, "the kernel took an unaligned O_DIRECT read here (%lld, errno %d): alignment unchecked",
          k[3].r, k[3].err);
    char mp[PATH_MAX], kp[PATH_MAX];
    st_path(mp, sizeof mp, argv[1], "odirect");
    st_path(kp, sizeof kp, plain, "odirect-kernel");
    int img = st_check("image", mp, kp); /* without the library, after both closes */
    CHECK(bad == 0 && img == 0, "%d of %d calls differ from the kernel's; file image %s", bad, STEPS,
          img ? "differs" : "equal");
    printf("ok: the O_DIRECT descriptor (opened %s the appends) sees them, and its writes stay\n",
           before ? "before" : "after");
    return 0;
}
