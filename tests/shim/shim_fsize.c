/* RLIMIT_FSIZE under the library, against the kernel in the same process: the same sequence of writes
 * runs on a managed file and on a file of the same medium outside the managed directory (the kernel
 * path), with the limit lowered by prlimit and later raised by setrlimit. Every call's result, errno and
 * SIGXFSZ count, and the final contents, must match; after the limit is raised the library serves
 * appends again. Without the library's clamp a write crossing the limit is accepted whole (and can never
 * be published). argv[1]: the managed directory. */
#include <libgen.h>
#include <sys/resource.h>

#include "shim_test.h"

#define LIMIT_BYTES ((1u << 20) + 100u)
#define STEPS 13

struct step {
    ssize_t ret;
    int err;
    int signals;
};

static volatile sig_atomic_t xfsz_signals;
static void on_xfsz(int sig) {
    (void)sig;
    xfsz_signals++;
}

static void set_limit(bool by_prlimit, rlim_t cur) {
    struct rlimit rl;
    CHECK(getrlimit(RLIMIT_FSIZE, &rl) == 0, "getrlimit: %s", strerror(errno));
    rl.rlim_cur = cur;
    int r = by_prlimit ? prlimit(0, RLIMIT_FSIZE, &rl, NULL) : setrlimit(RLIMIT_FSIZE, &rl);
    CHECK(r == 0, "%s: %s", by_prlimit ? "prlimit" : "setrlimit", strerror(errno));
}

static void record(struct step *s, ssize_t ret, int sig_before) {
    s->ret = ret;
    s->err = ret < 0 ? errno : 0;
    s->signals = xfsz_signals - sig_before;
}

/* The sequence on dir/name; results in out[], the file's final bytes in *img (malloc'ed), size in *len. */
static void run(const char *dir, struct step out[STEPS], char **img, size_t *len) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "fsize");
    static char buf[700 << 10];
    st_fill(buf, 7, 0, sizeof buf);
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
    CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    int afd = open(path, O_WRONLY | O_APPEND);
    CHECK(afd >= 0, "open O_APPEND %s: %s", path, strerror(errno));
    char bigpath[PATH_MAX];
    st_path(bigpath, sizeof bigpath, dir, "fsize.big"); /* 2 MiB, made before the limit: above it */
    int big = open(bigpath, O_CREAT | O_RDWR | O_TRUNC, 0644);
    CHECK(big >= 0 && write(big, buf, 700 << 10) == 700 << 10 && write(big, buf, 700 << 10) == 700 << 10 &&
              write(big, buf, 648 << 10) == 648 << 10,
          "make %s: %s", bigpath, strerror(errno));
    set_limit(true, LIMIT_BYTES);
    int k = 0, s0;
    s0 = xfsz_signals, record(&out[k++], write(fd, buf, 512 << 10), s0);           /* inside */
    s0 = xfsz_signals, record(&out[k++], write(fd, buf, 600 << 10), s0);           /* crosses: short */
    s0 = xfsz_signals, record(&out[k++], write(fd, buf, 10), s0);                  /* at the limit */
    s0 = xfsz_signals, record(&out[k++], pwrite(fd, buf + 9, 4096, 4000), s0);     /* overwrite inside */
    s0 = xfsz_signals, record(&out[k++], pwrite(fd, buf + 3, 10, LIMIT_BYTES - 5), s0); /* crosses */
    s0 = xfsz_signals, record(&out[k++], pwrite(fd, buf, 1, LIMIT_BYTES + 4096), s0);  /* past it */
    s0 = xfsz_signals, record(&out[k++], write(afd, buf, 100), s0);                /* append at the limit */
    s0 = xfsz_signals, record(&out[k++], ftruncate(fd, LIMIT_BYTES + 10), s0);     /* kernel's own check */
    s0 = xfsz_signals, record(&out[k++], ftruncate(big, 1536 << 10), s0);         /* a shrink past it: allowed */
    s0 = xfsz_signals, record(&out[k++], fsync(fd), s0);
    set_limit(false, RLIM_INFINITY);
    s0 = xfsz_signals, record(&out[k++], write(afd, buf, 4096), s0); /* served again */
    s0 = xfsz_signals, record(&out[k++], write(afd, buf + 1, 4096), s0);
    s0 = xfsz_signals, record(&out[k++], close(afd) | close(fd) | close(big), s0);
    CHECK(k == STEPS, "%d steps, want %d", k, STEPS);
    fd = open(path, O_RDONLY);
    CHECK(fd >= 0, "reopen %s: %s", path, strerror(errno));
    off_t size = st_fsize(fd);
    *img = malloc((size_t)size + 1);
    CHECK(*img && pread(fd, *img, (size_t)size, 0) == size, "read back %s", path);
    *len = (size_t)size;
    close(fd);
}

int main(int argc, char **argv) {
    st_require_library();
    const char *managed = st_dir(argc, argv);
    char parent[PATH_MAX], kdir[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", managed);
    snprintf(kdir, sizeof kdir, "%s/fsize-kernel", dirname(parent));
    CHECK(mkdir(kdir, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", kdir, strerror(errno));
    struct sigaction sa = {.sa_handler = on_xfsz};
    CHECK(sigaction(SIGXFSZ, &sa, NULL) == 0, "sigaction");

    struct step want[STEPS], got[STEPS];
    char *kimg, *dimg;
    size_t klen, dlen;
    run(kdir, want, &kimg, &klen);
    uint64_t before[DK_C_COUNT], after[DK_C_COUNT];
    CHECK(st_stats(getpid(), before), "stats");
    run(managed, got, &dimg, &dlen);
    CHECK(st_stats(getpid(), after), "stats");

    int bad = 0;
    for (int i = 0; i < STEPS; i++) {
        bool same = want[i].ret == got[i].ret && want[i].err == got[i].err && want[i].signals == got[i].signals;
        if (!same) bad++;
        NOTE("step %2d: kernel %zd errno %d sigxfsz %d | daxkit %zd errno %d sigxfsz %d%s", i, want[i].ret,
             want[i].err, want[i].signals, got[i].ret, got[i].err, got[i].signals, same ? "" : "   <-- differs");
    }
    CHECK(want[1].ret > 0 && want[1].ret < (600 << 10), "the kernel did not cut the crossing write (%zd)", want[1].ret);
    CHECK(want[2].ret < 0 && want[2].err == EFBIG && want[2].signals == 1, "the kernel did not refuse at the limit");
    CHECK(bad == 0, "%d of %d steps differ from the kernel", bad, STEPS);
    CHECK(klen == dlen, "size %zu under daxkit, %zu on the kernel path", dlen, klen);
    CHECK(memcmp(kimg, dimg, klen) == 0, "contents differ from the kernel path's");
    CHECK(after[DK_C_appends] > before[DK_C_appends], "appends after the limit was raised were not served (%llu)",
          (unsigned long long)(after[DK_C_appends] - before[DK_C_appends]));
    NOTE("all %d steps and %zu bytes equal to the kernel path's", STEPS, klen);
    return 0;
}
