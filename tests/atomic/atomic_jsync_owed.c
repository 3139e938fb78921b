/* Description: the journal's sync writes back about as many lines after 128 B copies into 1,000 blocks as after
 * one copy (session 20, issue 4 T3: the sync's cost independent of the dirty blocks). Before, the sync wrote
 * back what the session-17 bound left pending -- up to 4 KiB of records, ~1.7x the 1-block sync's time; now
 * the copies made through the C API hand the lines they complete to their thread, which writes them back
 * after its unlock (alog_journal.c, "Owed lines").
 * With the persist trace: the lines a sync writes back that nobody had written back before it (its own work;
 * lines an owner already wrote back are only written back again), for 1 copy and for 1,000 + i copies
 * (i = 0..7: where the epoch ends against the bound differs), each epoch then synced:
 *   - the largest count after 1,000+ copies is at most the 1-copy count + ALOG_JOWED_MIN_BYTES (512) and a
 *     record's lines;
 *   - session 21 (below the bound): after 2, 3, ..., 64 copies, at most the 1-copy count +
 *     ALOG_JOWED_FROM_BYTES (1,536) and a record's lines -- before, hand-outs began only past the 4 KiB bound
 *     and the sync after 29 copies wrote back 4,224 bytes;
 *   - every journal line of every epoch was written back by the time its sync returned;
 *   - the file read back after unmap and map (recovery) equals the model.
 * Public API only (the journal reached through the handle for the trace's addresses), so that the same
 * program built against an older tree is the negative control.   Usage: atomic_jsync_owed [DIR] */
#include "atomic_engine_test.h"
#include "common/dk.h"
#include "persist/persist.h"

#define FILE_BYTES (8u << 20)
#define BLOCKS (FILE_BYTES / 4096u)
#define COPY_BYTES 128u
#define MANY 1000u
#define SHAPES 8u
#define LINE 64u
#define OWED_MIN_BYTES 512u /* ALOG_JOWED_MIN_BYTES */
#define OWED_FROM_BYTES 1536u /* ALOG_JOWED_FROM_BYTES */
#define SHORT_MAX 64u         /* epochs of 2..SHORT_MAX copies: across the first hand-out */

static char model[FILE_BYTES];
static bool in_sync;
static uint64_t sync_new; /* bytes of lines the sync wrote back first */
static struct {
    const char *base;
    uint64_t bytes;
    uint8_t *back; /* per line: written back since the epoch began */
} watch;

static void on_store(const void *dst, size_t n, int nt) { (void)dst, (void)n, (void)nt; }
static void on_flush(const void *p, size_t n) {
    const char *c = p;
    if (!watch.back || c < watch.base || c >= watch.base + watch.bytes) return;
    uint64_t a = (uint64_t)(c - watch.base), lo = a / LINE, hi = (a + n + LINE - 1) / LINE;
    for (uint64_t l = lo; l < hi && l < watch.bytes / LINE; l++) {
        if (in_sync && !watch.back[l]) sync_new += LINE;
        watch.back[l] = 1;
    }
}
static void on_fence(void) {}
static const struct dk_persist_trace trace = {on_store, on_flush, on_fence};

static struct alog_file *engine(struct daxkit_atomic *a) { return *(struct alog_file **)a; /* api.c's handle */ }

static struct daxkit_atomic *map(const char *path) {
    struct daxkit_atomic_options o;
    daxkit_atomic_options_init(&o);
    o.policy = DAXKIT_ATOMIC_JOURNAL, o.log_bytes = 16u << 20, o.checkpoint_interval_us = 0;
    struct daxkit_atomic *a;
    AT_OK(daxkit_atomic_map(path, &o, &a));
    return a;
}

/* One epoch: `n` copies of 128 B into distinct blocks from `first`, then the sync. Returns the bytes the sync
 * wrote back first; checks that every journal line of the epoch was written back by then. */
static int api_copy(void *a, uint64_t off, const void *buf, size_t n) { return daxkit_atomic_copy(a, off, buf, n); }

