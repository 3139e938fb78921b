/* Description: lock calls that overlap another lock call's bookkeeping leave the lock set unknown (review 22,
 * finding 05: what keeps a lock set without the file mutex right; upath/reclock.c). Byte 0 is read-locked and the
 * size read since; lock call A widens the lock to [0,2) (an escalation: alone, it would keep the size it
 * read). A test-build cue raises SIGUSR1 on A's thread inside A's call: DAXKIT_TEST_CRASH=raise:10:SITE:5 (A
 * is the program's fifth lock call on a managed file; every earlier one runs alone). SITE, argv[3]:
 *   begin    reclock.lock_done.begin: after A's kernel call, before any of its bookkeeping;
 *   tracked  reclock.lock_done.tracked: after A changed the set, before A's call ends (a call's count covers
 *            its bookkeeping only in the set without the file mutex).
 *   close    upath.close.locks_forgotten: a close instead of A (case_close, below), and the other close paths:
 *   dup2        the same cue, a dup2 onto the closed number;
 *   close_range the same cue, a close_range of it;
 *   fclose      the same cue, an fclose of a stream fdopen made of it (a cookie stream: src/shim/stdio.c);
 *   pending     upath.pending_drop.cleared: a close of a descriptor never used (pending: not adopted yet);
 *   fork_close, fork_lock  (thread only) B forks inside the close (the close's cue) or inside A's bookkeeping
 *               (reclock.lock_done.begin:5) and waits for its child: the child opens the file, releases the whole
 *               file (its set known and empty) and makes a plain escalation round -- it must be a refresh skip:
 *               the parent's call in flight at the fork never ends in the child (session 24: the child kept
 *               its share, every lock call of the child overlapped, no refresh skip ever).
 * There B -- argv[2] "thread": another thread (the handler waits for it); "handler": the signal handler
 * itself -- releases the whole file; a writer outside the library (raw system calls: another process's view)
 * grows the file from 16 to 32 bytes; and at `begin` B re-takes byte 0 (review 22's release-and-re-take), at
 * `tracked` the main thread re-takes it after A. Then:
 *   - no lock call of the overlap keeps the size it read (refresh_skips unchanged), and the set became
 *     unknown once (lock_set_unknown +1: B's release found it holding byte 0);
 *   - a read after the re-take sees 32 bytes;
 *   - the process holds byte 0 only (B's release came after A's kernel call): releasing it holds nothing; the
 *     writer shrinks the file to 8 bytes; after a read lock on byte 0 a read must return 8 bytes -- a set that
 *     had kept A's [0,2) would still say held and keep the size of 32 (a shrink, unlike a growth, is not
 *     checked at the end: reclock.c), as the bookkeeping without its overlap checks does;
 *   - the escalation after that is no refresh skip either (an unknown set counts as not held);
 * and after a whole-file release (the set known and empty again) a plain escalation is a refresh skip once
 * more: the counters read here are live (also checked once before the overlap).
 * argv[1]: managed directory. Exit 0 pass, 1 fail, 77 skip (the cue did not fire: not a test build). */
#include <pthread.h>
#include <semaphore.h>

#include "shim_test.h"

static int fd = -1, kfd = -1; /* the library's descriptor; the writer's, opened with raw system calls */
static bool by_handler, at_begin, at_close, at_fork;
static char path[PATH_MAX];
static volatile int fork_status = -1; /* fork_*: the child's wait status */
static const char *how = "close"; /* at_close: close, dup2, close_range, fclose or pending */
static sem_t go, done;
static volatile sig_atomic_t cue_fired, b_failed;

static int set_lock(short type, off_t start, off_t len) { return st_setlk(fd, type, start, len); }

/* The writer outside the library: 16 bytes of 'b' at `at` (raw system calls). Async-signal-safe. */
static bool grow(off_t at) {
    static const char bytes[] = "bbbbbbbbbbbbbbbb";
    return syscall(SYS_pwrite64, kfd, bytes, sizeof bytes - 1, at) == (long)sizeof bytes - 1;
}

