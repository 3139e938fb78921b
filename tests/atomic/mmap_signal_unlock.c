/* A signal handler's write of a DAXKIT_ATOMIC_MMAP file (XFS: the shmem shadow) that lands while its thread is
 * inside its own read unlock of the shadow's write lock (u->writes), after glibc has handed the lock to a waiting
 * msync and before it woke that msync (review 12, finding 13: 1 of 20 runs of review 11's reproducer hung for good
 * -- the handler tried the lock for 500 ms and was refused, the 200 us timer's next signal came as each call
 * ended, and the thread never got back to its unlock, which the msync, and so the lock, waited for).
 *
 * glibc's window is a few instructions; this program holds it open. It interposes pthread_rwlock_unlock and
 * pthread_rwlock_wrlock (the library calls them through the PLT; the executable's definitions come first):
 *   - the storer thread's first wrlock inside an msync names the lock (u->writes, taken before f->rw);
 *   - when armed, the main thread's read unlock of that lock (not in the handler) unlocks it, waits until the
 *     storer's wrlock has it, and returns only after the handler ran WINDOW_CALLS times; the storer's wrlock
 *     returns only then, as glibc's writer sleeps until the unlock wakes it.
 * SIGALRM every 200 us (blocked in the other threads) pwrites 64 'h' at 8192. A handler's write inside the
 * window must be refused at once (EDEADLK): then the main thread runs between signals and closes the window,
 * ROUNDS times. If the write waits for the lock instead, the main thread never runs again: a watchdog thread
 * fails the program when a window stays open WATCHDOG_S seconds (without the fix: every time, 0 of 3 windows
 * closed).
 *
 * WINDOW take (session 25: the CI of 978b31a hung here once, killed after 240 s with no word from the
 * watchdog): the main thread's own try of u->writes at the start of a write, glibc's tryrdlock having had the
 * lock and the thread not yet marked as holding it, while the storer's msync waits for it. The lock prefers
 * writers: every try of another reader fails until that msync is done, which waits for the interrupted
 * thread. A handler's write that tries the lock for 500 ms and is refused then, while the timer's next signal
 * is due in 200 us, never lets its thread run again. The program interposes pthread_rwlock_tryrdlock: when
 * armed, the main thread's successful try of that lock returns only after the storer's wrlock waits for it
 * (glibc's WRLOCKED bit) and the handler ran WINDOW_CALLS times. Each handler write inside must be refused at
 * once (without the fix each was refused after its 500 ms of tries).
 *
 * Whatever the window, the program fails with a message, never hangs: the watchdog also fails it when the
 * main thread makes no progress for WATCHDOG_S seconds in any state (exit included), printing each thread's
 * kernel state, and ends it with _exit (the library's exit path cannot hold it).
 *
 *   mmap_signal_unlock FILE [unlock|take]   FILE: 16 KiB, under --atomic-mmap on XFS (or ext4).
 * Exit 0 pass, 1 fail (also when no window could be opened: the library no longer takes the locks this way),
 * 77 skip (no userfaultfd write-protection for shared memory). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "uffd_probe.h"

#define FILE_BYTES 16384
#define ROUNDS 3
#define WINDOW_CALLS 20  /* handler calls inside each window */
#define WATCHDOG_S 20    /* no progress of the main thread this long (a window open, or anything else): it hung */
#define ARM_LIMIT_S 60   /* no window opened (or not ROUNDS of them) in this long: the test cannot work */
#define HANDLER_WAIT_MS 450 /* a handler's write inside a window took this long: it waited (a nested write's
                             * tries last 500 ms at least), not refused at once (microseconds; the rest is
                             * slack for a descheduled thread under load) */
#define RWLOCK_WRLOCKED 2 /* glibc's __readers bit: a writer is the primary writer (nptl/pthread_rwlock_common.c) */

enum { IDLE, ARMED, UNLOCKED, WRITER_HAS_IT, TAKEN, DONE };
static const char *const state_names[] = {"idle", "armed", "unlocked", "writer-has-it", "taken", "done"};
static int state; /* atomic */
static bool take_window; /* WINDOW take: the main thread's try, not its unlock */
static pthread_rwlock_t *the_lock; /* atomic: u->writes, as the storer's msync first wrlocks it */
static pid_t main_tid, storer_tid, watchdog_tid;
static int (*real_unlock)(pthread_rwlock_t *), (*real_wrlock)(pthread_rwlock_t *),
    (*real_tryrdlock)(pthread_rwlock_t *);
