/* Description: the journal's sync writes back a bounded amount whatever the epoch's size (session 17, issue 4:
 * the sync's cost independent of the number of dirty blocks). Records are stored plainly (with pacing, the
 * default, all under 32 KiB); before session 17 the sync wrote back every one of them, so a sync after 4 KiB
 * copies into 1,000 blocks wrote back ~4 MiB (237 us against 0.9 us for one block). Now a copy writes back
 * the records before it once f->junflushed_max bytes are pending.
 * With the persist trace counting the bytes written back inside alog_sync, for 4 KiB copies and for 128 B
 * copies into 1 and into 1,000 distinct blocks:
 *   - the sync after 1,000 blocks writes back no more than after 1 block plus the bound (and a few lines);
 *   - every journal line of the epoch was written back (or stored non-temporally) by the time the sync
 *     returns -- the bound moves write-backs, it never drops one;
 *   - the file read through the engine equals the model; after close and reopen (recovery) too.
 * Then appends past the committed size with the size tracked (a DAXKIT_ATOMIC file under `daxkit run`: they
 * go straight into the file, alog_jdirect.c; review 17, finding 3): 1 and 1,000 appends of 128 B between two
 * syncs, the same bound on what the sync writes back, every appended line written back by the sync's return,
 * and the file, closed, equal to the model at the last committed size.
 * Usage: atomic_jsync_bound [DIR]   (DAXKIT_TEST_ATOMIC_JUNFLUSHED=0: no bound -- the negative control) */
#include "atomic_engine_test.h"
#include "common/dk.h"
#include "persist/persist.h"

#define FILE_BYTES (8u << 20)
#define BLOCKS (FILE_BYTES / 4096u)
#define LOG_BYTES (16u << 20)
#define LINE 64u

static char model[FILE_BYTES];
static bool in_sync;
static uint64_t sync_flushed; /* bytes of lines written back inside alog_sync (whole lines) */
/* The lines watched (the journal area, or the appended part of the file): written back (or stored
 * non-temporally) since the mark */
static struct {
    const char *base;
    uint64_t bytes;
    uint8_t *back;
} watch;

static bool in_area(const void *p) {
    const char *c = p;
    return watch.back && c >= watch.base && c < watch.base + watch.bytes;
}

static void mark_lines(const void *p, size_t n) {
    if (!in_area(p)) return;
    uint64_t a = (uint64_t)((const char *)p - watch.base), lo = a / LINE, hi = (a + n + LINE - 1) / LINE;
    for (uint64_t l = lo; l < hi && l < watch.bytes / LINE; l++) watch.back[l] = 1;
}

static void on_store(const void *dst, size_t n, int nt) {
    if (nt) mark_lines(dst, n);
}
static void on_flush(const void *p, size_t n) {
    uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(LINE - 1), hi = ((uintptr_t)p + n + LINE - 1) & ~(uintptr_t)(LINE - 1);
    if (in_sync) sync_flushed += hi - lo;
    mark_lines(p, n);
}
static void on_fence(void) {}
static const struct dk_persist_trace trace = {on_store, on_flush, on_fence};

/* `tracked`: the size tracked, as a DAXKIT_ATOMIC file's engine under `daxkit run` */
static struct alog_file *open_engine(const char *path, bool tracked) {
    struct daxkit_atomic_options o, r;
    daxkit_atomic_options_init(&o);
    o.policy = DAXKIT_ATOMIC_JOURNAL, o.log_bytes = LOG_BYTES, o.checkpoint_interval_us = 0;
    AT_OK(alog_options_resolve(&o, &r));
    struct alog_file *f;
    AT_OK(tracked ? alog_open_tracked(path, &r, &f) : alog_open(path, &r, &f));
    return f;
}

/* One epoch: `blocks` copies of `bs` bytes into distinct blocks from `first`, then the sync. Returns the
 * bytes the sync wrote back; checks that every journal line of the epoch was written back by then. */
static uint64_t epoch(struct alog_file *f, uint64_t first, uint32_t blocks, uint32_t bs, uint64_t tag) {
    uint64_t from = f->j.tail;
    memset(watch.back, 0, f->area_bytes / LINE);
    at_copy_blocks(at_alog_copy, f, model, first, blocks, bs, tag);
    sync_flushed = 0, in_sync = true;
    AT_OK(alog_sync(f));
    in_sync = false;
    uint64_t to = __atomic_load_n(&f->j.committed, __ATOMIC_ACQUIRE), p = at_line_not_back(watch.back, f->area_bytes, from, to);
    AT_CHECK(p == UINT64_MAX, "%u x %u B: journal line at %llu (epoch [%llu, %llu)) not written back by the sync", blocks,
             bs, (unsigned long long)p, (unsigned long long)from, (unsigned long long)to);
    return sync_flushed;
}

#define APPEND_BYTES 128u
#define APPENDS_MAX 1000u
#define APPEND_START (64u << 10) /* the file's size before the appends */

/* One epoch of `n` appends of APPEND_BYTES at *size (past the committed size: straight into the file), then
 * the sync. Returns the bytes the sync wrote back; checks every appended line was written back by then. */
