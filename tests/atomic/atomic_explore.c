/* Description: power failure during the atomic engine's copies, syncs, write-time checkpoints and
 * checkpoint passes, through the crash-state explorer (tests/explorer): the engine runs over one memory
 * region holding the file and its log (persisting as on dax), the explorer records every store, write-back
 * and fence, and materialises the media states a power failure could leave at each crash point. On each,
 * recovery runs on a copy, and the file must equal the state of the last acknowledged sync k or of sync
 * k+1 (in flight). Usage: atomic_explore undo|redo|hybrid|redo-pace|redo-pace-applied-early|redo-thread|
 * undo-release-uncommitted|
 * journal|journal-pace|journal-pace-head-early|journal-bound|journal-owed|journal-owed-untracked|
 * journal-sized|journal-sized-same-slot|journal-window|journal-window-pad-unflushed|journal-grow|
 * journal-grow-header-unflushed|undo-sized|redo-sized|hybrid-sized|journal-sized-direct|
 * journal-sized-direct-unflushed|journal-sized-direct-under-record|journal-sized-torn|journal-sized-line-unflushed [SEED]
 * (journal-sized-torn: journal-sized with lines also torn at 8-byte granularity (x86 promises no more); its
 * broken variant journal-sized-line-unflushed leaves the commit line's slots -- the next size and journal end,
 * plain stores since session 17 -- to the epoch word's write-back, after the fence: a line torn between the
 * new epoch word and an old slot must be caught)
 * (journal-sized-direct, session 17: the sizes grow from 16 KiB, so the copies past the last commit's size --
 * and past every record -- go straight into the file (alog_jdirect.c), small ones stored plainly and written
 * back by the commit, 1 KiB and more non-temporally; the recovered file must hold sync k's bytes below sync
 * k's size (past it, recovery cuts the file). Its broken variant journal-sized-direct-unflushed: the commit
 * leaves the small direct copies' bytes unwritten back -- must be caught; journal-sized-direct-under-record,
 * the other one: a record does not raise the direct bound, so a copy inside a record that crosses the
 * committed size goes to the file and the older record is replayed over it -- must be caught)
 * (journal-grow, review 13 finding 5 b: batch 7 writes more than the journal's 2 MiB area between two syncs, so
 * the area doubles (alog_jrnl_grow: committed records applied and the head durable, the larger size stored
 * durably, the uncommitted records appended again at their positions in the larger area) -- the journal has
 * wrapped once by then, so a position means another place under the old and the new size; its broken variant
 * journal-grow-header-unflushed stores the larger size without write-back: must be caught)
 * (undo-sized, redo-sized, hybrid-sized, review 13 finding 5 e: the per-block engine with the file size tracked,
 * as a DAXKIT_ATOMIC file with DAXKIT_ATOMIC_POLICY=undo|redo|hybrid commits it)
 * (journal-sized: the configuration of a DAXKIT_ATOMIC file under `daxkit run` -- the journal with the file
 * size tracked as part of the commit (alog_size.c), the commit path of every fsync-group commit of
 * src/upath/atomic_route.c, also DAXKIT_ATOMIC_COMMIT=fsync in strict mode: every sync records another size,
 * and the recovered data and size must belong to the same sync; journal-sized-same-slot, its broken variant
 * -- the new size stored into the committed epoch's slot -- must be caught)
 * (journal-window: pacing with an 8 KiB window, so commits end laps with window pads and the next records
 * reuse the area's start; its broken variant journal-window-pad-unflushed leaves the pad's header unwritten
 * back at the commit, so recovery may stop at a stale header before committed records: must be caught)
 * (redo-pace: the per-block engine's pacing -- since session 19 the copies apply committed redo entries in
 * creation order and the commit stores A, "every redo entry below epoch A is applied", after its first fence
 * (alog_redo_fifo.c); its broken variant redo-pace-applied-early stores A, written back, before the fence that
 * makes the applied bytes durable: must be caught; redo-thread: the checkpoint thread's path, pacing off)
 * (redo-pace also checks the log's version (session 20, review 20 finding 6): a crash state whose header says
 * version 1 while it holds a tagged A is recovered a second time as a version-1 library reads it -- A taken as
 * 0, every committed redo entry replayed -- and must give the same file; its broken variant
 * redo-pace-version-not-stored leaves the log at version 1 when A is first stored, so later copies reuse
 * log blocks below A under a v1 header: must be caught)
 * (undo, session 18: the copies release committed undo entries, the commit touches none; its broken variant
 * undo-release-uncommitted lets the copies release entries of the current epoch too, whose slots and log
 * blocks the next copies reuse before recovery could undo with them: must be caught)
 * (journal-pace-head-early, the broken variant of pacing -- the journal head stored at the write, before the
 * fence that makes the bytes it applied durable -- must be caught: exit 0 only if the explorer finds a
 * failing state)
 * (journal-bound, session 17: journal-pace with every copy writing back the records before it, as copies do
 * once a block's worth is not written back -- flush_past_bound -- so that the sync writes back one record)
 * (journal-owed, session 20: journal-bound with the copies made as the C API and the route make them -- each
 * copy may hand the journal lines it completed to its thread, which writes them back after its unlock
 * (alog_jrnl_owed_end) -- and the first copy of every batch's thread "preempted" until after the sync: the
 * sync must write back what it still owes. Its broken variant journal-owed-untracked moves `flushed` past the
 * handed lines without recording an owner -- the "moved at the next copy" design -- so the sync commits them
 * unwritten back: must be caught)
 * (journal-pace: batch 3 adds a 20 KiB copy, which later writes apply in parts; journal: the checkpoint after
 * sync 5 replays the journal and advances its head; then a pad record takes
 * the journal to the end of its area, so that the records of batches 6-8 wrap round and overwrite those of
 * batches 1-2 -- applied, and never to be replayed again)
 * With a third argument `recovery` (review 13, finding 5): power failure during recovery itself. Up to
 * RECOVERY_IMAGES crash states of the workload are kept (reservoir-sampled by the seed, among those where
 * recovery has something to do); each is recovered once untraced (the reference outcome), then recovered
 * again under the recorder (with 1 thread, or 2 when the policy name is followed by `recovery2`), and every
 * crash state of that recovery is recovered a second time and must equal the reference outcome: recovery
 * is idempotent across a power failure inside it. `recovery-invalidate-first`: the broken variant (recovery
 * empties the log before the bytes it recovered are durable) must be caught. */
