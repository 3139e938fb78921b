/* Description: libc behaviour kept on managed files: EBADF on closed descriptors and on closing twice;
 * close of daxkit's own internal descriptors is EBADF and close_range(3, ~0U, 0) leaves them alone (the
 * library keeps working: staging appends, publish, read back); read on O_WRONLY and write on O_RDONLY are
 * EBADF; lseek with a bad whence, a negative result, negative pread/pwrite offsets and a negative ftruncate
 * are EINVAL; errno is unchanged by successful calls; a thread with a pending deferred cancel is cancelled
 * in read/write/pread/pwrite/fsync on a managed descriptor. argv[1]: managed directory. */
#include <dirent.h>
#include <linux/close_range.h>
#include <pthread.h>

#include "shim_test.h"

static const char *dir;

static void test_ebadf(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "ebadf");
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    st_write_all(fd, "hello", 5);
    OK(close(fd));
    char b[8];
    ERR(close(fd), EBADF);
    ERR(read(fd, b, 1), EBADF);
    ERR(write(fd, b, 1), EBADF);
    ERR(pread(fd, b, 1, 0), EBADF);
    ERR(pwrite(fd, b, 1, 0), EBADF);
    ERR(lseek(fd, 0, SEEK_SET), EBADF);
    ERR(fsync(fd), EBADF);
    ERR(fdatasync(fd), EBADF);
    ERR(ftruncate(fd, 0), EBADF);
    int w = OK(open(path, O_WRONLY));
    ERR(read(w, b, 1), EBADF);
    ERR(pread(w, b, 1, 0), EBADF);
    int r = OK(open(path, O_RDONLY));
    ERR(write(r, "x", 1), EBADF);
    ERR(pwrite(r, "x", 1, 0), EBADF);
    ERR(lseek(r, 0, 42), EINVAL);
    ERR(lseek(r, -1, SEEK_SET), EINVAL);
    ERR(lseek(r, -10, SEEK_END), EINVAL);
    ERR(pread(r, b, 1, -1), EINVAL);
    ERR(pwrite(w, "x", 1, -1), EINVAL);
    ERR(ftruncate(w, -1), EINVAL);
    ERR(ftruncate(r, 1), EINVAL); /* read-only descriptor */
    OK(close(w));
    OK(close(r));
    printf("ok: EBADF/EINVAL as the kernel reports them\n");
}

static void test_errno_kept(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "errno_kept");
#define KEEP(call)                                                                              \
    do {                                                                                        \
        errno = 4242;                                                                           \
        long r_ = (long)(call);                                                                 \
        CHECK(r_ >= 0, "%s failed: %s", #call, strerror(errno));                                \
        CHECK(errno == 4242, "%s succeeded but changed errno to %d (%s)", #call, errno, strerror(errno)); \
    } while (0)
    int fd;
    errno = 4242;
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && errno == 4242, "open changed errno to %d", errno);
    static char buf[3 << 20];
    struct stat st;
    KEEP(write(fd, buf, 100));
    KEEP(write(fd, buf, sizeof buf));
    KEEP(pwrite(fd, buf, 10, 5));
    KEEP(fstat(fd, &st));
    KEEP(stat(path, &st));
    KEEP(lseek(fd, 0, SEEK_SET));
    KEEP(read(fd, buf, 1000));
    KEEP(pread(fd, buf, 1000, 100));
    KEEP(fsync(fd));
    KEEP(write(fd, buf, 5000));
    KEEP(fdatasync(fd));
    KEEP(ftruncate(fd, 1 << 20));
    int d;
    errno = 4242;
    d = dup(fd);
    CHECK(d >= 0 && errno == 4242, "dup changed errno");
    KEEP(close(d));
    KEEP(write(fd, buf, 77));
    KEEP(close(fd));
    printf("ok: errno unchanged by successful calls\n");
}

/* Descriptors the library owns: links into the hidden .daxkit area. */
static int internal_fds(int *out, int max) {
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        char link[64], target[PATH_MAX];
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        ssize_t k = readlink(link, target, sizeof target - 1);
        if (k <= 0) continue;
        target[k] = 0;
        if (strstr(target, "/.daxkit")) out[n++] = atoi(e->d_name);
    }
    closedir(d);
    return n;
}

static void test_internal(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "internal");
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    static uint8_t buf[3 << 20];
    st_fill(buf, 4, 0, sizeof buf);
    st_write_all(fd, buf, 100000); /* staged: the staging pool exists now */
    OK(fsync(fd));
    OK(close(fd));
    int in[64];
    int n = internal_fds(in, 64);
    CHECK(n > 0, "no internal descriptor found (no staging area?)");
    for (int i = 0; i < n; i++) {
        ERR(close(in[i]), EBADF);
        CHECK(fcntl(in[i], F_GETFD) >= 0, "closing internal descriptor %d (EBADF) closed it anyway", in[i]);
    }
    /* a daemon-style close_range of everything above stderr */
    fflush(stdout);
    OK(close_range(3, ~0U, 0));
    int m = internal_fds(in, 64);
    CHECK(m == n, "close_range closed %d of the library's %d internal descriptors", n - m, n);
    fd = OK(open(path, O_RDWR)); /* not O_APPEND: that case is shim_publish append_relink */
    OK(lseek(fd, 0, SEEK_END));
    st_write_all(fd, buf + 100000, sizeof buf - 100000); /* staged again */
    OK(fsync(fd));
    OK(close(fd));
    CHECK(st_check("pattern", path, "0", st_fmt("%zu", sizeof buf), "4") == 0,
          "after close_range the library lost data");
    printf("ok: %d internal descriptors survive close() and close_range(); the library keeps working\n", n);
}

/* ---- cancellation ---- */

static int cancel_fd;
static volatile int reached_after;

static void *cancel_thread(void *arg) {
    int op = (int)(intptr_t)arg;
    char b[16] = "x";
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    pthread_cancel(pthread_self()); /* pending, deferred */
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
    switch (op) {
    case 0: read(cancel_fd, b, 1); break;
    case 1: write(cancel_fd, b, 1); break;
    case 2: pread(cancel_fd, b, 1, 0); break;
    case 3: pwrite(cancel_fd, b, 1, 0); break;
    case 4: fsync(cancel_fd); break;
    }
    reached_after = 1;
    return NULL;
}

static void test_cancel(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "cancel");
    cancel_fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    st_write_all(cancel_fd, "0123456789", 10);
    OK(lseek(cancel_fd, 0, SEEK_SET));
    static const char *names[] = {"read", "write", "pread", "pwrite", "fsync"};
    for (int op = 0; op < 5; op++) {
        pthread_t t;
        void *res;
        reached_after = 0;
        CHECK(pthread_create(&t, NULL, cancel_thread, (void *)(intptr_t)op) == 0, "pthread_create");
        pthread_join(t, &res);
        CHECK(res == PTHREAD_CANCELED && !reached_after, "%s() on a managed descriptor is not a cancellation point",
              names[op]);
    }
    OK(close(cancel_fd));
    printf("ok: read/write/pread/pwrite/fsync act on a pending cancel\n");
}

int main(int argc, char **argv) {
    dir = st_dir(argc, argv);
    st_require_library();
    st_watchdog(30);
    setvbuf(stdout, NULL, _IONBF, 0);
    test_ebadf();
    test_errno_kept();
    test_cancel();
    test_internal(); /* last: close_range closes our stdio above 2 too */
    return 0;
}
