/* The thread's set of library mutexes it holds or is taking or letting go of (lockmark.h). */
#include "common/lockmark.h"

#include <sys/syscall.h>
#include <unistd.h>

__thread struct dk_mu_marks dk_mu_self __attribute__((tls_model("initial-exec")));

/* The first free slot (slot 0 was taken when dk_mu_mark looked). No free slot: counted as spilled; every mutex
 * is "mine" until the count is back to 0 (no wait, never a wrong "not mine"). */
void dk_mu_mark_slow(pthread_mutex_t *m) {
    struct dk_mu_marks *t = &dk_mu_self;
    if (!__atomic_load_n(&t->slot[0], __ATOMIC_RELAXED)) { /* (defensive: a handler leaves slot 0 as it found it) */
        __atomic_store_n(&t->slot[0], m, __ATOMIC_RELAXED);
        return;
    }
    for (unsigned i = 1; i < DK_MU_SLOTS; i++)
        if (!__atomic_load_n(&t->slot[i], __ATOMIC_RELAXED)) {
            t->n++; /* (a plain add: a handler in between leaves it as it found it) */
            __atomic_store_n(&t->slot[i], m, __ATOMIC_RELAXED);
            return;
        }
    t->spilled++;
}

/* m in another slot than the first; in none: one of the spilled marks (any: they are not told apart) -- or a
 * mutex made new in a fork child (dk_mu_reinit), whose mark is gone already. */
void dk_mu_unmark_slow(pthread_mutex_t *m) {
    struct dk_mu_marks *t = &dk_mu_self;
    for (unsigned i = 1; i < DK_MU_SLOTS; i++)
        if (__atomic_load_n(&t->slot[i], __ATOMIC_RELAXED) == m) {
            __atomic_store_n(&t->slot[i], NULL, __ATOMIC_RELAXED);
            t->n--;
            return;
        }
    if (t->spilled) t->spilled--;
}

void dk_mu_lock_bulk(pthread_mutex_t *m) {
    dk_mu_mark(m);
    pthread_mutex_lock(m);
    dk_mu_self.bulk++; /* before the slot is cleared: a handler in between sees one of them */
    dk_mu_unmark(m);
}

void dk_mu_unlock_bulk(pthread_mutex_t *m) {
    dk_mu_mark(m);
    if (dk_mu_self.bulk) dk_mu_self.bulk--;
    pthread_mutex_unlock(m);
    dk_mu_unmark(m);
}

/* Some mark: the slots; marks spilled: every mutex counts as this thread's; bulk holds: glibc's owner field,
 * exact for a mutex held and not inside its lock or unlock (those are in a slot). */
bool dk_mu_mine_slow(const pthread_mutex_t *m) {
    const struct dk_mu_marks *t = &dk_mu_self;
    for (unsigned i = 0; i < DK_MU_SLOTS; i++)
        if (__atomic_load_n(&t->slot[i], __ATOMIC_RELAXED) == m) return true;
    if (t->spilled) return true;
    if (!t->bulk) return false;
    int tid = __atomic_load_n(&t->tid, __ATOMIC_RELAXED);
    if (!tid) { /* once per thread: up_file_lock_all asks for every file (no system call each) */
        tid = (int)syscall(SYS_gettid);
        __atomic_store_n(&((struct dk_mu_marks *)t)->tid, tid, __ATOMIC_RELAXED);
    }
    return __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) == tid;
}

bool dk_mu_any_mine(void) {
    const struct dk_mu_marks *t = &dk_mu_self;
    DK_MU_FENCE();
    return t->slot[0] || t->n || t->spilled || t->bulk;
}

void dk_mu_reinit(pthread_mutex_t *m) {
    struct dk_mu_marks *t = &dk_mu_self;
    for (unsigned i = 0; i < DK_MU_SLOTS; i++)
        if (t->slot[i] == m) {
            t->slot[i] = NULL;
            if (i) t->n--;
        }
    pthread_mutex_init(m, NULL);
}

void dk_mu_bulk_forget(void) {
    dk_mu_self.bulk = 0;
    dk_mu_self.tid = 0; /* a fork child: another thread id */
}
