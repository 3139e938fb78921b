/* Edge cases the kernel answers in a particular way, run on a managed file and on a file of the same medium
 * outside DAXKIT_DIR (the kernel's answer), compared call by call (review 9, finding 23). argv[1]: managed
 * directory (its parent is not managed). Offsets whose end passes INT64_MAX: the kernel refuses reads and
 * writes with EINVAL (rw_verify_area) and the descriptor's offset stays usable; daxkit used to accept a
 * write at INT64_MAX and leave the offset at 2^63, where lseek(SEEK_CUR/SEEK_END) failed. */
#include <limits.h>
#include <sys/uio.h>

#include "shim_test.h"

enum { STEPS = 16 };
struct result {
    long long r;
    int err;
};

static const char *const names[STEPS] = {
    "lseek(fd, INT64_MAX, SEEK_SET)", "write(fd, b, 1) at INT64_MAX", "lseek(fd, 0, SEEK_CUR)",
    "lseek(fd, 0, SEEK_END)", "read(fd, b, 1) at INT64_MAX", "pwrite(fd, b, 2, INT64_MAX - 1)",
    "pread(fd, b, 2, INT64_MAX - 1)", "pwritev(fd, 2 x 10 bytes, INT64_MAX - 10)",
    "preadv(fd, 2 x 10 bytes, INT64_MAX - 10)", "lseek(fd, INT64_MAX - 5, SEEK_SET)",
    "write(fd, b, 10) at INT64_MAX - 5", "writev(fd, 2 x 10 bytes) at INT64_MAX - 5",
    "O_APPEND: lseek(fd2, INT64_MAX, SEEK_SET)", "O_APPEND: write(fd2, b, 1)", "pread(fd, b, 10, INT64_MAX - 16)",
    "final size"};

#define STEP(i, call)                                   \
    do {                                                \
        errno = 0;                                      \
        long long r_ = (long long)(call);               \
        out[i] = (struct result){r_, r_ < 0 ? errno : 0}; \
    } while (0)

static void run(const char *dir, struct result *out) {
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, "edge");
    static char b[4096 * 3];
    memset(b, 'x', sizeof b);
    int fd = OK(open(p, O_RDWR | O_CREAT | O_TRUNC, 0644));
    st_write_all(fd, b, sizeof b);
    struct iovec v[2] = {{b, 10}, {b + 10, 10}};
    STEP(0, lseek(fd, INT64_MAX, SEEK_SET));
    STEP(1, write(fd, b, 1));
    STEP(2, lseek(fd, 0, SEEK_CUR));
    STEP(3, lseek(fd, 0, SEEK_END));
    OK(lseek(fd, INT64_MAX, SEEK_SET));
    STEP(4, read(fd, b, 1));
    STEP(5, pwrite(fd, b, 2, INT64_MAX - 1));
    STEP(6, pread(fd, b, 2, INT64_MAX - 1));
    STEP(7, pwritev(fd, v, 2, INT64_MAX - 10));
    STEP(8, preadv(fd, v, 2, INT64_MAX - 10));
    STEP(9, lseek(fd, INT64_MAX - 5, SEEK_SET));
    STEP(10, write(fd, b, 10));
    STEP(11, writev(fd, v, 2));
    int fd2 = OK(open(p, O_WRONLY | O_APPEND));
    STEP(12, lseek(fd2, INT64_MAX, SEEK_SET));
    STEP(13, write(fd2, b, 1));
    STEP(14, pread(fd, b, 10, INT64_MAX - 16));
    OK(close(fd2));
    struct stat st;
    OK(fstat(fd, &st));
    out[15] = (struct result){(long long)st.st_size, 0};
    OK(close(fd));
}

int main(int argc, char **argv) {
    if (argc < 2) SKIP("usage: shim_edges DIR");
    st_watchdog(60);
    char plain[PATH_MAX];
    snprintf(plain, sizeof plain, "%s/..", argv[1]);
    struct result k[STEPS], d[STEPS];
    run(plain, k); /* outside DAXKIT_DIR: the kernel's answers */
    run(argv[1], d);
    int bad = 0;
    for (int i = 0; i < STEPS; i++) {
        if (k[i].r == d[i].r && k[i].err == d[i].err) continue;
        NOTE("%s: kernel %lld (errno %d), daxkit %lld (errno %d)", names[i], k[i].r, k[i].err, d[i].r, d[i].err);
        bad++;
    }
    CHECK(bad == 0, "%d of %d calls differ from the kernel's", bad, STEPS);
    return 0;
}
