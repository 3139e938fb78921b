/* Redo with pacing (session 19, issue 4 T3): the commit touches no entry. The copies apply committed redo
 * entries into the file in creation order -- a FIFO, which is epoch order, since every entry of an epoch is
 * made under f->rw for reading and the epoch moves only under it for writing -- about twice the bytes they
 * log, with write-back and no fence. A commit then stores one word A into the epoch word's line after its
 * first fence (which made those bytes durable): "every redo entry of an epoch below A is applied". A is the
 * epoch of the oldest entry not applied yet (or the committing epoch when every entry is). Recovery replays
 * a redo entry only when A <= epoch < H (alog_layout.h), so once A is durable the entries below it are
 * released in DRAM only, by the next copies: no invalidation is written back, and their slots and log
 * blocks are reused under their still-valid words. Before (session 10), the commit applied about twice the
 * bytes logged since the last one and wrote back an invalidation per entry: a sync after 1,000 dirty 4 KiB
 * blocks took ~230 us against ~1 us after one.
 * Order of what can reach the medium: an entry's applied bytes (written back by a copy) -> the commit's
 * first fence -> A (plain store, the commit line) -> the epoch word's write-back and fence -> the entries
 * below A released. A needs no order against the epoch word: it only ever names committed epochs.
 * A superseded entry is applied like any other, in order; its successor (later in the FIFO) overwrites it.
 * The checkpoint pass and a writer's retire still apply, invalidate durably and release entries as before;
 * a pass that applies a block's newest entry marks the ones it superseded in_file (detach), so no copy puts
 * their older bytes over the newer ones afterwards. Lock order: leaf->mu, then fifo_mu. */
#include "atomic/alog.h"
#include "common/crashpoint.h"
#include "common/dk.h"
#include "persist/persist.h"

/* Entries one copy releases (below the durable A) and applies at most, besides the byte budget. */
#define ALOG_RPACE_RELEASES 4u
#define ALOG_RPACE_APPLIES 64u

void alog_fifo_push(struct alog_file *f, struct alog_ent *e) {
    pthread_mutex_lock(&f->fifo_mu);
    e->fifo_next = NULL;
    e->fifo_prev = f->fifo_tail;
    if (f->fifo_tail) f->fifo_tail->fifo_next = e;
    else __atomic_store_n(&f->fifo_head, e, __ATOMIC_RELEASE);
    f->fifo_tail = e;
    if (!f->fifo_apply) __atomic_store_n(&f->fifo_apply, e, __ATOMIC_RELEASE);
    e->in_fifo = true;
    pthread_mutex_unlock(&f->fifo_mu);
}

void alog_fifo_remove(struct alog_file *f, struct alog_ent *e) {
    pthread_mutex_lock(&f->fifo_mu);
    if (f->fifo_apply == e) __atomic_store_n(&f->fifo_apply, e->fifo_next, __ATOMIC_RELEASE);
    if (e->fifo_prev) e->fifo_prev->fifo_next = e->fifo_next;
    else __atomic_store_n(&f->fifo_head, e->fifo_next, __ATOMIC_RELEASE);
    if (e->fifo_next) e->fifo_next->fifo_prev = e->fifo_prev;
    else f->fifo_tail = e->fifo_prev;
    e->fifo_prev = e->fifo_next = NULL;
    e->in_fifo = false;
    pthread_mutex_unlock(&f->fifo_mu);
}

/* The FIFO's head or apply cursor, read without fifo_mu (entries live in f->ents, never freed): a hint that the
 * caller checks under the entry's region lock, where in_fifo, in_file, epoch and gen are stable. */
static struct alog_ent *fifo_hint(struct alog_ent *const *at) { return __atomic_load_n(at, __ATOMIC_ACQUIRE); }

/* Releases one entry below the durable A, from the head (in the file durably, and recovery ignores it).
 * false: the head is not one (or moved meanwhile: the next copy looks again). */