static uint64_t skips(void);

/* fork_*: B's child, with its own descriptor of the file: a plain escalation keeps the size it read. */
static void fork_child(void) {
    char buf[16];
    fd = OK(open(path, O_RDWR));
    for (int i = 0; i < 24; i++) CHECK(pread(fd, buf, 16, 0) == 16, "child: pread"); /* served */
    OK(set_lock(F_UNLCK, 0, 0)); /* the set known (empty): the parent's was forgotten at the fork */
    uint64_t s0 = skips();
    OK(set_lock(F_RDLCK, 0, 1));
    CHECK(pread(fd, buf, 16, 0) == 16, "child: pread");
    OK(set_lock(F_RDLCK, 0, 2));
    uint64_t s1 = skips();
    CHECK(s1 == s0 + 1, "child forked inside another thread's call: a plain escalation made %llu refresh skips (1 "
          "expected): the parent's call in flight at the fork, which never ends here, made the child's lock calls "
          "overlapped", (unsigned long long)(s1 - s0));
    _exit(0);
}

/* B: what overlaps A's bookkeeping. Async-signal-safe (it may run in the handler). */
static void overlap(void) {
    if (at_fork) { /* (thread only) */
        pid_t pid = fork();
        if (pid == 0) fork_child();
        int st = -1;
        if (pid > 0) while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
        fork_status = st;
        return;
    }
    if (set_lock(F_UNLCK, 0, 0) != 0) b_failed = 1;
    if (at_close) { /* the re-take the kernel's close then drops */
        if (set_lock(F_RDLCK, 0, 1) != 0) b_failed = 1;
        return;
    }
    if (!grow(16)) b_failed = 1;
    if (at_begin && set_lock(F_RDLCK, 0, 1) != 0) b_failed = 1;
}

static void *b_main(void *arg) {
    (void)arg;
    while (sem_wait(&go) != 0) {}
    overlap();
    sem_post(&done);
    return NULL;
}

static void on_cue(int sig) {
    (void)sig;
    cue_fired = 1;
    if (by_handler) {
        overlap();
        return;
    }
    sem_post(&go);
    while (sem_wait(&done) != 0) {} /* A's thread waits here, inside its lock call, until B is through */
}

static uint64_t skips(void) { return st_counter(DK_C_refresh_skips); }

/* A served read of the whole file sees `size` bytes, the writer's last 16 among them. */
static void expect_size(ssize_t size, const char *after, char **argv) {
    char buf[64];
    ssize_t got = pread(fd, buf, sizeof buf, 0);
    CHECK(got == size && buf[size - 1] == 'b', "%s at %s: after %s a read returned %zd bytes (%zd expected: the writer "
          "grew the file while nothing was held)", argv[2], argv[3], after, got, size);
}

/* A plain escalation round with the set known (st_escalation_skips): the widening keeps the size it read. */
static void plain_round(const char *when) {
    uint64_t n = st_escalation_skips(fd, when);
    CHECK(n == 1, "%s: a plain escalation made %llu refresh skips (1 expected): the counters are not live", when,
          (unsigned long long)n);
}

/* `close` (and its siblings): byte 0 held since the size was read; a second descriptor of the file is closed,
 * and at the cue (DAXKIT_TEST_CRASH=raise:10:upath.close.locks_forgotten:1 -- pending:
 * raise:10:upath.pending_drop.cleared:1 -- after the close made the set unknown, before the kernel's close) B
 * releases the whole file and re-takes byte 0, and the kernel's close then drops every lock of the process on
 * the file. A read re-reads the size (B's was an acquisition), the writer shrinks the file to 4 bytes while
 * nothing is held, and a lock on [0,2) must re-read it: a read at 4 returns nothing. Until session 24 the
 * close's forget was outside the lock calls' count: B's two calls ran alone and made the set known and held
 * again, so the lock kept the size of 16 and the read returned 8 bytes past the new end (refresh_skips +1). The
 * descriptor is closed by argv[3]: close, dup2 of /dev/null onto its number, close_range of its number alone, an
 * fclose of a stream on it, or (pending) a close of a descriptor never used. */
