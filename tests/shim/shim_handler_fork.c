/* A fork made in a signal handler that interrupted its own thread inside a library mutex. The library
 * raises SIGUSR1 on cue inside the mutex (DAXKIT_TEST_CRASH=raise:10:SITE:1, test builds), so each case is
 * hit every run; the handler forks.
 *   strict_return (SITE upath.publish_all.table_locked, DAXKIT_MODE=strict DAXKIT_STRICT_APPLY=checkpoint):
 *     the thread's flock(LOCK_UN) of /dev/null walks the file table under its lock with a staged overwrite 'A' of o's
 *     first 4 KiB waiting for the checkpoint. The fork is made without preparation (fork_nested); the child
 *     waits in the handler until the parent says go, then returns into its copy of the walk and _exits after
 *     the flock. Meanwhile the parent's walk checkpoints ('A' applied, the log reset, the staging file reused
 *     from its start), it stages 'B' over o's second 4 KiB (at the staging file's start, waiting too). The
 *     child's walk must apply no strict log (fe7f2b8's up_fork_orphan guard): its copy of the waiting list
 *     still names 'A' at the staging file's start -- applied there, it wrote the parent's 'B' over 'A'.
 *   close (SITE publish.before_clear: the file's mutex, a close's publish), append (SITE
 *     stage.heap_alloc.spare_locked: the staging heap's mutex, a first append), sizerec (SITE
 *     sizerec.slot_take.locked: the size records' mutex, an fsync's publish), strict_write (SITE
 *     strict.write.logged, strict: the checkpoint lock's read side and the file's append mutex, a write),
 *     strict_checkpoint (SITE strict.checkpoint.before_durable, strict: the checkpoint lock's write side, a
 *     close's checkpoint): the fork must not wait for the mutex its thread holds. The child, inside the
 *     handler, creates, writes and closes a managed file of its own and _exits; the parent's interrupted call
 *     goes on, and its file holds what it wrote.
 * The case runs in a child (exec'ed: its crash point counts start at 0; the parent's own calls hit the site
 * too, with SIGUSR1 ignored) with a 20 s watchdog; a child that does not end in 30 s is killed: FAIL (hang).
 * argv[1]: managed directory; argv[2]: the case. Exit 0 pass, 1 fail, 77 skip. */
#include <poll.h>
#include <sys/file.h>

#include "shim_test.h"

enum { STRICT_RETURN, CLOSE, APPEND, SIZEREC, STRICT_WRITE, STRICT_CHECKPOINT, ROOT, DIRFD, GROW, ATOMIC_OPEN,
       ATOMIC_COPY, ATOMIC_JOURNAL, ATOMIC_ALLOC, ATOMIC_FREE, ATOMIC_KICK, CASES };
static const char *const names[CASES] = {"strict_return", "close", "append", "sizerec", "strict_write",
                                         "strict_checkpoint", "root", "dirfd", "grow", "atomic_open",
                                         "atomic_copy", "atomic_journal", "atomic_alloc", "atomic_free",
                                         "atomic_kick"};
enum { BLOCK = 4096, FORKED_BYTES = 100, CHILD_WAIT_MS = 10000 };
static int mode, go[2];
static pid_t h_fork_pid = -1;
static volatile sig_atomic_t handled;
static char forked_path[PATH_MAX];

static void on_usr1(int sig) {
    (void)sig;
    h_fork_pid = fork();
    if (h_fork_pid == 0 && mode == STRICT_RETURN) { /* waits for the parent's word, then returns into the walk */
        struct pollfd p = {.fd = go[0], .events = POLLIN};
        if (syscall(SYS_poll, &p, 1, CHILD_WAIT_MS) != 1) _exit(4); /* the parent failed first (or an exit's walk) */
    } else if (h_fork_pid == 0) { /* a managed file of its own (sizerec: appends to the parent's), then _exit */
        int fd = open(forked_path, O_WRONLY | O_CREAT | (mode == SIZEREC ? O_APPEND : O_TRUNC), 0644);
        char b[FORKED_BYTES];
        memset(b, 'f', sizeof b);
        if (fd < 0) _exit(10 + errno % 100); /* the parent names the step and errno */
        if (write(fd, b, sizeof b) != (ssize_t)sizeof b) _exit(110 + errno % 100);
        _exit(close(fd) == 0 ? 0 : 210 + errno % 40);
    }
    handled++;
}