static uint64_t append_epoch(struct alog_file *f, char *amodel, uint64_t *size, uint32_t n, uint64_t tag) {
    static char buf[APPEND_BYTES];
    uint64_t from = *size;
    memset(watch.back, 0, watch.bytes / LINE);
    for (uint32_t i = 0; i < n; i++) {
        at_fill(buf, APPEND_BYTES, tag + i);
        AT_OK(alog_grow(f, *size + APPEND_BYTES));
        AT_OK(alog_copy(f, *size, buf, APPEND_BYTES));
        memcpy(amodel + *size, buf, APPEND_BYTES);
        *size += APPEND_BYTES;
    }
    f->size_pending = *size; /* as the route's commit records its size */
    sync_flushed = 0, in_sync = true;
    AT_OK(alog_sync(f));
    in_sync = false;
    for (uint64_t p = dk_round_down(from, LINE); p < *size; p += LINE)
        AT_CHECK(watch.back[(p - APPEND_START) / LINE], "%u appends: file line at %llu not written back by the sync", n,
                 (unsigned long long)p);
    return sync_flushed;
}

static void appends(const char *path, uint64_t bound) {
    static char amodel[APPEND_START + 4 * APPENDS_MAX * APPEND_BYTES], got[sizeof amodel];
    at_make_model_file(path, APPEND_START, 9, amodel);
    struct alog_file *f = open_engine(path, true);
    AT_CHECK(f->size_pending == APPEND_START, "committed size %llu at open", (unsigned long long)f->size_pending);
    watch.base = f->data + APPEND_START, watch.bytes = sizeof amodel - APPEND_START;
    watch.back = calloc(watch.bytes / LINE, 1);
    AT_CHECK(watch.back != NULL, "calloc");
    dk_persist_set_trace(&trace);
    uint64_t size = APPEND_START, one = 0, many = 0;
    for (int round = 0; round < 2; round++) {
        one = append_epoch(f, amodel, &size, 1, 5000 + round);
        many = append_epoch(f, amodel, &size, APPENDS_MAX, 7000 + round * APPENDS_MAX);
    }
    dk_persist_set_trace(NULL);
    uint64_t direct = f->ctr.direct_bytes;
    free(watch.back);
    watch.back = NULL;
    printf("128 B appends past the committed size (%llu bytes straight into the file): the sync wrote back %llu bytes "
           "after 1, %llu after 1,000\n", (unsigned long long)direct, (unsigned long long)one, (unsigned long long)many);
    AT_CHECK(direct == size - APPEND_START, "%llu of %llu appended bytes went straight into the file",
             (unsigned long long)direct, (unsigned long long)(size - APPEND_START));
    AT_CHECK(many <= one + bound + 4 * LINE,
             "1,000 appends: the sync wrote back %llu bytes, 1 append %llu (bound %llu): the sync's write-back grows "
             "with the appends", (unsigned long long)many, (unsigned long long)one, (unsigned long long)bound);
    uint64_t closed = 0;
    AT_OK(alog_close_sized(f, &closed));
    AT_CHECK(closed == size, "closed at %llu bytes, committed %llu", (unsigned long long)closed, (unsigned long long)size);
    at_read_file(path, got, size);
    AT_CHECK(memcmp(got, amodel, size) == 0, "the appended file differs from the model after close");
}

int main(int argc, char **argv) {
    at_setup_dir(argc, argv);
    setenv("DAXKIT_TEST_ATOMIC_JWINDOW", "0", 1); /* no window pads: only records in the counts */
    char path[600];
    at_path(path, sizeof path, "bound.bin");
    at_make_model_file(path, FILE_BYTES, 5, model);

    struct alog_file *f = open_engine(path, false);
    watch.base = f->area, watch.bytes = f->area_bytes, watch.back = calloc(f->area_bytes / LINE, 1);
    AT_CHECK(watch.back != NULL, "calloc");
    uint64_t bound = f->junflushed_max;
    printf("medium %d, pacing %d, bound %llu bytes\n", (int)f->persist_as, (int)f->jpace, (unsigned long long)bound);
    if (f->persist_as == DK_MEDIUM_PAGECACHE) at_skip("pagecache medium: the commit's fdatasync writes the log back");
    dk_persist_set_trace(&trace);
    const uint32_t sizes[] = {4096, 128};
    for (int s = 0; s < 2; s++) {
        uint32_t bs = sizes[s];
        /* twice each, the second after a committed epoch of the same shape (pacing then applies one) */
        uint64_t one = 0, many = 0;
        for (int round = 0; round < 2; round++) {
            one = epoch(f, 10 + round, 1, bs, 1000 * (s + 1) + round);
            many = epoch(f, 20 + round * 1000, 1000, bs, 100000 * (s + 1) + round * 1000);
        }
        printf("%u B copies: the sync wrote back %llu bytes after 1 block, %llu after 1,000\n", bs,
               (unsigned long long)one, (unsigned long long)many);
        AT_CHECK(many <= one + bound + 4 * LINE,
                 "%u B copies into 1,000 blocks: the sync wrote back %llu bytes, 1 block %llu (bound %llu): the "
                 "sync's write-back grows with the dirty blocks",
                 bs, (unsigned long long)many, (unsigned long long)one, (unsigned long long)bound);
    }
    dk_persist_set_trace(NULL);
    free(watch.back);
    watch.back = NULL;
    at_check_blocks(f, model, BLOCKS, "live");
    AT_OK(alog_close(f));
    f = open_engine(path, false);
    at_check_blocks(f, model, BLOCKS, "reopened");
    AT_OK(alog_close(f));
    at_path(path, sizeof path, "appends.bin");
    appends(path, bound);
    printf("PASS\n");
    return 0;
}
