/* A signal handler's call that reaches a library mutex its own interrupted thread holds must not wait for it
 * (common/lockmark.h: dk_mu_mine). The library raises SIGUSR1 on cue inside the mutex
 * (DAXKIT_TEST_CRASH=raise:10:SITE:1, test builds), so each case is hit every run:
 *   unlock_flock, unlock_fcntl (SITE upath.publish_all.table_locked): the thread's flock(LOCK_UN) publishes
 *     under the file table's lock; the handler releases another lock (flock LOCK_UN / fcntl F_UNLCK -- async-
 *     signal-safe, common before _exit), whose publish waited for up_table_mu for ever (review 14, finding
 *     12, pre-existing). The walk is skipped in the handler; the file appended before is published by the
 *     thread's own walk and by its exit.
 *   sizerec_exit, sizerec__exit (SITE sizerec.slot_take.locked): the thread's fsync publishes file A and
 *     takes a published-size record slot under z->mu; the handler calls exit / _exit, whose publish of file B
 *     (8 KiB staged: its relink needs a record) waited for z->mu for ever (hang14's sizerec case). B must be
 *     published whole (without a record).
 *   dirfd_open (SITE managed.dirfd_note_open.locked): the thread's open(O_DIRECTORY) of a directory below the
 *     root stores its verdict under dirfd_mu; the handler opens and closes another such directory, whose
 *     verdict and forget waited for dirfd_mu for ever (review 15, finding 2). Then a file opened relative to
 *     each directory descriptor, written and read back: the cache is still right.
 * The case runs in a child (exec'ed: its crash point counts start at 0; the parent's fork is a publish walk
 * too, with SIGUSR1 ignored) with a 20 s watchdog; a child that does not end in 30 s is killed: FAIL (hang).
 * argv[1]: managed directory; argv[2]: the case. Exit 0 pass, 1 fail, 77 skip. */
#include <sys/file.h>

#include "shim_test.h"

enum { UNLOCK_FLOCK, UNLOCK_FCNTL, SIZEREC_EXIT, SIZEREC__EXIT, DIRFD_OPEN };
enum { BYTES = 8192 };
static int mode, lock2_fd;
static char hdir[PATH_MAX];
static volatile sig_atomic_t handled;

static void on_usr1(int sig) {
    (void)sig;
    if (mode == UNLOCK_FLOCK) flock(lock2_fd, LOCK_UN);
    if (mode == UNLOCK_FCNTL) {
        struct flock l = {.l_type = F_UNLCK, .l_whence = SEEK_SET, .l_len = 1};
        fcntl(lock2_fd, F_SETLK, &l);
    }
    if (mode == DIRFD_OPEN) { /* a directory below the root: its verdict, then its number forgotten */
        int d = open(hdir, O_RDONLY | O_DIRECTORY);
        if (d < 0 || close(d) != 0) _exit(6);
    }
    if (mode == SIZEREC_EXIT) exit(0);
    if (mode == SIZEREC__EXIT) _exit(0);
    handled++;
}

static int open_append(const char *dir, const char *name, char fill, size_t n) {
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    CHECK(fd >= 0, "open %s: %s", p, strerror(errno));
    static char buf[BYTES];
    memset(buf, fill, sizeof buf);
    CHECK(n <= sizeof buf, "n");
    st_write_all(fd, buf, n);
    return fd;
}