static volatile sig_atomic_t in_handler;
static int storer_in_msync, storer_wrlocks; /* the storer's own */
static long progress;            /* atomic: the main thread's steps */
static const char *phase = "set-up"; /* atomic: what the main thread does */

static int fd;
static char *map;
static volatile int stop;
static volatile long t2_msyncs, t2_fail; /* the storer's */
/* the handler's results (only the handler writes them) */
static volatile long h_calls, h_ok, h_deadlk, h_other, w_calls, w_deadlk, w_other;
static volatile long w_calls_round; /* inside the open window */
static volatile long w_max_us;      /* the longest handler call inside a window */

static int load(int *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static void store(int *p, int v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
static void step(const char *what) {
    if (what) __atomic_store_n(&phase, what, __ATOMIC_RELEASE);
    __atomic_add_fetch(&progress, 1, __ATOMIC_RELEASE);
}

int pthread_rwlock_unlock(pthread_rwlock_t *l) {
    if (take_window || load(&state) != ARMED || l != __atomic_load_n(&the_lock, __ATOMIC_ACQUIRE) || in_handler ||
        gettid() != main_tid || l->__data.__cur_writer == main_tid)
        return real_unlock(l);
    store(&state, UNLOCKED);
    int r = real_unlock(l);
    while (load(&state) != WRITER_HAS_IT) sched_yield(); /* the storer's next msync takes it */
    while (w_calls_round < WINDOW_CALLS) {} /* the handler, WINDOW_CALLS times: the timer's signals land here */
    store(&state, DONE);
    return r;
}

/* WINDOW take: the main thread's try of the lock had it; the storer's msync is made to wait for it (as when
 * it came just then), and the handler runs inside before the try returns. */
int pthread_rwlock_tryrdlock(pthread_rwlock_t *l) {
    if (!take_window || load(&state) != ARMED || l != __atomic_load_n(&the_lock, __ATOMIC_ACQUIRE) || in_handler ||
        gettid() != main_tid)
        return real_tryrdlock(l);
    int r = real_tryrdlock(l);
    if (r) return r; /* an msync has it: the next write tries again */
    while (!(__atomic_load_n(&l->__data.__readers, __ATOMIC_ACQUIRE) & RWLOCK_WRLOCKED)) sched_yield();
    store(&state, TAKEN);
    while (w_calls_round < WINDOW_CALLS) {} /* the handler, WINDOW_CALLS times */
    store(&state, DONE);
    return 0;
}

int pthread_rwlock_wrlock(pthread_rwlock_t *l) {
    if (!storer_tid || gettid() != storer_tid) return real_wrlock(l);
    if (storer_in_msync && storer_wrlocks++ == 0 && !__atomic_load_n(&the_lock, __ATOMIC_ACQUIRE))
        __atomic_store_n(&the_lock, l, __ATOMIC_RELEASE);
    int r = real_wrlock(l);
    if (!take_window && l == __atomic_load_n(&the_lock, __ATOMIC_ACQUIRE) && load(&state) == UNLOCKED) {
        store(&state, WRITER_HAS_IT); /* as glibc's writer after the hand-over: asleep until the unlock ends */
        while (load(&state) == WRITER_HAS_IT) sched_yield();
    }
    return r;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void on_alarm(int sig) {
    (void)sig;
    int e = errno;
    in_handler = 1;
    int s = load(&state);
    bool window = s == WRITER_HAS_IT || s == TAKEN;
    char b[64];
    memset(b, 'h', sizeof b);
    double t0 = now_s();
    ssize_t r = pwrite(fd, b, sizeof b, 8192);
    bool deadlk = r < 0 && errno == EDEADLK;
    long us = (long)((now_s() - t0) * 1e6);
    h_calls++;
    if (window) {
        if (us > w_max_us) w_max_us = us;
        w_calls++, w_calls_round++;
        if (deadlk) w_deadlk++;
        else w_other++;
    } else if (r == (ssize_t)sizeof b) h_ok++;
    else if (deadlk) h_deadlk++;
    else h_other++;
    in_handler = 0;
    errno = e;
}

static void *storer(void *arg) {
    (void)arg;
    storer_tid = gettid();
    for (long i = 0; !stop; i++) {
        map[4096 + i % 100] = 'm';
        storer_in_msync = 1, storer_wrlocks = 0;
        int r = msync(map, FILE_BYTES, MS_SYNC);
        storer_in_msync = 0;
        if (r == 0) t2_msyncs++;
        else t2_fail++;
    }
    return NULL;
}

/* The watchdog's output: the kernel's calls only (no stdio lock, nothing of the library's). */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
    char b[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof b - 1) n = (int)sizeof b - 1;
    if (n > 0) syscall(SYS_write, 1, b, (size_t)n);
}

static int read_proc(const char *path, char *b, size_t cap) {
    int f = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (f < 0) return snprintf(b, cap, "?"), -1;
    ssize_t n = syscall(SYS_read, f, b, cap - 1);
    syscall(SYS_close, f);
    if (n < 0) n = 0;
    b[n] = 0;
    for (ssize_t i = 0; i < n; i++)
        if (b[i] == '\n') b[i] = ' ';
    return (int)n;
}

/* Each thread: who, the kernel's state letter, where it sleeps, its system call. */
static void say_threads(void) {
    int d = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d < 0) return;
    char buf[4096];
    long n;
    while ((n = syscall(SYS_getdents64, d, buf, sizeof buf)) > 0) {
        for (long pos = 0; pos < n;) {
            struct dirent64 *e = (struct dirent64 *)(buf + pos);
            pos += e->d_reclen;
            if (e->d_name[0] == '.') continue;
            pid_t tid = atoi(e->d_name);
            char path[64], st[512], wchan[64], sc[128];
            snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
            read_proc(path, st, sizeof st);
            const char *paren = strrchr(st, ')');
            char letter = paren && paren[1] && paren[2] ? paren[2] : '?';
            snprintf(path, sizeof path, "/proc/self/task/%d/wchan", tid);
            read_proc(path, wchan, sizeof wchan);
            snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
            read_proc(path, sc, sizeof sc);
            char *sp = strchr(sc, ' ');
            if (sp) *sp = 0; /* the call's number ("running": on a CPU) */
            say("  thread %d (%s): state %c, wchan %s, syscall %s\n", tid,
                tid == main_tid ? "main" : tid == storer_tid ? "storer" : tid == watchdog_tid ? "watchdog" : "library",
                letter, wchan, sc);
        }
    }
    syscall(SYS_close, d);
}

/* Fails the program when the main thread makes no progress for WATCHDOG_S seconds, in any state: a window
 * held open (the handler's writes not refused at once), a wait nobody ends, or an exit that does not end.
 * Never joined: it watches the exit too. */
static void *watchdog(void *arg) {
    (void)arg;
    watchdog_tid = gettid();
    long seen = -1;
    double since = now_s();
    for (;;) {
        usleep(100000);
        long p = __atomic_load_n(&progress, __ATOMIC_ACQUIRE);
        if (p != seen) {
            seen = p, since = now_s();
            continue;
        }
        if (now_s() - since <= WATCHDOG_S) continue;
        int s = load(&state);
        say("FAIL: the main thread made no progress in %d s (%s, window state %s): the handler ran %ld times in "
            "all, %ld inside this window (refused with EDEADLK %ld, other %ld, longest %.0f ms); outside a window "
            "%ld done, %ld refused, %ld other; storer msyncs %ld (failed %ld)%s\n",
            WATCHDOG_S, __atomic_load_n(&phase, __ATOMIC_ACQUIRE), state_names[s], h_calls, w_calls_round,
            w_deadlk, w_other, w_max_us / 1000.0, h_ok, h_deadlk, h_other, t2_msyncs, t2_fail,
            s == WRITER_HAS_IT || s == TAKEN
                ? " -- a handler's write inside the window waits for the lock its own thread holds or hands over, "
                  "and the next signal comes as each call ends"
                : "");
        say_threads();
        _exit(1);
    }
    return NULL;
}

#define CHECK(cond, ...) \
    do { \
        if (!(cond)) { printf("FAIL line %d: ", __LINE__), printf(__VA_ARGS__), printf("\n"); return 1; } \
    } while (0)

int main(int argc, char **argv) {
    if (argc < 2 || (argc > 2 && strcmp(argv[2], "unlock") && strcmp(argv[2], "take")))
        return fprintf(stderr, "usage: mmap_signal_unlock FILE [unlock|take]\n"), 2;
    take_window = argc > 2 && !strcmp(argv[2], "take");
    const char *window_name = take_window ? "try of the lock" : "unlock";
    real_unlock = (int (*)(pthread_rwlock_t *))dlsym(RTLD_NEXT, "pthread_rwlock_unlock");
    real_wrlock = (int (*)(pthread_rwlock_t *))dlsym(RTLD_NEXT, "pthread_rwlock_wrlock");
    real_tryrdlock = (int (*)(pthread_rwlock_t *))dlsym(RTLD_NEXT, "pthread_rwlock_tryrdlock");
    CHECK(real_unlock && real_wrlock && real_tryrdlock, "dlsym: %s", dlerror());
    if (uffd_wp_shmem_missing()) return printf("SKIP: no userfaultfd write-protection for shared memory here\n"), 77;
    main_tid = gettid();
    fd = open(argv[1], O_RDWR);
    CHECK(fd >= 0, "open %s: %s", argv[1], strerror(errno));
    map = mmap(NULL, FILE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(map != MAP_FAILED, "mmap %s: %s", argv[1], strerror(errno));
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    sigset_t ss;
    sigemptyset(&ss);
    sigaddset(&ss, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &ss, NULL);
    pthread_t t, w;
    CHECK(pthread_create(&t, NULL, storer, NULL) == 0, "pthread_create");
    CHECK(pthread_create(&w, NULL, watchdog, NULL) == 0, "pthread_create");
    pthread_detach(w);
    step("writes");
    pthread_sigmask(SIG_UNBLOCK, &ss, NULL); /* the other threads keep it blocked: every SIGALRM lands here */
    struct itimerval it = {{0, 200}, {0, 200}};
    setitimer(ITIMER_REAL, &it, NULL);
    char b[64];
    memset(b, 'w', sizeof b);
    long writes = 0, done = 0;
    int rounds = 0;
    double t0 = now_s();
    while (rounds < ROUNDS && now_s() - t0 < ARM_LIMIT_S) {
        if (load(&state) == IDLE && __atomic_load_n(&the_lock, __ATOMIC_ACQUIRE) && writes % 64 == 0) {
            w_calls_round = 0;
            store(&state, ARMED);
        }
        writes++;
        if (pwrite(fd, b, sizeof b, 0) == (ssize_t)sizeof b) done++;
        step(NULL);
        if (load(&state) == DONE) rounds++, store(&state, IDLE);
    }
    int armed_state = load(&state);
    store(&state, IDLE);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    stop = 1;
    step("joining the storer");
    pthread_join(t, NULL);
    step("checks");
    printf("window %s: closed %d of %d (last state %s); handler calls %ld: inside a window %ld (refused EDEADLK "
           "%ld, other %ld, longest %.1f ms), outside %ld done, %ld refused, %ld other failures; main writes %ld of "
           "%ld; storer msyncs %ld (failed %ld)\n",
           window_name, rounds, ROUNDS, state_names[armed_state], h_calls, w_calls, w_deadlk, w_other,
           w_max_us / 1000.0, h_ok, h_deadlk, h_other, done, writes, t2_msyncs, t2_fail);
    CHECK(rounds == ROUNDS, "the window was opened %d times in %d s, not %d: the library no longer takes "
          "u->writes as this test expects (first wrlock of an msync, read-unlocked by a write)", rounds, ARM_LIMIT_S,
          ROUNDS);
    CHECK(w_other == 0, "a handler's write inside its thread's %s was not refused with EDEADLK", window_name);
    CHECK(w_max_us < HANDLER_WAIT_MS * 1000L, "a handler's write inside its thread's %s took %.0f ms: it waited "
          "for the lock its own thread holds (a nested write's try gives up after 500 ms), not refused at once",
          window_name, w_max_us / 1000.0);
    CHECK(!h_other, "a handler's write failed otherwise than with EDEADLK");
    CHECK(done == writes, "the main thread's pwrites failed");
    CHECK(!t2_fail, "the storer's msync failed");
    CHECK(msync(map, FILE_BYTES, MS_SYNC) == 0, "the last msync: %s", strerror(errno));
    char c;
    CHECK(pread(fd, &c, 1, 0) == 1 && c == 'w', "file A's byte 0 is not 'w'");
    printf("ok: %d windows, every handler write inside its thread's %s refused at once with EDEADLK\n", ROUNDS,
           window_name);
    fflush(stdout);
    step("exit"); /* the watchdog watches the library's exit too */
    return 0;
}
