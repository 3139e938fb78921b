/* Description: sync and strict modes' promise for the calls that reach the kernel after exit turned the library
 * off (upath/lifecycle.c up_exit_hold, up_exit_synced; session 25). Another thread's change of a file managed at
 * the exit waits for the end of the process (session 24); the exiting thread's own change (stdio's flush at
 * exit, a destructor or handler after the library's) and a write of the library's stdio cookie are never
 * parked -- the thread may hold a lock of glibc's the exit takes -- and until session 25 passed to the kernel
 * unsynced: acknowledged, not durable. Now each is followed by an fdatasync of its descriptor before it
 * returns; the test build's site upath.exit.synced follows a successful one, and DAXKIT_TEST_CRASH=
 * upath.exit.synced:1 kills the process there (SIGKILL) -- the proof the fdatasync was made.
 *
 *   stdio DIR            a child fopens a managed file, leaves a line in the stream's buffer and exits: glibc's
 *                        _IO_cleanup writes it (through the library's cookie) after the library's destructor.
 *                        Needs DAXKIT_TEST_CRASH=upath.exit.synced:1.
 *   own DIR write|ftruncate|truncate  a child writes a managed file and exits; at the cue upath.fini.library_off
 *                        (SIGUSR1 on the exiting thread) its handler writes (ftruncates, truncates by name) the
 *                        file again. Needs DAXKIT_TEST_CRASH=raise:10:upath.fini.library_off:1,upath.exit.synced:1
 *                        (truncate: upath.truncate_name.synced:1, the site after a truncate by name's fdatasync).
 *   truncate DIR open|closed  a child truncates a managed file by name, a descriptor of it open or not, while the
 *                        library is on: sync and strict fdatasync it (ptsync.c up_path_datasync; it was not synced
 *                        before session 25). Needs DAXKIT_TEST_CRASH=upath.truncate_name.synced:1.
 *   cancel DIR ftruncate|truncate  a child's worker ftruncates (truncates by name) a managed file after the
 *                        library went off: the exit hold parks it (the cue upath.exit.write_held, SIGUSR2 on the
 *                        worker); the exiting thread's handler then pthread_cancels it. Neither call is a
 *                        cancellation point, so the hold is none (36a8efe): the worker's cleanup handler must
 *                        never run. Needs
 *                        DAXKIT_TEST_CRASH=raise:10:upath.fini.library_off:1,raise:12:upath.exit.write_held:1.
 *   older DIR keep|crash  strict (session 26, exit25's note): a child writes 8 KiB of 'A' and exits. At the cue
 *                        upath.fini.published (after the exit's checkpoint, the library still on) a worker
 *                        overwrites [0, 4 KiB) with 'B' -- logged; with DAXKIT_STRICT_APPLY=checkpoint it waits
 *                        for the next checkpoint -- and returns; at the cue upath.fini.library_off the exiting
 *                        thread's handler overwrites the same bytes with 'C' through the kernel (fdatasynced).
 *                        'C' was written last and acknowledged: the file must hold it. keep: the child exits (the
 *                        strict shutdown applied the waiting 'B' over 'C' before session 26). crash: the child is
 *                        killed at upath.exit.synced, then /bin/true under the library recovers the directory (the
 *                        log still held 'B's record, replayed over 'C': unmarked while waiting, or every record
 *                        with DAXKIT_STRICT_MARKS=0 -- a power loss's recovery). Needs DAXKIT_TEST_CRASH=
 *                        raise:10:upath.fini.published:1,raise:10:upath.fini.library_off:1[,upath.exit.synced:1].
 *   newroot DIR keep|crash  strict (session 27, exit26's note): the root has no log yet (the child's file is made
 *                        without the library and only read through it). A worker's overwrite of [0, 4 KiB) with
 *                        'B' -- the root's first strict operation -- is inside the log's set-up (the cue
 *                        strict.log_create.root_locked, SIGUSR2 on the worker: its handler waits up to 2 s for the
 *                        library to go off) while the child exits; at upath.fini.library_off the exiting thread's
 *                        handler waits up to 3 s for the worker's write (one the shutdown holds out never returns)
 *                        and overwrites the same bytes with 'C' through the kernel. 'C' was written last: after /bin/true under the library recovered the directory
 *                        (DAXKIT_STRICT_MARKS=0, a power loss's recovery) the file must hold it. Before session 27
 *                        the shutdown skipped a root whose log was not made yet, the worker then made one no
 *                        shutdown saw, and its record of 'B' was left to the recovery, which put it over 'C'. Needs
 *                        DAXKIT_TEST_CRASH=raise:12:strict.log_create.root_locked:1,raise:10:upath.fini.library_off:1
 *                        [,upath.exit.synced:1] (crash: killed after the fdatasync of 'C').
 *   newroot DIR late     the same, but the worker's write starts after the shutdown (the cue upath.fini.strict_down,
 *                        SIGUSR1 on the exiting thread: its handler lets the worker go and waits up to 1 s for it):
 *                        it must wait for the end of the process, not make a log. Needs DAXKIT_TEST_CRASH=
 *                        raise:10:upath.fini.strict_down:1,raise:10:upath.fini.library_off:1.
 *   down DIR logged|nolog  strict (session 28, strict27's note): at the cue upath.fini.strict_down (SIGUSR1 on the
 *                        exiting thread, right after strict's shutdown, the library still on) its handler overwrites
 *                        the file and ftruncates it through its descriptor. The shutdown holds every log's checkpoint
 *                        lock until the process is gone, and no log is made after it: the exiting thread's own
 *                        strict calls get EDEADLK (another thread's would wait for the end of the process) -- they
 *                        must return (no hang), change nothing, and leave no log behind the exit. logged: the root's
 *                        log exists (the child overwrote [0, 4 KiB) with 'L' first: the handler's write is nested in
 *                        its thread's hold); nolog: the child only read, the root has no log (a log made now would
 *                        be one the shutdown never saw). Needs DAXKIT_TEST_CRASH=raise:10:upath.fini.strict_down:1.
 *   tablewrite DIR       strict (review 28, #6): a worker's signal handler writes a managed file while the worker is
 *                        inside the file table's lock (its open's adoption: the cue upath.adopt.table_locked:2,
 *                        SIGUSR1 on the worker) and another thread is exiting past strict's shutdown (the cue
 *                        upath.fini.strict_down, SIGUSR2 on the exiting thread: it lets the worker open and waits
 *                        up to 3 s for the handler to be inside its write, then 300 ms). The shutdown holds the
 *                        checkpoint lock for good and then takes the table's lock: the handler's write waited for
 *                        the first inside its thread's hold of the second -- the process never ended. Now it fails
 *                        with EDEADLK and the child exits 0 (20 s). Needs DAXKIT_TEST_CRASH=
 *                        raise:12:upath.fini.strict_down:1,raise:10:upath.adopt.table_locked:2.
 *   tabledrain DIR read|fsync|write late|during|applied  strict, DAXKIT_STRICT_APPLY=checkpoint (review 28, #6's
 *                        other half): a worker's overwrite of [0, 4 KiB) with 'B' waits for the checkpoint (the
 *                        cue upath.fini.published, SIGUSR2 on the exiting thread, lets it write); then the worker's
 *                        signal handler reads, fsyncs or writes (16 bytes: applied at once, so after the waiting one)
 *                        the file while the worker is inside the file table's lock (its open's adoption: the cue
 *                        upath.adopt.table_locked:2, SIGUSR1). Each must first drain the waiting overwrite (the
 *                        checkpoint lock's write side) -- which the exit's shutdown takes for good before it takes
 *                        the table's lock: the drain waited for the first inside its thread's hold of the second,
 *                        and the process never ended. late: the handler's call comes while the shutdown holds the
 *                        lock, the overwrite not yet applied (the cue strict.checkpoint.half_applied:1, SIGUSR2);
 *                        during: the handler's drain was decided before, and tries the lock while the shutdown holds
 *                        it (strict.drain_table.before_lock:1, SIGALRM on the worker: it waits for the shutdown's
 *                        cue); both now fail with EDEADLK. applied: the drain was decided before the shutdown,
 *                        tries the lock after the shutdown applied the overwrite (the cue upath.fini.strict_down):
 *                        nothing waits any more, the read returns 'B'. The child must exit 0 within 20 s; the file
 *                        holds 'B' then 'A'. Needs the cues in tests/shim/CMakeLists.txt.
 *   lock DIR             sync, strict (review 25, #6): a child truncates another file by name (its sync's open in
 *                        the descriptor window reads /proc/locks once: none inherited) and exits; at the cue
 *                        upath.fini.library_off the exiting thread's handler opens its managed file again (Y),
 *                        closes the descriptor it had at the exit (X), has a worker take the process's first POSIX
 *                        lock through Y, then truncates the file by name (ptsync.c up_path_datasync: X is gone, so
 *                        it would open and close the file in the descriptor window -- that close drops the lock).
 *                        The parent, a separate process, must still see the lock (F_GETLK) after the truncate.
 *                        Needs DAXKIT_TEST_CRASH=raise:10:upath.fini.library_off:1.
 *
 * Sync and strict: the child is killed at upath.exit.synced (stdio, own) and the file holds what the exit's
 * call wrote; posix mode: the child exits 0 (no fdatasync: posix promises none) with the same file. */
