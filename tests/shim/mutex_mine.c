/* up_mutex_mine in glibc's windows (session 14). A signal handler's _exit/exit/exec asks whether its
 * thread's interrupted call holds a mutex (a file's, the file table's) by glibc's record of the owner -- which
 * glibc stores a few instructions after its lock instruction and clears a few before its unlock
 * instruction. A handler that landed in either window saw no owner and waited for its own thread for ever
 * (shim_exit_in_handler_close_loop_default_hugetmpfs: up_close's pthread_mutex_unlock(&f->mu) interrupted
 * after the owner's clear; ~1 run in 50). The states are made here by hand, deterministically:
 *   free; held by this thread; this thread's window (locked, no owner: must be "mine"); another thread's
 *   hold (not mine); another thread in its window for 5 ms, then recording itself (not mine); and no exit
 *   in progress (never mine). Exit 0 pass, 1 fail. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "upath/internal.h"

#define CHECK(c, ...)                                                     \
    do {                                                                  \
        if (!(c)) {                                                       \
            fprintf(stderr, "FAIL: %s:%d: ", __FILE__, __LINE__);         \
            fprintf(stderr, __VA_ARGS__);                                 \
            fprintf(stderr, "\n");                                        \
            exit(1);                                                      \
        }                                                                 \
    } while (0)

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile int phase; /* main: 2 enter the window, 4 let go; the other thread: 1 holds m, 3 in its window */

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Takes m, then (phase 2) sits in the "locked, no owner" window for 5 ms before recording itself. */
static void *other(void *arg) {
    (void)arg;
    pthread_mutex_lock(&m);
    __atomic_store_n(&phase, 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&phase, __ATOMIC_ACQUIRE) != 2) usleep(100);
    pid_t me = m.__data.__owner;
    m.__data.__owner = 0; /* as inside glibc's lock: locked, owner not yet stored */
    __atomic_store_n(&phase, 3, __ATOMIC_RELEASE);
    usleep(5000);
    __atomic_store_n(&m.__data.__owner, me, __ATOMIC_RELEASE);
    while (__atomic_load_n(&phase, __ATOMIC_ACQUIRE) != 4) usleep(100);
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(void) {
    pid_t me = (pid_t)syscall(SYS_gettid);
    up_exit_tid = me;
    CHECK(!up_mutex_mine(&m), "a free mutex is not mine");
    pthread_mutex_lock(&m);
    CHECK(up_mutex_mine(&m), "a mutex this thread holds is mine");
    /* glibc's unlock window: the owner cleared, the lock word not yet */
    m.__data.__owner = 0;
    double t0 = now_ms();
    CHECK(up_mutex_mine(&m), "locked by this thread with no owner recorded (glibc's window) is mine");
    double waited = now_ms() - t0;
    m.__data.__owner = me;
    pthread_mutex_unlock(&m);
    CHECK(!up_mutex_mine(&m), "free again");
    up_exit_tid = 0;
    pthread_mutex_lock(&m);
    CHECK(!up_mutex_mine(&m), "outside an exit nothing is mine");
    pthread_mutex_unlock(&m);
    up_exit_tid = me;

    pthread_t t;
    CHECK(pthread_create(&t, NULL, other, NULL) == 0, "pthread_create");
    while (__atomic_load_n(&phase, __ATOMIC_ACQUIRE) != 1) usleep(100);
    CHECK(!up_mutex_mine(&m), "held by another thread (owner recorded): not mine");
    __atomic_store_n(&phase, 2, __ATOMIC_RELEASE);
    while (__atomic_load_n(&phase, __ATOMIC_ACQUIRE) != 3) usleep(10);
    /* (descheduled here for more than its 5 ms, the owner is back already: not mine either) */
    CHECK(!up_mutex_mine(&m), "another thread in its window, recording itself 5 ms later: not mine");
    __atomic_store_n(&phase, 4, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    printf("ok: free, held, own window (answered after %.1f ms), another's hold and another's window\n", waited);
    return 0;
}
