/* The journal (policy DAXKIT_ATOMIC_JOURNAL): a circular redo log of (offset, length, bytes) records in
 * the log's data area, for small writes. A copy is a bounds check and a copy of header + bytes into the
 * mapped log with plain stores (no fence; once a block's worth of records is not written back, a copy writes
 * them back: flush_past_bound); the file is untouched; the DRAM index (alog_jindex.c) is brought up to date
 * by the next read. Atomicity is per sync, so nothing needs to be
 * durable before it. Positions are logical (they only grow; area offset = position % area size); a
 * record never wraps (a pad record fills the end of the area).
 *
 *   sync:        write back the lines a copy's thread still owes ("Owed lines" below) and [flushed, tail) of the
 *                journal (under a block and a record), store jend_slot[(H+1) & 1] = tail (with the size slot),
 *                then the ordinary commit: one fence, the epoch word H+1, written back, fence.
 *                With pacing, jhead past the records copies applied is stored after the first fence, in
 *                the epoch word's line. Nothing else: applying the records is not the sync's work;
 *   pacing:      (on by default; DAXKIT_ATOMIC_PACE, fence media only) each copy of 1 KiB or more
 *                applies up to twice its size of committed records from the head on (pace_write), so the
 *                journal stays about two epochs long and no op pays a burst; the thread below is then only
 *                the fallback;
 *   checkpoint:  the checkpoint thread, kicked by a sync once the journal is a quarter full (half with pacing:
 *                alog_jrnl_due), replays committed
 *                records from the head in order into the file, in steps; per step it makes the file
 *                durable, then stores hdr->jhead past the step durably: only then is that space reused.
 *                Past 3/4 full a writer applies about its own size (unless the thread is applying), and
 *                one that finds no room applies steps itself (or, with nothing committed to apply, gets
 *                -ENOSPC); without the thread (interval 0) the sync applies once half full;
 *   recovery:    replay [jhead, jend_slot[H & 1]) in order, make the file durable, then jhead = jend.
 *
 * Replaying a prefix of records in order again gives the same file (each byte ends as the last record
 * writing it left it), so an interrupted checkpoint or recovery is repaired by running it again. Bytes
 * past jend are never read by recovery, so appends after a commit need no ordering at all. */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "atomic/alog.h"
#include "common/crashpoint.h"
#include "common/dk.h"
#include "common/log.h"
#include "persist/persist.h"

#define ALOG_JREC_BYTES_MAX (1u << 20) /* larger copies are cut into records of this size */
#define ALOG_JREC_NT_MIN_BYTES 64u      /* checkpoint: non-temporal stores into the file from one line */
#define ALOG_JREC_NT_APPEND_BYTES 1024u /* append: non-temporal stores into the journal from 1 KiB */
#define ALOG_JREC_NT_PACED_BYTES (32u << 10) /* ... with pacing, from 32 KiB (the next writes read them back) */
#define ALOG_JPACE_MIN_BYTES 1024u      /* pacing: copies of 1 KiB and more apply */
#define ALOG_JAPPLY_STEP_BYTES (256u << 10) /* a checkpoint step: records applied per head advance */
#define ALOG_JROOM_STEP_BYTES (16u << 10)   /* a writer short of room applies at least this much */
#define ALOG_JPREFAULT_BYTES_MAX (256ull << 20) /* log pages mapped at open, ahead of the first lap */
#define ALOG_JWINDOW_BYTES (2ull << 20) /* a commit past this area offset goes back to the start (window_wrap) */
#define ALOG_JCLAIM_BYTES 256u /* journal lines claimed for writing ahead of the tail (claim_ahead) */
#define ALOG_JUNFLUSHED_MAX_BYTES 4096u /* records not written back past this: the next copy writes them back */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static uint64_t rec_bytes(uint32_t len) { return dk_round_up(sizeof(struct alog_jrec) + len, ALOG_JREC_ALIGN); }

static char *at(const struct alog_file *f, uint64_t pos) { return f->area + pos % f->area_bytes; }

/* at(f, pos + step) from a = at(f, pos), without the 64-bit division: for walks along the journal (a record
 * never wraps, so a record or line walk steps at most to the area's end, which is the next lap's start). */
static const char *at_next(const struct alog_file *f, const char *a, uint64_t step) {
    a += step;
    return a >= f->area + f->area_bytes ? a - f->area_bytes : a;
}

/* How many bytes of complete lines a copy hands out at once: each hand-out costs its thread one wait (at its
 * next locked instruction), so fewer, larger ones cost less, and the sync finds at most this much owed or
 * pending. Measured (session 20, 128 B copies; the C API's sync after 1,000 blocks against 1; CPU per write
 * through the route with an fsync every 100 / 1,000 against main's library, same runs): 64 -- 1.23x, +18% /
 * +20%; 256 -- 1.03x, +8% / +13%; 512 -- 1.07-1.12x, +2-5% / +5-6%; 1,024 and 2,048 -- 1.19-1.24x, +1-3%. */
#define ALOG_JOWED_MIN_BYTES 512u
/* From how many bytes of records in an epoch its copies hand lines out (at most the bound, ALOG_JUNFLUSHED_MAX_BYTES).
 * Session 21 (issue 4 T3 below the bound): until the first hand-out the sync writes back the whole epoch, so the
 * C API's sync after N 128 B copies grew with N up to the bound -- 424 ns at 1 block, 522 at 10, 719 at 20, 935
 * at 29 (2.2x), flat past it. From 1,536 bytes: 526 at 10 and at most 614 (1.45x, at 11 blocks: the first
 * hand-out's 24 lines, which the sync's lock waits for), ~360-550 from 12 blocks on. Lower starts make T2's
 * epoch (10 records of 144 bytes: 1,440 bytes) hand out too -- one more wait per 10 writes: CPU per 128 B
 * write with an fsync every 10, against main in the same runs, 1,536: +0.5% (95% CI 0-1.5%, noise); 1,024:
 * +1.5% (0.5-2.6%) for a 1.29x worst case; 768 (with a 768-byte hand-out): +3.1%; 512: +5.1%; every copy
 * handing out its own lines: +22% (docs/atomic.md, journal section, session 21). The price is paid by epochs
 * between 1,536 bytes and the bound, which now hand out: +2.6-4.3% CPU per 128 B write with an fsync every
 * 16-28 -- a trade of CPU for the sync's wall time there, as session 20's past the bound. */
