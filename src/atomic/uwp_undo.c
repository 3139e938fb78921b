/* The file-mapping mode of uwp.h (tmpfs, hugetlbfs: the program stores into the file's own mapping, each
 * page's old bytes saved as an undo entry at its first store of an epoch) and write(): the written bytes are
 * in the file, outside the msync epochs, as without daxkit. A rollback of the epoch (munmap or exit without
 * msync, or recovery after a crash) restores the saved pages whole -- so the saved copies of the pages a
 * write() touches get its bytes too, durably, before the write returns: the rollback then restores "the
 * page at the last msync + the write()s since" (review 10, finding 8). Pages not saved this epoch need
 * nothing: a later first store saves them with the written bytes in. */
#include <string.h>

#include "atomic/alog.h"
#include "atomic/uwp_internal.h"
#include "common/dk.h"

/* [a, b) of the file (inside one block of `e`) gets src's bytes in e's undo copy where e's extent has them. */
static int carry(struct alog_file *f, struct alog_ent *e, uint64_t a, uint64_t b, const char *src) {
    uint64_t lo = DK_MAX(a, e->dest_off + e->ext_start), hi = DK_MIN(b, e->dest_off + e->ext_start + e->ext_len);
    if (lo >= hi) return 0;
    char *dst = e->log + (lo - e->dest_off);
    alog_store(f, dst, src + (lo - a), hi - lo);
    return alog_durable_log_range(f, dst, hi - lo);
}

/* The file whose block mutex this thread holds or is taking in uwp_undo_file_written: a signal handler's write
 * of it must not borrow the carry's f->rw then (uwp_write.c). */
static __thread const struct dk_uwp *uwp_undo_in_block_of;

bool uwp_undo_in_block(const struct dk_uwp *u) { return uwp_undo_in_block_of == u; }

void uwp_undo_file_written(struct dk_uwp *u, uint64_t off, const char *buf, uint64_t n) {
    struct alog_file *f = u->f;
    if (off >= f->data_len) return;
    n = DK_MIN(n, f->data_len - off);
    /* f->rw for writing (the caller's): no page saved (the handler) and no commit (msync) meanwhile; a page
     * saved after the write reached the file already holds its bytes. */
    for (uint64_t a = off; a < off + n;) {
        struct alog_leaf *leaf = alog_radix_leaf(f, a, false);
        uint64_t region_end = dk_round_down(a, 1ull << ALOG_LEAF_SHIFT) + (1ull << ALOG_LEAF_SHIFT);
        if (!leaf) { /* no entry in this 2 MiB region */
            a = DK_MIN(off + n, region_end);
            continue;
        }
        const struct dk_uwp *outer = uwp_undo_in_block_of; /* a nested carry's thread is in none */
        uwp_undo_in_block_of = u;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        pthread_mutex_lock(&leaf->mu);
        uint64_t block = 1ull << leaf->granule_shift, base = dk_round_down(a, block);
        uint64_t b = DK_MIN(off + n, base + block);
        struct alog_ent *e = leaf->slot[(base & ((1ull << ALOG_LEAF_SHIFT) - 1)) >> ALOG_BLOCK_SHIFT_MIN];
        int rc = e && !e->redo && e->epoch == f->epoch ? carry(f, e, a, b, buf + (a - off)) : 0;
        pthread_mutex_unlock(&leaf->mu);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        uwp_undo_in_block_of = outer;
        if (rc) __atomic_store_n(&u->error, rc, __ATOMIC_RELEASE); /* the epoch can no longer be rolled back right */
        a = b;
    }
}