static bool release_head(struct alog_file *f, uint64_t epoch) {
    struct alog_ent *e = fifo_hint(&f->fifo_head);
    if (!e || __atomic_load_n(&e->epoch, __ATOMIC_RELAXED) >= f->redo_applied) return false;
    struct alog_leaf *leaf = alog_lock_if_committed(f, e, 0, epoch);
    if (!leaf) return false;
    bool below = e->in_fifo && e->in_file && e->epoch < f->redo_applied;
    if (below) alog_entry_release(f, e);
    pthread_mutex_unlock(&leaf->mu);
    return below;
}

/* The entry at the apply cursor, if committed: applied (unless in the file already), the cursor moved past it.
 * Returns the bytes applied, or -1 when the cursor's entry is not committed (or there is none). */
static int64_t apply_next(struct alog_file *f, uint64_t epoch) {
    struct alog_ent *e = fifo_hint(&f->fifo_apply);
    if (!e || __atomic_load_n(&e->epoch, __ATOMIC_RELAXED) >= epoch) return -1;
    struct alog_leaf *leaf = alog_lock_if_committed(f, e, 0, epoch);
    if (!leaf) return 0; /* released meanwhile (its removal moved the cursor) or reused: look again */
    int64_t bytes = 0;
    uint64_t gen = e->gen;
    bool listed = e->in_fifo;
    if (listed && !e->in_file) {
        alog_entry_apply(f, e); /* written back; durable at the next commit's first fence */
        e->in_file = true;
        bytes = e->ext_len;
        ALOG_CTR_ADD(f, paced_entries, 1);
    }
    pthread_mutex_unlock(&leaf->mu);
    pthread_mutex_lock(&f->fifo_mu); /* released meanwhile: its removal moved the cursor already */
    if (listed && f->fifo_apply == e && e->gen == gen) __atomic_store_n(&f->fifo_apply, e->fifo_next, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&f->fifo_mu);
    return bytes;
}

void alog_redo_pace_copy(struct alog_file *f, uint64_t logged) {
    if (pthread_mutex_trylock(&f->rapply_mu) != 0) return; /* another copy is at it */
    uint64_t epoch = __atomic_load_n(&f->epoch, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < ALOG_RPACE_RELEASES && release_head(f, epoch); i++) {}
    uint64_t budget = 2 * logged, bytes = 0;
    for (uint32_t i = 0; i < ALOG_RPACE_APPLIES && (i == 0 || bytes < budget); i++) {
        int64_t n = apply_next(f, epoch);
        if (n < 0) break;
        bytes += (uint64_t)n;
    }
    pthread_mutex_unlock(&f->rapply_mu);
}

uint64_t alog_redo_applied_next(struct alog_file *f) {
    if (!f->bpace || f->journal || f->policy != ALOG_REDO) return 0;
    pthread_mutex_lock(&f->fifo_mu); /* the thread's pass may release entries meanwhile */
    struct alog_ent *e = f->fifo_apply;
    uint64_t a = e ? e->epoch : f->epoch; /* the oldest entry not applied, or the committing epoch */
    pthread_mutex_unlock(&f->fifo_mu);
    return a > f->redo_applied ? a : 0;
}

/* The first A of a version 1 log makes it version 2 (alog_layout.h): the version is written back here and made
 * durable by the commit's epoch store (its fence; on pagecache its msync, of the header page that holds
 * both), before the copies release any entry below A -- only then may a slot or log block below A be reused.
 * A crash before that leaves either version with or without A: every redo entry below A still intact and
 * applied, so a v1 reader replaying them recovers the same file as a v2 reader skipping them. */
static void version_applied(struct alog_file *f) {
    if (f->hdr->version == ALOG_VERSION_APPLIED) return;
#ifdef DAXKIT_TEST_BUILD
    if (alog_test_broken == ALOG_BROKEN_VERSION_NOT_STORED) return; /* a v1 reader would replay below A */
#endif
    uint32_t v = ALOG_VERSION_APPLIED;
    dk_copy_flush(&f->hdr->version, &v, sizeof v);
}

void alog_redo_applied_store(struct alog_file *f, uint64_t a) {
    version_applied(f);
    /* A plain store: the epoch word's store writes the line back after it (alog_commit.c) */
    __atomic_store_n(&f->hdr->redo_applied, alog_applied_word(a), __ATOMIC_RELAXED);
    DK_CRASH_POINT("atomic.sync.redo_applied.stored");
}