#define ALOG_JOWED_FROM_BYTES 1536u

/* A size constant, or in test builds the variable `name` when set (benchmarks: other sizes, one binary) */
static uint64_t tunable_bytes(const char *name, uint64_t bytes) {
#ifdef DAXKIT_TEST_BUILD
    const char *t = getenv(name);
    if (t && *t) return strtoull(t, NULL, 0);
#endif
    (void)name;
    return bytes;
}

uint64_t alog_jrnl_unapplied(const struct alog_phdr *h) {
    uint64_t end = h->jend_slot[h->epoch & 1];
    return end > h->jhead ? end - h->jhead : 0;
}

int alog_jrnl_init(struct alog_file *f) {
    f->j.direct_from = UINT64_MAX; /* every copy a record, unless alog_jdirect_init says otherwise */
    f->j.owe_min = tunable_bytes("DAXKIT_TEST_ATOMIC_JOWED_MIN", ALOG_JOWED_MIN_BYTES);
    f->j.owe_from = DK_MIN(tunable_bytes("DAXKIT_TEST_ATOMIC_JOWED_FROM", ALOG_JOWED_FROM_BYTES), alog_jrnl_unflushed_max());
    pthread_mutex_init(&f->j.mu, NULL);
    pthread_mutex_init(&f->j.apply_mu, NULL);
    return alog_jindex_init(f);
}

void alog_jrnl_fini(struct alog_file *f) {
    alog_jindex_fini(f);
    pthread_mutex_destroy(&f->j.apply_mu);
    pthread_mutex_destroy(&f->j.mu);
}

/* Writes back the journal's [from, to) (not on pagecache, where the commit's fdatasync of the log does it). */
static void write_back(const struct alog_file *f, uint64_t from, uint64_t to) {
    for (uint64_t pos = from; pos < to && f->persist_as != DK_MEDIUM_PAGECACHE;) {
        uint64_t end = DK_MIN(to, (pos / f->area_bytes + 1) * f->area_bytes); /* up to the wrap */
        dk_flush_range(at(f, pos), end - pos);
        pos = end;
    }
}

/* Writes back the journal appended with plain stores, from `flushed` up to `to`. Caller holds j.mu or f->rw
 * for writing. */
static void flush_upto(struct alog_file *f, uint64_t to) {
    struct alog_journal *j = &f->j;
    write_back(f, j->flushed, to);
    if (to > j->flushed) j->flushed = to;
}

static void flush_pending(struct alog_file *f) { flush_upto(f, f->j.tail); }

/* A pad record from the tail to the end of the area (room made by the caller, who holds j.mu). Only its
 * header is ever read: only that is written back. */
static void append_pad(struct alog_file *f, bool window) {
    struct alog_journal *j = &f->j;
    uint64_t pad = f->area_bytes - j->tail % f->area_bytes;
    uint32_t pad_len = (uint32_t)(pad - sizeof(struct alog_jrec));
    struct alog_jrec ph = {.off = ALOG_JPAD, .len = pad_len, .check = alog_jrec_check(j->tail, ALOG_JPAD, pad_len)};
    memcpy(at(f, j->tail), &ph, sizeof ph);
    bool header_back = true;
#ifdef DAXKIT_TEST_BUILD
    header_back = !(window && alog_test_broken == ALOG_BROKEN_WINDOW_PAD_NOT_WRITTEN_BACK);
#endif
    (void)window;
    flush_upto(f, j->tail + (header_back ? sizeof ph : 0));
    j->flushed = j->tail + pad;
    __atomic_store_n(&j->tail, j->tail + pad, __ATOMIC_RELEASE);
    __atomic_store_n(&f->ctr.jwraps, f->ctr.jwraps + 1, __ATOMIC_RELAXED); /* under j.mu: no locked add */
}

uint64_t alog_jrnl_window(const struct alog_file *f) {
#ifdef DAXKIT_TEST_BUILD
    const char *t = getenv("DAXKIT_TEST_ATOMIC_JWINDOW"); /* crash tests: windows their few KiB of copies pass */
    if (t && *t) return strtoull(t, NULL, 0);
#endif
    return DK_MIN(ALOG_JWINDOW_BYTES, f->area_bytes / 4);
}

/* The window (session 9): a commit that finds the tail past f->jwindow in the area, and the head far enough
 * into the same lap, ends the lap with a pad record, so that the next records go to the area's start again.
 * A journal kept short (pacing: about two epochs; the thread: a quarter of the area) then cycles through
 * the same few pages instead of moving into a page not written for a whole lap every 2 MiB (on the 256 MiB
 * journal of the C API benchmark: 98 such ops per 50,000 4 KiB writes, +130-220 ns each, a few of them
 * slow). The pad is part of this epoch: its header is written back here and made durable by the commit's
 * fence; recovery and the appliers step over it, free. Room: the next records reuse the area's start up to
 * the head, so the head must be `room` into the lap -- what the next epochs need before an applier moves
 * the head on (pacing: half a window; the thread: what makes it due, and a window more). A record that finds
 * no room anyway (a large epoch) goes through make_room's full-journal path, which applies committed records
 * and, with them, this committed pad: the window never costs an epoch capacity. (So the room rule is for
 * speed, not safety: make_room alone keeps records off space not applied durably.) Caller holds f->rw for
 * writing (a commit). */
static void window_wrap(struct alog_file *f) {
    struct alog_journal *j = &f->j;
    uint64_t off = j->tail % f->area_bytes, lap = j->tail - off;
    if (!f->jwindow || off < f->jwindow) return;
    uint64_t room = f->jpace ? f->jwindow / 2 : f->area_bytes / (f->ckpt_started ? 4 : 2) + f->jwindow;
    uint64_t head = __atomic_load_n(&j->head, __ATOMIC_ACQUIRE); /* only grows meanwhile (the thread) */
    if (head < lap || head - lap < room) return;
    DK_CRASH_POINT("atomic.journal.window.before_pad");
    uint64_t pad = f->area_bytes - off;
    append_pad(f, true);
    __atomic_store_n(&j->wpad_bytes, pad, __ATOMIC_RELAXED);
    __atomic_store_n(&j->wpad_end, j->tail, __ATOMIC_RELEASE);
    __atomic_store_n(&f->ctr.jwraps_early, f->ctr.jwraps_early + 1, __ATOMIC_RELAXED);
}

