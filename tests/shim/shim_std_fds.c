/* Descriptor numbers the program relies on, and the standard descriptors 0-2. argv[1]: managed directory;
 * argv[2]: the case.
 *
 * aux_moved, aux_locked_low (review 9, finding 21): the library's kept read-write descriptor of a file
 * (upath/auxfd.c: a reopen for a read-write mapping of a write-only descriptor) must not take the number
 * the program's next open() is to get by POSIX's lowest-number rule. aux_moved: a free number below the
 * file's; after the reopen, open() must still return it. aux_locked_low: the process holds a POSIX lock on
 * the file (the kept descriptor must not move: closing its first number would drop the lock) and its fd 1
 * is free: open() must return 1, and the lock must still be there. aux_unseen_lock (review 10, finding 12):
 * a lock the library never saw asked for -- taken before an exec (a locking wrapper), here by a raw
 * system call -- must survive the reopen too.
 *
 * dup2_std, reopen_stdout, reopen_stdout_trunc (review 9, finding 17): a managed file on descriptor 1 or 2
 * -- by dup2 (the daemon idiom), or close(1) then open() -- is written by stdio with libc's internal write,
 * unseen by the library, and by the program's write(): every line must be in the file, in program order.
 * dprintf (finding 18): dprintf/vdprintf/__dprintf_chk to a managed descriptor between write()s. Each
 * case reads the file back with raw system calls after closing it. */
#include <dirent.h>
#include <limits.h>

#include "shim_test.h"

/* Whether a process other than us sees our lock on the whole of path: F_GETLK from a raw child. */
static bool lock_held(const char *path) {
    pid_t parent = getpid();
    pid_t c = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (c == 0) {
        int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR);
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
        if (fd < 0 || syscall(SYS_fcntl, fd, F_GETLK, &fl) != 0) syscall(SYS_exit_group, 2);
        syscall(SYS_exit_group, fl.l_type != F_UNLCK && fl.l_pid == parent ? 0 : 1);
    }
    CHECK(c > 0, "clone: %s", strerror(errno));
    int st;
    CHECK(syscall(SYS_wait4, c, &st, 0, NULL) == c, "wait4");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 2, "the checker could not open %s or ask for the lock", path);
    return WEXITSTATUS(st) == 0;
}

/* A descriptor of path other than `except` (the library's kept one), or -1. */
static int other_fd_of(const char *path, int except) {
    DIR *d = opendir("/proc/self/fd");
    CHECK(d, "opendir /proc/self/fd");
    int found = -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        int n = atoi(e->d_name);
        if (e->d_name[0] < '0' || e->d_name[0] > '9' || n == except || n == dirfd(d)) continue;
        char link[64], target[PATH_MAX];
        snprintf(link, sizeof link, "/proc/self/fd/%d", n);
        ssize_t len = readlink(link, target, sizeof target - 1);
        if (len <= 0) continue;
        target[len] = 0;
        if (strcmp(target, path) == 0) found = n;
    }
    closedir(d);
    return found;
}

/* Appends records, fsyncs, and overwrites them: the overwrites map the file read-write, which needs a
 * read-write descriptor -- the write-only fd makes the library reopen the file and keep that. */
static void write_then_overwrite(int fd) {
    char rec[64];
    memset(rec, 'L', sizeof rec);
    rec[63] = '\n';
    for (int i = 0; i < 20; i++) st_write_all(fd, rec, sizeof rec);
    OK(fsync(fd));
    memset(rec, 'O', 63);
    for (int i = 0; i < 20; i++) st_pwrite_all(fd, rec, sizeof rec, 64 * i);
}

