/* The route lock's waits (route_lock.h says the protocol). */
#include "upath/route_lock.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The futex call, errno kept: syscall() sets it on -1 (EAGAIN: seq moved before the sleep; EINTR: a signal),
 * and the routed call that waited returns to the program, which must find errno as it left it (review 21,
 * finding 4: glibc's rwlock never touched it). */
static void futex(uint32_t *w, int op, uint32_t val) {
    int saved = errno;
    (void)syscall(SYS_futex, w, op, val, NULL, NULL, 0);
    errno = saved;
}

static void futex_wait(uint32_t *w, uint32_t seen) { futex(w, FUTEX_WAIT_PRIVATE, seen); }

void up_route_lock_wake(struct up_route_lock *l) {
    __atomic_add_fetch(&l->seq, 1, __ATOMIC_SEQ_CST);
    futex(&l->seq, FUTEX_WAKE_PRIVATE, INT_MAX);
}

static bool try_write(struct up_route_lock *l) {
    uint32_t v = 0;
    return __atomic_compare_exchange_n(&l->word, &v, UP_RL_WRITER, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static bool try_read(struct up_route_lock *l) {
    uint32_t v = __atomic_load_n(&l->word, __ATOMIC_RELAXED);
    while (up_route_lock_readable(l, v))
        if (__atomic_compare_exchange_n(&l->word, &v, v + UP_RL_READER, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            return true;
    return false;
}

/* Until try() succeeds: counted as a sleeper, seq read, then tried again before each sleep (the rule). */
static void wait_until(struct up_route_lock *l, bool (*try)(struct up_route_lock *)) {
    while (!try(l)) {
        __atomic_add_fetch(&l->sleepers, 1, __ATOMIC_SEQ_CST);
        uint32_t seen = __atomic_load_n(&l->seq, __ATOMIC_SEQ_CST);
        bool got = try(l);
        if (!got) futex_wait(&l->seq, seen);
        __atomic_sub_fetch(&l->sleepers, 1, __ATOMIC_SEQ_CST);
        if (got) return;
    }
}

void up_route_lock_wait_write(struct up_route_lock *l) {
    __atomic_add_fetch(&l->writers_waiting, 1, __ATOMIC_SEQ_CST);
    wait_until(l, try_write);
    __atomic_sub_fetch(&l->writers_waiting, 1, __ATOMIC_SEQ_CST);
}

void up_route_lock_wait_read(struct up_route_lock *l) { wait_until(l, try_read); }