#include <stdlib.h>
#include <string.h>

#include "atomic/alog.h"
#include "atomic/alog_layout.h"
#include "atomic_test.h"
#include "explore_recover.h"
#include "explorer.h"

#define DATA_BYTES (64u << 10)
#define LOG_DATA_BYTES (2u << 20)
#define EPOCHS 8u
#define RECOVERY_IMAGES 12u

static uint64_t log_bytes;
static struct daxkit_atomic_options opts;
static char *states[EPOCHS + 1];
static char *scratch;
static bool journal_big; /* journal: batch 3 adds a 20 KiB copy, which the next batches' writes apply in parts */
static bool sized;       /* journal-sized: the size tracked; sync k records sizes[k] */
static bool direct;      /* journal-sized-direct: the sizes grow; copies past the committed size go to the file */
static bool grow;        /* journal-grow: batch 7 outgrows the journal's area (alog_jrnl_grow) */
static uint64_t grows;
#define GROW_COPIES 36u
#define GROW_COPY_BYTES (60u << 10)
static uint64_t sizes[EPOCHS + 1];
static char *scratch_v1;   /* a version-1 crash state holding A, recovered as a v1 library reads it */
static uint64_t v1_checked; /* such states seen */
static bool owed;                 /* journal-owed: copies may hand lines to their thread (the C API's and route's copies) */
static struct alog_jowed late;    /* journal-owed: the first copy's record of each batch, ended after the sync */
static uint64_t late_owed;        /* batches whose sync found the first copy's lines still owed */

/* One copy of a batch: as the C API makes it with `owed` (its record ended after the unlock), or plainly. */
static int batch_copy(struct alog_file *f, uint32_t i, uint64_t off, const void *buf, size_t n) {
    if (!owed) return alog_copy(f, off, buf, n);
    struct alog_jowed now;
    struct alog_jowed *o = i == 0 ? &late : &now; /* the first one's thread is preempted before its write-back */
    alog_jrnl_owed_begin(o);
    int rc = alog_copy(f, off, buf, n);
    if (o == &now) alog_jrnl_owed_end(o);
    return rc;
}

