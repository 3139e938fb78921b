/* The logged store. Per block (4 KiB .. 2 MiB, by write size; one size per 2 MiB region while the region
 * has entries), under the region's lock:
 *   redo: the new bytes go to the log block; the file is untouched until checkpoint;
 *   undo: the old bytes of the range not yet saved this epoch go to the log block, durably, before the
 *         new bytes go to the file in place.
 * A block keeps one delta [start, start+len) per epoch; a later write merges into the hull, filling any gap
 * from the file. A block's committed entry not checkpointed yet is superseded (redo: a new entry holds its
 * delta too, see block_write_supersede) or retired first (undo; redo past ALOG_SUPERSEDE_CHAIN_MAX). */
#include <errno.h>
#include <string.h>

#include "atomic/alog.h"
#include "common/dk.h"
#include "common/crashpoint.h"
#include "persist/persist.h"

static uint32_t shift_for_bytes(size_t n) {
    uint32_t s = ALOG_BLOCK_SHIFT_MIN;
    while (s < ALOG_BLOCK_SHIFT_MAX && (1ull << s) < n) s++;
    return s;
}

/* Into the entry's log block. With pacing (f->bpace) the next commit reads a redo delta back to apply it:
 * plain stores + write-back keep it in the cache (below ALOG_BPACE_NT_MIN_BYTES), where non-temporal stores
 * sent it to memory and the commit's apply read it back from there. */
static void log_store(struct alog_file *f, struct alog_ent *e, uint32_t a, const void *src, uint32_t n) {
    if (f->bpace && e->redo) dk_store_persistent(e->log + a, src, n, ALOG_BPACE_NT_MIN_BYTES);
    else alog_store(f, e->log + a, src, n);
}

static void log_from_file(struct alog_file *f, struct alog_ent *e, uint32_t a, uint32_t b) {
    if (b <= a) return;
    log_store(f, e, a, f->data + e->dest_off + a, b - a);
    ALOG_CTR_ADD(f, log_data_bytes, b - a);
}

static void log_from_user(struct alog_file *f, struct alog_ent *e, uint32_t a, const void *src, uint32_t n) {
    log_store(f, e, a, src, n);
    ALOG_CTR_ADD(f, log_data_bytes, n);
}

/* A new entry for this epoch holding the write [a, a+n) of the block. */
static int block_write_new(struct alog_file *f, struct alog_leaf *leaf, uint64_t base, uint32_t shift, uint32_t a,
                           const void *src, uint32_t n) {
    struct alog_ent *e;
    int rc = alog_entry_create(f, leaf, base, shift, &e);
    if (rc) return rc;
    if (e->redo) log_from_user(f, e, a, src, n);
    else log_from_file(f, e, a, a + n);
    e->ext_start = a, e->ext_len = n;
    DK_CRASH_POINT("atomic.copy.new.before_publish");
    alog_entry_publish(f, e);
    if (e->redo) return 0; /* made durable by the commit's fence (or fdatasync), with everything else */
    rc = alog_durable_log_range(f, e->p, sizeof *e->p);
    if (rc) return rc;
    DK_CRASH_POINT("atomic.copy.undo.before_file_store");
    if (src) alog_store(f, f->data + base + a, src, n); /* NULL: save the old bytes only (alog_save_old) */
    DK_CRASH_POINT("atomic.copy.undo.after_file_store");
    return 0;
}

/* Merges the write [a, a+n) into this epoch's entry e. */
static int block_write_merge(struct alog_file *f, struct alog_ent *e, uint32_t a, const void *src, uint32_t n) {
    uint32_t lo = e->ext_start, hi = e->ext_start + e->ext_len, b = a + n;
    uint32_t hull_lo = DK_MIN(lo, a), hull_hi = DK_MAX(hi, b);
    if (e->redo) {
        log_from_file(f, e, b, lo);  /* gap left of the old delta (empty unless disjoint) */
        log_from_file(f, e, hi, a);  /* gap right of it */
        log_from_user(f, e, a, src, n);
        DK_CRASH_POINT("atomic.copy.merge.redo.before_extent");
        if (hull_lo != lo || hull_hi != hi) alog_entry_set_extent(f, e, hull_lo, hull_hi - hull_lo);
        return 0;
    }
    if (hull_lo != lo || hull_hi != hi) {
        log_from_file(f, e, hull_lo, lo); /* old bytes not yet saved this epoch */
        log_from_file(f, e, hi, hull_hi);
        DK_CRASH_POINT("atomic.copy.merge.undo.before_fence");
        dk_fence(); /* the saved bytes durable before the extent says so (undo runs on dax/volatile only) */
        alog_entry_set_extent(f, e, hull_lo, hull_hi - hull_lo);
        int rc = alog_durable_log_range(f, e->p, sizeof *e->p);
        if (rc) return rc;
    }
    DK_CRASH_POINT("atomic.copy.merge.undo.before_file_store");
    if (src) alog_store(f, f->data + e->dest_off + a, src, n);
    return 0;
}

/* The write [a, a+n) into a block whose redo entry `old` is committed but not checkpointed: a new entry of
 * this epoch holds old's delta and the write (gaps from the file, which lacks only old's delta), and old
 * stays valid, off the radix slot (old->newer), until the new one is committed and checkpointed -- no
 * apply and no fence in the write (before: apply, two fences). Recovery applies the newest committed
 * entry of a block only (alog_recover.c): it holds every older one's bytes. -ENOSPC: nothing changed. */
