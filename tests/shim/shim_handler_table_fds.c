/* A signal handler's descriptor and stat calls while its own thread holds the file table's lock (an unlock's
 * publish walk: the library raises SIGUSR1 on cue there, DAXKIT_TEST_CRASH=raise:10:upath.publish_all.
 * table_locked:1, test builds, so each case is hit every run). The file c has appends staged (active,
 * pinned: the walk runs); m is a managed file with published bytes, u an unmanaged descriptor (/dev/null) on
 * the number after m's.
 *   close_range: the handler's close_range(m, u) returns 0: u is closed at once, m's close is left to the
 *     thread, which closes it -- publish point, tables, kernel -- when it lets go of the table's lock, before
 *     its flock returns (the kernel's close_range skips m's number until then). After the flock both numbers
 *     are closed, m holds its bytes, and a file opened then (on m's number) is served right.
 *   close_range_many: the same over m, u and 9 more managed numbers, one more than the thread's list of closes
 *     left to it holds: EDEADLK, nothing closed.
 *   dup2_onto, dup2_from: the handler's dup2(u, m) onto the managed number and dup2(m, u) from it fail with
 *     EDEADLK before the kernel's dup2 (binding or unbinding a number takes the table's lock; a dup2 cannot
 *     be left for later): m still names its file, u /dev/null.
 *   dup2_from_pending (lazy adoption, DAXKIT_ADOPT_AFTER_IOS=4): dup2(pm, u) from a descriptor of m not adopted yet
 *     (opened while c is active): EDEADLK too -- its adoption is refused there, and u became a plain kernel
 *     descriptor of m for good (review 18, finding 4).
 *   Before session 18 all three waited for the thread for ever.
 *   stat: the handler's stat of c (its size is staged: the kernel's is stale) fails with EDEADLK (up_fix_stat:
 *     the size cannot be looked up by name inside the table's lock while a file is active), never the kernel's
 *     stale size; its fstat of c's descriptor answers c's size (looked up through the descriptor, no lock).
 * The case runs in a child (exec'ed: its crash point counts start at 0; the parent's fork is a publish walk
 * too, with SIGUSR1 ignored) with a 20 s watchdog; a child that does not end in 30 s is killed: FAIL (hang).
 * argv[1]: managed directory; argv[2]: the case. Exit 0 pass, 1 fail, 77 skip. */
#include <linux/close_range.h>
#include <sys/file.h>

#include "shim_test.h"

enum { CLOSE_RANGE, CLOSE_RANGE_MANY, DUP2_ONTO, DUP2_FROM, DUP2_FROM_PENDING, STAT, CASES };
static const char *const names[CASES] = {"close_range", "close_range_many",  "dup2_onto",
                                         "dup2_from",   "dup2_from_pending", "stat"};
enum { C_BYTES = 4096, M_BYTES = 100, MANY = 9 };
static int mode, m_fd, u_fd, c_fd, pm_fd, last_fd, h_rc = -2, h_errno, h_rc2 = -2, h_errno2;
static volatile sig_atomic_t handled;
static char c_path[PATH_MAX];
static struct stat h_st, h_st2;

static void on_usr1(int sig) {
    (void)sig;
    if (mode == CLOSE_RANGE) h_rc = close_range((unsigned)m_fd, (unsigned)u_fd, 0);
    if (mode == CLOSE_RANGE_MANY) h_rc = close_range((unsigned)m_fd, (unsigned)last_fd, 0);
    if (mode == DUP2_ONTO) h_rc = dup2(u_fd, m_fd);
    if (mode == DUP2_FROM) h_rc = dup2(m_fd, u_fd);
    if (mode == DUP2_FROM_PENDING) h_rc = dup2(pm_fd, u_fd);
    if (mode == STAT) h_rc = stat(c_path, &h_st);
    h_errno = errno;
    if (mode == STAT) h_rc2 = fstat(c_fd, &h_st2), h_errno2 = errno;
    handled++;
}

