/* The public C API (include/daxkit/atomic.h): argument checks, errno preservation, and the file lock
 * around each engine call. */
#include <errno.h>
#include <stdlib.h>

#include "atomic/alog.h"
#include "common/dk.h"
#include "daxkit/atomic.h"

struct daxkit_atomic {
    struct alog_file *f;
};

DK_EXPORT void daxkit_atomic_options_init(struct daxkit_atomic_options *o) {
    *o = (struct daxkit_atomic_options){
        .version = DAXKIT_ATOMIC_OPTIONS_VERSION,
        .policy = DAXKIT_ATOMIC_HYBRID,
        /* Never redo (session 20): since undo's commit became O(1) (session 18) undo costs no more than redo at
         * any read:write mix here -- at 100% writes redo takes 1.062x undo's instructions and 1.03x its CPU (31
         * interleaved runs) -- and the thresholds that ran redo paid it: 60% at 75-90% writes (5-8%), 100% for
         * windows of writes alone (6%). docs/atomic.md, "Hybrid policy". */
        .redo_write_pct = DAXKIT_ATOMIC_REDO_NEVER,
        .persist = DAXKIT_ATOMIC_PERSIST_ENV,
        .log_bytes = 64ull << 20,
        .checkpoint_interval_us = 1000,
    };
}

DK_EXPORT int daxkit_atomic_map(const char *path, const struct daxkit_atomic_options *o, struct daxkit_atomic **out) {
    if (!path || !out) return -EINVAL;
    DK_ERRNO_SAVE;
    struct daxkit_atomic_options opt;
    int rc = alog_options_resolve(o, &opt);
    struct daxkit_atomic *a = rc ? NULL : calloc(1, sizeof *a);
    if (!rc && !a) rc = -ENOMEM;
    if (!rc) rc = alog_open(path, &opt, &a->f);
    if (rc) free(a);
    else *out = a;
    DK_ERRNO_RESTORE;
    return rc;
}

/* A fork's child holds the parent's handle: the log is the parent's (alog_open.c, drop_inherited). */
static bool inherited(const struct daxkit_atomic *a) { return a->f->inherited; }

DK_EXPORT int daxkit_atomic_copy(struct daxkit_atomic *a, uint64_t off, const void *buf, size_t n) {
    if (!a || (!buf && n)) return -EINVAL;
    if (inherited(a)) return -EBADF;
    if (!n) return 0;
    DK_ERRNO_SAVE;
    struct alog_jowed owed; /* the journal's lines this copy completed: written back after the unlock */
    alog_jrnl_owed_begin(&owed);
    pthread_rwlock_rdlock(&a->f->rw);
    int rc = alog_copy(a->f, off, buf, n);
    pthread_rwlock_unlock(&a->f->rw);
    alog_jrnl_owed_end(&owed);
    DK_ERRNO_RESTORE;
    return rc;
}

DK_EXPORT int daxkit_atomic_read(struct daxkit_atomic *a, uint64_t off, void *buf, size_t n) {
    if (!a || (!buf && n)) return -EINVAL;
    if (inherited(a)) return -EBADF;
    if (!n) return 0;
    pthread_rwlock_rdlock(&a->f->rw);
    int rc = alog_read(a->f, off, buf, n);
    pthread_rwlock_unlock(&a->f->rw);
    return rc;
}

DK_EXPORT int daxkit_atomic_sync(struct daxkit_atomic *a) {
    if (!a) return -EINVAL;
    if (inherited(a)) return -EBADF;
    DK_ERRNO_SAVE;
    int rc = alog_sync(a->f);
    DK_ERRNO_RESTORE;
    return rc;
}

DK_EXPORT int daxkit_atomic_unmap(struct daxkit_atomic *a) {
    if (!a) return -EINVAL;
    DK_ERRNO_SAVE;
    int rc = alog_close(a->f);
    free(a);
    DK_ERRNO_RESTORE;
    return rc;
}

DK_EXPORT uint64_t daxkit_atomic_length(const struct daxkit_atomic *a) { return a ? a->f->data_len : 0; }

DK_EXPORT int daxkit_atomic_get_stats(const struct daxkit_atomic *a, struct daxkit_atomic_stats *s) {
    if (!a || !s) return -EINVAL;
    const struct alog_file *f = a->f;
    const struct alog_counters *c = &f->ctr;
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
    *s = (struct daxkit_atomic_stats){
        .epoch = LOAD(f->epoch), .policy = f->journal ? DAXKIT_ATOMIC_JOURNAL : LOAD(f->policy), .persist_medium = (uint32_t)f->persist_as,
        .copies = LOAD(c->copies), .reads = LOAD(c->reads), .syncs = LOAD(c->syncs),
        .log_data_bytes = LOAD(c->log_data_bytes), .log_meta_bytes = LOAD(c->log_meta_bytes),
        .log_bytes_used = LOAD(f->area_used_bytes), .checkpointed_entries = LOAD(c->checkpointed_entries),
        .sync_checkpoints = LOAD(c->sync_checkpoints), .policy_switches = LOAD(c->policy_switches),
        .recovered_redo = LOAD(c->recovered_redo), .recovered_undo = LOAD(c->recovered_undo),
        .recovered_discarded = LOAD(c->recovered_discarded),
    };
    uint64_t live = 0;
    for (uint64_t w = 0; w < (f->entry_count + 63) / 64; w++) live += (uint64_t)__builtin_popcountll(LOAD(f->live_bits[w]));
    s->entries_live = live;
#undef LOAD
    return 0;
}

void alog_probe_of(const struct daxkit_atomic *a, struct alog_probe *p) {
    const struct alog_file *f = a->f;
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
    *p = (struct alog_probe){.jtail = LOAD(f->j.tail), .jhead = LOAD(f->j.head), .area_bytes = f->area_bytes,
                             .checkpointed = LOAD(f->ctr.checkpointed_entries), .paced = LOAD(f->ctr.paced_entries),
                             .sync_checkpoints = LOAD(f->ctr.sync_checkpoints), .jwraps = LOAD(f->ctr.jwraps)};
#undef LOAD
}