/* Batch k: small and block-sized copies, merges, rewrites of blocks committed in batch k-1. */
static void batch(uint32_t k, char *model, struct alog_file *f) {
    uint64_t rs = 0xa70b1c ^ (uint64_t)k * 0x9e3779b97f4a7c15ull;
    at_rand(&rs);
    static char buf[5000];
    uint32_t copies = 2 + k % 3;
    for (uint32_t i = 0; i < copies; i++) {
        uint32_t n = i % 3 == 2 ? 4096 + (uint32_t)(at_rand(&rs) % 800) : 1 + (uint32_t)(at_rand(&rs) % 300);
        uint64_t off = i == 0 ? (k % 4) * 4096 + 100 : at_rand(&rs) % (DATA_BYTES - n);
        for (uint32_t j = 0; j < n; j++) buf[j] = (char)at_rand(&rs);
        if (model) memcpy(model + off, buf, n);
        if (f && batch_copy(f, i, off, buf, n)) AT_FAIL("copy in batch %u", k);
    }
    if (grow && k == 7) {
        /* 36 records of 60 KiB, uncommitted: more than the 2 MiB area holds. They differ only in their first
         * 8 bytes (the record's number), so that applying each over the last is one changed line -- one crash
         * point, not 960 -- while the order and place of every record still shows in the file. */
        static char big[GROW_COPY_BYTES];
        for (uint32_t j = 0; j < sizeof big; j++) big[j] = (char)at_rand(&rs);
        uint64_t off = 1000;
        for (uint32_t i = 0; i < GROW_COPIES; i++) {
            memcpy(big, &i, sizeof i);
            if (model) memcpy(model + off, big, sizeof big);
            int rc = f ? alog_copy(f, off, big, sizeof big) : 0;
            if (rc == -ENOSPC && alog_jrnl_grow(f) == 0) rc = alog_copy(f, off, big, sizeof big), grows++;
            if (rc) AT_FAIL("grow copy %u in batch %u: %d", i, k, rc);
        }
    }
    if (direct) {
        /* Across the committed size (a record), then inside that record past the committed size: the second
         * copy must go to the journal too -- stored into the file, the older record would be replayed over it
         * (the broken variant journal-sized-direct-under-record; review 17, finding 6). */
        static char across[110], inside[30];
        for (uint32_t j = 0; j < sizeof across; j++) across[j] = (char)at_rand(&rs);
        for (uint32_t j = 0; j < sizeof inside; j++) inside[j] = (char)at_rand(&rs);
        uint64_t at = sizes[k - 1] - 10;
        if (model) memcpy(model + at, across, sizeof across), memcpy(model + at + 60, inside, sizeof inside);
        if (f && (alog_copy(f, at, across, sizeof across) || alog_copy(f, at + 60, inside, sizeof inside)))
            AT_FAIL("copies across the committed size in batch %u", k);
    }
    if (journal_big && k == 3) {
        static char big[20u << 10];
        for (uint32_t j = 0; j < sizeof big; j++) big[j] = (char)at_rand(&rs);
        if (model) memcpy(model + 8192, big, sizeof big);
        if (f && alog_copy(f, 8192, big, sizeof big)) AT_FAIL("big copy in batch %u", k);
    }
}

/* Recovery under power failure: the workload's crash states kept for it (reservoir), and the reference. */
static bool explore_recovery;
static uint32_t recovery_threads = 1;
static char *kept[RECOVERY_IMAGES];
static uint64_t kept_count, kept_seen, kept_rs = 0x13a7e5eedull; /* fixed: the states come in the seed's order */
static char *reference;

static void keep_for_recovery(const void *image, size_t bytes) {
    uint64_t slot = kept_seen++;
    if (slot >= RECOVERY_IMAGES) {
        slot = at_rand(&kept_rs) % kept_seen;
        if (slot >= RECOVERY_IMAGES) return;
    } else {
        kept_count++;
    }
    if (!kept[slot]) kept[slot] = malloc(bytes);
    AT_CHECK(kept[slot], "memory");
    memcpy(kept[slot], image, bytes);
}

/* A crash state whose log says version 1 but holds a tagged A (only between the first A's store and the fence
 * that makes the version durable with it): a version-1 library ignores A and replays every committed redo
 * entry, which must give the file the version-2 rule gave (`recovered`). 0, or 1 with why. */