uint64_t alog_jrnl_unflushed_max(void) { /* benchmarks: the bound against none, one binary */
    return tunable_bytes("DAXKIT_TEST_ATOMIC_JUNFLUSHED", ALOG_JUNFLUSHED_MAX_BYTES);
}

/* The sync's write-back bounded (session 17; issue 4: the sync's cost independent of the dirty blocks).
 * Records stored plainly (all under 32 KiB with pacing) were written back by the sync, so a sync cost
 * ~240 ns per 4 KiB copied since the last one (4 KiB copies into 1,000 blocks: 240 us). Once f->junflushed_max
 * bytes of records are not written back, a copy writes them back (up to the tail's line, which the next
 * record still fills) before it stores its own: the sync writes back less than the bound and one record,
 * whatever the epoch's size. No fence here (the commit's completes them). Where in the copy is measured
 * (CPU per 4 KiB write through the route, fsync every 10, same run): after the pacing apply and before the
 * record, +6-8%; before the apply, +13% (the write-backs slow the apply's reads from memory); after the
 * record, +17% (the unlock right after waits for them). The bound is one block: 8 and 16 KiB cost 1-3%
 * less CPU but let the sync write back up to 3-5 blocks. An epoch under the bound -- 128 B writes with an
 * fsync every 10, ~1.4 KiB -- never gets here. Caller holds j.mu or f->rw for writing. */
static void flush_past_bound(struct alog_file *f) {
    struct alog_journal *j = &f->j;
    if (f->junflushed_max && j->tail - j->flushed >= f->junflushed_max)
        flush_upto(f, dk_round_down(j->tail, DK_CACHELINE_BYTES));
}

/* Owed lines (session 20; issue 4 T3: the sync's cost independent of the dirty blocks, for 128 B copies too).
 * The bound above leaves a sync up to 4 KiB of records to write back: 128 B copies into 1,000 blocks cost a
 * sync ~1.7x the one after 1 block (358 -> 624 ns), all of it the wait for those lines. Written back inside
 * the copies, they cost the copies the wait instead (at the locked instruction that ends the copy: session
 * 18's tighter bound, +15-20% CPU per 128 B write). So once an epoch has passed ALOG_JOWED_FROM_BYTES (1,536
 * bytes since session 21; the bound before, which left the sync up to 4 KiB below it), a copy hands the
 * journal lines it completed to its thread, and the thread writes them back after its last lock release
 * (alog_jrnl_owed_end): the wait then falls at the thread's next locked instruction -- its next copy's lock
 * -- and overlaps with whatever the program does in between.
 * `flushed` moves past handed lines at once (the next copies and the bound need not look at them), so they
 * are recorded as owed: [owe_lo, owe_hi), by owe_owner. Moving `flushed` without that record -- "moved at
 * the next copy" -- is unsafe: a thread preempted between its copy and its write-back leaves lines below
 * `flushed` that another thread's sync would commit unwritten (the broken variant ALOG_BROKEN_JOWED_UNTRACKED,
 * explore_atomic_journal-owed-untracked). With the record:
 *   - the owner's next copy confirms them: it issued their write-back before that copy's lock, whose locked
 *     instruction waited for it (x86: clwb and clflushopt are ordered by locked instructions), so they are
 *     written back, not just issued -- for every thread that takes the lock after it;
 *   - a sync writes back whatever is still owed itself, within its fence (owed_commit): a line written back
 *     twice is only written back; a thread exiting after its write-back runs locked instructions of its own;
 *   - one owner at a time: while lines are owed, other threads' copies hand nothing out (their lines stay
 *     under the bound above, as before);
 *   - the owner's write-back touches the log's mapping outside every lock, so a close waits for owe_busy to
 *     drop first (alog_jrnl_owed_quiesce), and a fork child whose thread still owes cancels its records (the
 *     lines are the parent's to write back) and gets anonymous memory where the log was mapped, so a write-back
 *     already under way ends on memory, not on a hole (alog_open.c drop_inherited: review 20, finding 3).
 * A short epoch (under ALOG_JOWED_FROM_BYTES: 128 B writes with an fsync every 10, T2) hands nothing out: its
 * sync writes back the whole epoch in one wait, which is cheaper than one wait per copy. */
__thread struct alog_jowed *alog_jowed_top __attribute__((tls_model("initial-exec")));
#define owed_top alog_jowed_top

/* Outside every lock: reads nothing of the journal's geometry, which a growth changes meanwhile (review 20,
 * finding 2: a torn area/size pair flushed past the old mapping's end). */
void alog_jrnl_owed_write_back(struct alog_jowed *o) {
    for (int i = 0; i < 2; i++)
        if (o->piece[i].n) dk_flush_range(o->piece[i].p, o->piece[i].n);
    /* Last touch of f (a close waits for it). The write-backs retired before this store: none faults after.
     * NULL: a fork child's record, cancelled (alog_jrnl_owed_cancel_mine). */
    struct alog_file *f = o->f;
    if (f) __atomic_store_n(&f->j.owe_busy, 0, __ATOMIC_RELEASE);
}

void alog_jrnl_owed_cancel_mine(const struct alog_file *f) {
    for (struct alog_jowed *o = owed_top; o; o = o->outer)
        if (o->f == f) o->piece[0].n = o->piece[1].n = 0, o->f = NULL;
}

bool alog_jrnl_owed_mine(const struct alog_file *f) {
    return __atomic_load_n(&f->j.owe_busy, __ATOMIC_ACQUIRE) && f->j.owe_owner == (const void *)&owed_top;
}

void alog_jrnl_owed_quiesce(struct alog_file *f) {
    /* This thread's own (a signal handler's close inside its write-back window) cannot be waited for: the
     * route refuses such a detach; the C API's handle must not be unmapped while its thread copies into it. */
    while (__atomic_load_n(&f->j.owe_busy, __ATOMIC_ACQUIRE) && f->j.owe_owner != (const void *)&owed_top)
        sched_yield();
}

/* At a copy's start: lines this thread owed since its last copy are written back by now (above). */
static void owed_settle(struct alog_file *f) {
    struct alog_journal *j = &f->j;
    if (j->owe_owner == (const void *)&owed_top && !__atomic_load_n(&j->owe_busy, __ATOMIC_ACQUIRE))
        j->owe_lo = j->owe_hi;
}

