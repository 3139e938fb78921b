/* The file guard's registry of reader records and its write side (guard.h explains the protocol). */
#include <linux/membarrier.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/stats.h"
#include "shim/libc.h"
#include "upath/calls.h"
#include "upath/guard.h"

#define READERS_PER_CHUNK 64u

/* Reader records live in chunks that are never freed (a writer may scan them at any time); a chunk
 * list grows only, so the scan needs no lock. */
struct reader_chunk {
    struct up_reader r[READERS_PER_CHUNK];
    struct reader_chunk *next;
    uint32_t hi; /* records [hi, READERS_PER_CHUNK) were never claimed (a scan stops there) */
};

bool up_guard_asym;
__thread struct up_reader *up_reader_self;
/* The first chunk is static: a thread can always borrow a record (up_reader_borrow) without mapping. */
static struct reader_chunk first_chunk;
static struct reader_chunk *chunks = &first_chunk; /* newest first */
static bool key_ready;              /* release_key exists: threads may claim records */
static uint32_t claimed;            /* records held by live threads (a locked add at each claim) */
static pthread_key_t release_key;   /* frees a thread's record at its exit */
/* This thread is claiming its record: a signal handler's IO meanwhile takes the locked path instead of
 * claiming a second one (review 9, finding 1). */
static __thread bool claiming;

static long membarrier_call(int cmd) { return syscall(__NR_membarrier, cmd, 0, 0); }

/* At thread exit (a key destructor, on the exiting thread): the record goes back, and the thread forgets it
 * -- a later destructor doing IO claims another one rather than share this one with its next owner. */
static void reader_release(void *p) {
    struct up_reader *r = p;
    if (up_reader_self == r) up_reader_self = NULL;
    for (unsigned k = 0; k < UP_ASYM_KINDS; k++) __atomic_store_n(&r->in[k], NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&r->w.seq, 0, __ATOMIC_RELAXED); /* (no strict write is in flight at a thread's exit) */
    __atomic_store_n(&r->used, 0, __ATOMIC_RELEASE);
    __atomic_sub_fetch(&claimed, 1, __ATOMIC_SEQ_CST);
}

/* A record just taken: its id, at its first claim (only its holder writes or reads it). */
static struct up_reader *taken(struct up_reader *r) {
    static uint32_t last_id;
    if (r->id == 0) r->id = __atomic_add_fetch(&last_id, 1, __ATOMIC_RELAXED);
    return r;
}

