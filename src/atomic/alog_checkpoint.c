/* Checkpointing: committed redo entries are copied into the file, committed undo entries are dropped, and
 * both give back their log space. In batches of ALOG_CKPT_BATCH: (1) apply each batch entry under its
 * region lock; (2) make the file durable once; (3) invalidate the entries; (4) make the invalidations
 * durable once; (5) release them. A writer may retire a batch entry itself meanwhile (its block was written
 * again); the slot generation tells the later phases to leave it alone.
 * The background thread sleeps until a sync kicks it, waits the configured interval (so several syncs
 * share one pass), then checkpoints WITHOUT the file lock: a sync must never wait for a checkpoint thread
 * that the scheduler has preempted (measured: syncs of ~1 ms on the loaded 2-core machine). That is safe
 * because a pass takes a snapshot of the epoch and touches only entries committed by then, each under its
 * region lock and re-checked by generation; a concurrent epoch advance or policy switch (whose own pass
 * frees the same entries, or applies the same bytes) changes neither. unmap stops the thread first.
 * A superseded entry (alog_write.c) is never applied: the pass that applies the newest entry of its block
 * invalidates it in the apply phase (safe: the newest is committed and holds its bytes), so that its
 * invalidation is durable before the newest one's. */
#include <errno.h>
#include <signal.h>
#include <time.h>

#include "atomic/alog.h"
#include "common/crashpoint.h"
#include "common/dk.h"
#include "common/thread.h"

#define ckpt_item alog_ckpt_item
#define CKPT_ITEMS_MAX ALOG_CKPT_ITEMS_MAX

struct alog_leaf *alog_lock_if_committed(struct alog_file *f, struct alog_ent *e, uint64_t gen, uint64_t epoch) {
    struct alog_leaf *leaf = __atomic_load_n(&e->leaf, __ATOMIC_ACQUIRE);
    if (!leaf) return NULL;
    pthread_mutex_lock(&leaf->mu);
    /* e may be being reused under another region's lock meanwhile: atomic reads; live is stored last */
    if (__atomic_load_n(&e->live, __ATOMIC_ACQUIRE) && __atomic_load_n(&e->leaf, __ATOMIC_ACQUIRE) == leaf &&
        __atomic_load_n(&e->epoch, __ATOMIC_RELAXED) < epoch &&
        (gen == 0 || __atomic_load_n(&e->gen, __ATOMIC_RELAXED) == gen))
        return leaf;
    pthread_mutex_unlock(&leaf->mu);
    return NULL;
}

static int64_t flush_batch(struct alog_file *f, struct ckpt_item *items, uint32_t n, uint64_t epoch) {
    DK_CRASH_POINT("atomic.checkpoint.after_apply");
    int rc = alog_durable_data_all(f);
    if (rc) return rc;
    /* Superseded entries were invalidated with their successor's apply: durable before the successor's own
     * invalidation (on dax and tmpfs the data fence above covers the log's write-backs; not on pagecache). */
    bool older = false;
    for (uint32_t i = 0; i < n; i++) older |= items[i].older;
    if (older && f->persist_as == DK_MEDIUM_PAGECACHE && (rc = alog_durable_log_all(f)) != 0) return rc;
    for (uint32_t i = 0; i < n; i++) {
        if (items[i].older || !alog_lock_if_committed(f, items[i].e, items[i].gen, epoch)) continue;
        alog_entry_invalidate(f, items[i].e);
        pthread_mutex_unlock(&items[i].leaf->mu);
    }
    DK_CRASH_POINT("atomic.checkpoint.after_invalidate");
    rc = alog_durable_log_all(f);
    if (rc) return rc;
    int64_t done = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!alog_lock_if_committed(f, items[i].e, items[i].gen, epoch)) continue;
        if (items[i].e->redo && !items[i].older) ALOG_CTR_ADD(f, checkpointed_entries, 1);
        alog_entry_release(f, items[i].e);
        pthread_mutex_unlock(&items[i].leaf->mu);
        done++;
    }
    return done;
}