/* At a copy's end: the complete lines not written back handed to this thread's record, if it has one. */
static void owed_hand_out(struct alog_file *f, uint64_t to) {
    struct alog_journal *j = &f->j;
    struct alog_jowed *o = owed_top;
    if (!o || o->f || !f->junflushed_max || f->persist_as == DK_MEDIUM_PAGECACHE) return;
    if (j->owe_lo != j->owe_hi || __atomic_load_n(&j->owe_busy, __ATOMIC_RELAXED)) return; /* one owner at a time */
    uint64_t from = j->flushed, wrap = (from / f->area_bytes + 1) * f->area_bytes, first = DK_MIN(to, wrap);
    o->piece[0].p = at(f, from), o->piece[0].n = first - from;
    o->piece[1].p = f->area, o->piece[1].n = to - first;
    o->f = f;
    j->flushed = to;
#ifdef DAXKIT_TEST_BUILD
    if (alog_test_broken == ALOG_BROKEN_JOWED_UNTRACKED) return; /* `flushed` moved, nobody recorded as owing */
#endif
    j->owe_lo = from, j->owe_hi = to, j->owe_owner = &owed_top;
    __atomic_store_n(&j->owe_busy, 1, __ATOMIC_RELAXED);
}

/* In a commit, before its fence: lines still owed written back by the commit itself (no longer owed) -- unless
 * this thread owed them and wrote them back already: its fence completes them (a sync right after a 4 KiB
 * copy wrote its 64 lines back twice: 859 -> 1,067 ns). */
static void owed_commit(struct alog_file *f) {
    struct alog_journal *j = &f->j;
    if (j->owe_lo == j->owe_hi) return;
    owed_settle(f);
    write_back(f, j->owe_lo, j->owe_hi);
    j->owe_lo = j->owe_hi;
}

/* The journal's positions start again at `pos` (reset, growth): nothing is owed there. */
static void owed_forget(struct alog_journal *j, uint64_t pos) { j->owe_lo = j->owe_hi = pos; }

/* Replays the records in [*pos, end) into the file, in order, stopping after `budget` bytes (no fence).
 * Returns records applied; *pos: where it stopped. A record that does not check out or does not fit the
 * file ends the replay there (said once; the rest of [*pos, end) counts as applied). */
static uint64_t replay(struct alog_file *f, uint64_t *pos, uint64_t end, uint64_t budget) {
    uint64_t p = *pos, n = 0;
    uint64_t data_len = __atomic_load_n(&f->data_len, __ATOMIC_ACQUIRE);
    /* at_next, not a 64-bit division per record: it lay on the chain from one record's length to the next header */
    const char *a = at(f, p);
    while (p + sizeof(struct alog_jrec) <= end && p - *pos < budget) {
        const struct alog_jrec *h = (const struct alog_jrec *)a;
        bool pad = h->off == ALOG_JPAD;
        if (h->check != alog_jrec_check(p, h->off, h->len) || rec_bytes(h->len) > end - p ||
            (!pad && (h->off > data_len || h->len > data_len - h->off))) {
            dk_log("atomic journal record at %llu does not fit the file (truncated since?); replay stops there",
                   (unsigned long long)p);
            p = end;
            break;
        }
        if (!pad) {
            DK_CRASH_POINT("atomic.journal.before_apply");
            /* non-temporal from one full line up: a random file line is then not read for ownership first */
            dk_store_persistent(f->data + h->off, h + 1, h->len, ALOG_JREC_NT_MIN_BYTES);
            n++;
        }
        a = at_next(f, a, rec_bytes(h->len)), p += rec_bytes(h->len);
    }
    *pos = p;
    return n;
}

void alog_jrnl_prefault(struct alog_file *f) {
    /* The first store to each page would fault (on huge tmpfs: a 2 MiB page mapped) inside a copy; map the
     * log area now. Not on pagecache media: a written page is a dirty
     * page there, written back later. An older kernel without MADV_POPULATE_WRITE: EINVAL, faults as before. */
    if (f->persist_as == DK_MEDIUM_PAGECACHE) return;
    int saved = errno;
    (void)madvise(f->logmap, (size_t)DK_MIN(f->log_len, ALOG_JPREFAULT_BYTES_MAX), MADV_POPULATE_WRITE);
    /* Not the program's file: populating it, even for reading, would fill its holes on tmpfs (a 200 MiB
     * sparse file took 200 MiB at its open) and, on DAX, allocate blocks (review finding 4). */
    errno = saved;
}

void alog_jrnl_reset_dram(struct alog_file *f) {
    struct alog_journal *j = &f->j;
    uint64_t h = f->hdr->jhead;
    j->tail = j->flushed = j->indexed = j->index_base = j->staged = h;
    j->pace_pos = h, j->pace_at = j->pace_done = 0;
    j->wpad_end = j->wpad_bytes = 0;
    owed_forget(j, h);
    __atomic_store_n(&j->committed, h, __ATOMIC_RELEASE);
    __atomic_store_n(&j->head, h, __ATOMIC_RELEASE);
    alog_jindex_clear(f);
}

/* After a replay up to `to`: the file durable, then the head there, durably. */
static int advance_head(struct alog_file *f, uint64_t to) {
    int rc = alog_durable_data_all(f);
    if (rc) return rc;
    DK_CRASH_POINT("atomic.journal.before_reset");
    alog_store_word(&f->hdr->jhead, to);
    return alog_durable_log_range(f, &f->hdr->jhead, sizeof f->hdr->jhead);
}

/* One checkpoint step of a live journal: at least `budget` bytes of committed records (all there are, if
 * fewer). Caller holds j.apply_mu. Returns records applied or -errno. */
static int64_t apply_step(struct alog_file *f, uint64_t budget) {
    struct alog_journal *j = &f->j;
    uint64_t from = __atomic_load_n(&j->head, __ATOMIC_RELAXED), pos = DK_MAX(from, j->pace_pos);
    uint64_t end = __atomic_load_n(&j->committed, __ATOMIC_ACQUIRE);
    if (end <= from) return 0;
    /* [head, pace_pos): applied by copies (pacing), made durable by advance_head's fence */
    uint64_t n = pos < end ? replay(f, &pos, end, budget) : 0;
    int rc = advance_head(f, pos);
    if (rc) {
        __atomic_store_n(&f->broken, rc, __ATOMIC_RELEASE);
        return rc;
    }
    __atomic_store_n(&j->head, pos, __ATOMIC_RELEASE); /* readers skip pieces below it; writers reuse it */
    ALOG_CTR_ADD(f, checkpointed_entries, n);
    return (int64_t)n;
}

