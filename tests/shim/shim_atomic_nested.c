/* A signal handler's write, read, fsync, truncate and O_TRUNC open of a DAXKIT_ATOMIC file that its own thread
 * is writing (session 16; truncate by path and the O_TRUNC open: session 21): refused with EDEADLK, the thread's write completing, never a hang. The library raises SIGUSR1 on cue
 * inside the thread's write (DAXKIT_TEST_CRASH=raise:10:atomic.journal.pace.before_apply:1, test builds: a
 * 4 KiB overwrite applying the committed record of the write before, under the route's lock and, before
 * session 16, the journal's mutex), so the case is hit every run. Before: the handler's write waited for
 * the journal's mutex its thread held -- for ever (the watchdog fires: FAIL). Since session 16 a journal's
 * write holds the route's lock for writing, which the handler's calls would wait for too (or, glibc answering
 * EDEADLK to the lock's own thread, release as if it were theirs): they are refused first (counted
 * atomic_nested_refused). truncate(2) of the path was not (up_atomic_truncate_inode): with glibc's rwlock it
 * cut the file under the thread's write and let go of the thread's lock; with the route's own lock (session 21,
 * not recursive) it waited for ever; so did an O_TRUNC open (the route truncates after the open). A lock
 * release and a close of a second descriptor of the file (session 22) are publish points whose commit the
 * handler cannot make under its thread's lock: they succeed and leave the commit to the thread's next one
 * (up_atomic_publish), so the thread's fsync after the write must still commit it. Then the file must hold
 * the thread's bytes and not the handler's, whole.
 * argv[1]: managed directory. Exit 0 pass, 1 fail, 77 skip. */
#include "shim_test.h"

enum { BLOCK = 4096, SMALL = 128 };
static int fd;
static char p[PATH_MAX];
static volatile sig_atomic_t handled, w_err, r_err, s_err, t_err, o_err, u_err, c_err;

static void on_usr1(int sig) {
    (void)sig;
    int saved = errno;
    char b[SMALL];
    memset(b, 'h', sizeof b);
    w_err = pwrite(fd, b, sizeof b, 2 * BLOCK) < 0 ? errno : 0;
    r_err = pread(fd, b, sizeof b, 0) < 0 ? errno : 0;
    s_err = fsync(fd) < 0 ? errno : 0;
    t_err = truncate(p, BLOCK) < 0 ? errno : 0;
    int o = open(p, O_RDWR | O_TRUNC);
    o_err = o < 0 ? errno : 0;
    if (o >= 0) close(o);
    int d = dup(fd); /* a second descriptor of the file: its lock release and its close are publish points */
    struct flock fl = {.l_type = F_UNLCK, .l_whence = SEEK_SET};
    u_err = d < 0 ? errno : fcntl(d, F_SETLK, &fl) < 0 ? errno : 0;
    c_err = d < 0 ? errno : close(d) < 0 ? errno : 0;
    handled++;
    errno = saved;
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    if (!getenv("DAXKIT_TEST_CRASH")) SKIP("needs DAXKIT_TEST_CRASH=raise:10:atomic.journal.pace.before_apply:1 (a test build)");
    if (!getenv("DAXKIT_ATOMIC")) SKIP("needs DAXKIT_ATOMIC (the file routed to the engine's journal)");
    st_watchdog(20);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    st_path(p, sizeof p, dir, "nested.bin");
    fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0, "open %s: %s", p, strerror(errno));
    static char a[3 * BLOCK], b[BLOCK], got[3 * BLOCK];
    memset(a, 'a', sizeof a);
    memset(b, 'b', sizeof b);
    CHECK(pwrite(fd, a, sizeof a, 0) == (ssize_t)sizeof a, "pwrite: %s", strerror(errno));
    CHECK(fsync(fd) == 0, "fsync: %s", strerror(errno));
    /* A new file's bytes go straight into it (no record, session 17: alog_jdirect.c); an overwrite inside the
     * committed size is a record: */
    CHECK(pwrite(fd, a, BLOCK, BLOCK) == BLOCK, "pwrite: %s", strerror(errno));
    CHECK(fsync(fd) == 0, "fsync: %s", strerror(errno)); /* committed: the next 4 KiB write applies it */
    CHECK(pwrite(fd, b, sizeof b, 0) == (ssize_t)sizeof b, "pwrite in which the handler runs: %s", strerror(errno));
    CHECK(handled == 1, "the handler ran %d times (the crash point was not reached: DAXKIT_TEST_CRASH, DAXKIT_ATOMIC_PACE?)",
          (int)handled);
    CHECK(w_err == EDEADLK && r_err == EDEADLK && s_err == EDEADLK && t_err == EDEADLK && o_err == EDEADLK,
          "the handler's write, read, fsync, truncate, O_TRUNC open: errno %d, %d, %d, %d, %d, want EDEADLK (%d) each",
          (int)w_err, (int)r_err, (int)s_err, (int)t_err, (int)o_err, EDEADLK);
    CHECK(u_err == 0 && c_err == 0, "the handler's lock release and close of a dup'ed descriptor: errno %d, %d, want 0 each",
          (int)u_err, (int)c_err);
    CHECK(fsync(fd) == 0 && close(fd) == 0, "fsync/close: %s", strerror(errno));
    int r = open(p, O_RDONLY);
    CHECK(r >= 0 && pread(r, got, sizeof got, 0) == (ssize_t)sizeof got, "read back: %s", strerror(errno));
    close(r);
    memcpy(a, b, sizeof b);
    CHECK(memcmp(got, a, sizeof a) == 0, "the file is not the thread's writes alone");
    NOTE("the handler's write, read, fsync, truncate and O_TRUNC open were refused with EDEADLK, its lock release and "
         "close of a dup'ed descriptor succeeded; the thread's write completed");
    return 0;
}