#include <dirent.h>
#include <pthread.h>
#include <semaphore.h>
#include <time.h>

#include "shim_test.h"

static const char *mode_name(void) {
    const char *m = getenv("DAXKIT_MODE");
    return m && *m ? m : "posix";
}

/* The file's bytes, read with raw system calls (no library call of ours in the way). */
static long file_read(const char *path, char *buf, size_t cap) {
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
    if (fd < 0) return -1;
    long n = syscall(SYS_read, fd, buf, cap);
    syscall(SYS_close, fd);
    return n;
}

/* The child's end: killed at the site (upath.exit.synced, upath.truncate_name.synced) in sync and strict modes
 * (the fdatasync was made), exit 0 in posix mode. */
static void expect_synced(int st, const char *what, const char *site) {
    bool posix = !strcmp(mode_name(), "posix");
    if (posix) {
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "posix: %s: the child ended with status 0x%x, not exit 0", what, st);
        return;
    }
    CHECK(!(WIFEXITED(st) && WEXITSTATUS(st) == 0),
          "%s: %s returned with no fdatasync (the child exited 0, never reaching %s)", mode_name(), what, site);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "%s: %s: the child ended with status 0x%x, not killed at %s",
          mode_name(), what, st, site);
}

/* ---- stdio: the exit's flush of a managed file's stream ---- */

static void case_stdio(const char *dir) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "stdio_log");
    static const char line[] = "a line left in the stream's buffer at exit\n";
    pid_t c = fork();
    CHECK(c >= 0, "fork");
    if (c == 0) {
        FILE *fp = fopen(path, "w");
        if (!fp) _exit(2);
        if (fputs(line, fp) < 0) _exit(2);
        exit(0); /* _IO_cleanup flushes it after the library's destructor */
    }
    int st;
    CHECK(waitpid(c, &st, 0) == c, "waitpid");
    expect_synced(st, "stdio's flush at exit (the library's cookie write) after exit turned the library off",
                  "upath.exit.synced");
    char buf[256];
    long n = file_read(path, buf, sizeof buf);
    CHECK(n == (long)strlen(line) && !memcmp(buf, line, (size_t)n), "the file holds %ld bytes, not the line of %zu", n,
          strlen(line));
    printf("stdio: %s: the exit's flush of a managed stream reached the file%s\n", mode_name(),
           strcmp(mode_name(), "posix") ? ", then an fdatasync" : "");
}

/* ---- truncate: a truncate by name while the library is on ---- */

static void case_truncate(const char *dir, const char *how) {
    bool open_fd = !strcmp(how, "open");
    CHECK(open_fd || !strcmp(how, "closed"), "truncate: open or closed, not %s", how);
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "trunc_data");
    pid_t c = fork();
    CHECK(c >= 0, "fork");
    if (c == 0) {
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || write(fd, "0123456789", 10) != 10) _exit(2);
        if (!open_fd && close(fd) != 0) _exit(2);
        errno = 0;
        if (truncate(path, 4) != 0 || errno != 0) _exit(4); /* errno untouched on success */
        _exit(0);
    }
    char what[96];
    snprintf(what, sizeof what, "a truncate by name (the file %s)", open_fd ? "open" : "not open");
    int st;
    CHECK(waitpid(c, &st, 0) == c, "waitpid");
    CHECK(!WIFEXITED(st) || WEXITSTATUS(st) == 0, "the child failed (status %d: 4 = truncate failed or set errno)",
          WEXITSTATUS(st));
    expect_synced(st, what, "upath.truncate_name.synced");
    struct stat s;
    CHECK(syscall(SYS_stat, path, &s) == 0 && s.st_size == 4, "the file's size is %lld after a truncate to 4",
          (long long)s.st_size);
    printf("truncate: %s: %s%s\n", mode_name(), what, strcmp(mode_name(), "posix") ? ", then an fdatasync" : "");
}

/* ---- own: the exiting thread's own call after the library went off ---- */

static int own_fd = -1;
static bool own_truncate, own_by_name;
static char own_path[PATH_MAX];
static volatile int *own_cue; /* shared with the parent: the cue fired */
static const char own_first[] = "first\n", own_tail[] = "tail\n";

/* SIGUSR1 on the exiting thread inside up_fini, the library off (upath.fini.library_off). */
static void own_on_library_off(int sig) {
    (void)sig;
    *own_cue = 1;
    int e = errno;
    if (own_by_name) {
        if (truncate(own_path, 3) != 0) _exit(3);
    } else if (own_truncate) {
        if (ftruncate(own_fd, 3) != 0) _exit(3);
    } else if (write(own_fd, own_tail, sizeof own_tail - 1) != (ssize_t)sizeof own_tail - 1) {
        _exit(3);
    }
    errno = e;
}

