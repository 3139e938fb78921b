/* The journal (policy DAXKIT_ATOMIC_JOURNAL): an append-only redo log of (offset, length, bytes) records
 * in the log's data area, for small writes. A copy is a bounds check, a copy of header + bytes into the
 * mapped log with plain stores (no write-back, no fence) and an update of the DRAM index (alog_jindex.c);
 * the file is untouched; the index is brought up to date by the next read. Atomicity is per sync, so nothing needs to be durable before it:
 *
 *   sync:        write back [flushed, tail) of the journal, store jend_slot[(H+1) & 1] = tail (with the
 *                size slot), then the ordinary commit: one fence, the epoch word H+1, written back, fence;
 *   checkpoint:  (at a sync once the journal is half full, or when it is full) replay the committed
 *                records in order into the file, make the file durable, then store jend_slot[H & 1] = 0
 *                durably; only then is the area reused;
 *   recovery:    replay [0, jend_slot[H & 1]) in order, make the file durable, then the same reset.
 *
 * Replaying a prefix of records in order again gives the same file (each byte ends as the last record
 * writing it left it), so an interrupted checkpoint or recovery is repaired by running it again. Bytes
 * past jend are never read by recovery, so appends after a commit need no ordering at all. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "atomic/alog.h"
#include "common/crashpoint.h"
#include "common/dk.h"
#include "common/log.h"
#include "persist/persist.h"

#define ALOG_JREC_BYTES_MAX (1u << 20) /* larger copies are cut into records of this size */
#define ALOG_JREC_NT_MIN_BYTES 64u      /* checkpoint: non-temporal stores into the file from one line */
#define ALOG_JREC_NT_APPEND_BYTES 1024u /* append: non-temporal stores into the journal from 1 KiB */

static uint64_t rec_bytes(uint32_t len) { return dk_round_up(sizeof(struct alog_jrec) + len, ALOG_JREC_ALIGN); }

uint64_t alog_jrnl_committed_end(const struct alog_file *f) { return f->hdr->jend_slot[f->hdr->epoch & 1]; }

int alog_jrnl_init(struct alog_file *f) {
    pthread_mutex_init(&f->j.mu, NULL);
    return alog_jindex_init(f);
}

void alog_jrnl_fini(struct alog_file *f) {
    alog_jindex_fini(f);
    pthread_mutex_destroy(&f->j.mu);
}

/* Writes back the journal appended with plain stores since the last write-back (not on pagecache, where
 * the commit's fdatasync of the log does it). Caller holds j.mu or f->rw for writing. */
static void flush_pending(struct alog_file *f) {
    struct alog_journal *j = &f->j;
    if (j->tail > j->flushed && f->persist_as != DK_MEDIUM_PAGECACHE) {
        uint64_t from = dk_round_down(j->flushed, 64);
        dk_flush_range(f->area + from, j->tail - from);
    }
    j->flushed = j->tail;
}

/* Appends one record; caller holds j.mu. -ENOSPC: the journal is full (nothing changed). */
static int append(struct alog_file *f, uint64_t off, const char *src, uint32_t len) {
    struct alog_journal *j = &f->j;
    uint64_t need = rec_bytes(len);
    if (need > f->area_bytes - j->tail) return -ENOSPC;
    struct alog_jrec h = {.off = off, .len = len, .check = alog_jrec_check(j->tail, off, len)};
    char *p = f->area + j->tail;
    if (len >= ALOG_JREC_NT_APPEND_BYTES) {
        /* A large record: non-temporal stores now (no write-back pass over it at sync), after the small
         * records before it are written back, so that `flushed` can move past it. */
        flush_pending(f);
        dk_copy_nt(p, &h, sizeof h);
        dk_copy_nt(p + sizeof h, src, len);
        j->flushed = j->tail + need;
    } else {
        memcpy(p, &h, sizeof h); /* plain stores: written back at sync (alog_jrnl_stage_commit) */
        memcpy(p + sizeof h, src, len);
    }
    __atomic_store_n(&j->tail, j->tail + need, __ATOMIC_RELEASE); /* indexed by the next read (index_upto) */
    __atomic_store_n(&f->ctr.log_data_bytes, f->ctr.log_data_bytes + need, __ATOMIC_RELAXED);
    return 0;
}