/* The kernel's bytes of path (raw system calls): n bytes into buf, or the test fails. */
static void kread(const char *path, char *buf, size_t n) {
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
    CHECK(fd >= 0 && syscall(SYS_pread64, fd, buf, n, 0) == (long)n, "read %s from the kernel", path);
    syscall(SYS_close, fd);
}

/* path holds `n` bytes, each `fill`, in the kernel. */
static void check_filled(const char *path, char fill, size_t n) {
    CHECK(st_ksize(path) == (long long)n, "%s holds %lld bytes in the kernel, not %zu", path, st_ksize(path), n);
    static char buf[4 * BLOCK];
    CHECK(n <= sizeof buf, "check_filled: %zu bytes is more than its buffer", n);
    kread(path, buf, n);
    for (size_t i = 0; i < n; i++) CHECK(buf[i] == fill, "byte %zu of %s is 0x%02x, not '%c'", i, path, (unsigned char)buf[i], fill);
}

static int create_filled(const char *dir, const char *name, char fill, size_t n, int flags) {
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, name);
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC | flags, 0644);
    CHECK(fd >= 0, "open %s: %s", p, strerror(errno));
    static char buf[4 * BLOCK];
    memset(buf, fill, n);
    st_write_all(fd, buf, n);
    return fd;
}

/* The handler's fork child: ends within CHILD_WAIT_MS with status 0, or the test fails (it hung). */
static void wait_fork_child(void) {
    CHECK(handled == 1, "the handler ran %d times (the crash point was not reached: DAXKIT_TEST_CRASH?)", (int)handled);
    CHECK(h_fork_pid > 0, "the handler's fork returned %d (%s)", (int)h_fork_pid, strerror(errno));
    int st = 0;
    pid_t w = 0;
    for (int ms = 0; ms < CHILD_WAIT_MS && (w = waitpid(h_fork_pid, &st, WNOHANG)) == 0; ms += 10) usleep(10000);
    if (w == 0) {
        kill(h_fork_pid, SIGKILL);
        FAIL("the handler's fork child did not end within %d ms (it waited for a mutex its parent's thread held)",
             CHILD_WAIT_MS);
    }
    int x = WIFEXITED(st) ? WEXITSTATUS(st) : -1, base = x >= 210 ? 210 : x >= 110 ? 110 : x >= 10 ? 10 : 0;
    CHECK(w == h_fork_pid && x == 0, "the handler's fork child: status 0x%x (its %s failed: %s)", st,
          base == 210 ? "close" : base == 110 ? "write" : base == 10 ? "open" : "run", base ? strerror(x - base) : "-");
}

static void strict_return(const char *dir) {
    char o[PATH_MAX];
    st_path(o, sizeof o, dir, "o");
    CHECK(close(create_filled(dir, "o", 'o', 2 * BLOCK, 0)) == 0, "close o: %s", strerror(errno)); /* a checkpoint */
    int fd = open(o, O_RDWR);
    CHECK(fd >= 0 && pipe(go) == 0, "open o / pipe: %s", strerror(errno));
    static char buf[BLOCK];
    uint64_t lazy0 = st_counter(DK_C_strict_lazy), nested0 = st_counter(DK_C_fork_nested);
    CHECK(pread(fd, buf, BLOCK, 0) == BLOCK, "read o: %s", strerror(errno)); /* mapped: overwrites may wait */
    int l1 = open("/dev/null", O_RDWR); /* not managed: its unlock publishes (and checkpoints) nothing first */
    CHECK(l1 >= 0 && flock(l1, LOCK_EX) == 0, "open/flock /dev/null: %s", strerror(errno));
    memset(buf, 'A', sizeof buf);
    st_pwrite_all(fd, buf, BLOCK, 0); /* staged at the staging file's start, waiting for the checkpoint */
    CHECK(st_counter(DK_C_strict_lazy) - lazy0 == 1, "the overwrite did not wait for the checkpoint (strict_lazy +%llu)",
          (unsigned long long)(st_counter(DK_C_strict_lazy) - lazy0));
    CHECK(flock(l1, LOCK_UN) == 0, "flock LOCK_UN: %s", strerror(errno)); /* the handler forks in its walk */
    if (h_fork_pid == 0) _exit(0); /* the child, back from the handler and its walk */
    CHECK(handled == 1 && h_fork_pid > 0, "the handler ran %d times, its fork returned %d (DAXKIT_TEST_CRASH?)",
          (int)handled, (int)h_fork_pid);
    CHECK(st_counter(DK_C_fork_nested) - nested0 == 1, "fork_nested +%llu, not 1",
          (unsigned long long)(st_counter(DK_C_fork_nested) - nested0));
    CHECK(close(fd) == 0 && (fd = open(o, O_RDWR)) >= 0, "close/open o: %s", strerror(errno)); /* a checkpoint */
    memset(buf, 'B', sizeof buf);
    st_pwrite_all(fd, buf, BLOCK, BLOCK); /* staged at the staging file's start again, waiting too */
    CHECK(write(go[1], "g", 1) == 1, "write go: %s", strerror(errno));
    wait_fork_child();
    CHECK(close(fd) == 0, "close o: %s", strerror(errno)); /* a checkpoint: 'B' applied */
    static char got[2 * BLOCK];
    kread(o, got, sizeof got);
    for (size_t i = 0; i < sizeof got; i++)
        CHECK(got[i] == (i < BLOCK ? 'A' : 'B'), "byte %zu of o is '%c', not '%c': the returning child applied the "
              "parent's strict log", i, got[i], i < BLOCK ? 'A' : 'B');
    NOTE("strict_return: the child's walk applied nothing; o holds 'A' then 'B'");
}