int64_t alog_checkpoint_committed(struct alog_file *f) {
    if (f->journal) return alog_jrnl_checkpoint(f); /* in steps, under j.apply_mu only */
    uint64_t epoch = __atomic_load_n(&f->epoch, __ATOMIC_ACQUIRE);
    struct ckpt_item items[CKPT_ITEMS_MAX];
    uint32_t n = 0;
    int64_t total = 0;
    uint64_t words = (f->entry_count + 63) / 64;
    for (uint64_t w = 0; w <= words; w++) {
        uint64_t bits = w < words ? __atomic_load_n(&f->live_bits[w], __ATOMIC_ACQUIRE) : 0;
        while (bits || (w == words && n)) {
            if (n + 1 + ALOG_SUPERSEDE_CHAIN_MAX > CKPT_ITEMS_MAX || (w == words && n)) {
                int64_t r = flush_batch(f, items, n, epoch);
                if (r < 0) return r;
                total += r, n = 0;
                continue;
            }
            struct alog_ent *e = &f->ents[w * 64 + (uint64_t)__builtin_ctzll(bits)];
            bits &= bits - 1;
            struct alog_leaf *leaf = alog_lock_if_committed(f, e, 0, epoch);
            if (!leaf) continue;
            if (e->newer) { /* superseded: its bytes reach the file with the newest entry of its block */
                pthread_mutex_unlock(&leaf->mu);
                continue;
            }
            if (e->redo) alog_entry_apply(f, e);
            items[n++] = (struct ckpt_item){e, leaf, e->gen, false};
            /* e is committed and holds the bytes of the entries it superseded: they go now, before e */
            for (struct alog_ent *o = alog_entry_detach_older(f, e); o; o = o->older)
                items[n++] = (struct ckpt_item){o, leaf, o->gen, true};
            pthread_mutex_unlock(&leaf->mu);
        }
    }
    return total;
}

/* Session 18: committed undo entries are released by the copies, not by the commit. A committed undo entry is
 * obsolete: recovery undoes only entries of the header's current epoch (alog_layout.h), and the epoch word
 * only grows, so nothing about it needs to be durable -- not its invalidation (alog_entry_retire's undo branch
 * relies on the same rule) -- and its slot and log block may be reused once the commit that made it committed
 * is durable, which is when f->epoch moves past it (alog_commit.c). Before, the paced commit took up to
 * ALOG_CKPT_ITEMS_MAX of them and wrote an invalidation back for each: the undo sync grew from ~0.5 to ~74 us
 * between 1 and 1,000 dirty blocks. Now the commit leaves them (since session 19 it touches no entry) and each copy
 * releases up to ALOG_BPACE_COPY_RELEASES of them, more than the one entry it may create, looking at
 * ALOG_BPACE_COPY_WORDS live_bits words at most: DRAM work only (the region lock, the allocator's mutex).
 * Caller holds f->rw for reading (f->epoch stable) and no region lock; a copy finding another copy at it skips. */
#define ALOG_BPACE_COPY_RELEASES 2u
#define ALOG_BPACE_COPY_WORDS 4u

static bool release_if_obsolete_undo(struct alog_file *f, struct alog_ent *e, uint64_t epoch) {
    if (__atomic_load_n(&e->epoch, __ATOMIC_RELAXED) >= epoch) return false; /* this epoch's: recovery undoes it */
    struct alog_leaf *leaf = alog_lock_if_committed(f, e, 0, epoch);
    if (!leaf) return false;
    bool undo = !e->redo;
    if (undo) alog_entry_release(f, e);
    pthread_mutex_unlock(&leaf->mu);
    return undo;
}

