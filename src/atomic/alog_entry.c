/* The life of one index entry: created in DRAM, its log data stored, published (fields, then the word
 * that makes it valid), extended as deltas merge, applied to the file, invalidated, released. */
#include <errno.h>
#include <string.h>

#include "atomic/alog.h"
#include "common/crashpoint.h"
#include "common/dk.h"
#include "persist/persist.h"

int alog_entry_create(struct alog_file *f, struct alog_leaf *leaf, uint64_t base, uint32_t shift,
                      struct alog_ent **out) {
    uint64_t log_off;
    int64_t idx = alog_alloc_entry(f, shift, &log_off);
    if (idx < 0) return (int)idx;
    struct alog_ent *e = &f->ents[idx];
    dk_assert(!e->live);
    e->p = &f->pents[idx];
    e->log = f->area + log_off;
    __atomic_store_n(&e->leaf, leaf, __ATOMIC_RELEASE); /* read without this leaf's lock: checkpoint */
    e->dest_off = base;
    e->log_off = log_off;
    __atomic_store_n(&e->epoch, f->epoch, __ATOMIC_RELAXED);
    __atomic_store_n(&e->gen, e->gen + 1, __ATOMIC_RELAXED);
    e->shift = shift;
    e->ext_start = e->ext_len = 0;
    e->leaf_slot = (uint16_t)((base & ((1ull << ALOG_LEAF_SHIFT) - 1)) >> ALOG_BLOCK_SHIFT_MIN);
    e->redo = f->policy == ALOG_REDO;
    e->older = e->newer = NULL;
    e->older_count = 0;
    e->in_file = false;
    __atomic_store_n(&e->live, true, __ATOMIC_RELEASE); /* last: a checkpoint seeing it live sees the rest */
    if (e->redo && f->bpace) alog_fifo_push(f, e); /* the copies apply it once committed (alog_redo_fifo.c) */
    dk_assert(leaf->slot[e->leaf_slot] == NULL);
    leaf->slot[e->leaf_slot] = e;
    leaf->live_count++;
    __atomic_or_fetch(&f->live_bits[idx / 64], 1ull << (idx % 64), __ATOMIC_RELEASE);
    uint64_t words = (uint64_t)idx / 64 + 1, hi = __atomic_load_n(&f->live_words_hi, __ATOMIC_RELAXED);
    while (words > hi && !__atomic_compare_exchange_n(&f->live_words_hi, &hi, words, true, __ATOMIC_RELAXED,
                                                      __ATOMIC_RELAXED)) {}
    *out = e;
    return 0;
}

/* Stores the entry's fields and the word that makes it valid into its cache line and writes the line back
 * once (a line written back is evicted on some CPUs: storing the word after a separate write-back of the
 * fields would miss). A torn line fails `check` and is ignored by recovery. Undo entries fence first: their
 * log data (old bytes) must be durable before any valid word can be. The caller orders what follows. */
/* The broken variant of the close's skip (review 18 #08; test atomic_pents_clear): a publish leaves the flag
 * set, so the next close returns before the scans that undo or apply this entry. */
static inline bool pents_clear_sticky(void) {
#ifdef DAXKIT_TEST_BUILD
    return alog_test_broken == ALOG_BROKEN_PENTS_CLEAR_STICKY;
#else
    return false;
#endif
}

void alog_entry_publish(struct alog_file *f, struct alog_ent *e) {
    uint64_t word = ALOG_WORD_VALID | (e->redo ? ALOG_WORD_REDO : 0) | e->epoch << ALOG_WORD_EPOCH_SHIFT;
    struct alog_pent img;
    memset(&img, 0, sizeof img);
    img.dest_off = e->dest_off;
    img.log_off = e->log_off;
    img.shift = e->shift;
    img.extent = alog_extent(e->ext_start, e->ext_len);
    img.check = alog_pent_check(word, e->dest_off, e->log_off, e->shift);
    img.word = word;
    if (!e->redo) dk_fence();
    if (__atomic_load_n(&f->pents_clear, __ATOMIC_RELAXED) && !pents_clear_sticky())
        __atomic_store_n(&f->pents_clear, false, __ATOMIC_RELAXED);
    dk_copy_flush(e->p, &img, sizeof img);
    ALOG_CTR_ADD(f, log_meta_bytes, sizeof img);
}

