/* Recovery: scan the persistent index entries (no radix tree is needed) and apply the recovery rule of
 * alog_layout.h, in parallel over index ranges; then make the file durable and invalidate every entry.
 * Applying an entry copies fixed log bytes to a fixed place, and entries applied in one pass never overlap
 * (one entry per block per epoch; of a block's committed redo entries only the newest is applied -- an
 * entry superseding another holds its bytes, alog_write.c -- and one is durably invalidated before its
 * block gets an entry any other way), so a crash during recovery is repaired by running it again. Also used by unmap: the same rule
 * rolls back unsynced undo entries and checkpoints committed redo ones. */
#include <errno.h>
#include <stdlib.h>

#include "atomic/alog.h"
#include "common/crashpoint.h"
#include "common/dk.h"
#include "common/log.h"

#define ALOG_RECOVERY_THREADS_MAX 4u
#define ALOG_RECOVERY_ENTRIES_PER_THREAD 4096u

struct rec_job {
    struct alog_file *f;
    uint64_t from, to, epoch, applied; /* applied: A (redo entries below it are in the file) */
    const uint64_t *older_bits; /* committed redo entries superseded by a newer committed one: not applied */
    uint64_t redo, undo, discarded;
    bool stopped;
};

#ifdef DAXKIT_TEST_BUILD
uint64_t alog_test_recover_apply_max;
#endif

/* The entry's delta lies inside its block, the block inside the mapped file, the log block inside the area. */
static bool entry_sane(const struct alog_file *f, const struct alog_pent *p) {
    if (p->shift < ALOG_BLOCK_SHIFT_MIN || p->shift > ALOG_BLOCK_SHIFT_MAX) return false;
    uint64_t bs = 1ull << p->shift;
    uint64_t start = alog_extent_start(p->extent), len = alog_extent_len(p->extent);
    if (start + len > bs || p->log_off % bs || p->log_off + bs > f->area_bytes) return false;
    return p->dest_off + start + len <= f->data_len;
}

static void rec_one(struct rec_job *j, struct alog_pent *p) {
    struct alog_file *f = j->f;
    uint64_t word = __atomic_load_n(&p->word, __ATOMIC_ACQUIRE);
    if (!(word & ALOG_WORD_VALID)) return;
    if (p->check != alog_pent_check(word, p->dest_off, p->log_off, p->shift)) {
        j->discarded++; /* torn or half-reused: never part of a committed or rolled-back state (see layout) */
        return;
    }
    uint64_t e = word >> ALOG_WORD_EPOCH_SHIFT;
    bool redo = (word & ALOG_WORD_REDO) != 0;
    bool apply = redo ? e >= j->applied && e < j->epoch : e == j->epoch;
    uint64_t idx = (uint64_t)(p - f->pents);
    if (apply && j->older_bits && (j->older_bits[idx / 64] >> (idx % 64) & 1)) apply = false;
    if (apply && !entry_sane(f, p)) {
        dk_log("atomic log entry %llu does not fit the file (truncated since?); not applied",
               (unsigned long long)(p - f->pents));
        apply = false;
    }
    if (!apply) {
        j->discarded++;
        return;
    }
    uint32_t start = alog_extent_start(p->extent), len = alog_extent_len(p->extent);
    DK_CRASH_POINT("atomic.recover.before_apply");
    alog_store(f, f->data + p->dest_off + start, f->area + p->log_off + start, len);
    if (redo) j->redo++;
    else j->undo++;
}

static void *rec_main(void *arg) {
    struct rec_job *j = arg;
    for (uint64_t i = j->from; i < j->to; i++) {
#ifdef DAXKIT_TEST_BUILD
        uint64_t max = __atomic_load_n(&alog_test_recover_apply_max, __ATOMIC_RELAXED);
        if (max && j->redo + j->undo >= max) {
            j->stopped = true; /* a simulated crash in the middle of recovery */
            return NULL;
        }
#endif
        rec_one(j, &j->f->pents[i]);
    }
    return NULL;
}

/* A committed redo entry not below A (by the rule) whose check holds, or UINT64_MAX. */
static uint64_t committed_redo_epoch(const struct alog_pent *p, uint64_t epoch, uint64_t applied) {
    uint64_t word = __atomic_load_n(&p->word, __ATOMIC_ACQUIRE);
    if (!(word & ALOG_WORD_VALID) || !(word & ALOG_WORD_REDO)) return UINT64_MAX;
    if (p->check != alog_pent_check(word, p->dest_off, p->log_off, p->shift)) return UINT64_MAX;
    uint64_t e = word >> ALOG_WORD_EPOCH_SHIFT;
    return e >= applied && e < epoch ? e : UINT64_MAX;
}

struct blk_epoch {
    uint64_t dest_off, epoch, idx;
};

static int by_block_then_epoch(const void *a, const void *b) {
    const struct blk_epoch *x = a, *y = b;
    if (x->dest_off != y->dest_off) return x->dest_off < y->dest_off ? -1 : 1;
    return x->epoch < y->epoch ? -1 : x->epoch > y->epoch;
}

/* Marks the committed redo entries that a newer committed entry of the same block superseded. NULL when
 * there are none (the usual case), or -ENOMEM in *rc. */
