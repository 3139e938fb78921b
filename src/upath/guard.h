/* The file guard: readers and overwriters of a file's mapping (the data fast paths) against the rare
 * structural changes (truncate, a size shrink, an attach of the atomic route) -- without a locked
 * instruction on the fast path.
 *
 * Why: a locked read-modify-write (any lock's acquire or release) right after a 4 KiB non-temporal copy
 * waits until every write-combining buffer has drained to memory, which cost 150-200 ns per 4 KiB
 * overwrite on this machine -- as much as the copy. The fast path here is an asymmetric lock: a thread
 * announces which file it is in with a plain store into its own reader record, and a writer pays instead:
 * it closes the fast path, runs membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) (a full barrier on every CPU
 * running one of our threads, pairing with the readers' compiler barriers), and waits until no reader
 * record names the file (a writer alone among the threads that hold reader records -- a single-threaded
 * program -- needs neither: a fence and a look at the count of held records). A reader that finds the
 * fast path closed, or is nested inside a guarded section of another file (a signal handler), or runs
 * where membarrier is unavailable, takes f->rw for reading as before; one nested inside a section of the same file is covered by it. A thread's first guarded IO
 * claims its record (from mmap'ed chunks, then pthread_setspecific, which allocates nothing for the
 * library's early key): a signal handler's IO during that claim takes the locked path (guard.c).
 *
 * Lock order is unchanged: f->mu > the guard's write side (which holds f->rw for writing). */
#ifndef DK_UPATH_GUARD_H
#define DK_UPATH_GUARD_H

#include "upath/internal.h"

/* The locks that use this protocol: a record names, per lock kind, the object whose fast read side its
 * thread is in. */
enum up_asym_kind {
    UP_ASYM_FILE,   /* the file guard: a struct up_file (its f->rw, f->guard_closed) */
    UP_ASYM_STRICT, /* strict mode's checkpoint lock: a struct up_strict (st->ck, st->ck_closed; strict.c) */
    UP_ASYM_CALL,   /* a served call on a descriptor: its struct up_fd (calls.h; no lock, a grace period) */
    UP_ASYM_KINDS
};

/* A strict write between its record and the end of its apply, published by its thread (strict.c, "the
 * apply order of overlapping writes"): file (a struct up_file), byte range, record seq (0: none in flight;
 * UINT64_MAX: its seq not known yet). Written by the record's holder only, read by other writers. */
struct up_reader_write {
    const void *file;
    uint64_t off, end, seq;
};

struct up_reader {
    const void *in[UP_ASYM_KINDS]; /* per kind, the object this thread is in a fast section of, or NULL */
    uint32_t used;                 /* claimed by a live thread (or borrowed for one operation) */
    uint32_t id;                   /* unique, never 0: set at the record's first claim (written by its holder) */
    struct up_reader_write w;      /* strict mode's write in flight */
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct up_reader) == 64, "a reader record is one cache line");

extern bool up_guard_asym __attribute__((visibility("hidden")));                /* membarrier works: fast sections are lock-free */
extern __thread struct up_reader *up_reader_self;
/* This thread's record (slow path, first use; claimed with or without membarrier). NULL when memory is out,
 * or in a signal handler that interrupted this thread's own claim. */
struct up_reader *up_reader_claim(void);
/* A free record for one operation of a thread that has none (up_reader_claim gave NULL): taken by a
 * compare-and-swap, given back with up_reader_give_back. Never NULL (the first chunk is static; when every
 * record is taken and no chunk can be mapped, it yields until one is given back). */
struct up_reader *up_reader_borrow(void);
void up_reader_give_back(struct up_reader *r);
/* Another thread holds a reader record (it made a served or named call since it started): the process is
 * multi-threaded as far as calls on descriptors go. */
bool up_guard_others(void);
/* Calls fn on every record in use (claimed or borrowed; chunks are never freed: no lock) until it returns
 * true. A record claimed before the caller's last acquire operation that a claimer's later release ordered
 * is seen (the claim is a compare-and-swap). */
void up_readers_each(bool (*fn)(const struct up_reader *r, void *ctx), void *ctx);

/* How a section was entered (the token to pass to the exit). */
enum up_guard_entry { UP_GUARD_LOCKED = 0, UP_GUARD_FAST = 1, UP_GUARD_NESTED = 2, UP_GUARD_NONE = 3 };

/* The lock-free way into a read-side section on `key` of lock kind `kind`, whose writer sets *closed:
 * UP_GUARD_FAST (entered), UP_GUARD_NESTED (a section on the same key is open on this thread: a signal handler
 * doing IO on the file it interrupted is covered by the outer one, and taking the slow side there would deadlock
 * against a writer waiting for the outer section), or UP_GUARD_NONE (the caller takes the slow side). */