int64_t alog_jrnl_checkpoint(struct alog_file *f) {
    struct alog_journal *j = &f->j;
    pthread_mutex_lock(&j->apply_mu);
    uint64_t end = __atomic_load_n(&j->committed, __ATOMIC_ACQUIRE);
    int64_t total = 0;
    while (__atomic_load_n(&j->head, __ATOMIC_RELAXED) < end) {
        int64_t n = apply_step(f, ALOG_JAPPLY_STEP_BYTES);
        if (n < 0) {
            total = n;
            break;
        }
        total += n;
    }
    pthread_mutex_unlock(&j->apply_mu);
    return total;
}

/* Pacing (on by default; DAXKIT_ATOMIC_PACE, fence media: alog_open.c pace_wanted): each copy applies
 * committed records from the head on into the file -- up to twice the bytes it appended -- and the next
 * commit makes them durable with its first fence, then stores jhead past the whole records applied, after
 * that fence, in the epoch word's line: the epoch's
 * write-back and fence make the new head durable too (alog_commit.c). Only copies of ALOG_JPACE_MIN_BYTES
 * and more apply: the locked instruction that ends the copy (the unlock) waits for the applied bytes'
 * non-temporal stores to drain, which a 128 B copy would pay for bytes 10 times its own (measured: 128 B
 * writes with an fsync every 10 took 1.9x the CPU): small writes leave the applying to the larger ones or,
 * in a workload of only small writes, to the thread. With pacing, records under ALOG_JREC_NT_PACED_BYTES
 * are appended with plain stores (written back by the commit): the writes after the commit read them back
 * to apply them, from the cache instead of from memory, and the window (window_wrap) keeps reusing the same
 * journal lines. Measured (session 9, POSIX route, CPU per write, all threads): 1-16 KiB writes 2-40% less
 * than with non-temporal records and 2-30% less than the thread; 32 KiB +3-5%, 64 KiB +5-10%: non-temporal.
 * In steady state each write applies the epoch before the last commit's (the journal holds about two
 * epochs); after a large epoch the writes catch up at about their own size each, so no op pays a burst, and
 * the sync stays the O(1) commit whatever was written. j.pace_pos: the records below it are applied
 * (durable once a commit or a checkpoint step has fenced; the durable head may lag). A record larger than
 * what is left of the budget is applied in part: j.pace_done bytes of the record at j.pace_at (the head
 * stays at the record, so recovery or the thread apply it whole again, which gives the same bytes). The
 * checkpoint thread is only the fallback past a quarter full. Caller holds j.apply_mu. */
static uint64_t pace_apply(struct alog_file *f, uint64_t *pos, uint64_t end, uint64_t budget) {
    struct alog_journal *j = &f->j;
    uint64_t p = *pos, n = 0, done = j->pace_at == p ? j->pace_done : 0;
    uint64_t data_len = __atomic_load_n(&f->data_len, __ATOMIC_ACQUIRE);
    while (budget && p + sizeof(struct alog_jrec) <= end) {
        const struct alog_jrec *h = (const struct alog_jrec *)at(f, p);
        bool pad = h->off == ALOG_JPAD;
        if (h->check != alog_jrec_check(p, h->off, h->len) || rec_bytes(h->len) > end - p ||
            (!pad && (h->off > data_len || h->len > data_len - h->off))) {
            uint64_t bad = p;
            n += replay(f, &bad, end, 1); /* says so once, and counts the rest as applied, as replay does */
            p = bad, done = 0;
            break;
        }
        if (!pad) {
            DK_CRASH_POINT("atomic.journal.before_apply");
            uint64_t take = DK_MIN((uint64_t)h->len - done, budget);
            dk_copy_nt(f->data + h->off + done, (const char *)(h + 1) + done, take);
            budget -= take, done += take;
            if (done < h->len) { /* the rest of this record: the next copies */
                __atomic_store_n(&f->ctr.paced_partial, f->ctr.paced_partial + 1, __ATOMIC_RELAXED);
                break;
            }
            n++;
        }
        p += rec_bytes(h->len), done = 0;
    }
    j->pace_at = p, j->pace_done = done;
    *pos = p;
    return n;
}

/* In a copy, before its append (caller holds j.mu): up to 2 * `appended` bytes of committed records applied. */
static void pace_write(struct alog_file *f, uint64_t appended) {
    struct alog_journal *j = &f->j;
    if (!f->jpace || pthread_mutex_trylock(&j->apply_mu) != 0) return; /* the thread is applying: it will */
    uint64_t pos = DK_MAX(__atomic_load_n(&j->head, __ATOMIC_RELAXED), j->pace_pos);
    uint64_t end = __atomic_load_n(&j->committed, __ATOMIC_ACQUIRE);
    if (end > pos) {
        DK_CRASH_POINT("atomic.journal.pace.before_apply");
        uint64_t n = pace_apply(f, &pos, end, 2 * appended);
        __atomic_store_n(&f->ctr.paced_entries, f->ctr.paced_entries + n, __ATOMIC_RELAXED); /* no locked add */
        j->pace_pos = pos;
        DK_CRASH_POINT("atomic.journal.pace.after_apply");
#ifdef DAXKIT_TEST_BUILD
        if (alog_test_broken == ALOG_BROKEN_PACE_HEAD_BEFORE_FENCE) alog_store_word(&f->hdr->jhead, pos);
#endif
    }
    pthread_mutex_unlock(&j->apply_mu);
}

/* In a commit (caller holds f->rw for writing, the route's lock too: no copy runs, so pace_pos, which only
 * copies move, is stable here): nothing applied by copies -- small writes only -- takes no lock at all
 * (measured: the trylock + unlock were +5-8% CPU per 128 B write + fsync once pacing was the default). */
uint64_t alog_jrnl_pace_begin(struct alog_file *f) {
    struct alog_journal *j = &f->j;
    if (!f->jpace || j->pace_pos <= __atomic_load_n(&j->head, __ATOMIC_ACQUIRE)) return 0;
    if (pthread_mutex_trylock(&j->apply_mu) != 0) return 0;
    if (j->pace_pos > __atomic_load_n(&j->head, __ATOMIC_RELAXED)) return j->pace_pos;
    pthread_mutex_unlock(&j->apply_mu);
    return 0;
}

