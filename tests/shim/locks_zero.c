/* Description: dk_locks_zero_ready (common/lockzero.h) -- file entries (upath/file.c) skip their mutex and
 * rwlock init when the libc's default locks are zero bytes, as glibc's are. Checks that (1) on glibc the
 * answer is yes (a libc change that turns the shortcut off shows here, not as ~100 instructions per file in a
 * benchmark), and (2) zero bytes are working default locks: a calloc'd mutex and rwlock exclude each other
 * across threads (counts exact under contention), and trylock, tryrdlock and trywrlock answer EBUSY while
 * held. Exit 0 pass, 1 fail, 77 skip (a libc other than glibc whose default locks are not zeroes). */
#include <pthread.h>

#include "common/lockzero.h"
#include "shim_test.h"

#define THREADS 4
#define ROUNDS 200000

struct zeroed { /* as a file entry's locks: calloc'd, never initialised */
    pthread_mutex_t mu;
    pthread_rwlock_t rw;
    unsigned long mu_count, rw_count;
};

static void *worker(void *arg) {
    struct zeroed *z = arg;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&z->mu);
        unsigned long c = z->mu_count; /* a split increment: a lock that does not exclude loses counts */
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        z->mu_count = c + 1;
        pthread_mutex_unlock(&z->mu);
        pthread_rwlock_wrlock(&z->rw);
        c = z->rw_count;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        z->rw_count = c + 1;
        pthread_rwlock_unlock(&z->rw);
        pthread_rwlock_rdlock(&z->rw);
        pthread_rwlock_unlock(&z->rw);
    }
    return NULL;
}

int main(void) {
#ifdef __GLIBC__
    CHECK(dk_locks_zero_ready(), "glibc's default mutex/rwlock are not zero bytes here: file entries pay their init");
#endif
    if (!dk_locks_zero_ready()) SKIP("this libc's default locks are not zero bytes (the init calls stay)");
    CHECK(dk_locks_zero_ready(), "the answer changed between calls");
    struct zeroed *z = calloc(1, sizeof *z);
    CHECK(z, "calloc");
    CHECK(pthread_mutex_lock(&z->mu) == 0, "lock of a zeroed mutex");
    CHECK(pthread_mutex_trylock(&z->mu) == EBUSY, "trylock of a held zeroed mutex is not EBUSY");
    CHECK(pthread_mutex_unlock(&z->mu) == 0, "unlock");
    CHECK(pthread_rwlock_rdlock(&z->rw) == 0, "rdlock of a zeroed rwlock");
    CHECK(pthread_rwlock_tryrdlock(&z->rw) == 0, "a second reader");
    CHECK(pthread_rwlock_trywrlock(&z->rw) == EBUSY, "trywrlock with readers in is not EBUSY");
    CHECK(pthread_rwlock_unlock(&z->rw) == 0 && pthread_rwlock_unlock(&z->rw) == 0, "unlock readers");
    CHECK(pthread_rwlock_wrlock(&z->rw) == 0, "wrlock");
    CHECK(pthread_rwlock_tryrdlock(&z->rw) == EBUSY, "tryrdlock while written is not EBUSY");
    CHECK(pthread_rwlock_unlock(&z->rw) == 0, "unlock writer");
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) CHECK(pthread_create(&t[i], NULL, worker, z) == 0, "pthread_create");
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    CHECK(z->mu_count == (unsigned long)THREADS * ROUNDS, "mutex count %lu, want %lu", z->mu_count,
          (unsigned long)THREADS * ROUNDS);
    CHECK(z->rw_count == (unsigned long)THREADS * ROUNDS, "rwlock count %lu, want %lu", z->rw_count,
          (unsigned long)THREADS * ROUNDS);
    free(z);
    printf("PASS: zeroed default locks are ready and exclude (%d threads x %d rounds)\n", THREADS, ROUNDS);
    return 0;
}