/* name: 2 blocks of `fill` (fsync'ed when `commit`), block `at` overwritten with `over`, closed -- the case's
 * site is in the overwrite or the close; after the fork child ends, the file must hold exactly that. */
static void overwrite_close(const char *dir, const char *name, char fill, char over, size_t at, bool commit) {
    int fd = create_filled(dir, name, fill, 2 * BLOCK, 0);
    CHECK(!commit || fsync(fd) == 0, "fsync %s: %s", name, strerror(errno));
    static char buf[BLOCK], got[2 * BLOCK];
    memset(buf, over, sizeof buf);
    st_pwrite_all(fd, buf, BLOCK, (off_t)(at * BLOCK));
    CHECK(close(fd) == 0, "close %s: %s", name, strerror(errno));
    wait_fork_child();
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, name);
    kread(p, got, sizeof got);
    for (size_t i = 0; i < sizeof got; i++)
        CHECK(got[i] == (i / BLOCK == at ? over : fill), "byte %zu of %s is 0x%02x", i, name, (unsigned char)got[i]);
}

/* The thread's call that reaches the case's site (the handler forks there); then what its file must hold. */
static void interrupted_call(const char *dir) {
    char p[PATH_MAX];
    static char buf[BLOCK];
    if (mode == CLOSE) { /* staged appends: published by the close under the file's mutex */
        CHECK(close(create_filled(dir, "w", 'w', 2 * BLOCK, O_APPEND)) == 0, "close w: %s", strerror(errno));
        st_path(p, sizeof p, dir, "w");
        wait_fork_child();
        check_filled(p, 'w', 2 * BLOCK);
    }
    if (mode == APPEND) { /* the first append takes a heap slot under the heap's mutex */
        int fd = create_filled(dir, "a", 'a', BLOCK, O_APPEND);
        wait_fork_child();
        CHECK(close(fd) == 0, "close a: %s", strerror(errno));
        st_path(p, sizeof p, dir, "a");
        check_filled(p, 'a', BLOCK);
    }
    if (mode == SIZEREC) { /* fsync publishes a and takes a size record's slot under its mutex */
        st_path(forked_path, sizeof forked_path, dir, "a"); /* the child appends to a, the file in mid-publish */
        int b = create_filled(dir, "b", 'b', 2 * BLOCK, O_APPEND), a = create_filled(dir, "a", 'a', 2 * BLOCK, O_APPEND);
        CHECK(fsync(a) == 0, "fsync a: %s", strerror(errno));
        wait_fork_child();
        CHECK(close(a) == 0 && close(b) == 0, "close: %s", strerror(errno));
        static char got[4 * BLOCK];
        size_t n = 2 * BLOCK + FORKED_BYTES, as = 0, fs = 0;
        CHECK(st_ksize(forked_path) == (long long)n, "a holds %lld bytes in the kernel, not the parent's %d and the "
              "child's %d", st_ksize(forked_path), 2 * BLOCK, FORKED_BYTES);
        kread(forked_path, got, n);
        for (size_t i = 0; i < n; i++) as += got[i] == 'a', fs += got[i] == 'f';
        CHECK(as == 2 * BLOCK && fs == FORKED_BYTES, "a holds %zu 'a's and %zu 'f's", as, fs);
        st_path(p, sizeof p, dir, "b");
        check_filled(p, 'b', 2 * BLOCK);
        NOTE("sizerec: the handler's fork did not wait; a holds the parent's appends once and the child's");
        return;
    }
    /* journal: a record the close applies; free: the close's checkpoint releases the overwrite's entry (under
     * alloc_mu); kick: the fsync wakes the checkpoint thread (under its ckpt_mu; no pacing) */
    if (mode == ATOMIC_JOURNAL || mode == ATOMIC_FREE || mode == ATOMIC_KICK) overwrite_close(dir, "r", 'r', 'R', 0, true);
    if (mode == ROOT || mode == ATOMIC_OPEN || mode == ATOMIC_COPY || mode == ATOMIC_ALLOC) { /* the first open
        * probes the root's medium; atomic: it opens the file's engine, its first write copies into a new entry
        * under the block's mutex (alloc: the entry's slot and log space taken under alloc_mu) */
        CHECK(close(create_filled(dir, "r", 'r', 2 * BLOCK, 0)) == 0, "close r: %s", strerror(errno));
        wait_fork_child();
        st_path(p, sizeof p, dir, "r");
        check_filled(p, 'r', 2 * BLOCK);
    }
    if (mode == DIRFD) { /* the open of a directory below the root stores its verdict under dirfd_mu */
        st_path(p, sizeof p, dir, "d");
        int dfd = mkdir(p, 0755) == 0 ? open(p, O_RDONLY | O_DIRECTORY) : -1;
        CHECK(dfd >= 0, "mkdir/open %s: %s", p, strerror(errno));
        wait_fork_child();
        int fd = openat(dfd, "x", O_RDWR | O_CREAT | O_TRUNC, 0644); /* the verdict cache still right */
        CHECK(fd >= 0, "openat d/x: %s", strerror(errno));
        memset(buf, 'x', sizeof buf);
        st_write_all(fd, buf, BLOCK);
        CHECK(close(fd) == 0 && close(dfd) == 0, "close d/x, d: %s", strerror(errno));
        st_path(p, sizeof p, dir, "d/x");
        check_filled(p, 'x', BLOCK);
    }
    if (mode == GROW) { /* strict writes until one grows the operation log (under its grow_mu) */
        int fd = create_filled(dir, "g", 'g', BLOCK, 0);
        memset(buf, 'g', sizeof buf);
        for (int i = 0; i < 8192 && !handled; i++) st_pwrite_all(fd, buf, 1024, 0); /* inline: ~18 lines each */
        wait_fork_child();
        CHECK(close(fd) == 0, "close g: %s", strerror(errno));
        st_path(p, sizeof p, dir, "g");
        check_filled(p, 'g', BLOCK);
    }
    if (mode == STRICT_WRITE || mode == STRICT_CHECKPOINT) overwrite_close(dir, "s", 's', 'S', 1, false); /* the close checkpoints */
    CHECK(st_ksize(forked_path) == FORKED_BYTES, "the fork child's file holds %lld bytes", st_ksize(forked_path));
    NOTE("%s: the handler's fork did not wait; its child wrote its file, the thread's call went on", names[mode]);
}

static void child(const char *dir) {
    st_case_child_start(on_usr1);
    st_path(forked_path, sizeof forked_path, dir, "forked");
    if (mode == STRICT_RETURN) strict_return(dir);
    else interrupted_call(dir);
    exit(0);
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    mode = st_case_index(argc, argv, names, CASES,
                         "shim_handler_fork DIR strict_return|close|append|sizerec|strict_write|strict_checkpoint|"
                         "root|dirfd|grow|atomic_open|atomic_copy|atomic_journal|atomic_alloc|atomic_free|atomic_kick");
    if (!getenv("DAXKIT_TEST_CRASH")) SKIP("needs DAXKIT_TEST_CRASH=raise:10:SITE:1 (a test build)");
    const char *m = getenv("DAXKIT_MODE");
    bool strict = m && strcmp(m, "strict") == 0;
    if ((mode == STRICT_RETURN || mode == STRICT_WRITE || mode == STRICT_CHECKPOINT || mode == GROW) != strict)
        SKIP("%s runs in strict mode only (DAXKIT_MODE=strict), the others not in it", argv[2]);
    if (argc > 3 && strcmp(argv[3], "child") == 0) child(dir);
    st_run_case_child(argv, "the handler's fork waited for its own thread's mutex");
    return 0;
}
