/* A sequence count for data written under a mutex and read without it (a seqlock's reader side: the mutex
 * keeps writers one at a time). The count is odd while the data is being written. A reader takes what it read
 * only when the count was even and the same before and after its reads; every read of the data must be a
 * relaxed atomic load (a racing writer's bytes may be read, and are thrown away). Async-signal-safe: a signal
 * handler that interrupted the writer finds the count odd and takes its slow path.
 * Used by upath/managed.c (the directory descriptors' verdicts) and upath/recover_scope.c (the last directory
 * walked). */
#ifndef DK_COMMON_SEQLOCK_H
#define DK_COMMON_SEQLOCK_H

#include <stdbool.h>

/* The writer, holding the mutex: the count odd before the first store of the data. */
static inline void dk_seq_write_begin(unsigned *seq) {
    __atomic_store_n(seq, __atomic_load_n(seq, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE); /* the odd count before any of the data's stores */
}
/* ... and even again after the last. */
static inline void dk_seq_write_end(unsigned *seq) {
    __atomic_store_n(seq, __atomic_load_n(seq, __ATOMIC_RELAXED) + 1, __ATOMIC_RELEASE);
}

/* The reader, before its loads of the data: the count to hand to dk_seq_read_retry. */
static inline unsigned dk_seq_read_begin(const unsigned *seq) { return __atomic_load_n(seq, __ATOMIC_ACQUIRE); }
/* ... and after them: true when they may be torn (a write was under way or came between): throw them away. */
static inline bool dk_seq_read_retry(const unsigned *seq, unsigned begun) {
    __atomic_thread_fence(__ATOMIC_ACQUIRE); /* the data's loads before the second load of the count */
    return (begun & 1) || __atomic_load_n(seq, __ATOMIC_RELAXED) != begun;
}

/* A fork child whose parent had a write under way in another thread (the mutex made new): the count even
 * again. The caller first makes the half-written data unusable. */
static inline void dk_seq_after_fork(unsigned *seq) {
    unsigned s = __atomic_load_n(seq, __ATOMIC_RELAXED);
    if (s & 1) __atomic_store_n(seq, s + 1, __ATOMIC_RELEASE);
}

#endif
