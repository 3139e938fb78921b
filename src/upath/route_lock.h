/* The DAXKIT_ATOMIC route's lock (atomic_route.c, up_atomic.rw): readers and writers, writers preferred (an
 * fsync or an append must not starve behind a stream of overwrites from other threads), one locked
 * instruction to take it and one to let it go when nobody waits. It replaces glibc's rwlock
 * (PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP), whose lock pair took ~80 instructions and more locked
 * instructions around every journal write, which takes the lock for writing (session 16).
 *
 * word: the readers inside (RL_READER each) and RL_WRITER while a writer is. writers_waiting: writers that
 * found it taken and have not got it yet; new readers wait while there is one. Whoever waits sleeps on seq
 * (a futex word), counted in sleepers; a release that finds a sleeper bumps seq and wakes them all (waiting
 * is rare -- one writer per file at a time in the programs measured -- and a wake-all keeps the protocol to
 * one rule). The rule: a sleeper counts itself, reads seq, then tries again; a release changes word, then
 * reads sleepers (both sequentially consistent): either the release sees the sleeper (and seq moves: the
 * futex wait returns) or the sleeper's try sees the release.
 * Not recursive for a writer (a thread's second lock waits for ever: the route refuses a signal handler's call
 * on the file its thread is writing first, nested_in_write); a reader may recurse while no writer waits,
 * as with glibc's. Async-signal-safe (atomics and the futex call); not a cancellation point. */
#ifndef DK_UPATH_ROUTE_LOCK_H
#define DK_UPATH_ROUTE_LOCK_H

#include <stdbool.h>
#include <stdint.h>

struct up_route_lock {
    uint32_t word;
    uint32_t writers_waiting;
    uint32_t sleepers;
    uint32_t seq;
};

#define UP_RL_WRITER (1u << 30)
#define UP_RL_READER 1u

void up_route_lock_wait_write(struct up_route_lock *l);
void up_route_lock_wait_read(struct up_route_lock *l);
void up_route_lock_wake(struct up_route_lock *l);

static inline void up_route_wrlock(struct up_route_lock *l) {
    uint32_t v = 0;
    if (__builtin_expect(!__atomic_compare_exchange_n(&l->word, &v, UP_RL_WRITER, false, __ATOMIC_ACQUIRE,
                                                      __ATOMIC_RELAXED), 0))
        up_route_lock_wait_write(l);
}

/* Free for a reader: no writer inside, none waiting. */
static inline bool up_route_lock_readable(const struct up_route_lock *l, uint32_t v) {
    return !(v & UP_RL_WRITER) && !__atomic_load_n(&l->writers_waiting, __ATOMIC_SEQ_CST);
}

static inline void up_route_rdlock(struct up_route_lock *l) {
    uint32_t v = __atomic_load_n(&l->word, __ATOMIC_RELAXED);
    if (__builtin_expect(!up_route_lock_readable(l, v) ||
                             !__atomic_compare_exchange_n(&l->word, &v, v + UP_RL_READER, false, __ATOMIC_ACQUIRE,
                                                          __ATOMIC_RELAXED), 0))
        up_route_lock_wait_read(l);
}

/* A reader or the writer: while a reader holds it no writer is inside, so RL_WRITER says which. */
static inline void up_route_unlock(struct up_route_lock *l) {
    uint32_t held = __atomic_load_n(&l->word, __ATOMIC_RELAXED) & UP_RL_WRITER ? UP_RL_WRITER : UP_RL_READER;
    __atomic_fetch_sub(&l->word, held, __ATOMIC_SEQ_CST);
    if (__builtin_expect(__atomic_load_n(&l->sleepers, __ATOMIC_SEQ_CST) != 0, 0)) up_route_lock_wake(l);
}

#endif
