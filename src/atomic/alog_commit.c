/* Commit: every entry of epoch H becomes committed when the header's epoch word says H + 1. The work is
 * one fence (dax) or one fdatasync of the log (pagecache) plus one 8-byte store, whatever the number of
 * dirty blocks. The next epoch's policy is chosen here from the read/write counters (of this epoch, or of
 * the epochs since the last decision when they were short: see decide()); a change checkpoints everything
 * first, so one file never holds entries of both kinds. */
#include <errno.h>

#include "atomic/alog.h"
#include "common/crashpoint.h"
#include "common/dk.h"
#include "persist/persist.h"

uint32_t alog_policy_next(uint32_t current, uint32_t mode, uint32_t redo_write_pct, uint64_t reads, uint64_t writes) {
    if (mode == DAXKIT_ATOMIC_UNDO) return ALOG_UNDO;
    if (mode == DAXKIT_ATOMIC_REDO) return ALOG_REDO;
    if (reads + writes == 0) return current;
    /* writes / (reads + writes) >= pct / 100, in integers without division (Libnvmio's division truncated
     * the ratio to 0 and never switched). Hysteresis: redo stays down to pct - ALOG_POLICY_HYSTERESIS_PCT.
     * Without it a mix at the threshold flipped at every other decision (measured: 16 switches in 800
     * syncs at 40% writes), each flip a full checkpoint. */
    if (current != ALOG_REDO) return writes * 100 >= (uint64_t)redo_write_pct * (reads + writes) ? ALOG_REDO : ALOG_UNDO;
    uint32_t stay_pct = redo_write_pct > ALOG_POLICY_HYSTERESIS_PCT ? redo_write_pct - ALOG_POLICY_HYSTERESIS_PCT : 0;
    return writes && writes * 100 >= (uint64_t)stay_pct * (reads + writes) ? ALOG_REDO : ALOG_UNDO;
}

/* The counters since the last decision decide once they cover ALOG_POLICY_WINDOW_ACCESSES accesses (a
 * program syncing every few operations would otherwise flip policy on noise, paying a full checkpoint at
 * each flip); until then the policy stays. Caller holds f->rw for writing. */
static uint32_t decide(struct alog_file *f) {
    uint64_t r = f->reads_epoch, w = f->writes_epoch;
    if (f->policy_mode == DAXKIT_ATOMIC_HYBRID && r + w < ALOG_POLICY_WINDOW_ACCESSES) return f->policy;
    f->reads_epoch = f->writes_epoch = 0;
    return alog_policy_next(f->policy, f->policy_mode, f->redo_write_pct, r, w);
}

/* The header's commit line (the epoch word, the size and journal-end slots, jhead): written back, then fetched
 * again for writing -- clwb evicts on this CPU (docs/atomic.md, session 11) -- so that the next store into it
 * (the epoch word after the fence, the next commit's slots) does not wait for memory. Session 17: the slots
 * were each stored with their own write-back, so every commit wrote the line back three times and fetched it
 * from memory twice on its critical path. A prefetch is a hint: nothing for the crash-state explorer. Only
 * where the line holds slots (the journal, a tracked size): the C API's per-block engine is as before. */
static bool commit_line_slots(const struct alog_file *f) { return f->journal || f->track_size; }

static void commit_line_fetch(const struct alog_file *f) {
    if (commit_line_slots(f)) __asm__ volatile("prefetchw %0" : : "m"(f->hdr->epoch));
}

static void commit_line_back(struct alog_file *f) {
    if (!commit_line_slots(f)) return;
#ifdef DAXKIT_TEST_BUILD
    if (alog_test_broken == ALOG_BROKEN_COMMIT_LINE_NOT_WRITTEN_BACK) return; /* only the epoch's write-back */
#endif
    dk_flush_range(&f->hdr->epoch, sizeof f->hdr->epoch);
    commit_line_fetch(f);
}