static void child(const char *dir) {
    st_watchdog(20);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    if (mode == UNLOCK_FLOCK || mode == UNLOCK_FCNTL) {
        open_append(dir, "c", 'c', 4096); /* pinned: the unlock's walk runs */
        char p[PATH_MAX];
        st_path(p, sizeof p, dir, "l1");
        int l1 = open(p, O_RDWR | O_CREAT, 0644);
        st_path(p, sizeof p, dir, "l2");
        lock2_fd = open(p, O_RDWR | O_CREAT, 0644);
        CHECK(l1 >= 0 && lock2_fd >= 0, "open the lock files: %s", strerror(errno));
        if (mode == UNLOCK_FLOCK) CHECK(flock(lock2_fd, LOCK_EX) == 0, "flock: %s", strerror(errno));
        struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 1};
        if (mode == UNLOCK_FCNTL) CHECK(fcntl(lock2_fd, F_SETLK, &l) == 0, "F_SETLK: %s", strerror(errno));
        CHECK(flock(l1, LOCK_EX) == 0, "flock: %s", strerror(errno));
        CHECK(flock(l1, LOCK_UN) == 0, "flock LOCK_UN: %s", strerror(errno)); /* the handler runs in its walk */
        CHECK(handled == 1, "the handler ran %d times (the crash point was not reached: DAXKIT_TEST_CRASH?)", (int)handled);
        exit(0);
    }
    if (mode == DIRFD_OPEN) {
        char p[PATH_MAX];
        st_path(p, sizeof p, dir, "d1");
        st_path(hdir, sizeof hdir, dir, "d2");
        CHECK(mkdir(p, 0755) == 0 && mkdir(hdir, 0755) == 0, "mkdir: %s", strerror(errno));
        int d1 = open(p, O_RDONLY | O_DIRECTORY); /* the handler runs in its verdict's store */
        CHECK(d1 >= 0, "open %s: %s", p, strerror(errno));
        CHECK(handled == 1, "the handler ran %d times (the crash point was not reached: DAXKIT_TEST_CRASH?)", (int)handled);
        int d2 = open(hdir, O_RDONLY | O_DIRECTORY);
        CHECK(d2 >= 0, "open %s: %s", hdir, strerror(errno));
        for (int k = 0; k < 2; k++) {
            int f = openat(k ? d2 : d1, "f", O_RDWR | O_CREAT | O_TRUNC, 0644);
            CHECK(f >= 0, "openat: %s", strerror(errno));
            char w[64], r[64] = {0};
            memset(w, 'd' + k, sizeof w);
            st_write_all(f, w, sizeof w);
            CHECK(pread(f, r, sizeof r, 0) == (ssize_t)sizeof r && !memcmp(r, w, sizeof w), "read back (dir %d)", k);
            close(f);
        }
        exit(0);
    }
    open_append(dir, "b", 'b', BYTES); /* staged: published by the handler's exit */
    int a = open_append(dir, "a", 'a', BYTES);
    fsync(a); /* its publish takes a record slot: the handler exits there */
    FAIL("fsync returned: the crash point was not reached (DAXKIT_TEST_CRASH?)");
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    if (argc < 3) SKIP("usage: shim_handler_locks DIR unlock_flock|unlock_fcntl|sizerec_exit|sizerec__exit|dirfd_open");
    const char *names[] = {"unlock_flock", "unlock_fcntl", "sizerec_exit", "sizerec__exit", "dirfd_open"};
    mode = -1;
    for (int i = 0; i < 5; i++)
        if (strcmp(argv[2], names[i]) == 0) mode = i;
    if (mode < 0) SKIP("unknown case %s", argv[2]);
    if (!getenv("DAXKIT_TEST_CRASH")) SKIP("needs DAXKIT_TEST_CRASH=raise:10:SITE:1 (a test build)");
    if (argc > 3 && strcmp(argv[3], "child") == 0) child(dir);
    signal(SIGUSR1, SIG_IGN);
    pid_t c = fork();
    CHECK(c >= 0, "fork: %s", strerror(errno));
    if (c == 0) {
        execl("/proc/self/exe", argv[0], argv[1], argv[2], "child", (char *)NULL);
        _exit(127);
    }
    int st = 0;
    pid_t w = 0;
    for (int waited_ms = 0; waited_ms < 30000 && (w = waitpid(c, &st, WNOHANG)) == 0; waited_ms += 10) usleep(10000);
    if (w == 0) {
        kill(c, SIGKILL);
        waitpid(c, &st, 0);
        FAIL("%s: the process did not end within 30 s (the handler waited for its own thread's mutex)", argv[2]);
    }
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: child status 0x%x (1: its watchdog -- a hang)", argv[2], st);
    if (mode == DIRFD_OPEN) {
        NOTE("%s: the handler did not wait; files below both directories written and read back", argv[2]);
        return 0;
    }
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, mode <= UNLOCK_FCNTL ? "c" : "b");
    long long want = mode <= UNLOCK_FCNTL ? 4096 : BYTES;
    CHECK(st_ksize(p) == want, "%s: %s holds %lld bytes in the kernel, not %lld: not published", argv[2], p, st_ksize(p), want);
    int fd = (int)syscall(SYS_openat, AT_FDCWD, p, O_RDONLY);
    static char buf[BYTES];
    CHECK(fd >= 0 && syscall(SYS_read, fd, buf, sizeof buf) == want, "read %s", p);
    for (long long i = 0; i < want; i++)
        CHECK(buf[i] == (mode <= UNLOCK_FCNTL ? 'c' : 'b'), "%s: byte %lld of %s is 0x%02x", argv[2], i, p, (unsigned char)buf[i]);
    NOTE("%s: the handler did not wait; %s published (%lld bytes)", argv[2], p, want);
    return 0;
}
