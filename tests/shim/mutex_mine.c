/* dk_mu_mine (common/lockmark.h): "this thread holds, is taking or is letting go of library mutex m" -- the
 * question a signal handler's exit, exec or publish point asks before it takes m. Session 14 answered it
 * from glibc's owner field, which glibc stores a few instructions after its lock instruction and clears a
 * few before its unlock: a handler that landed in either window saw no owner and waited for its own thread
 * for ever (shim_exit_in_handler_close_loop_default_hugetmpfs, ~1 run in 50), and a 1 s timed guess papered
 * over it (review 14, finding 6). The states, made here by hand and by signals:
 *   free; held; a handler interrupting this thread *inside* glibc's lock of m (blocked on another thread's
 *   hold: mine) and after the unlock instruction, before the mark is cleared (mine); another thread's hold
 *   (not mine); a failed trylock (not mine after); 20 at once (more than the slots: spilled, all mine until
 *   let go); bulk holds (up_file_lock_all's: glibc's owner); and a handler flood taking and letting go of
 *   another mutex while this thread marks and unmarks its own (nested: no mark lost or left behind).
 * Exit 0 pass, 1 fail. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/lockmark.h"
#include "wait_in_syscall.h"

#define CHECK(c, ...)                                                     \
    do {                                                                  \
        if (!(c)) {                                                       \
            fprintf(stderr, "FAIL: %s:%d: ", __FILE__, __LINE__);         \
            fprintf(stderr, __VA_ARGS__);                                 \
            fprintf(stderr, "\n");                                        \
            exit(1);                                                      \
        }                                                                 \
    } while (0)

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER, m2 = PTHREAD_MUTEX_INITIALIZER;
static volatile int phase; /* the other thread: 1 holds m; main: 2 let go */
static volatile sig_atomic_t in_handler_mine = -1, handler_runs, handler_bad;
static pid_t main_tid;

/* Holds m until main, blocked inside glibc's lock of it, has been signalled and its handler has looked. */
static void *holder(void *arg) {
    (void)arg;
    dk_mu_lock(&m);
    __atomic_store_n(&phase, 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&phase, __ATOMIC_ACQUIRE) != 2) usleep(100);
    if (!wait_in_syscall(main_tid, SYS_futex, 20000)) { /* no fixed sleep: main waits in the futex now */
        fprintf(stderr, "FAIL: main did not block in its lock of m within 20 s\n");
        exit(1);
    }
    syscall(SYS_tgkill, getpid(), main_tid, SIGUSR1);
    for (int ms = 0; in_handler_mine == -1 && ms < 20000; ms++) usleep(1000);
    dk_mu_unlock(&m);
    return NULL;
}

static void on_usr1(int sig) {
    (void)sig;
    in_handler_mine = dk_mu_mine(&m);
}

/* The flood: takes and lets go of m2 while the main thread marks m (anywhere in its update). */
static void on_alrm(int sig) {
    (void)sig;
    handler_runs++;
    if (dk_mu_mine(&m2)) handler_bad = 1;
    dk_mu_lock(&m2);
    if (!dk_mu_mine(&m2)) handler_bad = 2;
    dk_mu_unlock(&m2);
    if (dk_mu_mine(&m2)) handler_bad = 3;
}

