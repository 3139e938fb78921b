/* Descriptor numbers the program relies on, and the standard descriptors 0-2. argv[1]: managed directory;
 * argv[2]: the case.
 *
 * aux_moved, aux_locked_low (review 9, finding 21): the library's kept read-write descriptor of a file
 * (upath/auxfd.c: a reopen for a read-write mapping of a write-only descriptor) must not take the number
 * the program's next open() is to get by POSIX's lowest-number rule. aux_moved: a free number below the
 * file's; after the reopen, open() must still return it. aux_locked_low: the process holds a POSIX lock on
 * the file (the kept descriptor must not move: closing its first number would drop the lock) and its fd 1
 * is free: open() must return 1, and the lock must still be there. */
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

int main(int argc, char **argv) {
    if (argc < 3) SKIP("usage: shim_std_fds DIR CASE");
    st_watchdog(60);
    const char *dir = argv[1], *c = argv[2];
    if (strcmp(c, "aux_moved") == 0) case_aux_moved(dir);
    else if (strcmp(c, "aux_locked_low") == 0) case_aux_locked_low(dir);
    else FAIL("unknown case %s", c);
    NOTE("%s: pass", c);
    return 0;
}
