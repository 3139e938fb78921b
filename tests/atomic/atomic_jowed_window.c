/* Description: a copy's owed journal lines are written back, after its unlock, at the addresses of the hand-out --
 * never computed again from the journal's area and size, which another thread's growth changes meanwhile
 * (review 20, finding 2: an owner preempted across a growth could read the new size with the old mapping and
 * flush past that mapping's end: SIGSEGV in the program's write). The window made deterministic: a copy in
 * an epoch past the bound hands this thread lines (alog_jrnl_owed_begin/end around it, as the C API and the
 * route do); before its end the journal grows (alog_jrnl_grow: the log mapped anew, the area doubled), and the
 * engine's area pointer and size are then set to garbage for the end alone (what a torn read could see). The
 * end must write back exactly the recorded lines, inside the old mapping (which stays mapped until the close),
 * and nothing else; then the sync, and the file after close and open equals the model.
 * Usage: atomic_jowed_window [DIR] */
#include "atomic_engine_test.h"
#include "common/dk.h"
#include "persist/persist.h"

#define FILE_BYTES (1u << 20)
#define LOG_BYTES (16u << 20)
#define COPY_BYTES 128u
#define COPIES_MAX 2000u

static char model[FILE_BYTES];
static struct {
    const char *p;
    uint64_t n;
} flushed[8];
static uint32_t nflushed;

static void on_store(const void *dst, size_t n, int nt) { (void)dst, (void)n, (void)nt; }
static void on_flush(const void *p, size_t n) {
    if (nflushed < DK_ARRAY_LEN(flushed)) flushed[nflushed].p = p, flushed[nflushed].n = n;
    nflushed++;
}
static void on_fence(void) {}
static const struct dk_persist_trace trace = {on_store, on_flush, on_fence};

int main(int argc, char **argv) {
    at_setup_dir(argc, argv);
    setenv("DAXKIT_TEST_ATOMIC_JWINDOW", "0", 1);
    char path[600];
    at_path(path, sizeof path, "window.bin");
    at_make_model_file(path, FILE_BYTES, 3, model);
    struct alog_file *f = at_engine_open(path, DAXKIT_ATOMIC_JOURNAL, LOG_BYTES);
    if (f->persist_as == DK_MEDIUM_PAGECACHE) at_skip("pagecache medium: nothing is handed out");
    /* Copies into distinct blocks until one hands this thread lines (the epoch past the bound, then every
     * ALOG_JOWED_MIN_BYTES); the records before it are written back by their own ends. */
    static char buf[COPY_BYTES];
    struct alog_jowed o;
    uint32_t i = 0;
    for (;; i++) {
        AT_CHECK(i < COPIES_MAX, "no copy handed its thread lines in %u copies of %u bytes", i, COPY_BYTES);
        uint64_t off = (uint64_t)(i % (FILE_BYTES / 4096)) * 4096 + 64;
        for (uint32_t b = 0; b < COPY_BYTES; b++) buf[b] = (char)(i * 29 + b * 3 + 1);
        memcpy(model + off, buf, COPY_BYTES);
        alog_jrnl_owed_begin(&o);
        AT_OK(alog_copy(f, off, buf, COPY_BYTES));
        if (o.f) break;
        alog_jrnl_owed_end(&o);
    }
    const char *old_area = f->area;
    uint64_t old_bytes = f->area_bytes;
    printf("copy %u handed out %llu + %llu bytes at area offset %lld\n", i, (unsigned long long)o.piece[0].n,
           (unsigned long long)o.piece[1].n, (long long)(o.piece[0].p - old_area));
    AT_CHECK(o.f == f && o.piece[0].n + o.piece[1].n >= 64, "handed out: %llu bytes", (unsigned long long)o.piece[0].n);
    /* Another thread's growth while this one is between its unlock and its write-back */
    AT_OK(alog_jrnl_grow(f));
    AT_CHECK(f->area_bytes == 2 * old_bytes && f->area != old_area, "the journal did not grow (area %llu bytes)",
             (unsigned long long)f->area_bytes);
    char *new_area = f->area;
    uint64_t new_bytes = f->area_bytes;
    f->area = NULL, f->area_bytes = 1; /* whatever a read of them now sees must not matter */
    dk_persist_set_trace(&trace);
    alog_jrnl_owed_end(&o);
    dk_persist_set_trace(NULL);
    f->area = new_area, f->area_bytes = new_bytes;
    uint32_t want = o.piece[1].n ? 2 : 1;
    AT_CHECK(nflushed == want, "the owed write-back made %u write-backs, want %u", nflushed, want);
    for (uint32_t k = 0; k < want; k++) {
        AT_CHECK(flushed[k].p == o.piece[k].p && flushed[k].n == o.piece[k].n,
                 "write-back %u: %llu bytes at area offset %lld, recorded %llu at %lld", k, (unsigned long long)flushed[k].n,
                 (long long)(flushed[k].p - old_area), (unsigned long long)o.piece[k].n, (long long)(o.piece[k].p - old_area));
        AT_CHECK(flushed[k].p >= old_area && flushed[k].p + flushed[k].n <= old_area + old_bytes,
                 "write-back %u outside the mapping of the hand-out", k);
    }
    AT_OK(alog_sync(f));
    at_check_blocks(f, model, FILE_BYTES / 4096, "after the growth and the sync");
    AT_OK(alog_close(f));
    f = at_engine_open(path, DAXKIT_ATOMIC_JOURNAL, LOG_BYTES);
    at_check_blocks(f, model, FILE_BYTES / 4096, "reopened");
    AT_OK(alog_close(f));
    printf("PASS\n");
    return 0;
}