static int v1_reader_agrees(const void *image, size_t bytes, const char *recovered, char *why, size_t why_bytes) {
    const struct alog_phdr *h = (const struct alog_phdr *)((const char *)image + DATA_BYTES);
    if (h->version != ALOG_VERSION_PLAIN || !alog_applied_of(h->redo_applied)) return 0;
    v1_checked++;
    memcpy(scratch_v1, image, bytes);
    ((struct alog_phdr *)(scratch_v1 + DATA_BYTES))->redo_applied = 0;
    struct alog_file *f;
    int rc = alog_test_open_memory(scratch_v1, DATA_BYTES, scratch_v1 + DATA_BYTES, log_bytes, false, &opts, &f);
    if (!rc) rc = alog_recover(f, 1, false), alog_test_close_memory(f);
    if (!rc && memcmp(scratch_v1, recovered, DATA_BYTES) == 0) return 0;
    snprintf(why, why_bytes, "a version-1 log holding A = %llu: recovered as a version-1 library reads it (every "
             "committed redo entry replayed) it gives other file bytes (rc %d)",
             (unsigned long long)alog_applied_of(h->redo_applied), rc);
    return 1;
}

/* Whether a log image has anything for recovery to do: differs from the image after its recovery. */
static bool recovery_has_work(const void *image, size_t bytes) {
    return memcmp(image, scratch, bytes) != 0;
}

static int check(const void *image, size_t bytes, const uint64_t *marks, size_t nmarks, char *why, size_t why_bytes,
                 void *ctx) {
    (void)ctx;
    struct alog_file *f;
    if (explore_recover_image(image, bytes, scratch, DATA_BYTES, log_bytes, &opts, &f, why, why_bytes)) return 1;
    uint64_t size = 0;
    bool size_ok = alog_size_recorded(f, &size);
    alog_test_close_memory(f);
    if (v1_reader_agrees(image, bytes, scratch, why, why_bytes)) return 1;
    if (explore_recovery && recovery_has_work(image, bytes)) keep_for_recovery(image, bytes);
    uint64_t last = nmarks ? marks[nmarks - 1] : 0;
    for (uint64_t k = last; k <= last + 1 && k <= EPOCHS; k++) {
        /* direct: past the committed size the file is cut by recovery (alog_size_settle), not compared */
        if (memcmp(scratch, states[k], direct ? sizes[k] : DATA_BYTES) != 0) continue;
        if (!sized) return 0;
        if (size_ok && size == sizes[k]) return 0;
        snprintf(why, why_bytes, "bytes of sync %llu with size %llu (sync %llu recorded %llu)", (unsigned long long)k,
                 (unsigned long long)size, (unsigned long long)k, (unsigned long long)sizes[k]);
        return 1;
    }
    snprintf(why, why_bytes, "file is neither sync %llu (acknowledged) nor sync %llu", (unsigned long long)last,
             (unsigned long long)last + 1);
    return 1;
}

/* A crash state of a recovery: recovered again, it must equal the uninterrupted recovery's outcome. */
static int check_recovery(const void *image, size_t bytes, const uint64_t *marks, size_t nmarks, char *why,
                          size_t why_bytes, void *ctx) {
    (void)marks, (void)nmarks, (void)ctx;
    memcpy(scratch, image, bytes);
    struct alog_file *f;
    int rc = alog_test_open_memory(scratch, DATA_BYTES, scratch + DATA_BYTES, log_bytes, false, &opts, &f);
    if (!rc) rc = alog_recover(f, 1, false);
    if (rc) {
        snprintf(why, why_bytes, "recovery after a power failure inside recovery failed: %d", rc);
        return 1;
    }
    alog_test_close_memory(f);
    if (memcmp(scratch, reference, DATA_BYTES) != 0) {
        snprintf(why, why_bytes, "recovery interrupted by a power failure, then run again, left other file bytes "
                                 "than one uninterrupted recovery");
        return 1;
    }
    return 0;
}