static void case_own(const char *dir, const char *op) {
    own_by_name = !strcmp(op, "truncate");
    own_truncate = own_by_name || !strcmp(op, "ftruncate");
    CHECK(own_truncate || !strcmp(op, "write"), "own: write, ftruncate or truncate, not %s", op);
    char *path = own_path;
    st_path(path, sizeof own_path, dir, "own_log");
    own_cue = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(own_cue != MAP_FAILED, "mmap");
    signal(SIGUSR1, SIG_IGN); /* this process's own exit passes the cue too */
    pid_t c = fork();
    CHECK(c >= 0, "fork");
    if (c == 0) {
        own_fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
        if (own_fd < 0 || write(own_fd, own_first, sizeof own_first - 1) != (ssize_t)sizeof own_first - 1) _exit(2);
        struct sigaction sa = {.sa_handler = own_on_library_off};
        sigaction(SIGUSR1, &sa, NULL);
        exit(0);
    }
    char what[128];
    snprintf(what, sizeof what, "the exiting thread's own %s%s after exit turned the library off", op,
             own_by_name ? " by name" : "");
    int st;
    CHECK(waitpid(c, &st, 0) == c, "waitpid");
    if (!*own_cue) SKIP("the cue did not fire (DAXKIT_TEST_CRASH unset, or not a test build)");
    expect_synced(st, what, own_by_name ? "upath.truncate_name.synced" : "upath.exit.synced");
    char buf[256];
    long n = file_read(path, buf, sizeof buf);
    if (own_truncate) {
        CHECK(n == 3 && !memcmp(buf, own_first, 3), "the file holds %ld bytes after the exit's ftruncate to 3", n);
    } else {
        long want = (long)(sizeof own_first - 1 + sizeof own_tail - 1);
        CHECK(n == want && !memcmp(buf, "first\ntail\n", (size_t)want), "the file holds %ld bytes, not first+tail (%ld)",
              n, want);
    }
    printf("own: %s: %s reached the file%s\n", mode_name(), what,
           strcmp(mode_name(), "posix") ? ", then an fdatasync" : "");
}

/* ---- cancel: a thread parked by the exit hold is not cancelled ---- */

struct cancel_shared {
    volatile int cue, held, cancelled, returned;
};
static struct cancel_shared *csh;
static sem_t cancel_go;
static pthread_t cancel_worker_t;
static int cancel_fd = -1;
static const char *cancel_path; /* non-NULL: the worker truncates by name */

static void on_cancelled(void *arg) {
    (void)arg;
    csh->cancelled = 1; /* the hold acted on the cancel: the thread unwinds from inside ftruncate */
}

static void *cancel_worker(void *arg) {
    (void)arg;
    while (sem_wait(&cancel_go) != 0) {
    }
    pthread_cleanup_push(on_cancelled, NULL);
    int r = cancel_path ? truncate(cancel_path, 0) : ftruncate(cancel_fd, 0); /* no cancellation points */
    csh->returned = r + 2;
    pthread_cleanup_pop(0);
    for (;;) pause(); /* the exit ends it */
    return NULL;
}

/* SIGUSR2 on the worker's thread (upath.exit.write_held): its ftruncate waits for the end of the process. */
static void cancel_on_held(int sig) {
    (void)sig;
    csh->held = 1;
}

/* SIGUSR1 on the exiting thread, the library off: the worker's ftruncate now; once it is held (10 s at most),
 * pthread_cancel it and give the cancel 300 ms to act. */
