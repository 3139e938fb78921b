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
 *     published whole (without a record; since session 20 the slots are lock-free and B takes one of its own).
 *   dirfd_open (SITE managed.dirfd_note_open.locked): the thread's open(O_DIRECTORY) of a directory below the
 *     root stores its verdict under dirfd_mu; the handler opens and closes another such directory, whose
 *     verdict and forget waited for dirfd_mu for ever (review 15, finding 2). Then a file opened relative to
 *     each directory descriptor, written and read back: the cache is still right.
 *   close_write (SITE publish.before_clear): the thread's close publishes its staged appends under the file's
 *     mutex; the handler overwrites a published byte through another descriptor (served by the kernel's
 *     pwrite) and appends through a third (refused: EDEADLK) -- both waited for f->mu for ever: the nested-
 *     write check saw only io.c's own sections, not a close's publish (session 16).
 *   stdio_close (SITE stdio.cookie_of.walk): the thread's fileno() of a managed FILE looks its cookie up in
 *     the table of cookie streams (under its mutex until session 16); the handler's fileno and fclose of
 *     another managed FILE waited for that mutex for ever. The table has no lock now. The handler's stream
 *     is written whole; the thread's streams still work after.
 *   table_open_close (SITE upath.publish_all.table_locked): the thread's flock(LOCK_UN) publishes under the file
 *     table's lock; the handler opens a managed file (refused: EDEADLK, before the kernel's open) and closes
 *     another with appends staged (returns 0; its thread closes it after the walk) -- both waited for the
 *     table's lock for ever (review 15, finding 4). The closed file is published whole, its descriptor gone.
 *   table_attr_path (SITE upath.publish_all.table_locked): the thread's flock(LOCK_UN) publishes under the file
 *     table's lock with a file's appends staged; the handler chmods that file by name and links it -- the publish
 *     before a call by name (upath.c up_publish_before_attr_path, shim/meta.c publish_before_name) waited for the
 *     table's lock for ever (session 27). Now the handler's calls skip it (counted: mu_mine_skips) and do their
 *     work; the thread's walk publishes the file whole.
 *   table_unlink, table_rename, table_truncate (SITE upath.publish_all.table_locked; strict, and table_truncate in
 *     posix too): the thread's flock(LOCK_UN) walk under the file table's lock; the handler unlinks a file this
 *     process used and closed (its entry cached), renames one over another such file, or truncates one by name
 *     (misc27's note, session 28). The unlink and the rename forgot the removed file's entry under that lock
 *     (upath.c up_name_removed) and the truncate published the file under it first (up_publish_inode): each
 *     waited for its own thread for ever. Now the unlink and the rename are made -- strict's record first and the
 *     directory fsync'ed, as any strict name change (strict_meta +1) -- and the entry is forgotten by the thread
 *     after its walk (forget_later +1); the truncate is refused with EDEADLK before anything changes
 *     (truncate_nested_refused +1), as an open there is (table_open_close). Strict: the handler's ftruncate of
 *     the pinned file fails with EDEADLK too (review 28, #5: its record needs the checkpoint lock), and with
 *     DAXKIT_STRICT_LOG_BYTES=64K its overwrites of another file until the log is full end with EDEADLK, not
 *     ENOSPC (the checkpoint that would make room is not made under the table's lock).
 *   table_otrunc_link (SITE upath.publish_all.table_locked; strict): as table_truncate, the handler opens the file
 *     with O_TRUNC through a symbolic link beside the managed directory (a name outside the roots by its text, so
 *     the open is not refused up front): strict's truncate record took the checkpoint lock's write side under the
 *     table's lock, the kernel cut the file, and the adoption refused the descriptor only after (session 28).
 *     Now: EDEADLK before the kernel's open (truncate_nested_refused +1), the file unchanged.
 *   table_release_strict (SITES upath.publish_all.table_locked, then strict.write.logged:2; strict): the thread's
 *     flock(LOCK_UN) walk under the file table's lock; its handler lets another thread's strict overwrite go and
 *     waits until that thread is inside it (its handler, SIGUSR2 at strict.write.logged, waits up to 8 s for
 *     ours), then releases a POSIX lock (fcntl F_UNLCK).
 *     Its publish point's walk is refused there, and it checkpointed the file's root instead (lockpath27's
 *     up_publish_release) -- under the table's lock, which review 26 #3's rule forbids: the checkpoint waited for
 *     the other thread's write (and for ever for an exit's strict shutdown, which holds the checkpoint lock and
 *     then takes the table's). Now no checkpoint is taken under the table's lock (strict_ck_table_refused +1):
 *     the handler returns while the other thread is still inside its write.
 *   logcreate_names (SITE strict.log_create.root_locked; strict): the thread's first strict write makes the
 *     root's log under the root's mutex; the handler unlinks a file, renames one, truncates one by name and
 *     overwrites another through its descriptor -- each reached strict_for, which waited for that mutex for ever
 *     (session 28). Now the names are changed unlogged (no log exists yet: no record of the process can be
 *     replayed over them; strict_meta_unlogged), the truncate too, and the write fails with EDEADLK (it cannot be
 *     logged); the thread's write then makes the log and completes.
 *   table_fork (SITE upath.publish_all.table_locked): as unlock_flock, the handler forks -- the fork's
 *     preparation waited for the table's lock for ever (session 16's note). The fork is made without it
 *     (fork_nested +1); its child runs without the library: it creates and writes a file (the kernel's at
 *     once) and _exits from the handler. The parent's walk goes on and publishes the pinned file whole.
 *   table_fork_return: as table_fork, the child returns from the handler into its copy of the interrupted
 *     walk and _exits after the flock: the pinned file holds its appends once (review 17, finding 5: the
 *     child's walk published them too, 8192 bytes for 4096).
 *   pending_read, pending_write, pending_fstat, pending_close (SITE upath.publish_all.table_locked, lazy
 *     adoption: DAXKIT_ADOPT_AFTER_IOS=4): the thread's flock(LOCK_UN) publishes under the file table's lock;
 *     the handler uses descriptors opened while a file was active, not adopted yet (upath/pending.c) -- each
 *     adoption, the fstat's look-up and the close's word to the file's locks waited for that lock for ever
 *     (locks16). Now: a read of one that may not pass and a write get EDEADLK; a read of one that may pass
 *     (created O_EXCL) passes to the kernel past the count; fstat gets EDEADLK (a file is active: its size
 *     cannot be looked up); the close returns 0 and the thread closes it after the walk. Every descriptor
 *     still works after the handler.
 *   pending_close_write (SITE publish.before_clear, lazy adoption): close_write's handler with its descriptors
 *     not adopted yet (close_write adopts them first): both writes get EDEADLK (the adoption took the file's
 *     mutex the close's publish holds: hung), and its close of a third one (POSIX locks were taken) returns
 *     0 and is carried out by its thread; the thread's own writes go on after.
 *   pending_close_stage (SITE stage.heap_alloc.spare_locked, lazy adoption; review 17, #02): the handler
 *     closes a pending descriptor of a file the process holds a POSIX lock on, inside a served append to
 *     another file (the staging heap's mutex): closed at once -- the kernel drops the lock -- not left to a
 *     table unlock the thread, only appending, does not reach.
 * The case runs in a child (exec'ed: its crash point counts start at 0; the parent's fork is a publish walk
 * too, with SIGUSR1 ignored) with a 20 s watchdog; a child that does not end in 30 s is killed: FAIL (hang).
 * argv[1]: managed directory; argv[2]: the case. Exit 0 pass, 1 fail, 77 skip. */
#include <pthread.h>
#include <sys/file.h>
#include <time.h>

#include "shim_test.h"

enum { UNLOCK_FLOCK, UNLOCK_FCNTL, SIZEREC_EXIT, SIZEREC__EXIT, DIRFD_OPEN, CLOSE_WRITE, STDIO_CLOSE, TABLE_OPEN_CLOSE,
       TABLE_ATTR_PATH, TABLE_UNLINK, TABLE_RENAME, TABLE_TRUNCATE, TABLE_OTRUNC_LINK, TABLE_RELEASE_STRICT, LOGCREATE_NAMES, TABLE_FORK, TABLE_FORK_RETURN, PENDING_READ, PENDING_WRITE, PENDING_FSTAT, PENDING_CLOSE, PENDING_CLOSE_WRITE,
       PENDING_CLOSE_STAGE, CASES };
enum { FORKED_BYTES = 100 };
enum { BYTES = 8192 };
static int mode, lock2_fd, ow_fd, app_fd, h_errno2, h_fileno;
static ssize_t h_w1, h_w2;
static FILE *h_fp;
static int h_fclose = -2;
static pid_t h_fork_pid;
static char hdir[PATH_MAX];
static volatile sig_atomic_t handled;
static const char handler_line[] = "the handler's stream\n";
static int pend_fd, pass_fd, h_errno1, h_close;
static ssize_t h_r2;
static struct stat h_st;
static volatile sig_atomic_t h_done, w_go, w_in, w_timed_out, h_w_in; /* table_release_strict */
static int w_fd, h_errno3, h_errno4;
static char h_link[PATH_MAX + 32];
static bool h_strict;
static long h_writes;

/* table_release_strict: SIGUSR2 on the writer, inside its strict overwrite (strict.write.logged): waits up to 8 s
 * for the main thread's handler to be done */
static void on_usr2(int sig) {
    (void)sig;
    int e = errno;
    w_in = 1;
    for (int i = 0; i < 8000 && !h_done; i++) nanosleep(&(struct timespec){0, 1000000}, NULL);
    if (!h_done) w_timed_out = 1;
    errno = e;
}

static void *release_writer(void *arg) {
    (void)arg;
    while (!w_go) nanosleep(&(struct timespec){0, 1000000}, NULL);
    static char b[4096];
    memset(b, 'W', sizeof b);
    if (pwrite(w_fd, b, sizeof b, 0) != (ssize_t)sizeof b) _exit(7); /* the handler above runs inside it */
    return NULL;
}

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
    if (mode == CLOSE_WRITE || mode == PENDING_CLOSE_WRITE) {
        h_w1 = pwrite(ow_fd, "X", 1, 0);
        h_errno1 = errno;
        h_w2 = write(app_fd, "Y", 1);
        h_errno2 = errno;
        if (mode == PENDING_CLOSE_WRITE) h_close = close(pend_fd);
    }
    if (mode == TABLE_ATTR_PATH) {
        char to[PATH_MAX + 8];
        snprintf(to, sizeof to, "%s.link", hdir);
        h_w1 = chmod(hdir, 0600);
        h_errno1 = errno;
        h_r2 = link(hdir, to);
        h_errno2 = errno;
    }
    if (mode == TABLE_OTRUNC_LINK) {
        h_w1 = open(h_link, O_WRONLY | O_TRUNC);
        h_errno1 = errno;
    }
    if (mode == TABLE_UNLINK || mode == TABLE_RENAME || mode == TABLE_TRUNCATE) {
        char to[PATH_MAX + 8];
        snprintf(to, sizeof to, "%s2", hdir);
        h_w1 = mode == TABLE_UNLINK ? unlink(hdir) : mode == TABLE_RENAME ? rename(hdir, to) : truncate(hdir, 10);
        h_errno1 = errno;
        if (mode == TABLE_TRUNCATE && h_strict) { /* and through a descriptor (review 28, #5) */
            h_w2 = ftruncate(ow_fd, 10);
            h_errno2 = errno;
            /* and overwrites of another file until its log is full (DAXKIT_STRICT_LOG_BYTES=64K): the checkpoint
             * that would make room is not made there -- EDEADLK, not ENOSPC (review 28, #5) */
            static char wb[4096];
            memset(wb, 'h', sizeof wb);
            h_r2 = 0;
            for (int i = 0; i < 20000 && (h_r2 = pwrite(w_fd, wb, sizeof wb, (off_t)(i % 4) * 4096)) == (ssize_t)sizeof wb; i++)
                h_writes++;
            h_errno3 = errno;
        }
    }
    if (mode == LOGCREATE_NAMES) {
        char p[PATH_MAX + 8], q[PATH_MAX + 8];
        snprintf(p, sizeof p, "%s/u", hdir);
        h_w1 = unlink(p);
        h_errno1 = errno;
        snprintf(p, sizeof p, "%s/r", hdir);
        snprintf(q, sizeof q, "%s/r2", hdir);
        h_r2 = rename(p, q);
        h_errno2 = errno;
        snprintf(p, sizeof p, "%s/t", hdir);
        h_close = truncate(p, 10);
        h_errno3 = errno;
        h_w2 = pwrite(ow_fd, "H", 1, 0);
        h_errno4 = errno;
    }
    if (mode == TABLE_RELEASE_STRICT) {
        w_go = 1; /* the writer's strict write, its handler inside it (strict.write.logged) */
        for (int i = 0; i < 5000 && !w_in; i++) nanosleep(&(struct timespec){0, 1000000}, NULL);
        h_w_in = w_in;
        struct flock l = {.l_type = F_UNLCK, .l_whence = SEEK_SET, .l_len = 1};
        h_w1 = fcntl(lock2_fd, F_SETLK, &l);
        h_errno1 = errno;
        h_done = 1;
    }
    if (mode == TABLE_OPEN_CLOSE) {
        h_w1 = open(hdir, O_RDWR | O_CREAT, 0644);
        h_errno2 = errno;
        h_fclose = close(ow_fd);
    }
    if (mode == STDIO_CLOSE) {
        h_fileno = fileno(h_fp);
        h_fclose = fclose(h_fp);
    }
    if (mode == TABLE_FORK || mode == TABLE_FORK_RETURN) {
        h_fork_pid = fork();
        if (h_fork_pid == 0 && mode == TABLE_FORK) { /* the child, still in the handler: a file of its own, then _exit */
            int fd = open(hdir, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            char b[FORKED_BYTES];
            memset(b, 'f', sizeof b);
            _exit(fd >= 0 && write(fd, b, sizeof b) == (ssize_t)sizeof b && close(fd) == 0 ? 0 : 5);
        }
    }
    if (mode == PENDING_READ) {
        char c;
        h_w1 = read(pend_fd, &c, 1);
        h_errno1 = errno;
        h_r2 = read(pass_fd, &c, 1);
        h_errno2 = errno;
    }
    if (mode == PENDING_WRITE) {
        h_w1 = write(pend_fd, "H", 1);
        h_errno1 = errno;
    }
    if (mode == PENDING_FSTAT) {
        h_w1 = fstat(pend_fd, &h_st);
        h_errno1 = errno;
    }
    if (mode == PENDING_CLOSE || mode == PENDING_CLOSE_STAGE) h_fclose = close(pend_fd);
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

/* pending_close_stage (above): after the handler, the descriptor is closed and no POSIX lock of this
 * process is left on p (the kernel's close of any descriptor of p drops them). */
static void pending_close_stage_child(const char *dir) {
    char a[PATH_MAX], p[PATH_MAX];
    st_path(a, sizeof a, dir, "a");
    st_path(p, sizeof p, dir, "p");
    int afd = open(a, O_RDWR | O_CREAT, 0644), lfd = open(p, O_RDWR | O_CREAT, 0644);
    struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 1};
    CHECK(afd >= 0 && lfd >= 0 && fcntl(lfd, F_SETLK, &lk) == 0, "set-up: %s", strerror(errno));
    pend_fd = open(p, O_RDONLY); /* pending: the handler closes it */
    CHECK(pend_fd >= 0, "open %s: %s", p, strerror(errno));
    CHECK(write(afd, "x", 1) == 1, "append: %s", strerror(errno)); /* the handler runs inside the heap's mutex */
    CHECK(handled == 1, "the handler ran %d times (the crash point was not reached: DAXKIT_TEST_CRASH?)", (int)handled);
    CHECK(h_fclose == 0, "the handler's close returned %d", h_fclose);
    CHECK(fcntl(pend_fd, F_GETFD) == -1 && errno == EBADF, "the handler's close was not carried out at once");
    pid_t c = fork(); /* another process sees no lock on p */
    CHECK(c >= 0, "fork: %s", strerror(errno));
    if (c == 0) {
        int fd = open(p, O_RDWR);
        struct flock q = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 1};
        _exit(fd >= 0 && fcntl(fd, F_GETLK, &q) == 0 && q.l_type == F_UNLCK ? 0 : 3);
    }
    int st = 0;
    CHECK(waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0, "the lock on p is still held (status 0x%x)", st);
    NOTE("pending_close_stage: the handler's close was carried out at once; the lock is gone");
    exit(0);
}

/* The pending cases (above): r holds 'r's (published by its close) and is opened again while c is active. */
static void pending_child(const char *dir) {
    CHECK(close(open_append(dir, "r", 'r', BYTES)) == 0, "close r: %s", strerror(errno));
    int c = open_append(dir, "c", 'c', 4096); /* active, pinned: the unlock's walk runs */
    struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 1};
    CHECK(fcntl(c, F_SETLK, &lk) == 0, "F_SETLK: %s", strerror(errno)); /* closes must tell locks from now */
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, mode == PENDING_WRITE ? "w" : "r");
    pend_fd = open(p, mode == PENDING_WRITE ? O_WRONLY | O_CREAT | O_EXCL : O_RDONLY, 0644);
    CHECK(pend_fd >= 0, "open %s: %s", p, strerror(errno));
    st_path(p, sizeof p, dir, "x");
    pass_fd = open(p, O_RDWR | O_CREAT | O_EXCL, 0644); /* a new inode: passes reads */
    CHECK(pass_fd >= 0, "open %s: %s", p, strerror(errno));
    char b;
    for (int i = 0; i < 5; i++) CHECK(read(pass_fd, &b, 1) == 0, "read x: %s", strerror(errno)); /* past the count */
    st_path(p, sizeof p, dir, "l1");
    int l1 = open(p, O_RDWR | O_CREAT, 0644);
    CHECK(l1 >= 0 && flock(l1, LOCK_EX) == 0, "open/flock %s: %s", p, strerror(errno));
    CHECK(flock(l1, LOCK_UN) == 0, "flock LOCK_UN: %s", strerror(errno)); /* the handler runs in its walk */
    CHECK(handled == 1, "the handler ran %d times (the crash point was not reached: DAXKIT_TEST_CRASH?)", (int)handled);
    static char got[BYTES];
    if (mode == PENDING_READ) {
        CHECK(h_w1 == -1 && h_errno1 == EDEADLK, "the handler's read returned %zd (%s), not EDEADLK", h_w1, strerror(h_errno1));
        CHECK(h_r2 == 0, "the handler's read of x (may pass) returned %zd (%s), not 0", h_r2, strerror(h_errno2));
        CHECK(read(pend_fd, got, BYTES) == BYTES && got[0] == 'r' && got[BYTES - 1] == 'r', "the thread's read of r after");
    }
    if (mode == PENDING_WRITE) {
        CHECK(h_w1 == -1 && h_errno1 == EDEADLK, "the handler's write returned %zd (%s), not EDEADLK", h_w1, strerror(h_errno1));
        st_write_all(pend_fd, "T", 1);
        CHECK(close(pend_fd) == 0, "close w: %s", strerror(errno));
        st_path(p, sizeof p, dir, "w");
        CHECK(st_ksize(p) == 1, "w holds %lld bytes, not the thread's 1", st_ksize(p));
    }
    if (mode == PENDING_FSTAT) {
        CHECK(h_w1 == -1 && h_errno1 == EDEADLK, "the handler's fstat returned %zd (%s), not EDEADLK", h_w1, strerror(h_errno1));
        struct stat st;
        CHECK(fstat(pend_fd, &st) == 0 && st.st_size == BYTES, "the thread's fstat of r after: %s", strerror(errno));
    }
    if (mode == PENDING_CLOSE) {
        CHECK(h_fclose == 0, "the handler's close returned %d", h_fclose);
        CHECK(fcntl(pend_fd, F_GETFD) == -1 && errno == EBADF, "the handler's close was not carried out after the walk");
        int again = open(p, O_RDONLY); /* x: a number the kernel hands out again is not taken for r's */
        CHECK(again >= 0 && read(again, got, 1) == 0, "x opened again and read: %s", strerror(errno));
    }
    CHECK(read(pass_fd, &b, 1) == 0 && fstat(c, &(struct stat){0}) == 0, "x and c after the handler");
    NOTE("%s: the handler did not wait for its thread's table lock", mode == PENDING_READ    ? "pending_read"
                                                                     : mode == PENDING_WRITE ? "pending_write"
                                                                     : mode == PENDING_FSTAT ? "pending_fstat"
                                                                                             : "pending_close");
    exit(0);
}

/* A file of `n` bytes of `fill` written and closed through the library: its entry stays in the file table. */
static void write_closed(const char *p, char fill, size_t n) {
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0, "open %s: %s", p, strerror(errno));
    static char buf[BYTES];
    memset(buf, fill, sizeof buf);
    st_write_all(fd, buf, n);
    CHECK(close(fd) == 0, "close %s: %s", p, strerror(errno));
}

/* table_unlink, table_rename, table_truncate (above) */
static void table_names_child(const char *dir) {
    bool strict = getenv("DAXKIT_MODE") && !strcmp(getenv("DAXKIT_MODE"), "strict");
    h_strict = strict;
    char to[PATH_MAX + 8], p[PATH_MAX];
    st_path(hdir, sizeof hdir, dir, "n");
    snprintf(to, sizeof to, "%s2", hdir);
    write_closed(hdir, 'n', 100);
    if (mode == TABLE_OTRUNC_LINK) { /* DIR's parent: the medium's root, not managed */
        if (!strict) SKIP("strict mode's truncate record");
        snprintf(h_link, sizeof h_link, "%s", dir);
        char *slash = strrchr(h_link, '/');
        CHECK(slash && slash != h_link, "DIR %s has no parent", dir);
        snprintf(slash, sizeof h_link - (size_t)(slash - h_link), "/otrunc_link");
        unlink(h_link);
        CHECK(symlink(hdir, h_link) == 0, "symlink %s: %s", h_link, strerror(errno));
    }
    if (mode == TABLE_RENAME) write_closed(to, 'o', 200); /* replaced by the rename: its entry forgotten */
    if (mode == TABLE_TRUNCATE && strict) { /* the handler's overwrites */
        st_path(p, sizeof p, dir, "w");
        write_closed(p, 'w', BYTES);
        w_fd = open(p, O_RDWR);
        static char w4[4 * 4096];
        memset(w4, 'w', sizeof w4);
        CHECK(w_fd >= 0 && pwrite(w_fd, w4, sizeof w4, 0) == (ssize_t)sizeof w4, "w: %s", strerror(errno));
    }
    ow_fd = open_append(dir, "b", 'b', BYTES); /* pinned: the unlock's walk runs */
    st_path(p, sizeof p, dir, "l1");
    int l1 = open(p, O_RDWR | O_CREAT, 0644);
    CHECK(l1 >= 0 && flock(l1, LOCK_EX) == 0, "open/flock %s: %s", p, strerror(errno));
    uint64_t meta0 = st_counter(DK_C_strict_meta), forget0 = st_counter(DK_C_forget_later);
    uint64_t refused0 = st_counter(DK_C_truncate_nested_refused);
    CHECK(flock(l1, LOCK_UN) == 0, "flock LOCK_UN: %s", strerror(errno)); /* the handler runs in its walk */
    CHECK(handled == 1, "the handler ran %d times (the crash point was not reached: DAXKIT_TEST_CRASH?)", (int)handled);
    uint64_t meta = st_counter(DK_C_strict_meta) - meta0, forget = st_counter(DK_C_forget_later) - forget0;
    uint64_t refused = st_counter(DK_C_truncate_nested_refused) - refused0;
    struct stat st;
    if (mode == TABLE_OTRUNC_LINK) {
        unlink(h_link);
        CHECK(h_w1 == -1 && h_errno1 == EDEADLK, "the handler's O_TRUNC open through the link returned %zd (%s), not "
              "EDEADLK", h_w1, strerror(h_errno1));
        CHECK(st_ksize(hdir) == 100, "n holds %lld bytes after the refused O_TRUNC open, not 100: cut by the kernel",
              st_ksize(hdir));
        CHECK(refused == 1, "truncate_nested_refused +%llu, not 1", (unsigned long long)refused);
        NOTE("table_otrunc_link: the handler's O_TRUNC open through a link refused (EDEADLK) before the kernel's open");
        exit(0);
    }
    if (mode == TABLE_TRUNCATE) {
        CHECK(h_w1 == -1 && h_errno1 == EDEADLK, "the handler's truncate returned %zd (%s), not EDEADLK", h_w1,
              strerror(h_errno1));
        CHECK(refused == 1, "truncate_nested_refused +%llu, not 1", (unsigned long long)refused);
        CHECK(st_ksize(hdir) == 100, "n holds %lld bytes after the refused truncate, not 100", st_ksize(hdir));
        char bp[PATH_MAX];
        st_path(bp, sizeof bp, dir, "b");
        CHECK(!strict || (h_w2 == -1 && h_errno2 == EDEADLK), "strict: the handler's ftruncate returned %zd (%s), not "
              "EDEADLK (its record would take the checkpoint lock under the table's)", h_w2, strerror(h_errno2));
        CHECK(st_ksize(bp) == BYTES, "b holds %lld bytes, not %d", st_ksize(bp), BYTES);
        if (strict && getenv("DAXKIT_STRICT_LOG_BYTES"))
            CHECK(h_r2 == -1 && h_errno3 == EDEADLK, "strict: the handler's overwrites with the log full ended with %zd "
                  "(%s) after %ld, not EDEADLK", h_r2, strerror(h_errno3), h_writes);
        if (strict) NOTE("table_truncate: the handler's %ld overwrites then %s", h_writes, strerror(h_errno3));
        CHECK(truncate(hdir, 10) == 0 && st_ksize(hdir) == 10, "the thread's truncate after: %s", strerror(errno));
        NOTE("table_truncate: the handler's truncate by name refused (EDEADLK), nothing changed");
        exit(0);
    }
    CHECK(h_w1 == 0, "the handler's %s returned %zd (%s)", mode == TABLE_UNLINK ? "unlink" : "rename", h_w1,
          strerror(h_errno1));
    CHECK(!strict || meta >= 1, "strict_meta +%llu: the handler's name change was not logged", (unsigned long long)meta);
    CHECK(forget == 1, "forget_later +%llu, not 1", (unsigned long long)forget);
    CHECK(stat(hdir, &st) != 0 && errno == ENOENT, "n is still there after the handler's %s",
          mode == TABLE_UNLINK ? "unlink" : "rename");
    if (mode == TABLE_RENAME) CHECK(st_ksize(to) == 100, "n2 holds %lld bytes, not n's 100", st_ksize(to));
    /* the names used again: a new file on each, written and read back through the library */
    for (int k = 0; k < 2; k++) {
        const char *q = k ? to : hdir;
        int fd = open(q, O_RDWR | O_CREAT | O_TRUNC, 0644);
        char w[64], r[64] = {0};
        memset(w, 'x' + k, sizeof w);
        CHECK(fd >= 0, "open %s again: %s", q, strerror(errno));
        st_write_all(fd, w, sizeof w);
        CHECK(pread(fd, r, sizeof r, 0) == (ssize_t)sizeof r && !memcmp(r, w, sizeof w) && fstat(fd, &st) == 0 &&
              st.st_size == (off_t)sizeof w, "%s made again: read back or size %lld", q, (long long)st.st_size);
        close(fd);
    }
    NOTE("%s: the handler's %s made (strict_meta +%llu), the entry forgotten after the walk", mode == TABLE_UNLINK ? "table_unlink" : "table_rename",
         mode == TABLE_UNLINK ? "unlink" : "rename", (unsigned long long)meta);
    exit(0);
}

/* logcreate_names (above) */
static void logcreate_child(const char *dir) {
    if (!getenv("DAXKIT_MODE") || strcmp(getenv("DAXKIT_MODE"), "strict")) SKIP("strict mode's log only");
    snprintf(hdir, sizeof hdir, "%s", dir);
    const char *names[] = {"u", "r", "t", "o", "a"};
    static char z[100];
    memset(z, 'z', sizeof z);
    for (int i = 0; i < 5; i++) { /* made without the library: no strict operation, no log yet */
        char p[PATH_MAX];
        st_path(p, sizeof p, dir, names[i]);
        int m = (int)syscall(SYS_openat, AT_FDCWD, p, O_RDWR | O_CREAT | O_TRUNC, 0644);
        CHECK(m >= 0 && syscall(SYS_write, m, z, sizeof z) == (long)sizeof z, "set-up of %s", p);
        syscall(SYS_close, m);
    }
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, "o");
    ow_fd = open(p, O_RDWR);
    st_path(p, sizeof p, dir, "a");
    int a = open(p, O_RDWR);
    CHECK(ow_fd >= 0 && a >= 0, "open: %s", strerror(errno));
    uint64_t unlogged0 = st_counter(DK_C_strict_meta_unlogged);
    CHECK(pwrite(a, "A", 1, 0) == 1, "the thread's first strict write: %s", strerror(errno)); /* the handler: in its log's set-up */
    CHECK(handled == 1, "the handler ran %d times (the crash point was not reached: DAXKIT_TEST_CRASH?)", (int)handled);
    uint64_t unlogged = st_counter(DK_C_strict_meta_unlogged) - unlogged0;
    CHECK(h_w1 == 0, "the handler's unlink returned %zd (%s)", h_w1, strerror(h_errno1));
    CHECK(h_r2 == 0, "the handler's rename returned %zd (%s)", h_r2, strerror(h_errno2));
    CHECK(h_close == 0, "the handler's truncate returned %d (%s)", h_close, strerror(h_errno3));
    CHECK(h_w2 == -1 && h_errno4 == EDEADLK, "the handler's write returned %zd (%s), not EDEADLK", h_w2, strerror(h_errno4));
    CHECK(unlogged >= 3, "strict_meta_unlogged +%llu, not 3", (unsigned long long)unlogged);
    st_path(p, sizeof p, dir, "u");
    CHECK(access(p, F_OK) != 0, "u is still there");
    st_path(p, sizeof p, dir, "r2");
    CHECK(st_ksize(p) == 100, "r2 holds %lld bytes, not r's 100", st_ksize(p));
    st_path(p, sizeof p, dir, "t");
    CHECK(st_ksize(p) == 10, "t holds %lld bytes after the handler's truncate to 10", st_ksize(p));
    char c = 0;
    CHECK(pread(ow_fd, &c, 1, 0) == 1 && c == 'z', "o's byte 0 is 0x%02x after the refused write", (unsigned char)c);
    CHECK(pwrite(ow_fd, "T", 1, 0) == 1 && pread(a, &c, 1, 0) == 1 && c == 'A', "the thread's writes after: %s",
          strerror(errno));
    NOTE("logcreate_names: the handler's names and truncate made unlogged (+%llu), its write EDEADLK; no wait",
         (unsigned long long)unlogged);
    exit(0);
}

/* table_release_strict (above) */
static void table_release_child(const char *dir) {
    if (!getenv("DAXKIT_MODE") || strcmp(getenv("DAXKIT_MODE"), "strict")) SKIP("strict mode's checkpoint only");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr2;
    sigaction(SIGUSR2, &sa, NULL);
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, "w");
    int m = (int)syscall(SYS_openat, AT_FDCWD, p, O_RDWR | O_CREAT | O_TRUNC, 0644); /* no strict operation */
    static char z[4096];
    CHECK(m >= 0 && syscall(SYS_write, m, z, sizeof z) == (long)sizeof z, "set-up of %s", p);
    syscall(SYS_close, m);
    w_fd = open(p, O_RDWR);
    CHECK(w_fd >= 0, "open %s: %s", p, strerror(errno));
    pthread_t t;
    CHECK(pthread_create(&t, NULL, release_writer, NULL) == 0, "pthread_create");
    ow_fd = open_append(dir, "b", 'b', BYTES); /* pinned: the unlock's walk runs (strict.write.logged's first) */
    st_path(p, sizeof p, dir, "l1");
    int l1 = open(p, O_RDWR | O_CREAT, 0644);
    st_path(p, sizeof p, dir, "l2");
    lock2_fd = open(p, O_RDWR | O_CREAT, 0644);
    CHECK(l1 >= 0 && lock2_fd >= 0, "open the lock files: %s", strerror(errno));
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 1};
    CHECK(fcntl(lock2_fd, F_SETLK, &l) == 0 && flock(l1, LOCK_EX) == 0, "lock: %s", strerror(errno));
    uint64_t ck0 = st_counter(DK_C_strict_ck_table_refused);
    CHECK(flock(l1, LOCK_UN) == 0, "flock LOCK_UN: %s", strerror(errno)); /* the handler runs in its walk */
    CHECK(handled == 1, "the handler ran %d times (the crash point was not reached: DAXKIT_TEST_CRASH?)", (int)handled);
    CHECK(h_w_in, "the writer's cue (strict.write.logged:2) did not fire within 5 s of the handler's start");
    CHECK(h_w1 == 0, "the handler's F_UNLCK returned %zd (%s)", h_w1, strerror(h_errno1));
    CHECK(!w_timed_out, "the handler's lock release waited 8 s for another thread's strict write: a checkpoint "
          "under the file table's lock");
    CHECK(pthread_join(t, NULL) == 0, "join");
    uint64_t ck = st_counter(DK_C_strict_ck_table_refused) - ck0;
    CHECK(ck >= 1, "strict_ck_table_refused +%llu, not 1", (unsigned long long)ck);
    static char r[4096];
    CHECK(pread(w_fd, r, sizeof r, 0) == (ssize_t)sizeof r && r[0] == 'W' && r[4095] == 'W', "the writer's bytes");
    NOTE("table_release_strict: the handler's release took no checkpoint under the table's lock (+%llu refused)",
         (unsigned long long)ck);
    exit(0);
}