/* Each kept crash state: its reference recovery, then its recovery explored. Returns the failures. */
static uint64_t explore_recoveries(size_t region, uint64_t seed, uint64_t *explored, bool broken) {
    uint64_t failures = 0;
    reference = malloc(region);
    char *work = aligned_alloc(4096, region);
    AT_CHECK(reference && work, "memory");
    for (uint64_t i = 0; i < kept_count; i++) {
        struct alog_file *f;
        memcpy(reference, kept[i], region);
        AT_OK(alog_test_open_memory(reference, DATA_BYTES, reference + DATA_BYTES, log_bytes, false, &opts, &f));
        AT_OK(alog_recover(f, 1, false));
        alog_test_close_memory(f);
        memcpy(work, kept[i], region);
        AT_OK(alog_test_open_memory(work, DATA_BYTES, work + DATA_BYTES, log_bytes, false, &opts, &f));
        AT_CHECK(dk_explorer_begin(work, region) == 0, "explorer begin (recovery)");
        if (broken) alog_test_broken = ALOG_BROKEN_RECOVER_INVALIDATE_FIRST;
        int rc = alog_recover(f, recovery_threads, false);
        alog_test_broken = ALOG_BROKEN_NONE;
        dk_explorer_end();
        alog_test_close_memory(f);
        AT_CHECK(rc == 0, "recovery of kept state %llu: %d", (unsigned long long)i, rc);
        AT_CHECK(memcmp(work, reference, DATA_BYTES) == 0, "recovery with %u threads differs from 1 thread's",
                 recovery_threads);
        struct dk_explorer_options eo = {.seed = seed + i, .exhaustive_lines_max = 6, .samples_per_point = 12};
        struct dk_explorer_result r;
        rc = dk_explorer_run(&eo, check_recovery, NULL, &r);
        dk_explorer_free();
        if (rc < 0) AT_FAIL("explorer (recovery %llu): %d", (unsigned long long)i, rc);
        *explored += r.states;
        printf("  recovery of kept state %llu: %llu events, %llu crash points, %llu states, %llu failing%s%s\n",
               (unsigned long long)i, (unsigned long long)r.events, (unsigned long long)r.crash_points,
               (unsigned long long)r.states, (unsigned long long)r.failures, rc ? ": " : "", rc ? r.first_failure : "");
        failures += rc != 0;
    }
    free(work);
    free(reference);
    return failures;
}

