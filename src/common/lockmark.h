/* Which library mutexes this thread holds, is taking or is letting go of -- the one answer to "may a signal
 * handler on this thread wait for mutex m?" (session 15; stop17's "wrong depth": five per-site marks and a
 * timed guess on glibc's owner field answered it before, each for a few sites).
 *
 * A normal mutex waits for its own thread for ever: a handler that interrupted its thread inside the library
 * holding m (or inside glibc's lock or unlock of m, where glibc's owner field does not name the thread yet,
 * or any more) must not ask for m. So every library mutex that a handler's call can reach is taken and let
 * go of through dk_mu_lock / dk_mu_unlock (trylock, bulk variants below), which record m in a small
 * thread-local set *before* the pthread call and clear it *after* it returns: the window inside glibc is
 * covered exactly. dk_mu_mine(m) then says whether this thread is in any of those states for m;
 * dk_mu_any_mine() whether it is for any mutex. A handler path that finds its mutex "mine" takes its
 * fallback (the kernel's call, counted; or nothing published, counted) -- it never waits.
 *
 * Async-signal-safe and nested-safe without atomics: the set is the thread's own, and a handler that runs in
 * the middle of an update leaves it as it found it (it lets go of what it took before it returns: a
 * handler that returns holding a library mutex is a deadlock anyway). A mark goes into the first free slot:
 * a handler that interrupted the search between "slot i is free" and the store uses slot i itself and frees
 * it again before the interrupted store fills it; the count of marks past the first slot (n) is moved before
 * such a slot is filled and after it is emptied (a handler in between finds it one too high: it only looks
 * further). Cost: the first slot tested and set inline (3 instructions on each side of the pthread call);
 * nested marks out of line.
 *
 * More than DK_MU_SLOTS marks at once (never seen: the deepest nesting is 5) spill into a counter, and every
 * mutex then counts as mine (the fallback: no wait). A thread that holds many mutexes of one kind at once
 * -- up_file_lock_all's every file, across fork, exec and exit -- takes them with dk_mu_lock_bulk: marked in
 * a slot while glibc's lock runs, then counted (bulk) and told by glibc's owner field, which is exact for a
 * mutex held and not inside its lock or unlock. */
#ifndef DK_COMMON_LOCKMARK_H
#define DK_COMMON_LOCKMARK_H

#include <pthread.h>
#include <stdbool.h>

#include "common/stats.h"

#define DK_MU_SLOTS 16

struct dk_mu_marks {
    unsigned n;                         /* marks in slots 1.. (dk_mu_mine's quick "none" past slot 0) */
    unsigned spilled;                   /* marks that found no free slot */
    unsigned bulk;                      /* mutexes held through dk_mu_lock_bulk */
    int tid;                            /* this thread's id for the bulk test (0: not read yet; a fork child
                                           forgets it: dk_mu_bulk_forget) */
    pthread_mutex_t *slot[DK_MU_SLOTS]; /* NULL: free */
};
extern __thread struct dk_mu_marks dk_mu_self __attribute__((tls_model("initial-exec")));

#define DK_MU_FENCE() __atomic_signal_fence(__ATOMIC_SEQ_CST)

void dk_mu_mark_slow(pthread_mutex_t *m);
void dk_mu_unmark_slow(pthread_mutex_t *m);

/* Marks m: from now until dk_mu_unmark(m), dk_mu_mine(m) is true on this thread. The first slot inline (a
 * thread holding no other library mutex: the served 4 KiB calls), the others out of line. */
static inline void dk_mu_mark(pthread_mutex_t *m) {
    struct dk_mu_marks *t = &dk_mu_self;
    if (__builtin_expect(__atomic_load_n(&t->slot[0], __ATOMIC_RELAXED) == NULL, 1)) {
        __atomic_store_n(&t->slot[0], m, __ATOMIC_RELAXED);
    } else {
        dk_mu_mark_slow(m);
    }
    DK_MU_FENCE();
}
static inline void dk_mu_unmark(pthread_mutex_t *m) {
    struct dk_mu_marks *t = &dk_mu_self;
    DK_MU_FENCE();
    if (__builtin_expect(__atomic_load_n(&t->slot[0], __ATOMIC_RELAXED) == m, 1)) {
        __atomic_store_n(&t->slot[0], NULL, __ATOMIC_RELAXED);
    } else {
        dk_mu_unmark_slow(m);
    }
}

static inline void dk_mu_lock(pthread_mutex_t *m) {
    dk_mu_mark(m);
    pthread_mutex_lock(m);
}
static inline void dk_mu_unlock(pthread_mutex_t *m) {
    pthread_mutex_unlock(m);
    dk_mu_unmark(m);
}
/* pthread_mutex_trylock's answer; marked only while it holds m. Normal mutexes: a robust one's EOWNERDEAD
 * (held) would be unmarked -- the in-flight registry's slot mutexes are held for a thread's life and not marked. */
static inline int dk_mu_trylock(pthread_mutex_t *m) {
    dk_mu_mark(m);
    int rc = pthread_mutex_trylock(m);
    if (rc) dk_mu_unmark(m);
    return rc;
}

/* For a thread taking many mutexes at once (up_file_lock_all): a slot during glibc's lock and unlock, the
 * bulk count (and glibc's owner field) in between. */
void dk_mu_lock_bulk(pthread_mutex_t *m);
void dk_mu_unlock_bulk(pthread_mutex_t *m);

/* This thread holds m, or is inside dk_mu_lock/unlock(m) -- glibc's lock or unlock included. Async-signal-safe. */
bool dk_mu_mine_slow(const pthread_mutex_t *m);
static inline bool dk_mu_mine(const pthread_mutex_t *m) {
    const struct dk_mu_marks *t = &dk_mu_self;
    DK_MU_FENCE();
    if (__atomic_load_n(&t->slot[0], __ATOMIC_RELAXED) == m) return true;
    if (__builtin_expect((__atomic_load_n(&t->n, __ATOMIC_RELAXED) | t->spilled | t->bulk) == 0, 1)) return false;
    return dk_mu_mine_slow(m);
}
/* A signal handler's refusal: true when this thread holds m (or is taking or letting go of it), counted
 * (mu_mine_skips) -- the caller then takes its fallback instead of waiting for its own thread. */
static inline bool dk_mu_refuse(const pthread_mutex_t *m) {
    if (__builtin_expect(!dk_mu_mine(m), 1)) return false;
    dk_count(DK_C_mu_mine_skips, 1);
    return true;
}
/* This thread is inside some library mutex (any of those states). Async-signal-safe. */
bool dk_mu_any_mine(void);

/* A mutex made new in a fork child (pthread_mutex_init over a copy that may have been held): the forking
 * thread's mark of it goes too. */
void dk_mu_reinit(pthread_mutex_t *m);
/* The same for every mutex this thread held through dk_mu_lock_bulk (each made new by the caller). */
void dk_mu_bulk_forget(void);

#endif