static void cancel_on_library_off(int sig) {
    (void)sig;
    csh->cue = 1;
    sem_post(&cancel_go);
    for (int i = 0; i < 10000 && !csh->held && !csh->returned; i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    if (!csh->held) return;
    struct timespec ts = {0, 50 * 1000000};
    nanosleep(&ts, NULL); /* the handler has returned: the worker is in the hold's wait */
    pthread_cancel(cancel_worker_t);
    for (int i = 0; i < 300 && !csh->cancelled; i++) {
        struct timespec t1 = {0, 1000000};
        nanosleep(&t1, NULL);
    }
}

static void case_cancel(const char *dir, const char *op) {
    signal(SIGUSR1, SIG_IGN); /* this process's own exit passes the cues too */
    signal(SIGUSR2, SIG_IGN);
    if (!strcmp(mode_name(), "posix")) SKIP("posix mode holds nothing at exit");
    CHECK(!strcmp(op, "ftruncate") || !strcmp(op, "truncate"), "cancel: ftruncate or truncate, not %s", op);
    static char path[PATH_MAX];
    st_path(path, sizeof path, dir, "cancel_data");
    if (!strcmp(op, "truncate")) cancel_path = path;
    csh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(csh != MAP_FAILED, "mmap");
    pid_t c = fork();
    CHECK(c >= 0, "fork");
    if (c == 0) {
        cancel_fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
        if (cancel_fd < 0 || write(cancel_fd, "0123456789", 10) != 10) _exit(2);
        sem_init(&cancel_go, 0, 0);
        struct sigaction sa = {.sa_handler = cancel_on_library_off};
        sigaction(SIGUSR1, &sa, NULL);
        sa.sa_handler = cancel_on_held;
        sigaction(SIGUSR2, &sa, NULL);
        if (pthread_create(&cancel_worker_t, NULL, cancel_worker, NULL) != 0) _exit(2);
        exit(0);
    }
    int st;
    CHECK(waitpid(c, &st, 0) == c, "waitpid");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child ended with status 0x%x", st);
    if (!csh->cue) SKIP("the cue did not fire (DAXKIT_TEST_CRASH unset, or not a test build)");
    CHECK(!csh->returned, "%s: the worker's %s after the library went off returned %d (not held)", mode_name(), op,
          csh->returned - 2);
    CHECK(csh->held, "%s: the worker's %s neither returned nor reached upath.exit.write_held in 10 s", mode_name(), op);
    CHECK(!csh->cancelled, "%s: pthread_cancel acted on a thread held at exit inside %s (no cancellation point): "
          "its cleanup handler ran", mode_name(), op);
    struct stat s;
    CHECK(syscall(SYS_stat, path, &s) == 0 && s.st_size == 10, "the file's size is %lld, not the 10 bytes written "
          "before the exit", (long long)s.st_size);
    printf("cancel: %s: a thread held at exit ignored pthread_cancel (its %s no cancellation point)\n", mode_name(), op);
}

/* ---- older: strict's log holds an older record of bytes the exiting thread writes after the library went off ---- */

enum { OLDER_BYTES = 4096 };
struct older_shared {
    volatile int cues, worker_go, worker_done, worker_rc, handler_rc, waited;
};
static struct older_shared *osh;
static int older_fd = -1;
static sem_t older_go;

static void *older_worker(void *arg) {
    (void)arg;
    while (sem_wait(&older_go) != 0) {
    }
    static char b[OLDER_BYTES];
    memset(b, 'B', sizeof b);
    uint64_t lazy0 = st_counter(DK_C_strict_lazy);
    osh->worker_rc = (int)pwrite(older_fd, b, sizeof b, 0) == OLDER_BYTES ? 1 : 2; /* strict: a logged overwrite */
    osh->waited = (int)(st_counter(DK_C_strict_lazy) - lazy0); /* it waits for the checkpoint (the shutdown's) */
    osh->worker_done = 1;
    for (;;) pause(); /* the exit ends it */
    return NULL;
}

/* SIGUSR1 on the exiting thread: first upath.fini.published (the library on): the worker's write, waited for;
 * then upath.fini.library_off: this thread's own write of the same bytes, through the kernel. */
static void older_on_cue(int sig) {
    (void)sig;
    int e = errno;
    int n = ++osh->cues;
    if (n == 1) {
        sem_post(&older_go);
        for (int i = 0; i < 10000 && !osh->worker_done; i++) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    } else if (n == 2) {
        static char c[OLDER_BYTES];
        memset(c, 'C', sizeof c);
        osh->handler_rc = 3; /* crash: killed inside, after the write's fdatasync (upath.exit.synced) */
        osh->handler_rc = pwrite(older_fd, c, sizeof c, 0) == OLDER_BYTES ? 1 : 2;
    }
    errno = e;
}

static void case_older(const char *dir, const char *how) {
    signal(SIGUSR1, SIG_IGN); /* this process's own exit passes the cues too (and /bin/true's below) */
    if (strcmp(mode_name(), "strict")) SKIP("strict mode's log only");
    bool crash = !strcmp(how, "crash");
    CHECK(crash || !strcmp(how, "keep"), "older: keep or crash, not %s", how);
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "older_data");
    osh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(osh != MAP_FAILED, "mmap");
    pid_t c = fork();
    CHECK(c >= 0, "fork");
    if (c == 0) {
        static char a[2 * OLDER_BYTES];
        memset(a, 'A', sizeof a);
        older_fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
        if (older_fd < 0 || write(older_fd, a, sizeof a) != (ssize_t)sizeof a || close(older_fd) != 0) _exit(2);
        older_fd = open(path, O_RDWR); /* mapped by its first read (DAXKIT_MAP_AFTER_IOS=0): an overwrite may wait */
        if (older_fd < 0 || pread(older_fd, a, OLDER_BYTES, 0) != OLDER_BYTES) _exit(2);
        sem_init(&older_go, 0, 0);
        pthread_t t;
        if (pthread_create(&t, NULL, older_worker, NULL) != 0) _exit(2);
        struct sigaction sa = {.sa_handler = older_on_cue};
        sigaction(SIGUSR1, &sa, NULL);
        exit(0);
    }
    int st;
    CHECK(waitpid(c, &st, 0) == c, "waitpid");
    if (osh->cues < 2) SKIP("the cues did not fire (%d of 2: DAXKIT_TEST_CRASH unset, or not a test build)", osh->cues);
    CHECK(osh->worker_rc == 1, "the worker's strict overwrite at upath.fini.published failed (%d)", osh->worker_rc);
    const char *apply = getenv("DAXKIT_STRICT_APPLY");
    if (apply && !strcmp(apply, "checkpoint"))
        CHECK(osh->waited == 1, "the worker's overwrite did not wait for the checkpoint (strict_lazy +%d)", osh->waited);
    CHECK(osh->handler_rc == (crash ? 3 : 1), "the exiting thread's write after the library went off %s (%d)",
          crash ? "was not killed inside, at upath.exit.synced" : "failed", osh->handler_rc);
    if (crash) {
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "crash: the child ended with status 0x%x, not killed at "
              "upath.exit.synced", st);
        pid_t t = fork(); /* the next start-up under the library recovers the dead process's log */
        CHECK(t >= 0, "fork");
        if (t == 0) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        int tst;
        CHECK(waitpid(t, &tst, 0) == t && WIFEXITED(tst) && WEXITSTATUS(tst) == 0, "/bin/true under the library: 0x%x",
              tst);
    } else {
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "keep: the child ended with status 0x%x", st);
    }
    static char buf[2 * OLDER_BYTES + 1];
    long n = file_read(path, buf, sizeof buf);
    CHECK(n == 2 * OLDER_BYTES, "the file holds %ld bytes, not %d", n, 2 * OLDER_BYTES);
    long c_bytes = 0, b_bytes = 0;
    for (long i = 0; i < OLDER_BYTES; i++) c_bytes += buf[i] == 'C', b_bytes += buf[i] == 'B';
    CHECK(c_bytes == OLDER_BYTES, "%s: [0, 4 KiB) holds %ld bytes of 'C' (the exiting thread's write after the library "
          "went off, acknowledged last) and %ld of 'B' (another thread's earlier strict write)%s", how, c_bytes, b_bytes,
          crash ? ": recovery replayed the older record over it" : ": the strict shutdown applied the older one over it");
    for (long i = OLDER_BYTES; i < 2 * OLDER_BYTES; i++) CHECK(buf[i] == 'A', "byte %ld is 0x%02x, not 'A'", i, buf[i]);
    printf("older: %s: the exiting thread's write after the library went off stays over an older strict record%s\n",
           how, crash ? " (killed after it, recovered)" : "");
}

/* ---- newroot: a root's first strict operation in flight across the exit's shutdown (exit26's note) ---- */

static struct older_shared *nsh;
static volatile int newroot_in_create, newroot_off;

static void *newroot_worker(void *arg) {
    (void)arg;
    while (sem_wait(&older_go) != 0) {
    }
    static char b[OLDER_BYTES];
    memset(b, 'B', sizeof b);
    nsh->worker_rc = (int)pwrite(older_fd, b, sizeof b, 0) == OLDER_BYTES ? 1 : 2; /* the root's first strict op */
    nsh->worker_done = 1;
    for (;;) pause(); /* the exit ends it */
    return NULL;
}