static void case_aux_moved(const char *dir) {
    char p[PATH_MAX], real[PATH_MAX];
    st_path(p, sizeof p, dir, "log");
    int hole = OK(open("/dev/null", O_RDONLY));
    int fd = OK(open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    CHECK(realpath(p, real), "realpath");
    OK(close(hole)); /* the lowest free number now */
    write_then_overwrite(fd);
    int kept = other_fd_of(real, fd);
    CHECK(kept >= 0, "no second descriptor of the file: the library did not reopen it (the case tests nothing)");
    int out = OK(open("/dev/null", O_WRONLY));
    CHECK(out == hole, "open() returned %d, not the lowest free number %d (the library's kept descriptor is %d)",
          out, hole, kept);
    OK(close(out));
    OK(close(fd));
}

static void case_aux_locked_low(const char *dir) {
    char p[PATH_MAX], real[PATH_MAX];
    st_path(p, sizeof p, dir, "log");
    int fd = OK(open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    CHECK(realpath(p, real), "realpath");
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    CHECK(fcntl(fd, F_SETLK, &fl) == 0, "F_SETLK: %s", strerror(errno));
    OK(close(1)); /* a program redirecting its stdout: close(1), then open() must give 1 */
    write_then_overwrite(fd);
    int kept = other_fd_of(real, fd);
    CHECK(kept >= 0, "no second descriptor of the file: the library did not reopen it (the case tests nothing)");
    int out = OK(open("/dev/null", O_WRONLY));
    CHECK(out == 1, "open() returned %d, not 1 (the library's kept descriptor is %d)", out, kept);
    CHECK(kept > 2, "the library's kept descriptor took %d", kept);
    CHECK(lock_held(real), "the program's lock on the file is gone");
    OK(close(fd));
}

/* The file's bytes as the kernel has them (raw system calls: no library call). */
static void expect_file(const char *path, const char *want) {
    char got[8192];
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
    CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    ssize_t n = 0, r;
    while ((r = syscall(SYS_read, fd, got + n, sizeof got - 1 - (size_t)n)) > 0) n += r;
    syscall(SYS_close, fd);
    got[n] = 0;
    CHECK(strcmp(got, want) == 0, "%s holds %zd bytes '%s', not %zu bytes '%s'", path, n, got, strlen(want), want);
}

static void case_dup2_std(const char *dir) {
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, "out");
    int save1 = OK(dup(1)), save2 = OK(dup(2));
    int fd = OK(open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    st_write_all(fd, "hello\n", 6);
    fflush(stdout);
    OK(dup2(fd, 1)); /* the daemon idiom: stdout and stderr into the log */
    printf("world\n");
    fflush(stdout);
    st_write_all(1, "again\n", 6);
    OK(dup2(fd, 2));
    fprintf(stderr, "stderr %d\n", 2); /* unbuffered: one internal write */
    st_write_all(fd, "tail\n", 5);
    OK(dup2(save2, 2));
    OK(close(fd));
    puts("last");
    fflush(stdout);
    OK(dup2(save1, 1));
    expect_file(p, "hello\nworld\nagain\nstderr 2\ntail\nlast\n");
}

static void reopen_stdout(const char *dir, int extra) {
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, "out2");
    int save1 = OK(dup(1));
    fflush(stdout);
    OK(close(1));
    int fd = OK(open(p, O_WRONLY | O_CREAT | O_TRUNC | extra, 0644));
    CHECK(fd == 1, "open() returned %d, not 1", fd);
    st_write_all(fd, "hello\n", 6);
    printf("world fd=%d\n", fd);
    fflush(stdout);
    st_write_all(1, "again\n", 6);
    puts("last");
    fflush(stdout);
    OK(dup2(save1, 1));
    expect_file(p, "hello\nworld fd=1\nagain\nlast\n");
}

int __dprintf_chk(int fd, int flag, const char *fmt, ...);

static int my_vdprintf(int fd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = vdprintf(fd, fmt, ap);
    va_end(ap);
    return r;
}

static void case_dprintf(const char *dir) {
    char p[PATH_MAX], want[8192], big[3001];
    st_path(p, sizeof p, dir, "dp");
    memset(big, 'b', 3000);
    big[3000] = 0;
    int fd = OK(open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    st_write_all(fd, "one\n", 4);
    CHECK(dprintf(fd, "two %d\n", 2) == 6, "dprintf");
    st_write_all(fd, "three\n", 6);
    CHECK(my_vdprintf(fd, "four %d\n", 4) == 7, "vdprintf");
    CHECK(__dprintf_chk(fd, 1, "five %s\n", "5") == 7, "__dprintf_chk");
    CHECK(dprintf(fd, "%s\n", big) == 3001, "dprintf of 3001 bytes");
    st_write_all(fd, "six\n", 4);
    OK(close(fd));
    snprintf(want, sizeof want, "one\ntwo 2\nthree\nfour 4\nfive 5\n%s\nsix\n", big);
    expect_file(p, want);
}

static void case_aux_unseen_lock(const char *dir) {
    char p[PATH_MAX], real[PATH_MAX];
    st_path(p, sizeof p, dir, "log");
    int lfd = OK(open(p, O_RDWR | O_CREAT | O_TRUNC, 0644));
    CHECK(realpath(p, real), "realpath");
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    CHECK(syscall(SYS_fcntl, lfd, F_SETLK, &fl) == 0, "raw F_SETLK: %s", strerror(errno)); /* unseen */
    CHECK(lock_held(real), "the lock is not there before the writes");
    int fd = OK(open(p, O_WRONLY));
    write_then_overwrite(fd);
    CHECK(other_fd_of(real, fd) >= 0, "no second descriptor of the file: the library did not reopen it");
    CHECK(lock_held(real), "the lock the library never saw asked for is gone after its reopen");
    OK(close(fd));
    OK(close(lfd));
}

int main(int argc, char **argv) {
    if (argc < 3) SKIP("usage: shim_std_fds DIR CASE");
    st_watchdog(60);
    const char *dir = argv[1], *c = argv[2];
    if (strcmp(c, "aux_moved") == 0) case_aux_moved(dir);
    else if (strcmp(c, "aux_locked_low") == 0) case_aux_locked_low(dir);
    else if (strcmp(c, "aux_unseen_lock") == 0) case_aux_unseen_lock(dir);
    else if (strcmp(c, "dup2_std") == 0) case_dup2_std(dir);
    else if (strcmp(c, "reopen_stdout") == 0) reopen_stdout(dir, O_APPEND);
    else if (strcmp(c, "reopen_stdout_trunc") == 0) reopen_stdout(dir, 0);
    else if (strcmp(c, "dprintf") == 0) case_dprintf(dir);
    else FAIL("unknown case %s", c);
    NOTE("%s: pass", c);
    return 0;
}