int main(int argc, char **argv) {
    const char *pol = argc > 1 ? argv[1] : "hybrid";
    explore_recovery = argc > 3 && !strncmp(argv[3], "recovery", 8);
    if (explore_recovery && !strcmp(argv[3], "recovery2")) recovery_threads = 2;
    int broken = !strcmp(pol, "journal-pace-head-early")         ? ALOG_BROKEN_PACE_HEAD_BEFORE_FENCE
               : strstr(pol, "-sized-same-slot")              ? ALOG_BROKEN_SIZE_SAME_SLOT
               : !strcmp(pol, "journal-window-pad-unflushed") ? ALOG_BROKEN_WINDOW_PAD_NOT_WRITTEN_BACK
               : !strcmp(pol, "redo-pace-applied-early")      ? ALOG_BROKEN_REDO_APPLIED_EARLY
               : !strcmp(pol, "undo-release-uncommitted")     ? ALOG_BROKEN_UNDO_RELEASE_UNCOMMITTED
               : !strcmp(pol, "journal-grow-header-unflushed") ? ALOG_BROKEN_JGROW_HEADER_NOT_DURABLE
               : !strcmp(pol, "journal-sized-direct-unflushed") ? ALOG_BROKEN_JDIRECT_NOT_WRITTEN_BACK
               : !strcmp(pol, "journal-sized-direct-under-record") ? ALOG_BROKEN_JDIRECT_UNDER_RECORD
               : !strcmp(pol, "journal-sized-line-unflushed")  ? ALOG_BROKEN_COMMIT_LINE_NOT_WRITTEN_BACK
               : !strcmp(pol, "redo-pace-version-not-stored")  ? ALOG_BROKEN_VERSION_NOT_STORED
               : !strcmp(pol, "journal-owed-untracked")        ? ALOG_BROKEN_JOWED_UNTRACKED
                                                              : ALOG_BROKEN_NONE;
    sized = strstr(pol, "-sized") != NULL;
    direct = strstr(pol, "-sized-direct") != NULL;
    grow = !strncmp(pol, "journal-grow", 12);
    owed = !strncmp(pol, "journal-owed", 12);
    bool window = !strncmp(pol, "journal-window", 14);
    uint32_t policy = at_policy(broken == ALOG_BROKEN_PACE_HEAD_BEFORE_FENCE ? "journal-pace" : pol);
    const char *pace_env = getenv("DAXKIT_ATOMIC_PACE"); /* at_policy("journal-pace") sets it */
    bool paced = policy == DAXKIT_ATOMIC_JOURNAL && pace_env && !strcmp(pace_env, "1");
    journal_big = paced;
    /* the per-block engine's pacing (session 10; by the copies since session 19): redo-pace must apply entries */
    bool bpaced = !strncmp(pol, "redo-pace", 9);
    daxkit_atomic_options_init(&opts);
    opts.policy = policy, opts.log_bytes = LOG_DATA_BYTES, opts.checkpoint_interval_us = 0;
    opts.redo_write_pct = 100; /* the hybrid's forced switches below need redo reachable (the default: never) */
    log_bytes = alog_test_log_bytes(LOG_DATA_BYTES) + (grow ? LOG_DATA_BYTES : 0); /* room to double the area */
    size_t region = DATA_BYTES + log_bytes;
    char *mem = aligned_alloc(4096, region);
    scratch = aligned_alloc(4096, region);
    scratch_v1 = aligned_alloc(4096, region);
    AT_CHECK(mem && scratch && scratch_v1, "memory");
    memset(mem, 0, region);
    for (uint32_t i = 0; i < DATA_BYTES; i++) mem[i] = (char)(i * 13 + 1);
    for (uint32_t k = 0; k <= EPOCHS; k++) /* before the states: the direct batches write across sizes[k - 1] */
        sizes[k] = direct ? (16u << 10) + 6000ull * k - (k % 2) * 7 : DATA_BYTES - 1000ull * k - (k % 2) * 7;
    for (uint32_t k = 0; k <= EPOCHS; k++) {
        states[k] = malloc(DATA_BYTES);
        memcpy(states[k], k ? states[k - 1] : mem, DATA_BYTES);
        if (k) batch(k, states[k], NULL);
    }
    struct alog_file *f;
    AT_OK(alog_test_open_memory(mem, DATA_BYTES, mem + DATA_BYTES, log_bytes, true, &opts, &f));
    if (!strcmp(pol, "journal-bound") || owed)
        AT_CHECK(f->junflushed_max == 16, "journal-bound: the bound is %llu bytes, want 16",
                 (unsigned long long)f->junflushed_max);
    if (sized) { /* as alog_size_prepare leaves a tracked log: the size of the current epoch recorded */
        f->track_size = true;
        f->hdr->size_slot[f->hdr->epoch & 1] = sizes[0];
        f->hdr->size_mode = ALOG_SIZE_TRACKED;
        f->size_pending = sizes[0];
        if (direct) alog_jdirect_init(f); /* as the open does after recovery */
    }
    alog_test_broken = broken;
    AT_CHECK(dk_explorer_begin(mem, region) == 0, "explorer begin");
    for (uint32_t k = 1; k <= EPOCHS; k++) {
        batch(k, NULL, f);
        /* hybrid: a switch every other sync (its checkpoint pass is explored too) */
        if (policy == DAXKIT_ATOMIC_HYBRID) f->reads_epoch = k % 2 ? 0 : 100000, f->writes_epoch = k % 2 ? 100000 : 1;
        if (sized) f->size_pending = sizes[k];
        AT_OK(alog_sync(f));
        dk_explorer_mark(k);
        if (owed) late_owed += late.f != NULL, alog_jrnl_owed_end(&late); /* the preempted thread goes on */
        if (k == 5 && alog_checkpoint_committed(f) < 0) AT_FAIL("checkpoint pass");
        if (k == 5 && policy == DAXKIT_ATOMIC_JOURNAL && !window) AT_OK(alog_jrnl_test_pad_to_lap_end(f));
    }
    dk_explorer_end();
    alog_test_broken = ALOG_BROKEN_NONE;
    uint64_t grown_area = f->area_bytes;
    uint64_t direct_bytes = f->ctr.direct_bytes;
    uint64_t applied = f->ctr.paced_entries, partial = f->ctr.paced_partial, wraps = f->ctr.jwraps_early;
    struct daxkit_atomic_stats s = {0};
    uint64_t switches = f->ctr.policy_switches, retired = f->ctr.sync_checkpoints;
    alog_test_close_memory(f);
    (void)s;
    struct dk_explorer_options eo = {.seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 0, .exhaustive_lines_max = 10,
                                     .samples_per_point = 64, .singles_max = grow ? 32 : 0,
                                     .torn_samples_per_point = strstr(pol, "-torn") || strstr(pol, "-line-") ? 64 : 0};
    struct dk_explorer_result r;
    int rc = dk_explorer_run(&eo, check, NULL, &r);
    printf("%s: %llu events, %llu fences, %llu crash points (%llu sampled, up to %llu uncertain lines), %llu states "
           "in %.2f s, %llu failing, %llu policy switches, %llu write-time checkpoints, %llu records applied by copies "
           "(pacing), %llu in part, %llu window pads, seed=%llu\n",
           pol, (unsigned long long)r.events, (unsigned long long)r.fences, (unsigned long long)r.crash_points,
           (unsigned long long)r.sampled_points, (unsigned long long)r.uncertain_lines_max,
           (unsigned long long)r.states, r.seconds, (unsigned long long)r.failures, (unsigned long long)switches,
           (unsigned long long)retired, (unsigned long long)applied, (unsigned long long)partial,
           (unsigned long long)wraps, (unsigned long long)r.seed);
    if (rc < 0) AT_FAIL("explorer: %d", rc);
    if (paced && (applied == 0 || partial == 0))
        AT_FAIL("pacing not explored (%llu records applied by copies, %llu in part)", (unsigned long long)applied,
                (unsigned long long)partial);
    if (bpaced && applied == 0) AT_FAIL("per-block pacing not explored (no entry applied by a copy)");
    if (policy == DAXKIT_ATOMIC_HYBRID && switches == 0) AT_FAIL("the hybrid never switched: its switch was not explored");
    if (bpaced) printf("%llu version-1 crash states holding A recovered as a version-1 library too\n",
                       (unsigned long long)v1_checked);
    if (bpaced && !broken && v1_checked == 0) AT_FAIL("no version-1 crash state held A: the version's store was not explored");
    if (direct) printf("%llu bytes copied straight into the file\n", (unsigned long long)direct_bytes);
    if (direct && direct_bytes == 0) AT_FAIL("no copy went straight into the file: the direct path was not explored");
    if (grow) printf("journal grown %llu time(s): area %llu bytes\n", (unsigned long long)grows, (unsigned long long)grown_area);
    if (grow && grows == 0) AT_FAIL("the journal's growth was not explored (it never filled)");
    if (window && wraps < 2) AT_FAIL("the window was not explored (%llu window pads)", (unsigned long long)wraps);
    if (owed) printf("%llu of %u syncs found a copy's lines still owed by its thread\n", (unsigned long long)late_owed, EPOCHS);
    if (owed && late_owed < 2) AT_FAIL("owed lines at a sync were not explored (%llu syncs)", (unsigned long long)late_owed);
    if (broken) {
        AT_CHECK(rc != 0, "the explorer did not catch the broken variant %s", pol);
        printf("ok: bug found: %s\nPASS\n", r.first_failure);
        return 0;
    }
    if (rc) AT_FAIL("%s", r.first_failure);
    AT_CHECK(r.crash_points > EPOCHS, "too few crash points (%llu): nothing explored?", (unsigned long long)r.crash_points);
    if (explore_recovery) {
        dk_explorer_free();
        bool broken_rec = !strcmp(argv[3], "recovery-invalidate-first");
        uint64_t explored = 0, failures = explore_recoveries(region, r.seed, &explored, broken_rec);
        printf("recovery under power failure (%u thread(s)): %llu kept states of %llu with work, %llu states explored, "
               "%llu failing\n", recovery_threads, (unsigned long long)kept_count, (unsigned long long)kept_seen,
               (unsigned long long)explored, (unsigned long long)failures);
        AT_CHECK(kept_count > 0, "no crash state left recovery anything to do: nothing explored");
        if (broken_rec) {
            AT_CHECK(failures > 0, "the explorer did not catch recovery emptying the log before its bytes are durable");
            printf("ok: bug found in the broken recovery order\nPASS\n");
            return 0;
        }
        if (failures) AT_FAIL("recovery is not idempotent across a power failure inside it (seed=%llu)",
                              (unsigned long long)r.seed);
    }
    printf("PASS\n");
    return 0;
}
