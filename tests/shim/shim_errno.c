/* Description: libc behaviour kept on managed files: EBADF on closed descriptors and on closing twice;
 * close of daxkit's own internal descriptors is EBADF and close_range(3, ~0U, 0) and closefrom leave them alone (the
 * library keeps working: staging appends, publish, read back); read on O_WRONLY and write on O_RDONLY are
 * EBADF; lseek with a bad whence, a negative result, negative pread/pwrite offsets and a negative ftruncate
 * are EINVAL; errno is unchanged by successful calls; a thread with a pending deferred cancel is cancelled
 * in read/write/pread/pwrite/fsync on a managed descriptor. argv[1]: managed directory. argv[2] = kept: only
 * the errno check, over every kind of call (errno_twice.sh runs it twice on one directory). */
#include <dirent.h>
#include <linux/close_range.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/uio.h>

#include "shim_test.h"

static const char *dir;
static const char *area_at_start = "?";

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

#define KEEP(call)                                                                              \
    do {                                                                                        \
        errno = 4242;                                                                           \
        long r_ = (long)(call);                                                                 \
        CHECK(r_ >= 0, "%s failed: %s", #call, strerror(errno));                                \
        CHECK(errno == 4242, "%s succeeded but changed errno to %d (%s)", #call, errno, strerror(errno)); \
    } while (0)

static void test_errno_kept(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "errno_kept");
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

/* Every call a program makes on a managed file, each with errno = 4242 before and checked after (review 9,
 * finding 9: the staging pool's creation, the size records and strict's log are made by the first write,
 * fsync or create of a process; with the .daxkit area left by an earlier process their probes -- mkdirat
 * EEXIST, the reclaim's flock of live owners, fstatat ENOENT -- showed in errno). errno_twice.sh runs this
 * twice on one directory, in several modes and media: the second run is the one that found it. */
static void test_errno_kept_wide(void) {
    char p[PATH_MAX], q[PATH_MAX];
    st_path(p, sizeof p, dir, "kept_a");
    st_path(q, sizeof q, dir, "kept_b"); /* neither exists: the first call is the create (strict's log) */
    static char buf[65536];
    memset(buf, 'x', sizeof buf);
    int fd, d;
    errno = 4242;
    fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && errno == 4242, "open(O_CREAT|O_TRUNC) changed errno to %d (%s)", errno, strerror(errno));
    for (int i = 0; i < 40; i++) {
        KEEP(write(fd, buf, 1000));
        KEEP(pwrite(fd, buf, 4096, 4096 * (i % 5)));
        KEEP(pread(fd, buf, 100, 50));
    }
    KEEP(lseek(fd, 0, SEEK_SET));
    KEEP(read(fd, buf, 500));
    KEEP(lseek(fd, 0, SEEK_END));
    struct stat st;
    KEEP(fstat(fd, &st));
    KEEP(stat(p, &st));
    KEEP(lstat(p, &st));
    struct iovec iov[2] = {{buf, 100}, {buf, 200}};
    KEEP(writev(fd, iov, 2));
    KEEP(preadv(fd, iov, 2, 0));
    KEEP(pwritev(fd, iov, 2, 10));
    KEEP(fsync(fd));
    KEEP(fdatasync(fd));
    KEEP(ftruncate(fd, 100000));
    KEEP(ftruncate(fd, 5000));
    KEEP(write(fd, buf, 300));
    KEEP(fallocate(fd, 0, 0, 200000));
    KEEP(fsync(fd));
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10};
    KEEP(fcntl(fd, F_SETLK, &l));
    l.l_type = F_UNLCK;
    KEEP(fcntl(fd, F_SETLK, &l));
    KEEP(flock(fd, LOCK_EX));
    KEEP(flock(fd, LOCK_UN));
    KEEP(lockf(fd, F_TLOCK, 0));
    KEEP(lockf(fd, F_TEST, 0));
    KEEP(lockf(fd, F_ULOCK, 0));
    KEEP(fcntl(fd, F_GETFL));
    KEEP(fcntl(fd, F_SETFL, O_APPEND));
    KEEP(write(fd, buf, 100));
    KEEP(fcntl(fd, F_SETFL, 0));
    struct timespec ts[2] = {{1, 0}, {2, 0}};
    KEEP(futimens(fd, ts));
    KEEP(fchmod(fd, 0600));
    KEEP(utimensat(AT_FDCWD, p, ts, 0));
    KEEP(chmod(p, 0644));
    KEEP(write(fd, buf, 100));
    KEEP(futimens(fd, ts));
    KEEP(write(fd, buf, 100));
    KEEP(utimensat(AT_FDCWD, p, ts, 0));
    void *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(m != MAP_FAILED, "mmap: %s", strerror(errno));
    KEEP(msync(m, 8192, MS_SYNC));
    KEEP(munmap(m, 8192));
    errno = 4242;
    d = dup(fd);
    CHECK(d >= 0 && errno == 4242, "dup changed errno to %d", errno);
    KEEP(dup2(fd, 100));
    KEEP(close(100));
    KEEP(close(d));
    KEEP(write(fd, buf, 100));
    KEEP(rename(p, q));
    KEEP(write(fd, buf, 100));
    KEEP(link(q, p));
    KEEP(unlink(q));
    KEEP(copy_file_range(fd, NULL, fd, NULL, 0, 0));
    KEEP(close(fd));
    FILE *f = fopen(p, "a");
    CHECK(f != NULL, "fopen: %s", strerror(errno));
    KEEP(fwrite(buf, 1, 5000, f));
    KEEP(fflush(f));
    KEEP(fclose(f));
    f = fopen(p, "r");
    CHECK(f != NULL, "fopen: %s", strerror(errno));
    KEEP(fread(buf, 1, 5000, f));
    KEEP(fclose(f));
    fd = OK(open(p, O_RDONLY));
    for (int i = 0; i < 20; i++) KEEP(read(fd, buf, 4096));
    KEEP(close(fd));
    fd = OK(open(p, O_WRONLY | O_APPEND));
    for (int i = 0; i < 20; i++) KEEP(write(fd, buf, 4096));
    KEEP(fsync(fd));
    KEEP(close(fd));
    KEEP(truncate(p, 10));
    KEEP(unlink(p));
    printf("ok: errno unchanged by %s successful calls (.daxkit area %s at start)\n", "~190", area_at_start);
}