static bool is_open(int fd) { return fcntl(fd, F_GETFD) >= 0; }

/* fd is open on a managed file holding `n` bytes of `fill` (read through the library). */
static void check_reads(int fd, char fill, size_t n, const char *what) {
    static char buf[C_BYTES + 1];
    ssize_t r = pread(fd, buf, sizeof buf, 0);
    CHECK(r == (ssize_t)n, "%s: read %zd bytes (%s), not %zu", what, r, r < 0 ? strerror(errno) : "", n);
    for (size_t i = 0; i < n; i++) CHECK(buf[i] == fill, "%s: byte %zu is 0x%02x", what, i, (unsigned char)buf[i]);
}

/* A file opened on a number the handler's call may have freed is served right: written and read back. */
static void check_fresh_open(const char *dir) {
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, "fresh");
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0, "open %s: %s", p, strerror(errno));
    char w[64];
    memset(w, 'n', sizeof w);
    st_write_all(fd, w, sizeof w);
    check_reads(fd, 'n', sizeof w, "a file opened after the handler");
    CHECK(close(fd) == 0, "close %s: %s", p, strerror(errno));
    CHECK(st_ksize(p) == (long long)sizeof w, "%s holds %lld bytes", p, st_ksize(p));
}

static void after_close_range(const char *dir) {
    CHECK(h_rc == 0, "the handler's close_range returned %d (%s)", h_rc, strerror(h_errno));
    CHECK(!is_open(m_fd) && errno == EBADF, "m (%d) is still open after the flock: its close was not carried out", m_fd);
    CHECK(!is_open(u_fd) && errno == EBADF, "u (%d) is still open", u_fd);
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, "m");
    CHECK(st_ksize(p) == M_BYTES, "m holds %lld bytes", st_ksize(p));
    check_fresh_open(dir);
    NOTE("close_range: done; m's close carried out by its thread after the walk");
}

/* More managed numbers in the range than the thread's list holds: refused, every number still open. */
static void after_close_range_many(void) {
    CHECK(h_rc == -1 && h_errno == EDEADLK, "the handler's close_range over %d managed numbers returned %d (%s), not "
          "EDEADLK", MANY + 1, h_rc, strerror(h_errno));
    for (int fd = m_fd; fd <= last_fd; fd++) CHECK(is_open(fd), "%d was closed by the refused close_range", fd);
    check_reads(m_fd, 'm', M_BYTES, "m after the refused close_range");
    NOTE("close_range_many: EDEADLK, nothing closed");
}

/* dup2 onto or from the managed number: refused, both numbers as they were. */
static void after_dup2(void) {
    CHECK(h_rc == -1 && h_errno == EDEADLK, "the handler's dup2 returned %d (%s), not EDEADLK", h_rc, strerror(h_errno));
    check_reads(m_fd, 'm', M_BYTES, "m after the refused dup2");
    if (mode == DUP2_FROM_PENDING) check_reads(pm_fd, 'm', M_BYTES, "m's pending descriptor after the refused dup2");
    CHECK(write(u_fd, "x", 1) == 1 && pread(u_fd, &(char){0}, 1, 0) == 0, "u is no longer /dev/null");
    NOTE("%s: EDEADLK, both descriptors as they were", names[mode]);
}