static int block_write_supersede(struct alog_file *f, struct alog_leaf *leaf, struct alog_ent *old, uint32_t a,
                                 const void *src, uint32_t n) {
    leaf->slot[old->leaf_slot] = NULL; /* alog_entry_create installs the new entry there */
    struct alog_ent *e;
    int rc = alog_entry_create(f, leaf, old->dest_off, old->shift, &e);
    if (rc) {
        leaf->slot[old->leaf_slot] = old;
        return rc;
    }
    dk_assert(e->redo);
    uint32_t lo = old->ext_start, hi = old->ext_start + old->ext_len, b = a + n;
    log_store(f, e, lo, old->log + lo, hi - lo);
    ALOG_CTR_ADD(f, log_data_bytes, hi - lo);
    log_from_file(f, e, b, lo); /* gaps between old's delta and the write: the file has them */
    log_from_file(f, e, hi, a);
    log_from_user(f, e, a, src, n);
    e->ext_start = DK_MIN(lo, a), e->ext_len = DK_MAX(hi, b) - e->ext_start;
    e->older = old, e->older_count = old->older_count + 1;
    old->newer = e;
    DK_CRASH_POINT("atomic.copy.supersede.before_publish");
    alog_entry_publish(f, e); /* durable with the commit, like any redo entry */
    ALOG_CTR_ADD(f, superseded, 1);
    return 0;
}

/* One block's part of a write; caller holds leaf->mu. -ENOSPC: nothing was changed. */
static int block_write(struct alog_file *f, struct alog_leaf *leaf, uint64_t base, uint32_t shift, uint32_t a,
                       const void *src, uint32_t n) {
    uint32_t s = (uint32_t)((base & ((1ull << ALOG_LEAF_SHIFT) - 1)) >> ALOG_BLOCK_SHIFT_MIN);
    struct alog_ent *e = leaf->slot[s];
    if (e && e->epoch < f->epoch && e->redo && f->policy == ALOG_REDO && src &&
        e->older_count < ALOG_SUPERSEDE_CHAIN_MAX)
        return block_write_supersede(f, leaf, e, a, src, n);
    if (e && e->epoch < f->epoch) {
        int rc = alog_entry_retire(f, e);
        if (rc) return rc;
        ALOG_CTR_ADD(f, sync_checkpoints, 1);
        e = NULL;
    }
    if (e) return block_write_merge(f, e, a, src, n);
    return block_write_new(f, leaf, base, shift, a, src, n);
}

/* The region's block size: its current one while it has entries, else one fitting this write. */
static uint32_t region_shift(struct alog_leaf *leaf, size_t write_bytes) {
    if (leaf->live_count == 0) leaf->granule_shift = shift_for_bytes(write_bytes);
    return leaf->granule_shift;
}

static int copy_piece(struct alog_file *f, uint64_t off, const char *src, size_t n, size_t total, size_t *done) {
    struct alog_leaf *leaf = alog_radix_leaf(f, off, true);
    if (!leaf) return -ENOMEM;
    pthread_mutex_lock(&leaf->mu);
    uint32_t shift = region_shift(leaf, total);
    uint64_t base = dk_round_down(off, 1ull << shift);
    uint32_t a = (uint32_t)(off - base);
    uint32_t chunk = (uint32_t)DK_MIN(n, (1ull << shift) - a);
    int rc = block_write(f, leaf, base, shift, a, src, chunk);
    pthread_mutex_unlock(&leaf->mu);
    *done = rc ? 0 : chunk;
    return rc;
}

/* What every copy checks first: its range inside the mapped file, the engine not broken. */
static int copy_check(const struct alog_file *f, uint64_t off, size_t n) {
    if (off > f->data_len || n > f->data_len - off) return -EFBIG;
    return __atomic_load_n(&f->broken, __ATOMIC_ACQUIRE);
}

int alog_copy_owned(struct alog_file *f, uint64_t off, const void *src, size_t n) {
    int rc = copy_check(f, off, n);
    return rc ? rc : alog_jrnl_copy_owned(f, off, src, n);
}

int alog_copy(struct alog_file *f, uint64_t off, const void *src, size_t n) {
    int rc = copy_check(f, off, n);
    if (rc) return rc;
    if (f->journal) return alog_jrnl_copy_owing(f, off, src, n); /* full: -ENOSPC (only a sync can free it) */
    __atomic_add_fetch(&f->writes_epoch, 1, __ATOMIC_RELAXED);
    ALOG_CTR_ADD(f, copies, 1);
    /* pacing: the copies release committed undo entries (session 18), apply committed redo entries (session 19) */
    if (f->bpace) f->policy == ALOG_UNDO ? alog_bpace_release_undo(f) : alog_redo_pace_copy(f, n);
    const char *s = src;
    bool reclaimed = false;
    while (n) {
        size_t done;
        rc = copy_piece(f, off, s, n, n, &done);
        if (rc == -ENOSPC && !reclaimed) {
            /* Log full: free committed entries now (the checkpoint thread may be behind), then retry. */
            int64_t r = alog_checkpoint_committed(f);
            if (r < 0) return (int)r;
            reclaimed = true;
            continue;
        }
        if (rc) return rc;
        reclaimed = false;
        off += done, n -= done;
        if (s) s += done;
    }
    return 0;
}

int alog_save_old(struct alog_file *f, uint64_t off, size_t n) {
    if (f->policy != ALOG_UNDO || f->journal) return -EINVAL;
    return alog_copy(f, off, NULL, n);
}