/* Descriptors the library owns: links into the hidden .daxkit area. */
static int internal_fds(int *out, int max) {
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        char link[300], target[PATH_MAX];
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
    /* closefrom reaches the system call inside glibc: the library interposes it too (review 11, finding 7) */
    fd = OK(open(path, O_RDWR | O_TRUNC));
    st_write_all(fd, buf, 100000); /* staged */
    closefrom(fd + 1);
    m = internal_fds(in, 64);
    CHECK(m == n, "closefrom closed %d of the library's %d internal descriptors", n - m, n);
    st_write_all(fd, buf + 100000, sizeof buf - 100000);
    OK(fsync(fd));
    OK(close(fd));
    CHECK(st_check("pattern", path, "0", st_fmt("%zu", sizeof buf), "4") == 0, "after closefrom the library lost data");
    printf("ok: %d internal descriptors survive close(), close_range() and closefrom(); the library keeps working\n", n);
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
    if (argc > 2 && !strcmp(argv[2], "kept")) { /* errno_twice.sh */
        char area[PATH_MAX];
        struct stat st;
        st_path(area, sizeof area, dir, ".daxkit");
        area_at_start = stat(area, &st) == 0 ? "present" : "absent";
        test_errno_kept_wide();
        return 0;
    }
    test_ebadf();
    test_errno_kept();
    test_cancel();
    test_internal(); /* last: close_range closes our stdio above 2 too */
    return 0;
}