int alog_jrnl_copy(struct alog_file *f, uint64_t off, const void *src, size_t n) {
    struct alog_journal *j = &f->j;
    const char *s = src;
    int rc = 0;
    pthread_mutex_lock(&j->mu);
    while (n && !rc) {
        uint32_t len = (uint32_t)DK_MIN(n, (size_t)ALOG_JREC_BYTES_MAX);
        rc = append(f, off, s, len);
        off += len, s += len, n -= len;
    }
    if (!rc) __atomic_store_n(&f->ctr.copies, f->ctr.copies + 1, __ATOMIC_RELAXED); /* under j.mu: no locked add */
    pthread_mutex_unlock(&j->mu);
    return rc;
}

/* In a commit, before the fence that makes it durable: the journal written back and its end staged in
 * the next epoch's slot. Caller holds f->rw for writing. */
void alog_jrnl_stage_commit(struct alog_file *f) {
    struct alog_journal *j = &f->j;
    flush_pending(f);
    alog_store_word(&f->hdr->jend_slot[(f->epoch + 1) & 1], j->tail);
}

/* Replays the records in [0, end) into the file, in order (no fence). Returns records applied. A record
 * that does not check out or does not fit the file stops the replay (said once). */
static uint64_t replay(struct alog_file *f, uint64_t end) {
    uint64_t pos = 0, n = 0;
    while (pos + sizeof(struct alog_jrec) <= end) {
        const struct alog_jrec *h = (const struct alog_jrec *)(f->area + pos);
        if (h->check != alog_jrec_check(pos, h->off, h->len) || rec_bytes(h->len) > end - pos ||
            h->off > f->data_len || h->len > f->data_len - h->off) {
            dk_log("atomic journal record at %llu does not fit the file (truncated since?); replay stops there",
                   (unsigned long long)pos);
            break;
        }
        DK_CRASH_POINT("atomic.journal.before_apply");
        /* non-temporal from one full line up: a random file line is then not read for ownership first */
        dk_store_persistent(f->data + h->off, h + 1, h->len, ALOG_JREC_NT_MIN_BYTES);
        pos += rec_bytes(h->len);
        n++;
    }
    return n;
}

/* Replays the committed journal into the file durably, then empties it durably. Used by checkpoints and
 * recovery alike (the journal's DRAM state is not needed). Returns records applied, or -errno. */
int64_t alog_jrnl_apply_committed(struct alog_file *f) {
    uint64_t end = alog_jrnl_committed_end(f);
    if (!end) return 0;
    uint64_t n = replay(f, end);
    int rc = alog_durable_data_all(f);
    if (rc) return rc;
    DK_CRASH_POINT("atomic.journal.before_reset");
    uint64_t *slot = &f->hdr->jend_slot[f->hdr->epoch & 1];
    alog_store_word(slot, 0);
    rc = alog_durable_log_range(f, slot, sizeof *slot);
    if (rc) return rc;
    ALOG_CTR_ADD(f, checkpointed_entries, n);
    return (int64_t)n;
}

/* Checkpoint of a live journal; caller holds f->rw for writing. Only a journal holding nothing
 * uncommitted can be emptied: otherwise nothing is done. */
int64_t alog_jrnl_checkpoint(struct alog_file *f) {
    struct alog_journal *j = &f->j;
    if (j->tail != alog_jrnl_committed_end(f)) return 0;
    int64_t n = alog_jrnl_apply_committed(f);
    if (n < 0) return n;
    __atomic_store_n(&j->tail, 0, __ATOMIC_RELEASE);
    j->flushed = j->indexed = 0;
    alog_jindex_clear(f);
    return n;
}

bool alog_jrnl_due(const struct alog_file *f) { return f->j.tail >= f->area_bytes / 2; }

/* Indexes the records appended since the last read (caller holds j.mu). Writes do not index: a random
 * block's slot is a cache miss, which a program that never reads back should not pay. */
static int index_upto(struct alog_file *f) {
    struct alog_journal *j = &f->j;
    while (j->indexed < j->tail) {
        const struct alog_jrec *h = (const struct alog_jrec *)(f->area + j->indexed);
        int rc = alog_jindex_add(f, h->off, h->len, j->indexed + sizeof *h);
        if (rc) return rc;
        j->indexed += rec_bytes(h->len);
    }
    return 0;
}

int alog_jrnl_read(struct alog_file *f, uint64_t off, void *dst, size_t n) {
    struct alog_journal *j = &f->j;
    memcpy(dst, f->data + off, n);
    if (!__atomic_load_n(&j->tail, __ATOMIC_ACQUIRE)) return 0; /* empty: the file is the truth */
    pthread_mutex_lock(&j->mu);
    int rc = index_upto(f);
    if (!rc) alog_jindex_overlay(f, off, dst, n);
    pthread_mutex_unlock(&j->mu);
    return rc;
}