static uint64_t *superseded_bits(struct alog_file *f, int *rc) {
    uint64_t n = 0;
    uint64_t applied = alog_applied_of(f->hdr->redo_applied);
    for (uint64_t i = 0; i < f->entry_count; i++) n += committed_redo_epoch(&f->pents[i], f->epoch, applied) != UINT64_MAX;
    if (n < 2) return NULL;
    struct blk_epoch *v = malloc(n * sizeof *v);
    uint64_t *bits = calloc((f->entry_count + 63) / 64, sizeof *bits);
    if (!v || !bits) {
        free(v), free(bits);
        *rc = -ENOMEM;
        return NULL;
    }
    uint64_t k = 0;
    for (uint64_t i = 0; i < f->entry_count && k < n; i++) {
        uint64_t e = committed_redo_epoch(&f->pents[i], f->epoch, applied);
        if (e != UINT64_MAX) v[k++] = (struct blk_epoch){f->pents[i].dest_off, e, i};
    }
    qsort(v, k, sizeof *v, by_block_then_epoch);
    bool any = false;
    for (uint64_t i = 0; i + 1 < k; i++)
        if (v[i].dest_off == v[i + 1].dest_off) bits[v[i].idx / 64] |= 1ull << (v[i].idx % 64), any = true;
    free(v);
    if (!any) free(bits);
    return any ? bits : NULL;
}

static uint32_t thread_count(const struct alog_file *f, uint32_t want) {
    if (want) return want;
    uint64_t t = f->entry_count / ALOG_RECOVERY_ENTRIES_PER_THREAD;
    return (uint32_t)DK_MAX(1, DK_MIN(ALOG_RECOVERY_THREADS_MAX, t));
}

static void run_jobs(struct alog_file *f, struct rec_job *jobs, uint32_t n, const uint64_t *older_bits) {
    pthread_t tid[64];
    bool started[64] = {0};
    uint64_t per = (f->entry_count + n - 1) / n;
    for (uint32_t i = 0; i < n; i++) {
        jobs[i] = (struct rec_job){.f = f, .from = DK_MIN(f->entry_count, i * per),
                                   .to = DK_MIN(f->entry_count, (i + 1) * per), .epoch = f->epoch,
                                   .applied = alog_applied_of(f->hdr->redo_applied),
                                   .older_bits = older_bits};
        if (i > 0) started[i] = alog_thread_start(&tid[i], rec_main, &jobs[i]) == 0;
    }
    rec_main(&jobs[0]);
    for (uint32_t i = 1; i < n; i++) {
        if (started[i]) pthread_join(tid[i], NULL);
        else rec_main(&jobs[i]); /* no thread: do that range here */
    }
}

/* Empties the log once the file holds the recovered state durably. The superseded committed redo entries go
 * first, durably: were the newest entry of a block invalid and an older one still valid, a recovery after a
 * crash here would put that older delta over the newest bytes (session 10: crash_atomic_redo failed 9 of 400
 * runs at atomic.recover.before_invalidate, when a block's newest entry had the lower slot). */
static int invalidate_all(struct alog_file *f, const uint64_t *older_bits) {
    for (int older = older_bits ? 1 : 0; older >= 0; older--) {
        for (uint64_t i = 0; i < f->entry_count; i++) {
            if (!__atomic_load_n(&f->pents[i].word, __ATOMIC_RELAXED)) continue;
            if (older && !(older_bits[i / 64] >> (i % 64) & 1)) continue;
            DK_CRASH_POINT(older ? "atomic.recover.before_invalidate_older" : "atomic.recover.before_invalidate");
            alog_store_word(&f->pents[i].word, 0);
        }
        int rc = alog_durable_log_all(f);
        if (rc) return rc;
    }
    return 0;
}

int alog_recover(struct alog_file *f, uint32_t threads, bool keep_entries) {
    /* A journal and live entries never coexist: a log is recovered before the other kind is written. */
    int64_t jn = alog_jrnl_apply_committed(f);
    if (jn < 0) return (int)jn;
    ALOG_CTR_ADD(f, recovered_redo, (uint64_t)jn);
    if (f->journal) alog_jrnl_reset_dram(f);
    /* No entry published since a recovery emptied them (the journal never publishes one): the three scans
     * below would read all entry_count entries for nothing -- 4,096 of them (256 KiB, from memory) for the
     * default 16 MiB log, ~40 us of every clean close of a DAXKIT_ATOMIC file (docs/atomic.md, session 18). */
    if (__atomic_load_n(&f->pents_clear, __ATOMIC_RELAXED)) return alog_durable_data_all(f);
    uint32_t n = DK_MIN(64u, thread_count(f, threads));
    struct rec_job jobs[64];
    int rc = 0;
    uint64_t *older_bits = superseded_bits(f, &rc);
    if (rc) return rc;
    run_jobs(f, jobs, n, older_bits);
    bool stopped = false;
    for (uint32_t i = 0; i < n; i++) {
        stopped |= jobs[i].stopped;
        ALOG_CTR_ADD(f, recovered_redo, jobs[i].redo);
        ALOG_CTR_ADD(f, recovered_undo, jobs[i].undo);
        ALOG_CTR_ADD(f, recovered_discarded, jobs[i].discarded);
    }
#ifdef DAXKIT_TEST_BUILD
    if (!stopped && !keep_entries && alog_test_broken == ALOG_BROKEN_RECOVER_INVALIDATE_FIRST) {
        rc = invalidate_all(f, older_bits); /* the broken order, for the explorer to catch */
        if (!rc) rc = alog_durable_data_all(f);
        free(older_bits);
        return rc;
    }
#endif
    if (!stopped) rc = alog_durable_data_all(f);
    if (!stopped && !rc && !keep_entries) rc = invalidate_all(f, older_bits);
    if (!stopped && !rc && !keep_entries) __atomic_store_n(&f->pents_clear, true, __ATOMIC_RELAXED);
    free(older_bits);
    return stopped ? -EINTR : rc;
}