static void child(const char *dir) {
    st_case_child_start(on_usr1);
    if (mode == TABLE_FORK || mode == TABLE_FORK_RETURN) {
        open_append(dir, "c", 'c', 4096); /* pinned: the unlock's walk runs */
        st_path(hdir, sizeof hdir, dir, "forked");
        char p[PATH_MAX];
        st_path(p, sizeof p, dir, "l1");
        int l1 = open(p, O_RDWR | O_CREAT, 0644);
        uint64_t nested0 = st_counter(DK_C_fork_nested);
        CHECK(l1 >= 0 && flock(l1, LOCK_EX) == 0, "open/flock %s: %s", p, strerror(errno));
        CHECK(flock(l1, LOCK_UN) == 0, "flock LOCK_UN: %s", strerror(errno)); /* the handler forks in its walk */
        if (h_fork_pid == 0) _exit(0); /* table_fork_return: the child, back from the handler and the walk */
        CHECK(handled == 1, "the handler ran %d times (the crash point was not reached: DAXKIT_TEST_CRASH?)", (int)handled);
        CHECK(h_fork_pid > 0, "the handler's fork returned %d", (int)h_fork_pid);
        int st = 0;
        CHECK(waitpid(h_fork_pid, &st, 0) == h_fork_pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
              "the handler's fork child: status 0x%x", st);
        CHECK(st_counter(DK_C_fork_nested) - nested0 == 1, "fork_nested +%llu, not 1",
              (unsigned long long)(st_counter(DK_C_fork_nested) - nested0));
        CHECK(mode == TABLE_FORK_RETURN || st_ksize(hdir) == FORKED_BYTES, "the child's file holds %lld bytes in the kernel",
              st_ksize(hdir));
        exit(0);
    }
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
    if (mode == CLOSE_WRITE || mode == PENDING_CLOSE_WRITE) {
        char p[PATH_MAX];
        st_path(p, sizeof p, dir, "w");
        int a = open_append(dir, "w", 'w', BYTES); /* staged: published by the close */
        struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = BYTES, .l_len = 1};
        CHECK(fcntl(a, F_SETLK, &lk) == 0, "F_SETLK: %s", strerror(errno)); /* closes must tell locks from now */
        ow_fd = open(p, O_RDWR);
        app_fd = open(p, O_WRONLY | O_APPEND);
        pend_fd = open(p, O_RDONLY);
        CHECK(ow_fd >= 0 && app_fd >= 0 && pend_fd >= 0, "open %s: %s", p, strerror(errno));
        struct stat st;
        if (mode == CLOSE_WRITE) /* adopted now (lazy adoption: at the fstat): io.c's rule is the case */
            CHECK(fstat(ow_fd, &st) == 0 && fstat(app_fd, &st) == 0, "fstat: %s", strerror(errno));
        CHECK(close(a) == 0, "close: %s", strerror(errno)); /* the handler runs in its publish */
        CHECK(handled == 1, "the handler ran %d times (the crash point was not reached: DAXKIT_TEST_CRASH?)", (int)handled);
        if (mode == PENDING_CLOSE_WRITE) { /* not adopted: the handler adopts nothing inside f->mu */
            CHECK(h_w1 == -1 && h_errno1 == EDEADLK, "the handler's overwrite returned %zd (%s), not EDEADLK", h_w1,
                  strerror(h_errno1));
            CHECK(h_w2 == -1 && h_errno2 == EDEADLK, "the handler's append returned %zd (%s), not EDEADLK", h_w2,
                  strerror(h_errno2));
            CHECK(h_close == 0, "the handler's close returned %d", h_close);
            int n = open(p, O_RDONLY); /* the thread's table lock let go since: the handler's close done */
            CHECK(n >= 0 && fcntl(pend_fd, F_GETFD) == -1 && errno == EBADF, "the handler's close was not carried out");
            CHECK(pwrite(ow_fd, "X", 1, 0) == 1 && write(app_fd, "Y", 1) == 1, "the thread's writes after: %s", strerror(errno));
            exit(0);
        }
        CHECK(h_w1 == 1, "the handler's overwrite of a published byte returned %zd", h_w1);
        CHECK(h_w2 == 1 || (h_w2 == -1 && h_errno2 == EDEADLK), "the handler's append returned %zd (%s)", h_w2,
              strerror(h_errno2));
        NOTE("close_write: the handler's append returned %zd%s", h_w2, h_w2 < 0 ? " (EDEADLK)" : "");
        exit(0);
    }
    if (mode == TABLE_OPEN_CLOSE) {
        st_path(hdir, sizeof hdir, dir, "h_open");
        ow_fd = open_append(dir, "b", 'b', BYTES); /* staged: closed by the handler, published by its thread */
        char p[PATH_MAX];
        st_path(p, sizeof p, dir, "l1");
        int l1 = open(p, O_RDWR | O_CREAT, 0644);
        CHECK(l1 >= 0 && flock(l1, LOCK_EX) == 0, "open/flock %s: %s", p, strerror(errno));
        CHECK(flock(l1, LOCK_UN) == 0, "flock LOCK_UN: %s", strerror(errno)); /* the handler runs in its walk */
        CHECK(handled == 1, "the handler ran %d times (the crash point was not reached: DAXKIT_TEST_CRASH?)", (int)handled);
        CHECK(h_w1 == -1 && h_errno2 == EDEADLK, "the handler's open returned %zd (%s), not EDEADLK", h_w1, strerror(h_errno2));
        CHECK(h_fclose == 0, "the handler's close returned %d", h_fclose);
        CHECK(access(hdir, F_OK) != 0, "the refused open created %s", hdir);
        CHECK(fcntl(ow_fd, F_GETFD) == -1 && errno == EBADF, "the handler's close was not carried out after the walk");
        exit(0);
    }
    if (mode == TABLE_ATTR_PATH) {
        st_path(hdir, sizeof hdir, dir, "b");
        ow_fd = open_append(dir, "b", 'b', BYTES); /* staged: something to publish before a call by name */
        char p[PATH_MAX];
        st_path(p, sizeof p, dir, "l1");
        int l1 = open(p, O_RDWR | O_CREAT, 0644);
        CHECK(l1 >= 0 && flock(l1, LOCK_EX) == 0, "open/flock %s: %s", p, strerror(errno));
        CHECK(flock(l1, LOCK_UN) == 0, "flock LOCK_UN: %s", strerror(errno)); /* the handler runs in its walk */
        CHECK(handled == 1, "the handler ran %d times (the crash point was not reached: DAXKIT_TEST_CRASH?)", (int)handled);
        CHECK(h_w1 == 0, "the handler's chmod returned %zd (%s)", h_w1, strerror(h_errno1));
        CHECK(h_r2 == 0, "the handler's link returned %zd (%s)", h_r2, strerror(h_errno2));
        struct stat st;
        CHECK(stat(hdir, &st) == 0 && (st.st_mode & 0777) == 0600 && st.st_nlink == 2, "b: mode %o, %ld links after the "
              "handler's chmod 0600 and link", (unsigned)(st.st_mode & 0777), (long)st.st_nlink);
        exit(0);
    }
    if (mode == TABLE_UNLINK || mode == TABLE_RENAME || mode == TABLE_TRUNCATE || mode == TABLE_OTRUNC_LINK)
        table_names_child(dir);
    if (mode == TABLE_RELEASE_STRICT) table_release_child(dir);
    if (mode == LOGCREATE_NAMES) logcreate_child(dir);
    if (mode >= PENDING_READ && mode <= PENDING_CLOSE) pending_child(dir);
    if (mode == PENDING_CLOSE_STAGE) pending_close_stage_child(dir);
    if (mode == STDIO_CLOSE) {
        char p[PATH_MAX];
        st_path(p, sizeof p, dir, "s1");
        FILE *fp = fopen(p, "w");
        st_path(p, sizeof p, dir, "b");
        h_fp = fopen(p, "w");
        CHECK(fp && h_fp, "fopen: %s", strerror(errno));
        CHECK(fwrite(handler_line, 1, sizeof handler_line - 1, h_fp) == sizeof handler_line - 1, "fwrite");
        int fd = fileno(fp); /* the handler runs in its cookie's look-up */
        CHECK(handled == 1, "the handler ran %d times (the crash point was not reached: DAXKIT_TEST_CRASH?)", (int)handled);
        CHECK(fd >= 0 && h_fileno >= 0 && h_fclose == 0, "fileno %d, the handler's fileno %d and fclose %d", fd, h_fileno,
              h_fclose);
        st_path(p, sizeof p, dir, "s3");
        FILE *fp3 = fopen(p, "w"); /* a stream made after the handler's emptied cookie */
        CHECK(fp3 && fileno(fp3) >= 0 && fileno(fp3) != fd, "a new stream after the handler: fileno %d", fp3 ? fileno(fp3) : -1);
        CHECK(fputs("s1\n", fp) >= 0 && fclose(fp) == 0 && fclose(fp3) == 0, "the thread's streams after the handler");
        exit(0);
    }
    open_append(dir, "b", 'b', BYTES); /* staged: published by the handler's exit */
    int a = open_append(dir, "a", 'a', BYTES);
    fsync(a); /* its publish takes a record slot: the handler exits there */
    FAIL("fsync returned: the crash point was not reached (DAXKIT_TEST_CRASH?)");
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    if (argc < 3)
        SKIP("usage: shim_handler_locks DIR unlock_flock|unlock_fcntl|sizerec_exit|sizerec__exit|dirfd_open|close_write|"
             "stdio_close|table_open_close|table_attr_path|table_unlink|table_rename|table_truncate|table_otrunc_link|table_release_strict|"
             "logcreate_names|table_fork|table_fork_return|pending_read|pending_write|pending_fstat|"
             "pending_close|pending_close_write|pending_close_stage");
    const char *names[CASES] = {"unlock_flock",      "unlock_fcntl",  "sizerec_exit",        "sizerec__exit",
                                "dirfd_open",        "close_write",   "stdio_close",         "table_open_close",
                                "table_attr_path",   "table_unlink",  "table_rename",        "table_truncate",
                                "table_otrunc_link",
                                "table_release_strict", "logcreate_names",
                                "table_fork",        "table_fork_return", "pending_read",    "pending_write",
                                "pending_fstat",     "pending_close", "pending_close_write", "pending_close_stage"};
    mode = -1;
    for (int i = 0; i < CASES; i++)
        if (strcmp(argv[2], names[i]) == 0) mode = i;
    if (mode < 0) SKIP("unknown case %s", argv[2]);
    if (!getenv("DAXKIT_TEST_CRASH")) SKIP("needs DAXKIT_TEST_CRASH=raise:10:SITE:1 (a test build)");
    if (mode >= PENDING_READ && !(getenv("DAXKIT_ADOPT_AFTER_IOS") && atoi(getenv("DAXKIT_ADOPT_AFTER_IOS")) > 0))
        SKIP("%s needs lazy adoption (DAXKIT_ADOPT_AFTER_IOS=4)", argv[2]);
    if (argc > 3 && strcmp(argv[3], "child") == 0) child(dir);
    st_run_case_child(argv, "the handler waited for its own thread's mutex");
    if (mode == DIRFD_OPEN || (mode >= TABLE_UNLINK && mode <= LOGCREATE_NAMES) || (mode >= PENDING_READ && mode <= PENDING_CLOSE) || mode == PENDING_CLOSE_STAGE) {
        NOTE("%s: the handler did not wait (the child checked the rest)", argv[2]);
        return 0;
    }
    char p[PATH_MAX];
    if (mode == STDIO_CLOSE) { /* the handler's stream, flushed by its fclose */
        st_path(p, sizeof p, dir, "b");
        size_t len = 0;
        char *got = st_slurp(p, &len);
        CHECK(got && len == sizeof handler_line - 1 && !memcmp(got, handler_line, len), "%s: %s holds %zu bytes, not the handler's line",
              argv[2], p, len);
        NOTE("%s: the handler did not wait; its stream written whole", argv[2]);
        return 0;
    }
    if (mode == CLOSE_WRITE || mode == PENDING_CLOSE_WRITE) { /* published by the close: 'w's, the handler's
                                                                   * (or, pending, the thread's) 'X' at 0, maybe a 'Y' after */
        st_path(p, sizeof p, dir, "w");
        size_t len = 0;
        char *got = st_slurp(p, &len);
        CHECK(got && (len == BYTES || (len == BYTES + 1 && got[BYTES] == 'Y')) && (mode == CLOSE_WRITE || len == BYTES + 1),
              "%s: %s holds %zu bytes", argv[2], p, len);
        CHECK(got[0] == 'X', "%s: byte 0 is 0x%02x, not the handler's 'X'", argv[2], (unsigned char)got[0]);
        for (size_t i = 1; i < BYTES; i++) CHECK(got[i] == 'w', "%s: byte %zu is 0x%02x", argv[2], i, (unsigned char)got[i]);
        NOTE("%s: the handler did not wait; %s published (%zu bytes) with its overwrite", argv[2], p, len);
        return 0;
    }
    bool c_file = mode <= UNLOCK_FCNTL || mode >= TABLE_FORK; /* the unlock's pinned file, else the exit's */
    st_path(p, sizeof p, dir, c_file ? "c" : "b");
    long long want = c_file ? 4096 : BYTES;
    CHECK(st_ksize(p) == want, "%s: %s holds %lld bytes in the kernel, not %lld: not published", argv[2], p, st_ksize(p), want);
    int fd = (int)syscall(SYS_openat, AT_FDCWD, p, O_RDONLY);
    static char buf[BYTES];
    CHECK(fd >= 0 && syscall(SYS_read, fd, buf, sizeof buf) == want, "read %s", p);
    for (long long i = 0; i < want; i++)
        CHECK(buf[i] == (c_file ? 'c' : 'b'), "%s: byte %lld of %s is 0x%02x", argv[2], i, p, (unsigned char)buf[i]);
    NOTE("%s: the handler did not wait; %s published (%lld bytes)", argv[2], p, want);
    return 0;
}