/* After the commit's first fence (the applied bytes durable): the head's new value, in the epoch word's
 * line (written back and fenced with it). */
void alog_jrnl_pace_head(struct alog_file *f, uint64_t to) {
#ifdef DAXKIT_TEST_BUILD
    if (alog_test_broken == ALOG_BROKEN_PACE_HEAD_BEFORE_FENCE) return; /* stored already */
#endif
    /* A plain 8-byte store: the commit's alog_store_word of the epoch writes the line back right after. */
    static_assert(__builtin_offsetof(struct alog_phdr, jhead) / 64 == __builtin_offsetof(struct alog_phdr, epoch) / 64,
                  "jhead shares the epoch word's line");
    __atomic_store_n(&f->hdr->jhead, to, __ATOMIC_RELAXED);
}

/* After the commit (ok) or its failure: the head moves in DRAM only once jhead is durable. */
void alog_jrnl_pace_done(struct alog_file *f, uint64_t to, bool ok) {
    if (ok) __atomic_store_n(&f->j.head, to, __ATOMIC_RELEASE); /* readers skip pieces below it; writers reuse it */
    pthread_mutex_unlock(&f->j.apply_mu);
}

/* Writers move j.tail under j.mu; alog_jrnl_due reads it without (alog_sync). */
static uint64_t used_bytes(const struct alog_file *f) {
    return __atomic_load_n(&f->j.tail, __ATOMIC_ACQUIRE) - __atomic_load_n(&f->j.head, __ATOMIC_ACQUIRE);
}

/* used_bytes without a window pad the head has not passed yet (up to a whole area of it): what the appliers
 * have to do, for deciding when to apply; the room left is still area_bytes - used_bytes. */
static uint64_t used_record_bytes(const struct alog_file *f) {
    const struct alog_journal *j = &f->j;
    uint64_t head = __atomic_load_n(&j->head, __ATOMIC_ACQUIRE), tail = __atomic_load_n(&j->tail, __ATOMIC_ACQUIRE);
    uint64_t pad_end = __atomic_load_n(&j->wpad_end, __ATOMIC_ACQUIRE), pad = __atomic_load_n(&j->wpad_bytes, __ATOMIC_RELAXED);
    uint64_t used = tail - head;
    return head < pad_end && pad <= used ? used - pad : used;
}

/* Room for `need` more bytes (caller holds j.mu). Past 3/4 full, a writer applies about its own size of
 * committed records if nobody else is applying (smooth back-pressure when writes outrun the checkpoint
 * thread); only a full journal makes it wait for the applier. -ENOSPC when the uncommitted records alone
 * fill the journal. */
static int make_room(struct alog_file *f, uint64_t need) {
    struct alog_journal *j = &f->j;
    /* Most copies: under 3/4 full with this record (records and pads: used_record_bytes <= used_bytes) -- no
     * apply, and room. One check instead of the two below (~35 instructions of a 128 B copy's ~700). */
    if (DK_LIKELY(used_bytes(f) + need <= f->area_bytes / 4 * 3)) return 0;
    bool committed_left = __atomic_load_n(&j->committed, __ATOMIC_ACQUIRE) > __atomic_load_n(&j->head, __ATOMIC_ACQUIRE);
    if (committed_left && used_record_bytes(f) + need > f->area_bytes / 4 * 3 && pthread_mutex_trylock(&j->apply_mu) == 0) {
        int64_t n = apply_step(f, DK_MAX(need, (uint64_t)ALOG_JROOM_STEP_BYTES));
        pthread_mutex_unlock(&j->apply_mu);
        if (n < 0) return (int)n;
    }
    while (f->area_bytes - used_bytes(f) < need) {
        if (__atomic_load_n(&j->committed, __ATOMIC_ACQUIRE) <= __atomic_load_n(&j->head, __ATOMIC_ACQUIRE))
            return -ENOSPC;
        pthread_mutex_lock(&j->apply_mu);
        int64_t n = apply_step(f, DK_MAX(need, (uint64_t)ALOG_JROOM_STEP_BYTES));
        pthread_mutex_unlock(&j->apply_mu);
        if (n < 0) return (int)n;
    }
    return 0;
}

/* The journal lines of the next records, up to ALOG_JCLAIM_BYTES past the tail, fetched for writing now
 * (prefetchw), so that the next copies' plain stores find them in the cache. Without it each record's stores
 * went to lines not in the cache -- not written this lap, or evicted by the last commit's write-back (clwb
 * evicts on this CPU, docs/atomic.md) -- and the locked instruction that ends the copy (j.mu's unlock) waited
 * for their fetch from memory: ~11% of the CPU of 128 B writes with an fsync every 10 (perf, session 16).
 * A hint: no store, nothing for the crash-state explorer. Caller holds j.mu or f->rw for writing. */
static void claim_ahead(struct alog_file *f) {
    struct alog_journal *j = &f->j;
    uint64_t to = j->tail + ALOG_JCLAIM_BYTES, p = dk_round_down(DK_MAX(j->claimed, j->tail), DK_CACHELINE_BYTES);
    /* one division for the first line (at_next for the others: 2-3 lines per 128 B record) */
    const char *a = p < to ? at(f, p) : NULL;
    for (; p < to; p += DK_CACHELINE_BYTES, a = at_next(f, a, DK_CACHELINE_BYTES))
        __asm__ volatile("prefetchw %0" : : "m"(*a));
    j->claimed = to;
}

