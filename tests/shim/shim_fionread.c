/* ioctl(FIONREAD) on a managed file answers the kernel's way -- size minus the descriptor's offset, as an int
 * (negative past the end) -- from daxkit's size and offset (review 11, finding 17: the kernel's lagging view
 * answered 0 after an unpublished append). Run on a managed file and on a file of the same medium outside
 * DAXKIT_DIR (the kernel's answers), compared call by call. argv[1]: managed directory (its parent is not
 * managed). */
#include <sys/ioctl.h>

#include "shim_test.h"

enum { STEPS = 9 };
struct result {
    long long r;
    int err;
    int n;
};

static const char *const names[STEPS] = {
    "after write 5000, lseek 1000", "after read 500",        "lseek 6000 (past the end)",
    "O_APPEND descriptor after its append", "second descriptor at 0", "NULL argument",
    "after pwrite growing to 9000 (offset 1500)", "after ftruncate to 100", "shared with a fork child"};

#define STEP(i, fd, argp)                                          \
    do {                                                           \
        int n_ = -12345;                                           \
        errno = 0;                                                 \
        int r_ = ioctl(fd, FIONREAD, (argp) ? &n_ : NULL);         \
        out[i] = (struct result){r_, r_ < 0 ? errno : 0, n_};      \
    } while (0)

static void run(const char *dir, struct result *out) {
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, "fionread");
    static char b[9000];
    memset(b, 'x', sizeof b);
    int fd = OK(open(p, O_RDWR | O_CREAT | O_TRUNC, 0644));
    st_write_all(fd, b, 5000);
    OK(lseek(fd, 1000, SEEK_SET));
    STEP(0, fd, 1);
    OK(read(fd, b, 500));
    STEP(1, fd, 1);
    OK(lseek(fd, 6000, SEEK_SET));
    STEP(2, fd, 1);
    int fa = OK(open(p, O_WRONLY | O_APPEND));
    st_write_all(fa, b, 100);
    STEP(3, fa, 1);
    int f2 = OK(open(p, O_RDONLY));
    STEP(4, f2, 1);
    STEP(5, fd, 0);
    OK(pwrite(fd, b, 3900, 5100));
    OK(lseek(fd, 1500, SEEK_SET));
    STEP(6, fd, 1);
    OK(ftruncate(fd, 100));
    STEP(7, fd, 1);
    OK(lseek(fd, 0, SEEK_SET));
    st_write_all(fd, b, 3000); /* offset 3000, size 3000 */
    OK(lseek(fd, 10, SEEK_SET));
    int pp[2];
    OK(pipe(pp));
    pid_t c = fork();
    if (c == 0) {
        char x;
        close(pp[1]);
        (void)!read(pp[0], &x, 1);
        _exit(0);
    }
    close(pp[0]);
    st_write_all(fd, b, 2000); /* through the kernel now: 10 + 2000 < 3000 */
    OK(lseek(fd, 100, SEEK_SET));
    STEP(8, fd, 1);
    close(pp[1]);
    waitpid(c, NULL, 0);
    OK(close(f2));
    OK(close(fa));
    OK(close(fd));
}

int main(int argc, char **argv) {
    if (argc < 2) SKIP("usage: shim_fionread DIR");
    st_watchdog(60);
    char plain[PATH_MAX];
    snprintf(plain, sizeof plain, "%s/..", argv[1]);
    struct result k[STEPS], d[STEPS];
    run(plain, k); /* outside DAXKIT_DIR: the kernel's answers */
    run(argv[1], d);
    int bad = 0;
    for (int i = 0; i < STEPS; i++) {
        printf("%-45s kernel %lld/%d/%d daxkit %lld/%d/%d\n", names[i], k[i].r, k[i].err, k[i].n, d[i].r, d[i].err,
               d[i].n);
        if (k[i].r == d[i].r && k[i].err == d[i].err && k[i].n == d[i].n) continue;
        bad++;
    }
    CHECK(bad == 0, "%d of %d FIONREAD answers differ from the kernel's", bad, STEPS);
    return 0;
}
