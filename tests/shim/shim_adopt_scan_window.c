/* Description: the start-up scan of inherited descriptors (upath/lifecycle.c: adopt_inherited) holds its
 * /proc/self/fd stream at a number the program cannot see (110d9ff: dk_ifd_opendirat, common/internal_fd.h).
 * glibc's opendir took the lowest free number: while the scan ran, a thread a constructor had started before
 * the library's (or any call of the program's through a number it had just closed) met the library's
 * directory there -- an open got the next number, an fstat of the closed number found a directory.
 *
 * How: the driver forks; the child keeps descriptors 0-2 and a managed file at 3 (inherited, so the scan
 * adopts it), closes the rest below the internal floor, and execs this program again under the library with
 * DAXKIT_TEST_CRASH_START=raise:19:upath.adopt_inherited.scanning:1 (test builds; crashpoint.h: a cue in force
 * during the library's constructor only): the library stops itself (SIGSTOP) inside the scan, its stream open. The driver then lists /proc/PID/fd: every descriptor other than
 * 0-3 must be at the internal floor or above (dk_internal_fd_floor of the child's RLIMIT_NOFILE). A child
 * that never stops fails the test (the cue was not reached: nothing was looked at). Then SIGCONT; the child
 * checks its descriptor 3 still reads the file and that the lowest free number is 4, and exits 0.
 * Negative control: lifecycle.c's opendir("/proc/self/fd") back (the code before 110d9ff): the stream is at 4.
 * Usage: shim_adopt_scan_window DIR (the driver) | DIR child (the exec'd program). */
#include <dirent.h>
#include <sys/resource.h>

#include "common/config.h"
#include "shim_test.h"

#define CUE "raise:19:upath.adopt_inherited.scanning:1"
#define TEXT "inherited by the exec'd child\n"

static int child(void) {
    char buf[64];
    ssize_t r = pread(3, buf, sizeof buf, 0);
    CHECK(r == (ssize_t)strlen(TEXT) && memcmp(buf, TEXT, (size_t)r) == 0, "child: descriptor 3 read %zd bytes", r);
    int fd = OK(open("/dev/null", O_RDONLY));
    CHECK(fd == 4, "child: open gave %d, the lowest free number is 4", fd);
    return 0;
}

/* The internal floor of a process with this process's RLIMIT_NOFILE (the child inherits it). */
static int floor_now(void) {
    struct rlimit rl;
    OK(getrlimit(RLIMIT_NOFILE, &rl));
    bool limited = rl.rlim_cur != RLIM_INFINITY;
    return dk_internal_fd_floor(limited ? (long)rl.rlim_cur : 0, limited);
}

int main(int argc, char **argv) {
    if (argc < 2) FAIL("usage: shim_adopt_scan_window DIR [child]");
    if (argc > 2 && strcmp(argv[2], "child") == 0) return child();
    st_watchdog(120);
    char path[PATH_MAX];
    st_path(path, sizeof path, argv[1], "inherited");
    int fd = OK(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    st_write_all(fd, TEXT, strlen(TEXT));
    OK(close(fd));
    int floor = floor_now();
    CHECK(floor > 5, "internal floor %d: no room below it for the test", floor);

    pid_t pid = OK(fork());
    if (pid == 0) {
        for (int n = 3; n < floor; n++) close(n); /* the program's, inherited from the runner (not the library's) */
        for (int n = 0; n < 3; n++) /* a runner that closed one: /dev/null there, so that the file gets 3 */
            if (fcntl(n, F_GETFD) < 0 && open("/dev/null", O_RDWR) != n) _exit(3);
        int f = open(path, O_RDONLY);
        if (f != 3) _exit(3);
        char *args[] = {argv[0], argv[1], "child", NULL};
        setenv("DAXKIT_TEST_CRASH_START", CUE, 1);
        execv("/proc/self/exe", args);
        _exit(4);
    }
    int st;
    OK(waitpid(pid, &st, WUNTRACED));
    CHECK(!(WIFEXITED(st) && WEXITSTATUS(st) == 3), "the child's open did not give descriptor 3");
    CHECK(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP,
          "the child never stopped in the scan (status %#x): cue %s not reached (a test build? the site renamed?)",
          st, CUE);

    char dirpath[64], link[PATH_MAX], target[PATH_MAX];
    snprintf(dirpath, sizeof dirpath, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(dirpath);
    CHECK(d, "opendir %s: %s", dirpath, strerror(errno));
    int bad = 0, seen = 0, high = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long n = strtol(e->d_name, &end, 10);
        if (*end || e->d_name[0] == '.') continue;
        seen++;
        snprintf(link, sizeof link, "%s/%ld", dirpath, n);
        ssize_t l = readlink(link, target, sizeof target - 1);
        target[l < 0 ? 0 : l] = 0;
        if (n <= 3) continue;
        if (n >= floor) {
            high++;
            NOTE("descriptor %ld (at or above the floor %d): %s", n, floor, target);
            continue;
        }
        bad++;
        NOTE("descriptor %ld of the library during the scan, below the floor %d: %s", n, floor, target);
    }
    closedir(d);
    kill(pid, SIGCONT);
    OK(waitpid(pid, &st, 0));
    CHECK(seen >= 4, "the stopped child showed %d descriptors: 0-3 expected at least", seen);
    CHECK(!bad, "%d descriptor(s) of the library's start-up scan at numbers the program can see (expected none "
                "below %d but 0-3)", bad, floor);
    CHECK(high >= 1, "no descriptor at or above the floor %d during the scan: where is its stream?", floor);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child ended with status %#x", st);
    printf("ok: during the start-up scan every descriptor of the library was at %d or above (%d there)\n", floor, high);
    return 0;
}