static void newroot_wait(volatile int *flag, int ms) {
    for (int i = 0; i < ms && !*flag; i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

/* SIGUSR2 on the worker, inside the log's set-up (strict.log_create.root_locked): the exit goes on meanwhile. */
static void newroot_on_create(int sig) {
    (void)sig;
    int e = errno;
    nsh->cues++;
    newroot_in_create = 1;
    newroot_wait(&newroot_off, 2000); /* (a shutdown that waits for the set-up waits these 2 s) */
    errno = e;
}

/* SIGUSR1 on the exiting thread, the library off (upath.fini.library_off): the worker's write first, then ours. */
static void newroot_on_off(int sig) {
    (void)sig;
    int e = errno;
    nsh->cues++;
    newroot_off = 1;
    newroot_wait(&nsh->worker_done, 3000); /* (a write the shutdown holds out never returns) */
    static char c[OLDER_BYTES];
    memset(c, 'C', sizeof c);
    nsh->handler_rc = 3; /* crash: killed inside, after the write's fdatasync (upath.exit.synced) */
    nsh->handler_rc = pwrite(older_fd, c, sizeof c, 0) == OLDER_BYTES ? 1 : 2;
    errno = e;
}

/* late: SIGUSR1 on the exiting thread, first after the strict shutdown, then with the library off */
static void newroot_on_late(int sig) {
    (void)sig;
    int e = errno;
    if (++nsh->cues == 1) {
        sem_post(&older_go);
        newroot_wait(&nsh->worker_done, 1000);
    } else {
        newroot_on_off(sig);
        nsh->cues--; /* (counted there) */
    }
    errno = e;
}

static void case_newroot(const char *dir, const char *how) {
    signal(SIGUSR1, SIG_IGN); /* this process's own exit passes the cues too (and /bin/true's below) */
    signal(SIGUSR2, SIG_IGN);
    if (strcmp(mode_name(), "strict")) SKIP("strict mode's log only");
    bool crash = !strcmp(how, "crash"), late = !strcmp(how, "late");
    CHECK(crash || late || !strcmp(how, "keep"), "newroot: keep, crash or late, not %s", how);
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "newroot_data");
    nsh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(nsh != MAP_FAILED, "mmap");
    static char a[2 * OLDER_BYTES];
    memset(a, 'A', sizeof a);
    int m = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, 0644); /* no log made */
    CHECK(m >= 0 && syscall(SYS_write, m, a, sizeof a) == (long)sizeof a && syscall(SYS_fsync, m) == 0, "set-up");
    syscall(SYS_close, m);
    pid_t c = fork();
    CHECK(c >= 0, "fork");
    if (c == 0) {
        older_fd = open(path, O_RDWR); /* read through the library: no strict operation, no log */
        if (older_fd < 0 || pread(older_fd, a, OLDER_BYTES, 0) != OLDER_BYTES) _exit(2);
        sem_init(&older_go, 0, 0);
        struct sigaction sa = {.sa_handler = newroot_on_create};
        sigaction(SIGUSR2, &sa, NULL);
        struct sigaction sb = {.sa_handler = late ? newroot_on_late : newroot_on_off};
        sigaction(SIGUSR1, &sb, NULL);
        pthread_t t;
        if (pthread_create(&t, NULL, newroot_worker, NULL) != 0) _exit(2);
        if (!late) {
            sem_post(&older_go);
            newroot_wait(&newroot_in_create, 10000);
        }
        exit(0);
    }
    int st;
    CHECK(waitpid(c, &st, 0) == c, "waitpid");
    if (nsh->cues < 2) SKIP("the cues did not fire (%d of 2: DAXKIT_TEST_CRASH unset, or not a test build)", nsh->cues);
    /* 0: its write waited for the end of the process (the shutdown took the new log's lock before it) */
    CHECK(nsh->worker_rc == 1 || nsh->worker_rc == 0, "the worker's strict overwrite failed (%d)", nsh->worker_rc);
    CHECK(!late || nsh->worker_rc == 0, "late: the worker's write, started after the strict shutdown, returned (a log "
          "was made after the shutdown)");
    CHECK(nsh->handler_rc == (crash ? 3 : 1), "the exiting thread's write after the library went off %s (%d)",
          crash ? "was not killed inside, at upath.exit.synced" : "failed", nsh->handler_rc);
    if (crash)
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "crash: the child ended with status 0x%x, not killed at "
              "upath.exit.synced", st);
    else
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "keep: the child ended with status 0x%x", st);
    pid_t t = fork(); /* the next start-up under the library recovers what the child left */
    CHECK(t >= 0, "fork");
    if (t == 0) {
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
    }
    int tst;
    CHECK(waitpid(t, &tst, 0) == t && WIFEXITED(tst) && WEXITSTATUS(tst) == 0, "/bin/true under the library: 0x%x", tst);
    static char buf[2 * OLDER_BYTES + 1];
    long n = file_read(path, buf, sizeof buf);
    CHECK(n == 2 * OLDER_BYTES, "the file holds %ld bytes, not %d", n, 2 * OLDER_BYTES);
    long c_bytes = 0, b_bytes = 0;
    for (long i = 0; i < OLDER_BYTES; i++) c_bytes += buf[i] == 'C', b_bytes += buf[i] == 'B';
    CHECK(c_bytes == OLDER_BYTES, "%s: [0, 4 KiB) holds %ld bytes of 'C' (the exiting thread's write after the library "
          "went off, acknowledged last) and %ld of 'B' (the worker's earlier strict write, the root's first): the log it "
          "made during the exit was left behind, and recovery replayed its record", how, c_bytes, b_bytes);
    for (long i = OLDER_BYTES; i < 2 * OLDER_BYTES; i++) CHECK(buf[i] == 'A', "byte %ld is 0x%02x, not 'A'", i, buf[i]);
    printf("newroot: %s: a root's first strict write during the exit (%s) left no log behind the exit's later write\n",
           how, nsh->worker_rc ? "returned" : "held to the end");
}

/* ---- down: the exiting thread's own strict calls after the strict shutdown (strict27's note) ---- */

struct down_shared {
    volatile int cues, w_rc, w_errno, t_rc, t_errno;
};
static struct down_shared *dsh;
static int down_fd = -1;

static void down_on_usr1(int sig) {
    (void)sig;
    int e = errno;
    dsh->cues++;
    static char h[OLDER_BYTES];
    memset(h, 'H', sizeof h);
    errno = 0;
    dsh->w_rc = (int)pwrite(down_fd, h, sizeof h, 0);
    dsh->w_errno = errno;
    errno = 0;
    dsh->t_rc = ftruncate(down_fd, 100);
    dsh->t_errno = errno;
    errno = e;
}

/* The strict logs (*.log) in DIR's area -- not a parked one (parked-*.log: a clean exit's log left for the next
 * process, which holds no valid record; docs/oplog.md "Parked logs"). */
static int down_logs(const char *dir, char *names, size_t cap) {
    char area[PATH_MAX];
    snprintf(area, sizeof area, "%s/.daxkit", dir);
    DIR *d = opendir(area);
    int n = 0;
    names[0] = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l > 4 && !strcmp(e->d_name + l - 4, ".log") && strncmp(e->d_name, "parked-", 7) != 0) {
            n++;
            snprintf(names + strlen(names), cap - strlen(names), " %s", e->d_name);
        }
    }
    if (d) closedir(d);
    return n;
}

