/* Description: the per-block engine's undo and redo syncs write back nothing per dirty block (issue 4 T3).
 * undo (session 18): a committed undo entry is obsolete (recovery undoes only entries of the current epoch), so
 * the commit leaves the epoch's entries alone and the copies release committed ones, a few per copy
 * (alog_bpace_release_undo). Before, the paced commit wrote an invalidation back for up to 320 committed
 * entries: ~20 KiB per sync after 1,000 dirty blocks against a few lines after one (~0.5 -> ~74 us).
 * redo (session 19): the copies apply committed entries in creation order and the commit stores one word, A
 * ("every redo entry below epoch A is applied"), in the epoch word's line (alog_redo_fifo.c); entries below the
 * durable A are released by the copies without an invalidation. Before, the paced commit applied the previous
 * epoch's deltas and wrote an invalidation back per entry.
 * With the persist trace counting the bytes written back inside alog_sync, pacing on (the default on fence
 * and volatile media), 128 B copies into 1 and into 1,000 distinct 4 KiB blocks, three rounds:
 *   - every sync, after 1 block or 1,000 (and after a sync of 1,000), writes back no more than the first sync
 *     (nothing committed before it) plus 4 lines;
 *   - the copies keep the log short without the checkpoint thread: after each sync no more than three epochs'
 *     log blocks are in use (the last epoch's, and what the copies have not released yet);
 *   - the file read through the engine equals the model; after a crash (a child that exits without closing,
 *     its log holding entries released below A whose slots and log blocks were reused) and recovery at the
 *     reopen; after a clean close and reopen too.
 * Usage: atomic_sync_bound undo|redo [DIR] */
#include <sys/mman.h>
#include <sys/wait.h>

#include "atomic_engine_test.h"
#include "common/dk.h"
#include "persist/persist.h"

#define FILE_BYTES (16u << 20)
#define BLOCKS (FILE_BYTES / 4096u)
#define LOG_BYTES (32u << 20)
#define LINE 64u
#define COPY_BYTES 128u
#define MANY 1000u

static char *model; /* shared with the child that crashes */
static uint32_t policy;
static bool in_sync;
static uint64_t sync_flushed; /* bytes of lines written back inside alog_sync (whole lines) */

static void on_store(const void *dst, size_t n, int nt) { (void)dst, (void)n, (void)nt; }
static void on_flush(const void *p, size_t n) {
    uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(LINE - 1), hi = ((uintptr_t)p + n + LINE - 1) & ~(uintptr_t)(LINE - 1);
    if (in_sync) sync_flushed += hi - lo;
}
static void on_fence(void) {}
static const struct dk_persist_trace trace = {on_store, on_flush, on_fence};

static struct alog_file *open_engine(const char *path) { return at_engine_open(path, policy, LOG_BYTES); }

/* One epoch: `blocks` copies of COPY_BYTES into distinct blocks from `first`, then the sync. Returns the bytes
 * the sync wrote back. */
static uint64_t epoch(struct alog_file *f, uint64_t first, uint32_t blocks, uint64_t tag) {
    at_copy_blocks(at_alog_copy, f, model, first, blocks, COPY_BYTES, tag);
    sync_flushed = 0, in_sync = true;
    AT_OK(alog_sync(f));
    in_sync = false;
    return sync_flushed;
}

/* The rounds (in the child): the bounds checked after each sync; then the live file; exits without closing. */
static void rounds(const char *path, const char *name) {
    struct alog_file *f = open_engine(path);
    printf("%s: medium %d, pacing %d\n", name, (int)f->persist_as, (int)f->bpace);
    if (f->persist_as == DK_MEDIUM_PAGECACHE) at_skip("pagecache medium: redo without pacing only there");
    if (!f->bpace) at_skip("pacing off (DAXKIT_ATOMIC_PACE=0): the commit is not paced");
    dk_persist_set_trace(&trace);
    /* the baseline: one block's sync with nothing committed before it (no entry a commit could touch) */
    uint64_t base = epoch(f, 1, 1, 1), used_max = 0;
    for (uint32_t round = 0; round < 3; round++) {
        uint64_t one = epoch(f, 10 + round, 1, 1000 + round);
        uint64_t many = epoch(f, 20 + round * MANY, MANY, 100000 + round * MANY);
        uint64_t used = __atomic_load_n(&f->area_used_bytes, __ATOMIC_RELAXED);
        used_max = DK_MAX(used_max, used);
        printf("round %u: the sync wrote back %llu bytes after 1 block, %llu after %u (first sync: %llu); log blocks "
               "in use %llu bytes\n", round, (unsigned long long)one, (unsigned long long)many, MANY,
               (unsigned long long)base, (unsigned long long)used);
        AT_CHECK(one <= base + 4 * LINE && many <= base + 4 * LINE,
                 "%s: the syncs after 1 and %u dirty blocks wrote back %llu and %llu bytes, the first sync %llu: the "
                 "commit writes back per-entry state", name, MANY, (unsigned long long)one, (unsigned long long)many,
                 (unsigned long long)base);
    }
    dk_persist_set_trace(NULL);
    AT_CHECK(used_max <= 3ull * MANY * 4096,
             "%s: %llu bytes of log blocks in use after a sync (more than three epochs of %u blocks): the copies do "
             "not release committed entries", name, (unsigned long long)used_max, MANY);
    at_check_blocks(f, model, BLOCKS, "live");
    fflush(stdout);
    _exit(0); /* a crash after the last sync: no close, the log as the engine left it */
}

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : "undo";
    AT_CHECK(!strcmp(name, "undo") || !strcmp(name, "redo"), "usage: atomic_sync_bound undo|redo [DIR]");
    policy = !strcmp(name, "undo") ? DAXKIT_ATOMIC_UNDO : DAXKIT_ATOMIC_REDO;
    at_setup_dir(argc - 1, argv + 1);
    model = mmap(NULL, FILE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    AT_CHECK(model != MAP_FAILED, "mmap: %s", strerror(errno));
    char path[600];
    at_path(path, sizeof path, "bound.bin");
    at_make_model_file(path, FILE_BYTES, 7, model);
    fflush(stdout);
    pid_t pid = fork();
    AT_CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) rounds(path, name);
    int st;
    AT_CHECK(waitpid(pid, &st, 0) == pid, "waitpid: %s", strerror(errno));
    if (WIFEXITED(st) && WEXITSTATUS(st) == 77) return 77;
    AT_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the rounds failed (status %d)", st);
    struct alog_file *f = open_engine(path); /* recovers the crashed log */
    at_check_blocks(f, model, BLOCKS, "recovered after the crash");
    AT_OK(alog_close(f));
    f = open_engine(path);
    at_check_blocks(f, model, BLOCKS, "reopened");
    AT_OK(alog_close(f));
    printf("PASS\n");
    return 0;
}
