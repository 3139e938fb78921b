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
 *   mmap_signal_unlock FILE   FILE: 16 KiB, under --atomic-mmap on XFS (or ext4).
 * Exit 0 pass, 1 fail (also when no window could be opened: the library no longer takes the locks this way),
 * 77 skip (no userfaultfd write-protection for shared memory). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "uffd_probe.h"

#define FILE_BYTES 16384
#define ROUNDS 3
#define WINDOW_CALLS 20  /* handler calls inside each window */
#define WATCHDOG_S 20    /* a window open this long: the main thread does not run any more */
#define ARM_LIMIT_S 60   /* no window opened (or not ROUNDS of them) in this long: the test cannot work */

enum { IDLE, ARMED, UNLOCKED, WRITER_HAS_IT, DONE };
static int state; /* atomic */
static pthread_rwlock_t *the_lock; /* atomic: u->writes, as the storer's msync first wrlocks it */
static pid_t main_tid, storer_tid;
static int (*real_unlock)(pthread_rwlock_t *), (*real_wrlock)(pthread_rwlock_t *);
static volatile sig_atomic_t in_handler;
static int storer_in_msync, storer_wrlocks; /* the storer's own */

static int fd;
static char *map;
static volatile int stop;
/* the handler's results (only the handler writes them) */
static volatile long h_calls, h_ok, h_deadlk, h_other, w_calls, w_deadlk, w_other;
static volatile long w_calls_round; /* inside the open window */

static int load(int *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static void store(int *p, int v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

int pthread_rwlock_unlock(pthread_rwlock_t *l) {
    if (load(&state) != ARMED || l != __atomic_load_n(&the_lock, __ATOMIC_ACQUIRE) || in_handler ||
        gettid() != main_tid || l->__data.__cur_writer == main_tid)
        return real_unlock(l);
    store(&state, UNLOCKED);
    int r = real_unlock(l);
    while (load(&state) != WRITER_HAS_IT) sched_yield(); /* the storer's next msync takes it */
    while (w_calls_round < WINDOW_CALLS) {} /* the handler, WINDOW_CALLS times: the timer's signals land here */
    store(&state, DONE);
    return r;
}

int pthread_rwlock_wrlock(pthread_rwlock_t *l) {
    if (!storer_tid || gettid() != storer_tid) return real_wrlock(l);
    if (storer_in_msync && storer_wrlocks++ == 0 && !__atomic_load_n(&the_lock, __ATOMIC_ACQUIRE))
        __atomic_store_n(&the_lock, l, __ATOMIC_RELEASE);
    int r = real_wrlock(l);
    if (l == __atomic_load_n(&the_lock, __ATOMIC_ACQUIRE) && load(&state) == UNLOCKED) {
        store(&state, WRITER_HAS_IT); /* as glibc's writer after the hand-over: asleep until the unlock ends */
        while (load(&state) == WRITER_HAS_IT) sched_yield();
    }
    return r;
}

static void on_alarm(int sig) {
    (void)sig;
    int e = errno;
    in_handler = 1;
    bool window = load(&state) == WRITER_HAS_IT;
    char b[64];
    memset(b, 'h', sizeof b);
    ssize_t r = pwrite(fd, b, sizeof b, 8192);
    bool deadlk = r < 0 && errno == EDEADLK;
    h_calls++;
    if (window) {
        w_calls++, w_calls_round++;
        if (deadlk) w_deadlk++;
        else w_other++;
    } else if (r == (ssize_t)sizeof b) h_ok++;
    else if (deadlk) h_deadlk++;
    else h_other++;
    in_handler = 0;
    errno = e;
}

static volatile long t2_msyncs, t2_fail;

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

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *watchdog(void *arg) {
    (void)arg;
    double opened = 0;
    while (!stop) {
        usleep(100000);
        if (load(&state) != WRITER_HAS_IT) {
            opened = 0;
            continue;
        }
        if (!opened) opened = now_s();
        if (now_s() - opened > WATCHDOG_S) {
            printf("FAIL: the main thread did not come back to its unlock in %d s: the handler ran %ld times inside "
                   "it, refused with EDEADLK %ld, other %ld (about %.0f ms each) -- it waits for the lock the "
                   "msync was handed, and the next signal comes as each call ends\n",
                   WATCHDOG_S, w_calls_round, w_deadlk, w_other, w_calls_round ? WATCHDOG_S * 1000.0 / w_calls_round : 0);
            fflush(stdout);
            _exit(1);
        }
    }
    return NULL;
}

#define CHECK(cond, ...) \
    do { \
        if (!(cond)) { printf("FAIL line %d: ", __LINE__), printf(__VA_ARGS__), printf("\n"); return 1; } \
    } while (0)

int main(int argc, char **argv) {
    if (argc < 2) return fprintf(stderr, "usage: mmap_signal_unlock FILE\n"), 2;
    real_unlock = (int (*)(pthread_rwlock_t *))dlsym(RTLD_NEXT, "pthread_rwlock_unlock");
    real_wrlock = (int (*)(pthread_rwlock_t *))dlsym(RTLD_NEXT, "pthread_rwlock_wrlock");
    CHECK(real_unlock && real_wrlock, "dlsym: %s", dlerror());
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
        if (load(&state) == DONE) rounds++, store(&state, IDLE);
    }
    int armed_state = load(&state);
    store(&state, IDLE);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    stop = 1;
    pthread_join(t, NULL);
    pthread_join(w, NULL);
    printf("windows closed %d of %d (last state %d); handler calls %ld: inside a window %ld (refused EDEADLK %ld, "
           "other %ld), outside %ld done, %ld refused, %ld other failures; main writes %ld of %ld; storer msyncs "
           "%ld (failed %ld)\n",
           rounds, ROUNDS, armed_state, h_calls, w_calls, w_deadlk, w_other, h_ok, h_deadlk, h_other, done, writes,
           t2_msyncs, t2_fail);
    CHECK(rounds == ROUNDS, "the window was opened %d times in %d s, not %d: the library no longer takes "
          "u->writes as this test expects (first wrlock of an msync, read-unlocked by a write)", rounds, ARM_LIMIT_S,
          ROUNDS);
    CHECK(w_other == 0, "a handler's write inside its thread's unlock was not refused with EDEADLK");
    CHECK(!h_other, "a handler's write failed otherwise than with EDEADLK");
    CHECK(done == writes, "the main thread's pwrites failed");
    CHECK(!t2_fail, "the storer's msync failed");
    CHECK(msync(map, FILE_BYTES, MS_SYNC) == 0, "the last msync: %s", strerror(errno));
    char c;
    CHECK(pread(fd, &c, 1, 0) == 1 && c == 'w', "file A's byte 0 is not 'w'");
    printf("ok: %d windows, every handler write inside its thread's unlock refused at once with EDEADLK\n", ROUNDS);
    return 0;
}