static void case_down(const char *dir, const char *how) {
    signal(SIGUSR1, SIG_IGN); /* this process's own exit passes the cue too */
    if (strcmp(mode_name(), "strict")) SKIP("strict mode's shutdown only");
    bool logged = !strcmp(how, "logged");
    CHECK(logged || !strcmp(how, "nolog"), "down: logged or nolog, not %s", how);
    char path[PATH_MAX], names[1024];
    st_path(path, sizeof path, dir, "down_data");
    dsh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(dsh != MAP_FAILED, "mmap");
    static char a[2 * OLDER_BYTES];
    memset(a, 'A', sizeof a);
    int m = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, 0644); /* no log made */
    CHECK(m >= 0 && syscall(SYS_write, m, a, sizeof a) == (long)sizeof a && syscall(SYS_fsync, m) == 0, "set-up");
    syscall(SYS_close, m);
    CHECK(down_logs(dir, names, sizeof names) == 0, "a log before the child:%s", names);
    pid_t c = fork();
    CHECK(c >= 0, "fork");
    if (c == 0) {
        down_fd = open(path, O_RDWR);
        if (down_fd < 0 || pread(down_fd, a, OLDER_BYTES, 0) != OLDER_BYTES) _exit(2);
        static char l[OLDER_BYTES];
        memset(l, 'L', sizeof l);
        if (logged && pwrite(down_fd, l, sizeof l, 0) != (ssize_t)sizeof l) _exit(3); /* the root's log made */
        if (logged && down_logs(dir, names, sizeof names) != 1) _exit(4);
        struct sigaction sa = {.sa_handler = down_on_usr1};
        sigaction(SIGUSR1, &sa, NULL);
        exit(0);
    }
    int st = 0;
    if (!st_wait_child(c, &st, 20000)) {
        FAIL("%s: the exiting child did not end within 20 s: its handler's strict call after the shutdown waited "
             "(cues %d)", how, dsh->cues);
    }
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: the child ended with status 0x%x", how, st);
    if (dsh->cues < 1) SKIP("the cue did not fire (DAXKIT_TEST_CRASH unset, or not a test build)");
    CHECK(dsh->w_rc == -1 && dsh->w_errno == EDEADLK, "%s: the exiting thread's write after the strict shutdown "
          "returned %d (%s), not EDEADLK", how, dsh->w_rc, strerror(dsh->w_errno));
    CHECK(dsh->t_rc == -1 && dsh->t_errno == EDEADLK, "%s: the exiting thread's ftruncate after the strict shutdown "
          "returned %d (%s), not EDEADLK", how, dsh->t_rc, strerror(dsh->t_errno));
    int logs = down_logs(dir, names, sizeof names);
    CHECK(logs == 0, "%s: %d log(s) left behind the exit:%s", how, logs, names);
    static char buf[2 * OLDER_BYTES + 1];
    long n = file_read(path, buf, sizeof buf);
    CHECK(n == 2 * OLDER_BYTES, "%s: the file holds %ld bytes, not %d (the refused ftruncate cut it?)", how, n,
          2 * OLDER_BYTES);
    for (long i = 0; i < n; i++)
        CHECK(buf[i] == (logged && i < OLDER_BYTES ? 'L' : 'A'), "%s: byte %ld is 0x%02x", how, i, (unsigned char)buf[i]);
    printf("down: %s: the exiting thread's strict write and ftruncate after the shutdown: EDEADLK, nothing changed, "
           "no log left\n", how);
}

/* ---- tablewrite: a handler's strict write inside its thread's table lock during another thread's exit ---- */

struct tw_shared {
    volatile int cues, in_write, w_rc, w_errno, done;
};
static struct tw_shared *tsh;
static volatile int tw_go;
static int tw_fd = -1;
static char tw_path2[PATH_MAX];

static void tw_wait(volatile int *flag, int ms) {
    for (int i = 0; i < ms && !*flag; i++) nanosleep(&(struct timespec){0, 1000000}, NULL);
}

/* SIGUSR1 on the worker, inside its open's adoption under the file table's lock */
static void tw_on_usr1(int sig) {
    (void)sig;
    int e = errno;
    tsh->cues++;
    tsh->in_write = 1;
    static char h[OLDER_BYTES];
    memset(h, 'H', sizeof h);
    errno = 0;
    tsh->w_rc = (int)pwrite(tw_fd, h, sizeof h, 0);
    tsh->w_errno = errno;
    tsh->done = 1;
    errno = e;
}

/* SIGUSR2 on the exiting thread, right after strict's shutdown */
static void tw_on_usr2(int sig) {
    (void)sig;
    int e = errno;
    tsh->cues++;
    tw_go = 1;
    tw_wait(&tsh->in_write, 3000);
    nanosleep(&(struct timespec){0, 300000000}, NULL); /* the handler's write inside the shutdown's hold */
    errno = e;
}

static void *tw_worker(void *arg) {
    (void)arg;
    while (!tw_go) nanosleep(&(struct timespec){0, 1000000}, NULL);
    int g = open(tw_path2, O_RDWR); /* its adoption: the handler above */
    (void)g;
    for (;;) pause(); /* the exit ends it */
    return NULL;
}

static void case_tablewrite(const char *dir) {
    signal(SIGUSR1, SIG_IGN); /* this process's own calls pass the cues too */
    signal(SIGUSR2, SIG_IGN);
    if (strcmp(mode_name(), "strict")) SKIP("strict mode's checkpoint lock only");
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "tw_data");
    st_path(tw_path2, sizeof tw_path2, dir, "tw_other");
    tsh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(tsh != MAP_FAILED, "mmap");
    static char a[2 * OLDER_BYTES];
    memset(a, 'A', sizeof a);
    for (int k = 0; k < 2; k++) {
        int m = (int)syscall(SYS_openat, AT_FDCWD, k ? tw_path2 : path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        CHECK(m >= 0 && syscall(SYS_write, m, a, sizeof a) == (long)sizeof a, "set-up");
        syscall(SYS_close, m);
    }
    tsh->w_rc = -9;
    pid_t c = fork();
    CHECK(c >= 0, "fork");
    if (c == 0) {
        tw_fd = open(path, O_RDWR); /* adoption 1 */
        static char l[OLDER_BYTES];
        memset(l, 'L', sizeof l);
        if (tw_fd < 0 || pwrite(tw_fd, l, sizeof l, 0) != (ssize_t)sizeof l) _exit(3); /* the root's log made */
        struct sigaction s1 = {.sa_handler = tw_on_usr1}, s2 = {.sa_handler = tw_on_usr2};
        sigaction(SIGUSR1, &s1, NULL);
        sigaction(SIGUSR2, &s2, NULL);
        pthread_t t;
        if (pthread_create(&t, NULL, tw_worker, NULL) != 0) _exit(2);
        exit(0);
    }
    int st = 0;
    if (!st_wait_child(c, &st, 20000)) {
        FAIL("the exiting child did not end within 20 s (cues %d, the handler %s its write): its strict write waited "
             "for the shutdown's checkpoint lock inside its thread's table lock, which the exit takes next", tsh->cues,
             tsh->done ? "finished" : "still inside");
    }
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child ended with status 0x%x", st);
    if (tsh->cues < 2) SKIP("the cues did not fire (%d of 2: DAXKIT_TEST_CRASH unset, or not a test build)", tsh->cues);
    CHECK(tsh->done && tsh->w_rc == -1 && tsh->w_errno == EDEADLK, "the handler's write returned %d (%s), not EDEADLK",
          tsh->w_rc, strerror(tsh->w_errno));
    static char buf[2 * OLDER_BYTES + 1];
    long n = file_read(path, buf, sizeof buf);
    CHECK(n == 2 * OLDER_BYTES, "the file holds %ld bytes", n);
    for (long i = 0; i < n; i++)
        CHECK(buf[i] == (i < OLDER_BYTES ? 'L' : 'A'), "byte %ld is 0x%02x", i, (unsigned char)buf[i]);
    printf("tablewrite: the handler's strict write inside its thread's table lock after the shutdown: EDEADLK, the "
           "exit ended\n");
}

/* ---- tabledrain: a handler's drain of waiting overwrites inside its thread's table lock during another thread's
 * exit (review 28, #6's other half) ---- */

struct td_shared {
    volatile int exit_cues, worker_cues, alrm_cues, wrote, waited, open_go, at_drain, locked, down, done, rc, err;
    volatile char got[4];
};
static struct td_shared *tdsh;
static int td_fd = -1;
static sem_t td_go;
static char td_path2[PATH_MAX];
static const char *td_op, *td_when;