static int fork_checked(char **argv) {
    CHECK(fork_status == 0, "%s: B's child (forked inside the main thread's call) ended with wait status %d (0 "
          "expected: its plain escalation round must keep the size it read)", argv[3], fork_status);
    printf("ok: %s: a child forked inside another thread's call keeps sizes at escalations\n", argv[3]);
    return 0;
}

static int case_close(char **argv) {
    char buf[16];
    int fd1 = OK(open(path, O_RDWR));
    if (strcmp(how, "pending") != 0) /* adopted: its close is the library's */
        for (int i = 0; i < 24; i++) CHECK(pread(fd1, buf, 16, 0) == 16, "pread");
    int null = !strcmp(how, "dup2") ? OK(open("/dev/null", O_RDONLY)) : -1;
    uint64_t s0 = skips();
    if (!strcmp(how, "dup2")) OK(dup2(null, fd1));
    else if (!strcmp(how, "close_range")) OK(close_range((unsigned)fd1, (unsigned)fd1, 0));
    else if (!strcmp(how, "fclose")) {
        FILE *fp = fdopen(fd1, "r");
        CHECK(fp, "fdopen: %s", strerror(errno));
        CHECK(fclose(fp) == 0, "fclose: %s", strerror(errno));
    } else OK(close(fd1));
    if (!cue_fired) SKIP("the cue did not fire (DAXKIT_TEST_CRASH unset, or not a test build)");
    if (at_fork) return fork_checked(argv);
    CHECK(!b_failed, "B's release or re-take failed");
    if (null >= 0) { /* fd1 names /dev/null now */
        OK(close(fd1));
        OK(close(null));
    }
    CHECK(pread(fd, buf, 16, 0) == 16, "pread after the close");
    CHECK(syscall(SYS_ftruncate, kfd, 4) == 0, "the writer's shrink: %s", strerror(errno));
    OK(set_lock(F_RDLCK, 0, 2));
    ssize_t got = pread(fd, buf, 8, 4);
    printf("%s, %s: refresh_skips +%llu, a read at 4 after the shrink returned %zd bytes\n", argv[2], how,
           (unsigned long long)(skips() - s0), got);
    CHECK(got == 0, "%s at %s: after the writer's shrink to 4 bytes while the kernel's close had dropped every "
          "lock, a lock and a read at 4 returned %zd bytes (0 expected): the lock kept the size it read", argv[2], how,
          got);
    CHECK(skips() == s0, "%s at %s: the lock after the close's window kept the size it read", argv[2], how);
    printf("ok: %s at %s: a lock after locks a close dropped re-reads the size\n", argv[2], how);
    return 0;
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    CHECK(argc == 4 && (!strcmp(argv[2], "thread") || !strcmp(argv[2], "handler")) &&
              (!strcmp(argv[3], "begin") || !strcmp(argv[3], "tracked") || !strcmp(argv[3], "close") ||
               !strcmp(argv[3], "dup2") || !strcmp(argv[3], "close_range") || !strcmp(argv[3], "fclose") ||
               !strcmp(argv[3], "pending") || (!strcmp(argv[2], "thread") && !strcmp(argv[3], "fork_close")) ||
               (!strcmp(argv[2], "thread") && !strcmp(argv[3], "fork_lock"))),
          "usage: %s DIR thread|handler begin|tracked|close|dup2|close_range|fclose|pending, or thread "
          "fork_close|fork_lock", argv[0]);
    by_handler = !strcmp(argv[2], "handler");
    at_begin = !strcmp(argv[3], "begin");
    at_fork = !strncmp(argv[3], "fork_", 5);
    at_close = !at_begin && strcmp(argv[3], "tracked") != 0 && strcmp(argv[3], "fork_lock") != 0;
    if (at_close && !at_fork) how = argv[3];
    st_require_library();
    st_watchdog(60);
    setvbuf(stdout, NULL, _IONBF, 0);
    sem_init(&go, 0, 0);
    sem_init(&done, 0, 0);
    pthread_t b;
    if (!by_handler) CHECK(pthread_create(&b, NULL, b_main, NULL) == 0, "pthread_create");
    struct sigaction sa = {.sa_handler = on_cue};
    OK(sigaction(SIGUSR1, &sa, NULL));

    char buf[32];
    st_path(path, sizeof path, dir, "f");
    fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    memset(buf, 'a', 16);
    CHECK(write(fd, buf, 16) == 16, "write");
    OK(fsync(fd));
    kfd = (int)OK(syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CLOEXEC));
    for (int i = 0; i < 24; i++) CHECK(pread(fd, buf, 16, 0) == 16, "pread"); /* served from here on */

    plain_round("before the overlap");                                         /* lock calls 1-3 */
    OK(set_lock(F_RDLCK, 0, 1));                                               /* 4: held ... */
    CHECK(pread(fd, buf, 16, 0) == 16, "pread");                               /* ... since the size was read */
    if (at_close) return case_close(argv);
    uint64_t s0 = skips(), u0 = st_counter(DK_C_lock_set_unknown);
    OK(set_lock(F_RDLCK, 0, 2)); /* 5: A, the escalation, with B inside its bookkeeping */
    if (!cue_fired) SKIP("the cue did not fire (DAXKIT_TEST_CRASH unset, or not a test build)");
    if (at_fork) return fork_checked(argv);
    CHECK(!b_failed, "B's release, the writer's growth or B's re-take failed");
    if (!at_begin) OK(set_lock(F_RDLCK, 0, 1)); /* after B's release: the re-take */
    uint64_t s1 = skips(), u1 = st_counter(DK_C_lock_set_unknown);
    printf("%s, %s: refresh_skips +%llu, lock_set_unknown +%llu\n", argv[2], argv[3], (unsigned long long)(s1 - s0),
           (unsigned long long)(u1 - u0));
    CHECK(s1 == s0, "%s at %s: %llu lock call(s) of the overlap kept the size they read (0 expected)", argv[2],
          argv[3], (unsigned long long)(s1 - s0));
    CHECK(u1 == u0 + 1, "%s at %s: lock_set_unknown +%llu (1 expected: B's release overlapped A)", argv[2], argv[3],
          (unsigned long long)(u1 - u0));
    expect_size(32, "the re-take after the writer's growth", argv);
    /* In the kernel the process holds byte 0 only (B's release came after A's [0,2)): releasing it holds
     * nothing, and a set that kept A's range would still say held. */
    OK(set_lock(F_UNLCK, 0, 1));
    CHECK(syscall(SYS_ftruncate, kfd, 8) == 0, "the writer's shrink: %s", strerror(errno));
    OK(set_lock(F_RDLCK, 0, 1));
    ssize_t got = pread(fd, buf, sizeof buf, 0);
    CHECK(got == 8, "%s at %s: after the writer's shrink while nothing was held and a lock, a read returned %zd "
          "bytes (8 expected): the lock kept the size it read", argv[2], argv[3], got);
    OK(set_lock(F_RDLCK, 0, 2)); /* the escalation: the set is unknown, so not held */
    CHECK(skips() == s0, "%s at %s: a lock after the overlap kept the size it read (the set is unknown)", argv[2],
          argv[3]);
    OK(set_lock(F_UNLCK, 0, 0));
    plain_round("after the overlap");
    if (!by_handler) pthread_join(b, NULL);
    syscall(SYS_close, kfd);
    OK(close(fd));
    printf("ok: %s at %s: the overlapped calls left the set unknown, no refresh skip, the growth seen\n", argv[2],
           argv[3]);
    return 0;
}