/* Appends one record; caller holds j.mu. -ENOSPC: the journal is full (nothing changed). */
static int append(struct alog_file *f, uint64_t off, const char *src, uint32_t len) {
    struct alog_journal *j = &f->j;
    uint64_t need = rec_bytes(len), in_area = j->tail % f->area_bytes, to_end = f->area_bytes - in_area;
    uint64_t pad = need > to_end ? to_end : 0; /* a record never wraps */
    int rc = make_room(f, pad + need);
    if (rc) return rc;
    if (pad) append_pad(f, false), in_area = 0; /* the tail at the next lap's start */
    struct alog_jrec h = {.off = off, .len = len, .check = alog_jrec_check(j->tail, off, len)};
    char *p = f->area + in_area; /* at(f, j->tail), without a second division */
    if (len >= (f->jpace ? ALOG_JREC_NT_PACED_BYTES : ALOG_JREC_NT_APPEND_BYTES)) {
        /* A large record: non-temporal stores now (no write-back pass over it at sync), after the small
         * records before it are written back, so that `flushed` can move past it. (With pacing only from
         * 32 KiB: the next writes read the record back, from the cache if it was stored plainly.) */
        flush_pending(f);
        dk_copy_nt(p, &h, sizeof h);
        dk_copy_nt(p + sizeof h, src, len);
        j->flushed = j->tail + need;
    } else {
        memcpy(p, &h, sizeof h); /* plain stores: written back at the commit (alog_jrnl_stage_commit) */
        memcpy(p + sizeof h, src, len);
    }
    __atomic_store_n(&j->tail, j->tail + need, __ATOMIC_RELEASE); /* indexed by the next read (index_upto) */
#ifdef DAXKIT_TEST_BUILD
    if (alog_test_broken != ALOG_BROKEN_JDIRECT_UNDER_RECORD)
#endif
    j->direct_from = DK_MAX(j->direct_from, off + len); /* no direct copy under a record (alog_jdirect.c) */
    __atomic_store_n(&f->ctr.log_data_bytes, f->ctr.log_data_bytes + need, __ATOMIC_RELAXED);
    claim_ahead(f);
    return 0;
}

#ifdef DAXKIT_TEST_BUILD
int alog_test_broken;

int alog_jrnl_test_pad_to_lap_end(struct alog_file *f) {
    struct alog_journal *j = &f->j;
    pthread_mutex_lock(&j->mu);
    int rc = make_room(f, f->area_bytes - j->tail % f->area_bytes);
    if (!rc) append_pad(f, false);
    pthread_mutex_unlock(&j->mu);
    return rc;
}
#endif

/* The records of a copy appended: the body of alog_jrnl_copy, for a caller that holds j.mu or has the
 * journal to itself. */
static int copy_records(struct alog_file *f, uint64_t off, const char *s, size_t n) {
    int rc = 0;
    if (alog_jdirect_takes(f, off)) { /* past the committed state and every record: into the file */
        alog_jdirect_copy(f, off, s, n);
        __atomic_store_n(&f->ctr.copies, f->ctr.copies + 1, __ATOMIC_RELAXED);
        return 0;
    }
    while (n && !rc) {
        uint32_t len = (uint32_t)DK_MIN(n, (size_t)ALOG_JREC_BYTES_MAX);
        /* The apply first: its non-temporal stores into the file drain while the record is copied, instead
         * of in the commit's fence (session 11: floor-io, the same memory work without the engine, 540-560 ns
         * median per 4 KiB write + commit against 630 with the apply after the copy). It applies only
         * committed records, which the append does not touch. */
        if (len >= ALOG_JPACE_MIN_BYTES) pace_write(f, rec_bytes(len));
        flush_past_bound(f); /* after the apply (its reads from memory), before the record (flush_past_bound) */
        rc = append(f, off, s, len);
        off += len, s += len, n -= len;
    }
    if (!rc) __atomic_store_n(&f->ctr.copies, f->ctr.copies + 1, __ATOMIC_RELAXED); /* excluded: no locked add */
    return rc;
}

/* copy_records for a caller that writes back handed lines after its unlock (alog_jrnl_owed_end). */
static inline __attribute__((always_inline)) int copy_records_owing(struct alog_file *f, uint64_t off, const char *s,
                                                                     size_t n) {
    struct alog_journal *j = &f->j;
    if (j->owe_lo != j->owe_hi) owed_settle(f);
    int rc = copy_records(f, off, s, n);
    uint64_t to = dk_round_down(j->tail, DK_CACHELINE_BYTES);
    /* most copies: a short epoch (T2's: nothing to hand out), or too little to hand out yet */
    if (j->tail - j->staged >= j->owe_from && to >= j->flushed + j->owe_min) owed_hand_out(f, to);
    return rc;
}

int alog_jrnl_copy(struct alog_file *f, uint64_t off, const void *src, size_t n) {
    pthread_mutex_lock(&f->j.mu);
    int rc = copy_records(f, off, src, n);
    pthread_mutex_unlock(&f->j.mu);
    return rc;
}

int alog_jrnl_copy_owing(struct alog_file *f, uint64_t off, const void *src, size_t n) {
    pthread_mutex_lock(&f->j.mu);
    int rc = copy_records_owing(f, off, src, n);
    pthread_mutex_unlock(&f->j.mu);
    return rc;
}

int alog_jrnl_copy_owned(struct alog_file *f, uint64_t off, const void *src, size_t n) {
    return copy_records_owing(f, off, src, n);
}

/* Growth (review 8, finding 8): a group of writes between two syncs larger than the journal -- a SQLite
 * transaction of more than DAXKIT_ATOMIC_LOG_BYTES of pages under journal_mode=OFF -- was committed in
 * pieces (an early commit: a crash then left part of the transaction). Now, when the uncommitted records
 * alone fill the area, the area doubles: every committed record is applied and the head moved to the end
 * of them, durably, so that recovery has nothing to replay whatever the area's size; the uncommitted
 * records are copied out, the log file grown and mapped anew (alog_open.c), its header's data_bytes stored
 * durably, and the records appended again from the head on, at their positions in the larger area (they
 * are not committed: no crash in between can see them). Positions stay logical; the DRAM index is rebuilt
 * by the next read. Up to ALOG_JGROW_MAX_BYTES; the grown log stays until the file's route closes. */
#define ALOG_JGROW_MAX_BYTES (64ull << 30)