static int commit_epoch(struct alog_file *f) {
    /* The slots of the next epoch (plain stores into the commit line), written back once, durable with the
     * fence below (undo runs on fence media only) or the log's fdatasync. */
    alog_size_stage_commit(f);
    uint64_t paced = 0; /* the journal: the head past the records that copies applied (pacing) */
    if (f->journal) alog_jrnl_stage_commit(f);
    commit_line_back(f);
    if (f->journal) paced = alog_jrnl_pace_begin(f); /* their non-temporal stores into the file: durable with the fence below */
    /* Redo with pacing: the entries the copies applied are durable with the fence below; then A, the oldest
     * epoch with an entry not applied, goes into the epoch word's line (alog_redo_fifo.c). No entry is touched. */
    uint64_t applied = alog_redo_applied_next(f);
#ifdef DAXKIT_TEST_BUILD
    if (applied && alog_test_broken == ALOG_BROKEN_REDO_APPLIED_EARLY) /* durable before the applied bytes */
        alog_store_word(&f->hdr->redo_applied, alog_applied_word(applied));
#endif
    /* Redo: log data and entries durable. Undo: entries were durable before their file stores; the file
     * stores themselves must be durable now. */
    int rc = f->policy == ALOG_REDO ? alog_durable_log_all(f) : alog_durable_data_all(f);
    if (!rc && paced) alog_jrnl_pace_head(f, paced); /* same line as the epoch word: durable with it */
    if (!rc && applied) alog_redo_applied_store(f, applied); /* likewise */
    if (!rc) DK_CRASH_POINT("atomic.sync.before_epoch");
    if (!rc) alog_store_word(&f->hdr->epoch, f->epoch + 1);
    if (!rc) rc = alog_durable_log_range(f, &f->hdr->epoch, sizeof f->hdr->epoch);
    if (!rc) commit_line_fetch(f); /* for the next commit's slots */
    if (paced) alog_jrnl_pace_done(f, paced, rc == 0);
    if (rc) return rc;
    if (applied) f->redo_applied = applied; /* durable: the copies release the entries below it */
    ALOG_CTR_ADD(f, log_meta_bytes, sizeof(uint64_t));
    DK_CRASH_POINT("atomic.sync.after_epoch");
    __atomic_store_n(&f->epoch, f->epoch + 1, __ATOMIC_RELEASE);
    if (f->journal) alog_jrnl_committed(f);
    return 0;
}

static int switch_policy(struct alog_file *f, uint32_t next) {
    int64_t n = alog_checkpoint_committed(f);
    if (n < 0) return (int)n;
    DK_CRASH_POINT("atomic.sync.switch.after_checkpoint");
    __atomic_store_n(&f->policy, next, __ATOMIC_RELAXED); /* read by get_stats without the lock */
    ALOG_CTR_ADD(f, policy_switches, 1);
    return 0;
}

int alog_sync(struct alog_file *f) {
    pthread_rwlock_wrlock(&f->rw);
    int rc = alog_sync_locked(f);
    pthread_rwlock_unlock(&f->rw);
    /* The journal, and the per-block engine with pacing: the thread only once a quarter full */
    if (!rc && (f->journal ? alog_jrnl_due(f) : !f->bpace || alog_bpace_due(f))) alog_ckpt_kick(f);
    return rc;
}

int alog_sync_locked(struct alog_file *f) {
    int rc = __atomic_load_n(&f->broken, __ATOMIC_ACQUIRE);
    if (!rc) rc = commit_epoch(f);
    if (!rc && f->journal) {
        ALOG_CTR_ADD(f, syncs, 1);
        if (alog_jrnl_due(f) && !f->ckpt_started) rc = (int)DK_MIN(0, alog_jrnl_checkpoint(f)); /* no thread */
        return rc;
    }
    if (!rc) {
        ALOG_CTR_ADD(f, syncs, 1);
        uint32_t next = decide(f);
        if (f->persist_as == DK_MEDIUM_PAGECACHE) next = ALOG_REDO; /* undo needs ordered in-place stores */
        if (next != f->policy) rc = switch_policy(f, next);
    }
    return rc;
}