void alog_bpace_release_undo(struct alog_file *f) {
    uint64_t words = DK_MIN((f->entry_count + 63) / 64, __atomic_load_n(&f->live_words_hi, __ATOMIC_RELAXED));
    if (!words || pthread_mutex_trylock(&f->brel_mu) != 0) return;
    uint64_t epoch = __atomic_load_n(&f->epoch, __ATOMIC_ACQUIRE);
#ifdef DAXKIT_TEST_BUILD
    if (alog_test_broken == ALOG_BROKEN_UNDO_RELEASE_UNCOMMITTED) epoch++; /* this epoch's entries too */
#endif
    uint32_t released = 0;
    uint64_t w = f->brel_word % words;
    for (uint32_t k = 0; k < ALOG_BPACE_COPY_WORDS && released < ALOG_BPACE_COPY_RELEASES; k++) {
        uint64_t bits = __atomic_load_n(&f->live_bits[w], __ATOMIC_ACQUIRE);
        while (bits && released < ALOG_BPACE_COPY_RELEASES) {
            struct alog_ent *e = &f->ents[w * 64 + (uint64_t)__builtin_ctzll(bits)];
            bits &= bits - 1;
            released += release_if_obsolete_undo(f, e, epoch);
        }
        if (bits) break; /* the rest of this word: the next copy */
        w = (w + 1) % words;
    }
    f->brel_word = w;
    pthread_mutex_unlock(&f->brel_mu);
}

bool alog_bpace_due(const struct alog_file *f) {
    return __atomic_load_n(&f->area_used_bytes, __ATOMIC_RELAXED) > f->area_bytes / 4;
}

int alog_thread_start(pthread_t *t, void *(*fn)(void *), void *arg) {
    return -dk_thread_start(t, NULL, fn, arg); /* a full mask: no host signal lands there (common/thread.h) */
}

static void sleep_us(uint32_t us) {
    struct timespec ts = {us / 1000000u, (long)(us % 1000000u) * 1000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static void *ckpt_main(void *arg) {
    struct alog_file *f = arg;
    pthread_mutex_lock(&f->ckpt_mu);
    for (;;) {
        while (!f->ckpt_pending && !f->ckpt_stop) pthread_cond_wait(&f->ckpt_cond, &f->ckpt_mu);
        if (f->ckpt_stop) break;
        f->ckpt_pending = false;
        pthread_mutex_unlock(&f->ckpt_mu);
        int saved = errno;
        if (!f->journal) sleep_us(f->ckpt_interval_us); /* the journal: kicked once a quarter full, at once */
        (void)alog_checkpoint_committed(f); /* a failure makes f->broken sticky; copies report it */
        errno = saved;
        pthread_mutex_lock(&f->ckpt_mu);
    }
    pthread_mutex_unlock(&f->ckpt_mu);
    return NULL;
}

int alog_ckpt_thread_start(struct alog_file *f) {
    pthread_mutex_init(&f->ckpt_mu, NULL);
    pthread_cond_init(&f->ckpt_cond, NULL);
    if (f->ckpt_interval_us == 0) return 0;
    int rc = alog_thread_start(&f->ckpt_thread, ckpt_main, f);
    f->ckpt_started = rc == 0;
    return rc;
}

void alog_ckpt_thread_stop(struct alog_file *f) {
    if (f->ckpt_started) {
        pthread_mutex_lock(&f->ckpt_mu);
        f->ckpt_stop = true;
        pthread_cond_signal(&f->ckpt_cond);
        pthread_mutex_unlock(&f->ckpt_mu);
        pthread_join(f->ckpt_thread, NULL);
        f->ckpt_started = false;
    }
    pthread_mutex_destroy(&f->ckpt_mu);
    pthread_cond_destroy(&f->ckpt_cond);
}

void alog_ckpt_kick(struct alog_file *f) {
    if (!f->ckpt_started) return;
    pthread_mutex_lock(&f->ckpt_mu);
    DK_CRASH_POINT("atomic.ckpt_kick.locked"); /* shim_handler_fork_atomic_kick's cue */
    if (!f->ckpt_pending) {
        f->ckpt_pending = true;
        pthread_cond_signal(&f->ckpt_cond);
    }
    pthread_mutex_unlock(&f->ckpt_mu);
}