static void td_wait(volatile int *flag, int ms) {
    for (int i = 0; i < ms && !*flag; i++) nanosleep(&(struct timespec){0, 1000000}, NULL);
}

/* SIGUSR1 on the worker, inside its open's adoption under the file table's lock */
static void td_on_usr1(int sig) {
    (void)sig;
    int e = errno;
    tdsh->worker_cues++;
    errno = 0;
    if (!strcmp(td_op, "read")) {
        static char b[OLDER_BYTES];
        tdsh->rc = (int)pread(td_fd, b, sizeof b, 0);
        memcpy((char *)tdsh->got, b, sizeof tdsh->got);
    } else if (!strcmp(td_op, "fsync")) {
        tdsh->rc = fsync(td_fd);
    } else {
        tdsh->rc = (int)pwrite(td_fd, "hhhhhhhhhhhhhhhh", 16, 0); /* inline: applied at once, after the waiting one */
    }
    tdsh->err = errno;
    tdsh->done = 1;
    errno = e;
}

/* SIGALRM on the worker, inside the handler above: its drain decided, the lock not tried yet */
static void td_on_alrm(int sig) {
    (void)sig;
    tdsh->alrm_cues++;
    tdsh->at_drain = 1;
    td_wait(!strcmp(td_when, "applied") ? &tdsh->down : &tdsh->locked, 3000);
}

/* SIGUSR2 on the exiting thread: 1st upath.fini.published; 2nd the shutdown's cue (holding the lock) */
static void td_on_usr2(int sig) {
    (void)sig;
    int e = errno;
    int n = ++tdsh->exit_cues;
    bool late = !strcmp(td_when, "late");
    if (n == 1) {
        sem_post(&td_go);
        td_wait(&tdsh->wrote, 10000);
        if (!late) {
            tdsh->open_go = 1;
            td_wait(&tdsh->at_drain, 3000); /* the handler's drain decided before the shutdown */
        }
    } else if (n == 2) {
        if (!strcmp(td_when, "applied")) tdsh->down = 1;
        else tdsh->locked = 1;
        tdsh->open_go = 1;
        td_wait(&tdsh->done, 3000); /* the handler's call inside the shutdown's hold */
    }
    errno = e;
}

static void *td_worker(void *arg) {
    (void)arg;
    while (sem_wait(&td_go) != 0) {
    }
    static char b[OLDER_BYTES];
    memset(b, 'B', sizeof b);
    uint64_t lazy0 = st_counter(DK_C_strict_lazy);
    if (pwrite(td_fd, b, sizeof b, 0) == (ssize_t)sizeof b)
        tdsh->waited = (int)(st_counter(DK_C_strict_lazy) - lazy0); /* waits for the checkpoint (the shutdown's) */
    tdsh->wrote = 1;
    td_wait(&tdsh->open_go, 10000);
    int g = open(td_path2, O_RDWR); /* its adoption: the handler above */
    (void)g;
    for (;;) pause(); /* the exit ends it */
    return NULL;
}

static void case_tabledrain(const char *dir, const char *op, const char *when) {
    signal(SIGUSR1, SIG_IGN); /* this process's own calls pass the cues too */
    signal(SIGUSR2, SIG_IGN);
    signal(SIGALRM, SIG_IGN);
    CHECK(!strcmp(op, "read") || !strcmp(op, "fsync") || !strcmp(op, "write"), "tabledrain: read|fsync|write, not %s", op);
    CHECK(!strcmp(when, "late") || !strcmp(when, "during") || !strcmp(when, "applied"),
          "tabledrain: late|during|applied, not %s", when);
    if (strcmp(mode_name(), "strict")) SKIP("strict mode's checkpoint lock only");
    const char *apply = getenv("DAXKIT_STRICT_APPLY");
    if (!apply || strcmp(apply, "checkpoint")) SKIP("needs DAXKIT_STRICT_APPLY=checkpoint (an overwrite that waits)");
    td_op = op, td_when = when;
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "td_data");
    st_path(td_path2, sizeof td_path2, dir, "td_other");
    tdsh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(tdsh != MAP_FAILED, "mmap");
    static char a[2 * OLDER_BYTES];
    memset(a, 'A', sizeof a);
    for (int k = 0; k < 2; k++) {
        int m = (int)syscall(SYS_openat, AT_FDCWD, k ? td_path2 : path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        CHECK(m >= 0 && syscall(SYS_write, m, a, sizeof a) == (long)sizeof a, "set-up");
        syscall(SYS_close, m);
    }
    tdsh->rc = -9;
    pid_t c = fork();
    CHECK(c >= 0, "fork");
    if (c == 0) {
        td_fd = open(path, O_RDWR); /* adoption 1; mapped by its first read (DAXKIT_MAP_AFTER_IOS=0) */
        static char l[16];
        memset(l, 'A', sizeof l); /* the root's log made (an inline write: applied at once, nothing waits) */
        if (td_fd < 0 || pread(td_fd, a, OLDER_BYTES, 0) != OLDER_BYTES || pwrite(td_fd, l, sizeof l, 0) != sizeof l)
            _exit(3);
        sem_init(&td_go, 0, 0);
        struct sigaction s1 = {.sa_handler = td_on_usr1}, s2 = {.sa_handler = td_on_usr2},
                         s3 = {.sa_handler = td_on_alrm};
        sigaction(SIGUSR1, &s1, NULL);
        sigaction(SIGUSR2, &s2, NULL);
        sigaction(SIGALRM, &s3, NULL);
        pthread_t t;
        if (pthread_create(&t, NULL, td_worker, NULL) != 0) _exit(2);
        exit(0);
    }
    int st = 0;
    if (!st_wait_child(c, &st, 20000))
        FAIL("%s %s: the exiting child did not end within 20 s (cues: exit %d, worker %d, drain %d; the handler's %s "
             "%s): its drain waited for the shutdown's checkpoint lock inside its thread's table lock, which the exit "
             "takes next", op, when, tdsh->exit_cues, tdsh->worker_cues, tdsh->alrm_cues, op,
             tdsh->done ? "returned" : "never returned");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child ended with status 0x%x", st);
    bool cued = !strcmp(when, "late") ? 1 : tdsh->alrm_cues == 1;
    if (tdsh->exit_cues < 2 || tdsh->worker_cues < 1 || !cued)
        SKIP("the cues did not fire (exit %d of 2, worker %d of 1, drain %d: DAXKIT_TEST_CRASH unset, or not a test "
             "build)", tdsh->exit_cues, tdsh->worker_cues, tdsh->alrm_cues);
    CHECK(tdsh->waited == 1, "the worker's overwrite did not wait for the checkpoint (strict_lazy +%d)", tdsh->waited);
    CHECK(tdsh->done, "the handler's %s did not return", op);
    if (!strcmp(when, "applied"))
        CHECK(tdsh->rc == OLDER_BYTES && !memcmp((const char *)tdsh->got, "BBBB", 4),
              "the handler's read after the shutdown's apply returned %d (%s), bytes %.4s -- not 4096 bytes of 'B'",
              tdsh->rc, strerror(tdsh->err), (const char *)tdsh->got);
    else
        CHECK(tdsh->rc == -1 && tdsh->err == EDEADLK, "the handler's %s returned %d (%s), not EDEADLK", op, tdsh->rc,
              strerror(tdsh->err));
    static char buf[2 * OLDER_BYTES + 1];
    long n = file_read(path, buf, sizeof buf);
    CHECK(n == 2 * OLDER_BYTES, "the file holds %ld bytes", n);
    for (long i = 0; i < n; i++)
        CHECK(buf[i] == (i < OLDER_BYTES ? 'B' : 'A'), "byte %ld is 0x%02x", i, (unsigned char)buf[i]);
    printf("tabledrain %s %s: the handler's %s inside its thread's table lock during the exit's shutdown: %s, the exit "
           "ended\n", op, when, op, !strcmp(when, "applied") ? "read the applied bytes" : "EDEADLK");
}

