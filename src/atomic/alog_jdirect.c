/* Copies past the committed state (session 17). A DAXKIT_ATOMIC file's journal (tracked size, alog_size.c)
 * copies the bytes at and past j.direct_from straight into the file instead of appending records:
 *   - no committed state lives there: direct_from is at least the size of the last commit (recovery and the
 *     clean close cut the file to the committed size, so a crashed epoch's bytes past it vanish), and
 *   - no record covers them: direct_from is at least the end of every record appended since the open (an
 *     applier replaying an older record later never puts older bytes over them).
 * So a program that writes a file and then fsyncs -- 64 MiB written before the first fsync -- no longer
 * grows the journal to twice its data and applies it all again later: the bytes go to the file once, and the
 * commit makes them durable with its first fence (large copies: non-temporal stores; small ones: plain
 * stores, kept as one contiguous range the commit writes back, bounded as the journal's records are: past
 * f->junflushed_max bytes the next small copy writes back the range's whole lines first). Fence and
 * volatile media only: on pagecache the commit would need the file's own fdatasync (alog_jdirect_init).
 * Caller holds what it holds for a journal copy or commit (through the route: route->rw for writing). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "atomic/alog.h"
#include "common/dk.h"
#include "persist/persist.h"

#define ALOG_JDIRECT_NT_MIN_BYTES 1024u /* non-temporal from 1 KiB, as the journal's unpaced records */

/* After recovery (the journal is empty): everything from the committed size on, for a tracked size. */
void alog_jdirect_init(struct alog_file *f) {
#ifdef DAXKIT_TEST_BUILD
    /* The broken variant for the differential tester (review 17, finding 6): the library's, by environment */
    const char *b = getenv("DAXKIT_TEST_ATOMIC_JDIRECT_UNDER_RECORD");
    if (b && *b == '1') alog_test_broken = ALOG_BROKEN_JDIRECT_UNDER_RECORD;
    /* Crash tests: every copy a record again, so that they reach the journal's apply and pace sites as often as
     * before session 17 (review 17, finding 9) */
    const char *d = getenv("DAXKIT_TEST_ATOMIC_JDIRECT");
    bool allowed = !(d && *d == '0');
#else
    const bool allowed = true;
#endif
    bool on = allowed && f->journal && f->track_size && f->persist_as != DK_MEDIUM_PAGECACHE;
    f->j.direct_from = on ? f->size_pending : UINT64_MAX;
    f->j.dpend_lo = f->j.dpend_hi = 0;
}

static void write_back_pending(struct alog_file *f) {
    struct alog_journal *j = &f->j;
    if (j->dpend_hi > j->dpend_lo) dk_flush_range(f->data + j->dpend_lo, j->dpend_hi - j->dpend_lo);
    j->dpend_lo = j->dpend_hi = 0;
}

/* The sync's write-back bounded for appends too (review 17, finding 3; the journal's flush_past_bound): once
 * f->junflushed_max bytes are pending, their whole lines are written back now, before this copy's stores (no
 * fence: the commit's completes them); the range's last, partial line stays pending for the next append. A
 * log appended in 128 B pieces with an fsync every 1,000 wrote back 125 KiB in each sync before. */
static void write_back_past_bound(struct alog_file *f) {
    struct alog_journal *j = &f->j;
    if (!f->junflushed_max || j->dpend_hi - j->dpend_lo < f->junflushed_max) return;
    uint64_t to = dk_round_down(j->dpend_hi, DK_CACHELINE_BYTES);
    if (to <= j->dpend_lo) return;
    dk_flush_range(f->data + j->dpend_lo, to - j->dpend_lo);
    j->dpend_lo = to;
}

void alog_jdirect_copy(struct alog_file *f, uint64_t off, const char *src, size_t n) {
    struct alog_journal *j = &f->j;
    __atomic_store_n(&f->ctr.direct_bytes, f->ctr.direct_bytes + n, __ATOMIC_RELAXED); /* no locked add */
    if (n >= ALOG_JDIRECT_NT_MIN_BYTES) {
        dk_copy_nt(f->data + off, src, n); /* durable at the commit's fence */
        return;
    }
    /* Appends are contiguous: one range to write back at the commit. A copy elsewhere writes back the
     * range before it first, so the range never holds a line nobody stored to. */
    if (j->dpend_hi == j->dpend_lo || off > j->dpend_hi || off + n < j->dpend_lo) {
        write_back_pending(f);
        j->dpend_lo = j->dpend_hi = off;
    }
    write_back_past_bound(f);
    memcpy(f->data + off, src, n);
    j->dpend_lo = DK_MIN(j->dpend_lo, off);
    j->dpend_hi = DK_MAX(j->dpend_hi, off + n);
}

/* In a commit, before its first fence: the small copies' bytes written back, and from now on the size this
 * commit records is committed state (no direct copy below it). */
void alog_jdirect_stage_commit(struct alog_file *f) {
#ifdef DAXKIT_TEST_BUILD
    if (alog_test_broken == ALOG_BROKEN_JDIRECT_NOT_WRITTEN_BACK) f->j.dpend_lo = f->j.dpend_hi = 0;
#endif
    write_back_pending(f);
    if (f->j.direct_from != UINT64_MAX) f->j.direct_from = DK_MAX(f->j.direct_from, f->size_pending);
}
