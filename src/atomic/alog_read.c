/* Reads: the file mapping, overlaid with the deltas of redo entries (uncommitted, or committed and not
 * yet checkpointed). Under undo logging the file already holds the newest bytes, so a read is one memcpy
 * and takes no lock: that is why undo wins when reads dominate. */
#include <errno.h>
#include <string.h>

#include "atomic/alog.h"
#include "common/dk.h"

/* Copies the part of e's delta that falls in [off, off+n) over dst (which holds file bytes for it). */
static void overlay(const struct alog_ent *e, uint64_t off, char *dst, uint64_t n) {
    uint64_t lo = DK_MAX(off, e->dest_off + e->ext_start);
    uint64_t hi = DK_MIN(off + n, e->dest_off + e->ext_start + e->ext_len);
    if (lo < hi) memcpy(dst + (lo - off), e->log + (lo - e->dest_off), hi - lo);
}

static void read_region_redo(struct alog_file *f, struct alog_leaf *leaf, uint64_t off, char *dst, uint64_t n) {
    pthread_mutex_lock(&leaf->mu);
    memcpy(dst, f->data + off, n);
    if (leaf->live_count) {
        uint64_t bs = 1ull << leaf->granule_shift;
        for (uint64_t b = dk_round_down(off, bs); b < off + n; b += bs) {
            const struct alog_ent *e = leaf->slot[(b & ((1ull << ALOG_LEAF_SHIFT) - 1)) >> ALOG_BLOCK_SHIFT_MIN];
            if (e && e->redo) overlay(e, off, dst, n);
        }
    }
    pthread_mutex_unlock(&leaf->mu);
}

int alog_read(struct alog_file *f, uint64_t off, void *dst, size_t n) {
    if (off > f->data_len || n > f->data_len - off) return -EINVAL;
    if (f->journal) {
        ALOG_CTR_ADD(f, reads, 1);
        return alog_jrnl_read(f, off, dst, n);
    }
    __atomic_add_fetch(&f->reads_epoch, 1, __ATOMIC_RELAXED);
    ALOG_CTR_ADD(f, reads, 1);
    char *d = dst;
    if (f->policy == ALOG_UNDO) {
        memcpy(d, f->data + off, n);
        return 0;
    }
    while (n) {
        uint64_t piece = DK_MIN(n, dk_round_down(off, 1ull << ALOG_LEAF_SHIFT) + (1ull << ALOG_LEAF_SHIFT) - off);
        struct alog_leaf *leaf = alog_radix_leaf(f, off, false);
        if (leaf) read_region_redo(f, leaf, off, d, piece);
        else memcpy(d, f->data + off, piece);
        off += piece, d += piece, n -= piece;
    }
    return 0;
}