/* ---- lock: a first POSIX lock after exit and the exit's truncate by name (review 25, #6) ---- */

struct lock_shared {
    volatile int cue, locked, truncated, checked, rc;
};
static struct lock_shared *lsh;
static int lock_x = -1, lock_y = -1;
static char lock_path[PATH_MAX];
static sem_t lock_go;

static void *lock_worker(void *arg) {
    (void)arg;
    while (sem_wait(&lock_go) != 0) {
    }
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    lsh->locked = fcntl(lock_y, F_SETLK, &l) == 0 ? 1 : 2; /* the process's first POSIX lock, the library off */
    for (;;) pause();
    return NULL;
}

static void lock_wait(volatile int *flag) {
    for (int i = 0; i < 10000 && !*flag; i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

/* SIGUSR1 on the exiting thread, the library off (upath.fini.library_off). */
static void lock_on_library_off(int sig) {
    (void)sig;
    int e = errno;
    lsh->cue = 1;
    lock_y = open(lock_path, O_RDWR); /* while X is open: Y is another number */
    if (lock_y < 0 || close(lock_x) != 0) {
        lsh->rc = 3;
        return;
    }
    sem_post(&lock_go);
    lock_wait(&lsh->locked);
    if (lsh->locked != 1) {
        lsh->rc = 4;
        return;
    }
    lsh->rc = truncate(lock_path, 3) == 0 ? 1 : 5; /* X is closed: the exit's sync would open the name */
    lsh->truncated = 1;
    lock_wait(&lsh->checked); /* the parent looks at the lock while this process still lives */
    errno = e;
}

static void case_lock(const char *dir) {
    signal(SIGUSR1, SIG_IGN); /* this process's own exit passes the cue too */
    if (!strcmp(mode_name(), "posix")) SKIP("posix mode holds nothing at exit: a truncate by name is not synced");
    st_path(lock_path, sizeof lock_path, dir, "lock_data");
    lsh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(lsh != MAP_FAILED, "mmap");
    pid_t c = fork();
    CHECK(c >= 0, "fork");
    if (c == 0) {
        /* A truncate by name of a file not open, the library on: its sync opens the name in the descriptor window,
         * which reads /proc/locks once (no lock inherited: remembered) -- after that only the gate tells. */
        char prime[PATH_MAX];
        st_path(prime, sizeof prime, dir, "lock_prime");
        int p = open(prime, O_RDWR | O_CREAT | O_TRUNC, 0644);
        if (p < 0 || write(p, "0123456789", 10) != 10 || close(p) != 0 || truncate(prime, 1) != 0) _exit(2);
        lock_x = open(lock_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
        if (lock_x < 0 || write(lock_x, "0123456789", 10) != 10) _exit(2);
        sem_init(&lock_go, 0, 0);
        pthread_t t;
        if (pthread_create(&t, NULL, lock_worker, NULL) != 0) _exit(2);
        struct sigaction sa = {.sa_handler = lock_on_library_off};
        sigaction(SIGUSR1, &sa, NULL);
        exit(0);
    }
    for (int i = 0; i < 20000 && !lsh->truncated; i++) {
        int w;
        if (waitpid(c, &w, WNOHANG) == c) {
            if (!lsh->cue) SKIP("the cue did not fire (DAXKIT_TEST_CRASH unset, or not a test build)");
            FAIL("the child ended (status 0x%x, step %d) before its truncate", w, lsh->rc);
        }
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    CHECK(lsh->truncated, "the child's handler did not reach its truncate in 20 s (step %d)", lsh->rc);
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    int fd = (int)syscall(SYS_openat, AT_FDCWD, lock_path, O_RDONLY);
    CHECK(fd >= 0, "open %s", lock_path);
    int gr = (int)syscall(SYS_fcntl, fd, F_GETLK, &l);
    syscall(SYS_close, fd);
    lsh->checked = 1;
    int st;
    CHECK(waitpid(c, &st, 0) == c, "waitpid");
    CHECK(gr == 0, "F_GETLK: %s", strerror(errno));
    CHECK(lsh->rc == 1, "the exiting thread's truncate by name failed (step %d)", lsh->rc);
    CHECK(l.l_type == F_WRLCK && l.l_pid == c, "%s: after the exit's truncate by name the child's POSIX lock, its first, "
          "taken after the library went off, is gone (F_GETLK: type %d, pid %d): the truncate's sync opened and closed "
          "the file", mode_name(), l.l_type, (int)l.l_pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child ended with status 0x%x", st);
    struct stat s2;
    CHECK(syscall(SYS_stat, lock_path, &s2) == 0 && s2.st_size == 3, "the file's size is %lld after a truncate to 3",
          (long long)s2.st_size);
    printf("lock: %s: a first POSIX lock taken after exit turned the library off outlived the exit's truncate by name\n",
           mode_name());
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: shim_exit_sync DIR stdio|own write|ftruncate|truncate|cancel ftruncate|truncate|truncate open|closed|"
                        "older keep|crash|newroot keep|crash|lock|down logged|nolog\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IONBF, 0); /* nothing of the parent's buffered across the forks */
    if (!strcmp(argv[2], "stdio")) case_stdio(argv[1]);
    else if (!strcmp(argv[2], "own") && argc > 3) case_own(argv[1], argv[3]);
    else if (!strcmp(argv[2], "cancel") && argc > 3) case_cancel(argv[1], argv[3]);
    else if (!strcmp(argv[2], "truncate") && argc > 3) case_truncate(argv[1], argv[3]);
    else if (!strcmp(argv[2], "older") && argc > 3) case_older(argv[1], argv[3]);
    else if (!strcmp(argv[2], "newroot") && argc > 3) case_newroot(argv[1], argv[3]);
    else if (!strcmp(argv[2], "lock")) case_lock(argv[1]);
    else if (!strcmp(argv[2], "down") && argc > 3) case_down(argv[1], argv[3]);
    else if (!strcmp(argv[2], "tablewrite")) case_tablewrite(argv[1]);
    else if (!strcmp(argv[2], "tabledrain") && argc > 4) case_tabledrain(argv[1], argv[3], argv[4]);
    else FAIL("unknown case %s", argv[2]);
    return 0;
}