int main(void) {
    CHECK(!dk_mu_mine(&m) && !dk_mu_any_mine(), "a free mutex is not mine");
    dk_mu_lock(&m);
    CHECK(dk_mu_mine(&m) && dk_mu_any_mine(), "a mutex this thread holds is mine");
    CHECK(!dk_mu_mine(&m2), "another mutex is not");
    /* dk_mu_unlock's order: glibc's unlock first, the mark after -- a handler in between finds it mine */
    pthread_mutex_unlock(&m);
    CHECK(dk_mu_mine(&m), "after glibc's unlock, before the mark is cleared: mine");
    dk_mu_unmark(&m);
    CHECK(!dk_mu_mine(&m) && !dk_mu_any_mine(), "free again");

    /* Inside glibc's lock: blocked on another thread's hold; a signal to this thread looks. */
    main_tid = gettid();
    pthread_t t;
    CHECK(pthread_create(&t, NULL, holder, NULL) == 0, "pthread_create");
    while (__atomic_load_n(&phase, __ATOMIC_ACQUIRE) != 1) usleep(100);
    CHECK(!dk_mu_mine(&m), "held by another thread: not mine");
    CHECK(dk_mu_trylock(&m) != 0 && !dk_mu_mine(&m), "a failed trylock leaves no mark");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    __atomic_store_n(&phase, 2, __ATOMIC_RELEASE);
    dk_mu_lock(&m); /* blocks until the holder's signal to this thread has landed inside glibc's lock */
    CHECK(in_handler_mine == 1, "a handler that interrupted this thread inside glibc's lock of m: mine (%d)",
          (int)in_handler_mine);
    CHECK(dk_mu_mine(&m), "held after the lock");
    dk_mu_unlock(&m);
    pthread_join(t, NULL);
    CHECK(!dk_mu_any_mine(), "nothing marked");

    /* More than the slots: every mark past them spills, and everything counts as mine until they are let go. */
    enum { MANY = 20 };
    static pthread_mutex_t many[MANY];
    for (int i = 0; i < MANY; i++) pthread_mutex_init(&many[i], NULL);
    for (int i = 0; i < MANY; i++) dk_mu_lock(&many[i]);
    for (int i = 0; i < MANY; i++) CHECK(dk_mu_mine(&many[i]), "held (%d of %d) is mine", i, MANY);
    CHECK(dk_mu_mine(&m2), "spilled: every mutex counts as mine (no wait)");
    for (int i = MANY; i-- > 0;) dk_mu_unlock(&many[i]);
    CHECK(!dk_mu_any_mine() && !dk_mu_mine(&m2) && !dk_mu_mine(&many[0]), "all let go: nothing mine");
    /* Bulk holds (up_file_lock_all): exact by glibc's owner, in any order of release. */
    for (int i = 0; i < MANY; i++) dk_mu_lock_bulk(&many[i]);
    for (int i = 0; i < MANY; i++) CHECK(dk_mu_mine(&many[i]), "bulk held (%d) is mine", i);
    CHECK(!dk_mu_mine(&m2) && dk_mu_any_mine(), "a mutex not held is not mine while bulk holds last");
    for (int i = 0; i < MANY; i++) dk_mu_unlock_bulk(&many[i]);
    CHECK(!dk_mu_any_mine() && !dk_mu_mine(&many[3]), "bulk let go: nothing mine");

    /* Nested: a flood of handlers taking m2 while this thread marks and unmarks m (and sometimes m2 too). */
    sa.sa_handler = on_alrm;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 50}, {0, 50}};
    setitimer(ITIMER_REAL, &it, NULL);
    struct timespec t0, tn;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned long loops = 0;
    do {
        for (int k = 0; k < 1000; k++, loops++) {
            dk_mu_lock(&m);
            if (!dk_mu_mine(&m)) CHECK(0, "lost the mark of m under the flood (loop %lu)", loops);
            if (k & 1) {
                CHECK(dk_mu_trylock(&many[k % MANY]) == 0, "trylock");
                dk_mu_unlock(&many[k % MANY]);
            }
            dk_mu_unlock(&m);
            if (dk_mu_mine(&m)) CHECK(0, "a mark of m left behind under the flood (loop %lu)", loops);
        }
        clock_gettime(CLOCK_MONOTONIC, &tn);
    } while (tn.tv_sec - t0.tv_sec < 2);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    CHECK(!handler_bad, "the handler's own marks (case %d)", (int)handler_bad);
    CHECK(!dk_mu_any_mine(), "nothing marked after the flood");
    CHECK(handler_runs > 100, "the flood ran (%d handlers)", (int)handler_runs);
    printf("ok: free, held, inside glibc's lock (a signal), after the unlock, another's hold, trylock, %d spilled, "
           "bulk, %lu loops under %d nested handlers\n", MANY, loops, (int)handler_runs);
    return 0;
}
