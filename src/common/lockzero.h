/* Whether a lock whose bytes are all zero is a lock made ready by pthread_mutex_init / pthread_rwlock_init
 * with default (NULL) attributes. On glibc it is (PTHREAD_MUTEX_INITIALIZER and PTHREAD_RWLOCK_INITIALIZER
 * are zeroes: a normal, process-private mutex; a reader-preferring, process-private rwlock), so an entry
 * made by calloc or memset needs no init call: ~100 instructions per file entry (tar xf: 763 of them).
 * Only for default attributes: a non-default kind (PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP), a
 * process-shared or robust attribute is not zero and still needs its init. Checked at run time once (a C11
 * static assertion cannot read an initialiser's bytes), against both the initialisers and what the init
 * calls write: a libc where either is not zero gets the init calls. */
#ifndef DK_COMMON_LOCKZERO_H
#define DK_COMMON_LOCKZERO_H

#include <stdbool.h>

extern int dk_locks_zero_answer; /* 0: not asked yet, 1: yes, -1: no */
bool dk_locks_zero_ask(void);

/* True: a zeroed pthread_mutex_t or pthread_rwlock_t of default attributes needs no init. Thread-safe (racing
 * first callers compute the same answer); inline: a load and a branch once answered (per file entry). */
static inline bool dk_locks_zero_ready(void) {
    int a = __atomic_load_n(&dk_locks_zero_answer, __ATOMIC_RELAXED);
    return __builtin_expect(a != 0, 1) ? a > 0 : dk_locks_zero_ask();
}

#endif