static struct up_reader *claim_in(struct reader_chunk *c) {
    for (uint32_t i = 0; i < READERS_PER_CHUNK; i++) {
        uint32_t free_ = 0;
        if (!__atomic_load_n(&c->r[i].used, __ATOMIC_RELAXED) &&
            __atomic_compare_exchange_n(&c->r[i].used, &free_, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            uint32_t hi = __atomic_load_n(&c->hi, __ATOMIC_RELAXED); /* before the record is used */
            while (hi <= i && !__atomic_compare_exchange_n(&c->hi, &hi, i + 1, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {}
            return taken(&c->r[i]);
        }
    }
    return NULL;
}

/* A free record, or a new chunk's first; NULL only when memory is out (the caller then locks). Chunks come
 * from mmap, not malloc: a thread's first guarded IO may be a signal handler's that interrupted malloc
 * (review 9, finding 1: a nested calloc corrupted the heap -- abort -- or, with threads, hung). */
static struct up_reader *claim_any(void) {
    for (;;) {
        struct reader_chunk *head = __atomic_load_n(&chunks, __ATOMIC_ACQUIRE);
        for (struct reader_chunk *c = head; c; c = c->next) {
            struct up_reader *r = claim_in(c);
            if (r) return r;
        }
        struct reader_chunk *c = DK_REAL(mmap)(NULL, sizeof *c, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (c == MAP_FAILED) return NULL;
        c->r[0].used = 1;
        c->hi = 1;
        c->next = head;
        if (__atomic_compare_exchange_n(&chunks, &head, c, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return taken(&c->r[0]);
        DK_REAL(munmap)(c, sizeof *c); /* another thread added a chunk: look again */
    }
}

struct up_reader *up_reader_claim(void) {
    /* Claimed without membarrier too (its fast sections then take the locks; strict mode's writes still
     * publish their ranges in it). A handler inside this thread's claim: the locked path. */
    if (!__atomic_load_n(&key_ready, __ATOMIC_ACQUIRE) || claiming) return NULL;
    if (up_call_depth != 0) return NULL; /* calls nest in borrowed records until the outermost ends (calls.h) */
    DK_ERRNO_SAVE;
    claiming = true;
    __asm__ __volatile__("" ::: "memory"); /* a handler sees the flag before the claim starts */
    struct up_reader *r = claim_any();
    if (r) {
        __atomic_add_fetch(&claimed, 1, __ATOMIC_SEQ_CST); /* before the record is used: close_and_drain */
        up_reader_self = r;
        pthread_setspecific(release_key, r);
    }
    __asm__ __volatile__("" ::: "memory");
    claiming = false;
    DK_ERRNO_RESTORE;
    return r;
}

struct up_reader *up_reader_borrow(void) {
    for (;;) {
        struct up_reader *r = claim_any(); /* not counted in `claimed`: of its in[], only a nested call's UP_ASYM_CALL (calls.c) */
        if (r) return r;
        sched_yield(); /* every record taken and no memory for a chunk: wait for one to be given back */
    }
}

bool up_guard_others(void) {
    return __atomic_load_n(&claimed, __ATOMIC_ACQUIRE) > (up_reader_self != NULL ? 1u : 0u);
}

void up_reader_give_back(struct up_reader *r) {
    __atomic_store_n(&r->w.seq, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&r->used, 0, __ATOMIC_RELEASE);
}

void up_readers_each(bool (*fn)(const struct up_reader *r, void *ctx), void *ctx) {
    for (struct reader_chunk *c = __atomic_load_n(&chunks, __ATOMIC_ACQUIRE); c; c = c->next)
        for (uint32_t i = 0, hi = __atomic_load_n(&c->hi, __ATOMIC_ACQUIRE); i < hi; i++)
            if (__atomic_load_n(&c->r[i].used, __ATOMIC_ACQUIRE) && fn(&c->r[i], ctx)) return;
}

/* A record names key for lock kind `kind`. */
static bool readers_in(enum up_asym_kind kind, const void *key) {
    for (struct reader_chunk *c = __atomic_load_n(&chunks, __ATOMIC_ACQUIRE); c; c = c->next)
        for (unsigned i = 0; i < READERS_PER_CHUNK; i++)
            if (__atomic_load_n(&c->r[i].in[kind], __ATOMIC_ACQUIRE) == key) return true;
    return false;
}

bool up_guard_named(enum up_asym_kind kind, const void *key) { return readers_in(kind, key); }

static bool barrier_everywhere(void) {
    if (membarrier_call(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return true;
    /* Never seen after a successful registration; should it happen, fast sections end here: new ones
     * take the lock's slow side (f->rw, st->ck) or fence (calls.h), and the waits drain those already in
     * (best effort: without the barrier a reader's record may show late). */
    __atomic_store_n(&up_guard_asym, false, __ATOMIC_SEQ_CST);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    dk_log_once("membarrier failed after registering; the data path takes its read-write locks from now on");
    return false;
}

void up_guard_barrier(void) {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&up_guard_asym, __ATOMIC_ACQUIRE) && barrier_everywhere()) dk_count(DK_C_guard_barriers, 1);
}

static void close_and_drain(enum up_asym_kind kind, uint32_t *closed, const void *key) {
    __atomic_store_n(closed, 1, __ATOMIC_RELAXED);
    /* No record held but this thread's (a single-threaded program): no other thread can be in a fast
     * section, and one that claims a record from now on sees the path closed -- its claim's locked add to
     * `claimed` comes before its first section, and this fence orders the store above before the load (a
     * store-buffering pair). No barrier, no scan: membarrier costs ~4.6 us here (a VM, one thread), which a
     * strict checkpoint at every lock release would pay. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    struct up_reader *self = up_reader_self;
    const void *own = self ? __atomic_load_n(&self->in[kind], __ATOMIC_RELAXED) : NULL;
    /* (A signal handler whose thread is inside a fast section on key waits below for ever, as it did for
     * the lock before: never through it.) */
    if (__atomic_load_n(&claimed, __ATOMIC_RELAXED) == (self != NULL ? 1u : 0u) && own != key) return;
    /* After this every thread either saw the fast path closed or is visible in its record. */
    barrier_everywhere();
    dk_count(DK_C_guard_barriers, 1);
    /* Fast sections are short, but a page-cache pwrite inside one can block on the device: yield, then
     * sleep, rather than spin a core away (the raw system call: libc's nanosleep is a cancellation point,
     * and the caller holds locks). */
    for (unsigned spins = 0; readers_in(kind, key); spins++) {
        if (spins < 64) sched_yield();
        else syscall(SYS_nanosleep, &(struct timespec){0, 50000}, NULL);
    }
}

void up_guard_write_lock(struct up_file *f) {
    pthread_rwlock_wrlock(&f->rw);
    if (up_guard_asym) close_and_drain(UP_ASYM_FILE, &f->guard_closed, f);
}

void up_guard_close_and_drain(enum up_asym_kind kind, uint32_t *closed, const void *key) {
    if (up_guard_asym) close_and_drain(kind, closed, key);
}

void up_guard_write_unlock(struct up_file *f) {
    if (up_guard_asym) __atomic_store_n(&f->guard_closed, 0, __ATOMIC_RELEASE);
    pthread_rwlock_unlock(&f->rw);
}

void up_guard_init(void) {
    if (pthread_key_create(&release_key, reader_release) != 0) return;
    __atomic_store_n(&key_ready, true, __ATOMIC_RELEASE);
    long cmds = membarrier_call(MEMBARRIER_CMD_QUERY);
    if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) return;
    if (membarrier_call(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0) return;
    up_guard_asym = true;
}

void up_guard_after_fork_child(void) {
    for (struct reader_chunk *c = chunks; c; c = c->next)
        for (unsigned i = 0; i < READERS_PER_CHUNK; i++)
            if (&c->r[i] != up_reader_self) c->r[i] = (struct up_reader){0};
    __atomic_store_n(&claimed, up_reader_self != NULL ? 1u : 0u, __ATOMIC_RELAXED);
    if (up_reader_self) {
        for (unsigned k = 0; k < UP_ASYM_KINDS; k++) __atomic_store_n(&up_reader_self->in[k], NULL, __ATOMIC_RELAXED);
    }
}