static inline enum up_guard_entry up_asym_read_fast(enum up_asym_kind kind, const void *key, const uint32_t *closed) {
    struct up_reader *r = up_reader_self;
    if (__builtin_expect(r == NULL, 0)) r = up_reader_claim();
    if (__builtin_expect(up_guard_asym && r != NULL, 1)) {
        const void *in = __atomic_load_n(&r->in[kind], __ATOMIC_RELAXED);
        if (in == key) return UP_GUARD_NESTED;
        if (__builtin_expect(in == NULL, 1)) {
            __atomic_store_n(&r->in[kind], key, __ATOMIC_RELAXED);
            __asm__ __volatile__("" ::: "memory"); /* membarrier supplies the CPU barrier (see above) */
            /* acquire: the loads of the section (sizes, the map) stay after this check */
            if (__builtin_expect(!__atomic_load_n(closed, __ATOMIC_ACQUIRE), 1)) return UP_GUARD_FAST;
            __atomic_store_n(&r->in[kind], NULL, __ATOMIC_RELEASE);
        }
    }
    return UP_GUARD_NONE;
}

/* Enters a read-side section (up_asym_read_fast), else by the slow side `rw`. */
static inline enum up_guard_entry up_asym_read_enter(enum up_asym_kind kind, const void *key, const uint32_t *closed,
                                                     pthread_rwlock_t *rw) {
    enum up_guard_entry how = up_asym_read_fast(kind, key, closed);
    if (__builtin_expect(how != UP_GUARD_NONE, 1)) return how;
    pthread_rwlock_rdlock(rw);
    return UP_GUARD_LOCKED;
}

/* As up_asym_read_enter, but the slow side by trylock only: UP_GUARD_NONE (nothing entered; up_asym_read_exit
 * does nothing for it) while the lock is held for writing -- for a caller that must not wait for the writer
 * (strict.c: a signal handler inside its thread's file-table lock, the exit's shutdown holding the lock). */
static inline enum up_guard_entry up_asym_read_try(enum up_asym_kind kind, const void *key, const uint32_t *closed,
                                                   pthread_rwlock_t *rw) {
    enum up_guard_entry how = up_asym_read_fast(kind, key, closed);
    if (how != UP_GUARD_NONE) return how;
    return pthread_rwlock_tryrdlock(rw) == 0 ? UP_GUARD_LOCKED : UP_GUARD_NONE;
}

/* Leaves the section. The sfence orders non-temporal stores made inside before the record is cleared
 * (a release store orders ordinary stores only): a writer must not truncate under them. */
static inline void up_asym_read_exit(enum up_asym_kind kind, pthread_rwlock_t *rw, enum up_guard_entry how) {
    if (__builtin_expect(how == UP_GUARD_FAST, 1)) {
        __builtin_ia32_sfence();
        __atomic_store_n(&up_reader_self->in[kind], NULL, __ATOMIC_RELEASE);
    } else if (how == UP_GUARD_LOCKED) {
        pthread_rwlock_unlock(rw);
    }
}

/* The file guard's read side on f. */
static inline enum up_guard_entry up_guard_read_enter(struct up_file *f) {
    return up_asym_read_enter(UP_ASYM_FILE, f, &f->guard_closed, &f->rw);
}
static inline void up_guard_read_exit(struct up_file *f, enum up_guard_entry how) {
    up_asym_read_exit(UP_ASYM_FILE, &f->rw, how);
}

/* The write side: f->rw for writing, the fast path closed and drained. Caller holds f->mu. */
void up_guard_write_lock(struct up_file *f);
void up_guard_write_unlock(struct up_file *f);

/* The same asymmetric protocol for another lock whose fast readers name `key` in their record's `in[kind]`
 * (strict mode's checkpoint lock): sets *closed, runs the barrier, waits until no record names key.
 * The caller holds that lock's slow side for writing (which excludes the slow readers); it clears *closed
 * (release) before dropping it. Only when up_guard_asym. */
void up_guard_close_and_drain(enum up_asym_kind kind, uint32_t *closed, const void *key);

/* A full barrier on every CPU running one of our threads (membarrier; a fence when the fast paths are off,
 * whose sections then fence themselves): after it, a record store made before a thread's next load is seen. */
void up_guard_barrier(void);
/* Some record names key for lock kind `kind` (one look; no barrier). */
bool up_guard_named(enum up_asym_kind kind, const void *key);

/* Once at start-up: registers for membarrier; without it every section takes f->rw. */
void up_guard_init(void);
/* In a fork child: only the forking thread exists; the others' records are free. */
void up_guard_after_fork_child(void);

#endif