void alog_entry_set_extent(struct alog_file *f, struct alog_ent *e, uint32_t start, uint32_t len) {
    dk_assert((uint64_t)start + len <= 1ull << e->shift);
    e->ext_start = start, e->ext_len = len;
    alog_store_word(&e->p->extent, alog_extent(start, len));
    ALOG_CTR_ADD(f, log_meta_bytes, sizeof(uint64_t));
}

void alog_entry_apply(struct alog_file *f, const struct alog_ent *e) {
    if (!e->ext_len) return;
    alog_store(f, f->data + e->dest_off + e->ext_start, e->log + e->ext_start, e->ext_len);
}

void alog_entry_invalidate(struct alog_file *f, struct alog_ent *e) {
    alog_store_word(&e->p->word, 0);
    ALOG_CTR_ADD(f, log_meta_bytes, sizeof(uint64_t));
}

void alog_entry_release(struct alog_file *f, struct alog_ent *e) {
    uint64_t idx = (uint64_t)(e - f->ents);
    struct alog_leaf *leaf = e->leaf;
    dk_assert(e->live);
    if (leaf->slot[e->leaf_slot] == e) {
        leaf->slot[e->leaf_slot] = NULL;
    } else { /* superseded: off the slot; unlink it from its chain (a detached chain is released whole) */
        if (e->newer && e->newer->older == e) e->newer->older = e->older, e->newer->older_count--;
        if (e->older && e->older->newer == e) e->older->newer = e->newer;
    }
    if (e->in_fifo) alog_fifo_remove(f, e);
    dk_assert(leaf->live_count > 0);
    leaf->live_count--;
    __atomic_store_n(&e->live, false, __ATOMIC_RELEASE);
    __atomic_and_fetch(&f->live_bits[idx / 64], ~(1ull << (idx % 64)), __ATOMIC_RELEASE);
    alog_free_entry(f, idx, e->log_off, e->shift);
}

struct alog_ent *alog_entry_detach_older(struct alog_file *f, struct alog_ent *e) {
    struct alog_ent *chain = e->older;
    for (struct alog_ent *o = chain; o; o = o->older) {
        alog_entry_invalidate(f, o);
        o->in_file = true; /* e's bytes hold its bytes: no copy applies it over e's (alog_redo_fifo.c) */
    }
    e->older = NULL;
    e->older_count = 0;
    return chain;
}

/* Redo: the file gets the committed delta and must hold it durably before the entry stops saying so, and
 * the invalidation must be durable before its log block can be reused. The entries it superseded go first
 * (durably): were e invalid and one of them valid, recovery would put that older delta over e's bytes.
 * Undo: a committed undo entry is obsolete; recovery ignores it whatever its word says, so it can go at once. */
int alog_entry_retire(struct alog_file *f, struct alog_ent *e) {
    dk_assert(e->epoch < f->epoch);
    if (e->redo) {
        alog_entry_apply(f, e);
        DK_CRASH_POINT("atomic.retire.after_apply");
        int rc = alog_durable_data_range(f, e->dest_off + e->ext_start, e->ext_len);
        if (rc) return rc;
        struct alog_ent *chain = alog_entry_detach_older(f, e);
        if (chain) {
            DK_CRASH_POINT("atomic.retire.after_invalidate_older");
            rc = alog_durable_log_all(f);
            if (rc) return rc;
        }
        alog_entry_invalidate(f, e);
        DK_CRASH_POINT("atomic.retire.after_invalidate");
        rc = alog_durable_log_range(f, e->p, sizeof *e->p);
        if (rc) return rc;
        ALOG_CTR_ADD(f, checkpointed_entries, 1);
        while (chain) {
            struct alog_ent *next = chain->older;
            alog_entry_release(f, chain);
            chain = next;
        }
    } else {
        alog_entry_invalidate(f, e);
    }
    alog_entry_release(f, e);
    return 0;
}