int alog_jrnl_grow(struct alog_file *f) {
    struct alog_journal *j = &f->j;
    uint64_t grown = f->area_bytes * 2;
    if ((f->log_fd < 0 && !f->test_memory) || grown > ALOG_JGROW_MAX_BYTES) return -ENOSPC;
    pthread_mutex_lock(&j->apply_mu);
    pthread_mutex_lock(&j->mu);
    int rc = 0;
    while (!rc && __atomic_load_n(&j->head, __ATOMIC_RELAXED) < __atomic_load_n(&j->committed, __ATOMIC_ACQUIRE)) {
        int64_t n = apply_step(f, UINT64_MAX);
        if (n < 0) rc = (int)n;
    }
    uint64_t head = j->head, n = j->tail - head;
    if (!rc) rc = advance_head(f, head); /* the file durable, and the durable head at the last committed record */
    char *saved = rc ? NULL : malloc(DK_MAX(n, 1));
    if (!rc && !saved) rc = -ENOMEM;
    if (!rc) {
        for (uint64_t p = head; p < j->tail;) { /* up to the end of the area, then from its start */
            uint64_t len = DK_MIN(j->tail - p, f->area_bytes - p % f->area_bytes);
            memcpy(saved + (p - head), at(f, p), len);
            p += len;
        }
        rc = alog_log_grow_map(f, f->hdr->data_off + grown);
    }
    if (!rc) {
        DK_CRASH_POINT("atomic.journal.grow.before_header");
#ifdef DAXKIT_TEST_BUILD
        if (alog_test_broken == ALOG_BROKEN_JGROW_HEADER_NOT_DURABLE) f->hdr->data_bytes = grown; /* no write-back */
        else
#endif
        alog_store_word(&f->hdr->data_bytes, grown);
        rc = alog_durable_log_range(f, &f->hdr->data_bytes, sizeof f->hdr->data_bytes);
        if (rc) alog_store_word(&f->hdr->data_bytes, f->area_bytes); /* broken: the medium failed a sync */
    }
    if (!rc) {
        f->area_bytes = grown;
        if (f->jwindow) f->jwindow = alog_jrnl_window(f);
        j->tail = j->flushed = j->indexed = j->index_base = j->staged = j->pace_pos = head;
        j->pace_at = j->pace_done = 0;
        owed_forget(j, head); /* the records are appended again below: whatever was owed is moot */
        __atomic_store_n(&j->wpad_end, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&j->wpad_bytes, 0, __ATOMIC_RELAXED);
        alog_jindex_clear(f);
        for (uint64_t p = 0; !rc && p < n;) {
            const struct alog_jrec *h = (const struct alog_jrec *)(saved + p);
            if (h->off != ALOG_JPAD) rc = append(f, h->off, (const char *)(h + 1), h->len);
            p += rec_bytes(h->len);
        }
        DK_CRASH_POINT("atomic.journal.grow.after");
    }
    free(saved);
    pthread_mutex_unlock(&j->mu);
    pthread_mutex_unlock(&j->apply_mu);
    return rc;
}

/* In a commit, before the fence that makes it durable: the journal written back and its end staged in
 * the next epoch's slot. Caller holds f->rw for writing (and with it, through the route, every writer). */
void alog_jrnl_stage_commit(struct alog_file *f) {
    struct alog_journal *j = &f->j;
    window_wrap(f);
    owed_commit(f);
    flush_pending(f);
    alog_jdirect_stage_commit(f);
    j->claimed = j->tail; /* the write-back evicted the tail's line: fetched again for the next copy */
    claim_ahead(f);
    j->staged = j->tail;
    /* A plain 8-byte store into the commit line, like the size slot: alog_commit.c writes the line back */
    __atomic_store_n(&f->hdr->jend_slot[(f->epoch + 1) & 1], j->staged, __ATOMIC_RELAXED);
}

void alog_jrnl_committed(struct alog_file *f) { __atomic_store_n(&f->j.committed, f->j.staged, __ATOMIC_RELEASE); }

/* Replays the committed journal into the file durably, then marks it applied durably. Used by recovery
 * (the journal's DRAM state is not needed; the caller sets it from the header after). Returns records
 * applied, or -errno. */
int64_t alog_jrnl_apply_committed(struct alog_file *f) {
    if (!alog_jrnl_unapplied(f->hdr)) return 0;
    uint64_t pos = f->hdr->jhead, end = f->hdr->jend_slot[f->hdr->epoch & 1];
    uint64_t n = replay(f, &pos, end, UINT64_MAX);
    int rc = advance_head(f, end);
    if (rc) return rc;
    ALOG_CTR_ADD(f, checkpointed_entries, n);
    return (int64_t)n;
}

/* Time to apply: a quarter full when the checkpoint thread is the journal's applier (DAXKIT_ATOMIC_PACE=0;
 * kicked at once, so it stays ahead of the writers); half full with pacing, where it is only the fallback for
 * records no copy applies (small writes only), and without a thread (then the sync applies). Session 18: with
 * pacing kicked at a quarter, a pass of 50,000 128 B writes (7.2 MiB of records, 16 MiB journal) had the
 * thread apply ~29,000 records during the pass, ~25 ns per write dearer than leaving them to the close, and
 * no cheaper through the close; at half full the thread still has a quarter of the journal to catch up
 * before writers apply (make_room, three quarters). */
bool alog_jrnl_due(const struct alog_file *f) {
    return used_record_bytes(f) >= f->area_bytes / (f->ckpt_started && !f->jpace ? 4 : 2);
}

/* Indexes the records appended since the last read (caller holds j.mu), from `from` on (the records
 * below it are applied). Writes do not index: a random block's slot is a cache miss, which a program that
 * never reads back should not pay. */
static int index_upto(struct alog_file *f, uint64_t from) {
    struct alog_journal *j = &f->j;
    if (j->indexed < from) j->indexed = from;
    while (j->indexed < j->tail) {
        const struct alog_jrec *h = (const struct alog_jrec *)at(f, j->indexed);
        int rc = h->off == ALOG_JPAD ? 0 : alog_jindex_add(f, h->off, h->len, j->indexed + sizeof *h);
        if (rc) return rc;
        j->indexed += rec_bytes(h->len);
    }
    return 0;
}

int alog_jrnl_read(struct alog_file *f, uint64_t off, void *dst, size_t n) {
    struct alog_journal *j = &f->j;
    if (__atomic_load_n(&j->tail, __ATOMIC_ACQUIRE) == __atomic_load_n(&j->head, __ATOMIC_ACQUIRE)) {
        memcpy(dst, f->data + off, n); /* all applied: the file is the truth */
        return 0;
    }
    pthread_mutex_lock(&j->mu);
    /* The head first, then the file: a record below the head is in the file by then; those from the head
     * on are overlaid, and their space is not reused while we hold j.mu (only appends reuse it). */
    uint64_t from = __atomic_load_n(&j->head, __ATOMIC_ACQUIRE);
    memcpy(dst, f->data + off, n);
    int rc = 0;
    if (from == j->tail || from - j->index_base > f->area_bytes / 2) {
        alog_jindex_clear(f); /* everything indexed is in the file, or much of it: index again from the head */
        j->indexed = j->index_base = from;
    }
    if (from != j->tail) {
        rc = index_upto(f, from);
        if (!rc) alog_jindex_overlay(f, off, dst, n, from);
    }
    pthread_mutex_unlock(&j->mu);
    return rc;
}