static void child(const char *dir) {
    st_case_child_start(on_usr1);
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, "m");
    m_fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(m_fd >= 0, "open %s: %s", p, strerror(errno));
    static char buf[C_BYTES];
    memset(buf, 'm', M_BYTES);
    st_write_all(m_fd, buf, M_BYTES);
    CHECK(fsync(m_fd) == 0, "fsync m: %s", strerror(errno)); /* published: m's bytes are the kernel's */
    u_fd = open("/dev/null", O_RDWR);
    CHECK(u_fd == m_fd + 1, "/dev/null opened on %d, not next to m (%d)", u_fd, m_fd);
    last_fd = u_fd;
    for (int i = 0; mode == CLOSE_RANGE_MANY && i < MANY; i++) { /* with m, one more than the list's 8 */
        char k[32];
        snprintf(k, sizeof k, "k%d", i);
        st_path(p, sizeof p, dir, k);
        last_fd = open(p, O_RDWR | O_CREAT, 0644);
        CHECK(last_fd >= 0, "open %s: %s", p, strerror(errno));
    }
    st_path(c_path, sizeof c_path, dir, "c");
    c_fd = open(c_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    CHECK(c_fd >= 0, "open %s: %s", c_path, strerror(errno));
    memset(buf, 'c', sizeof buf);
    st_write_all(c_fd, buf, C_BYTES); /* staged: c is active, the unlock's walk runs */
    CHECK(mode != STAT || st_ksize(c_path) != C_BYTES, "c's appends are the kernel's already: the stat case tells nothing");
    st_path(p, sizeof p, dir, "m");
    pm_fd = open(p, O_RDONLY); /* opened while c is active: pending with lazy adoption (dup2_from_pending) */
    CHECK(pm_fd >= 0, "open %s: %s", p, strerror(errno));
    st_path(p, sizeof p, dir, "l1");
    int l1 = open(p, O_RDWR | O_CREAT, 0644);
    CHECK(l1 >= 0 && flock(l1, LOCK_EX) == 0, "open/flock %s: %s", p, strerror(errno));
    CHECK(flock(l1, LOCK_UN) == 0, "flock LOCK_UN: %s", strerror(errno)); /* the handler runs in its walk */
    CHECK(handled == 1, "the handler ran %d times (the crash point was not reached: DAXKIT_TEST_CRASH?)", (int)handled);
    if (mode == CLOSE_RANGE) after_close_range(dir);
    if (mode == CLOSE_RANGE_MANY) after_close_range_many();
    if (mode == DUP2_ONTO || mode == DUP2_FROM || mode == DUP2_FROM_PENDING) after_dup2();
    if (mode == STAT) {
        CHECK(h_rc == -1 && h_errno == EDEADLK, "the handler's stat of c returned %d (%s), size %lld: not EDEADLK", h_rc,
              h_rc ? strerror(h_errno) : "", (long long)h_st.st_size);
        CHECK(h_rc2 == 0 && h_st2.st_size == C_BYTES, "the handler's fstat of c returned %d (%s), size %lld, not %d",
              h_rc2, h_rc2 ? strerror(h_errno2) : "", (long long)h_st2.st_size, C_BYTES);
        struct stat st;
        CHECK(stat(c_path, &st) == 0 && st.st_size == C_BYTES, "the thread's stat of c after: size %lld (%s)",
              (long long)st.st_size, strerror(errno));
        NOTE("stat: EDEADLK inside the table's lock with c active; %d bytes after", C_BYTES);
    }
    CHECK(close(c_fd) == 0 && st_ksize(c_path) == C_BYTES, "c after the handler: %lld bytes", st_ksize(c_path));
    exit(0);
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    mode = st_case_index(argc, argv, names, CASES,
                         "shim_handler_table_fds DIR close_range|close_range_many|dup2_onto|dup2_from|dup2_from_pending|stat");
    if (mode == DUP2_FROM_PENDING && !(getenv("DAXKIT_ADOPT_AFTER_IOS") && atoi(getenv("DAXKIT_ADOPT_AFTER_IOS")) > 0))
        SKIP("dup2_from_pending needs lazy adoption (DAXKIT_ADOPT_AFTER_IOS=4)");
    if (!getenv("DAXKIT_TEST_CRASH")) SKIP("needs DAXKIT_TEST_CRASH=raise:10:upath.publish_all.table_locked:1 (a test build)");
    if (argc > 3 && strcmp(argv[3], "child") == 0) child(dir);
    st_run_case_child(argv, "the handler waited for its own thread's table lock");
    return 0;
}