static uint64_t epoch(struct daxkit_atomic *a, uint64_t first, uint32_t n, uint64_t tag) {
    struct alog_file *f = engine(a);
    uint64_t from = f->j.tail;
    memset(watch.back, 0, watch.bytes / LINE);
    at_copy_blocks(api_copy, a, model, first, n, COPY_BYTES, tag);
    sync_new = 0, in_sync = true;
    AT_OK(daxkit_atomic_sync(a));
    in_sync = false;
    uint64_t to = __atomic_load_n(&f->j.committed, __ATOMIC_ACQUIRE), p = at_line_not_back(watch.back, f->area_bytes, from, to);
    AT_CHECK(p == UINT64_MAX, "%u copies: journal line at %llu (epoch [%llu, %llu)) not written back by the sync's return",
             n, (unsigned long long)p, (unsigned long long)from, (unsigned long long)to);
    return sync_new;
}

int main(int argc, char **argv) {
    at_setup_dir(argc, argv);
    setenv("DAXKIT_TEST_ATOMIC_JWINDOW", "0", 1); /* no window pads: only records in the counts */
    char path[600];
    at_path(path, sizeof path, "owed.bin");
    at_make_model_file(path, FILE_BYTES, 5, model);
    struct daxkit_atomic *a = map(path);
    struct alog_file *f = engine(a);
    printf("medium %d, pacing %d, bound %llu bytes\n", (int)f->persist_as, (int)f->jpace,
           (unsigned long long)f->junflushed_max);
    if (f->persist_as == DK_MEDIUM_PAGECACHE) at_skip("pagecache medium: the commit's fdatasync writes the log back");
    watch.base = f->area, watch.bytes = f->area_bytes, watch.back = calloc(f->area_bytes / LINE, 1);
    AT_CHECK(watch.back != NULL, "calloc");
    dk_persist_set_trace(&trace);
    uint64_t one = 0, many_max = 0;
    for (uint32_t s = 0; s < SHAPES; s++) {
        uint64_t o = epoch(a, 10 + s, 1, 1000 + s);
        uint64_t m = epoch(a, 100 + s * 8, MANY + s, 100000 * (s + 1));
        printf("sync after 1 copy: %llu bytes written back first; after %u copies: %llu\n", (unsigned long long)o,
               MANY + s, (unsigned long long)m);
        one = DK_MAX(one, o), many_max = DK_MAX(many_max, m);
    }
    uint64_t short_max = 0;
    uint32_t short_at = 0;
    for (uint32_t n = 2; n <= SHORT_MAX; n++) {
        uint64_t m = epoch(a, 1200, n, 300000 + n * 100);
        if (m > short_max) short_max = m, short_at = n;
    }
    printf("short epochs: the sync wrote back at most %llu bytes first (after %u copies)\n",
           (unsigned long long)short_max, short_at);
    dk_persist_set_trace(NULL);
    free(watch.back);
    watch.back = NULL;
    AT_CHECK(many_max <= one + OWED_MIN_BYTES + 3 * LINE,
             "after 1,000+ copies of 128 B the sync wrote back up to %llu bytes first, after 1 copy %llu: the sync's "
             "work grows with the dirty blocks", (unsigned long long)many_max, (unsigned long long)one);
    AT_CHECK(short_max <= one + OWED_FROM_BYTES + 3 * LINE,
             "after %u copies of 128 B the sync wrote back %llu bytes first, after 1 copy %llu: below the bound the "
             "sync's work grows with the dirty blocks", short_at, (unsigned long long)short_max, (unsigned long long)one);
    AT_OK(daxkit_atomic_unmap(a));
    a = map(path);
    static char got[FILE_BYTES];
    AT_OK(daxkit_atomic_read(a, 0, got, FILE_BYTES));
    for (uint64_t b = 0; b < BLOCKS; b++)
        AT_CHECK(memcmp(got + b * 4096, model + b * 4096, 4096) == 0, "after unmap and map: block %llu differs",
                 (unsigned long long)b);
    AT_OK(daxkit_atomic_unmap(a));
    printf("PASS\n");
    return 0;
}
