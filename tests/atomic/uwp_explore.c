/* Description: power failure during failure-atomic msync of a mapping (src/atomic/uwp.c, the file-mapping mode:
 * userfaultfd write-protection, each page's old bytes saved as an undo entry at its first store of an epoch,
 * msync writes the epoch's pages back, commits, protects them again), through the crash-state explorer
 * (tests/explorer; review 13, finding 5 c: the mmap engine was explored by crash points only). The "file" is
 * a shmem (memfd) mapping -- what userfaultfd protects for a tmpfs file -- followed by its undo log, both
 * persisting as on dax. A program thread stores into the mapping with plain memcpy (each store reported to the
 * explorer: its lines may reach media from then on, as a program's stores may be evicted any time), the
 * handler thread saves pages at their write faults, and the program msyncs after each batch. At every crash
 * point (before each fence, before a line's candidate is replaced, and at the end) the explorer materialises
 * the media states a power failure could leave; on each, recovery runs on a copy and the file must equal the
 * state of the last completed msync k or of msync k+1 (in flight).
 * Usage: uwp_explore correct|writes|shadow|commit-before-pages|save-unfenced [SEED [EPOCHS]]
 *   shadow: the shadow mode (uwp_shadow.c, what XFS/ext4 files get) on the dax path: the program stores into a
 *   shmem shadow (its own memory, not reported), msync journals each dirty page's changed bytes, commits and
 *   applies them to the file before it returns.
 *   writes: even batches also write() 200 bytes into a page they stored, as the kernel writes the file (the
 *   memfd, not the mapping), then dk_uwp_write_end carries them into the page's undo copy: once write()
 *   returned, a crash must keep them (msync k-1 with them, or msync k); while it is in flight each of its
 *   bytes may be old or new (review 10, finding 8).
 *   the broken variants must be caught (exit 0 only if the explorer finds a failing state): commit-before-pages
 *   (msync commits the epoch, then writes its pages back), save-unfenced (the write fault lets the store go
 *   with the page's undo entry written back but not fenced: the handler's fences skipped, so the store can
 *   reach media before the entry that would roll it back).
 * Skips (77) where userfaultfd cannot write-protect shared memory. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "atomic/alog.h"
#include "atomic/uwp.h"
#include "atomic/uwp_internal.h"
#include "common/dk.h"
#include "atomic_test.h"
#include "explore_recover.h"
#include "explorer.h"

#define DATA_BYTES (64u << 10) /* 16 pages */
#define PAGE 4096u
#define LOG_DATA_BYTES (2u << 20)
#define EPOCHS_MAX 64u

#define WRITE_ACK (1ull << 32) /* mark: batch k's write() returned (WRITE_ACK | k) */
#define WRITE_BYTES 200u

static uint64_t log_bytes;
static struct daxkit_atomic_options opts;
static char *states[EPOCHS_MAX + 1];
static char *scratch;
static uint32_t epochs = 8;
/* `writes`: even batches also write() WRITE_BYTES into a page they stored (its undo copy must get them:
 * uwp_undo_file_written), as the kernel's write into the file would, outside the msync epochs. */
static bool writes;
static char wbuf[EPOCHS_MAX + 1][WRITE_BYTES];
static uint64_t woff[EPOCHS_MAX + 1];
static char *pre[EPOCHS_MAX + 1]; /* states[k - 1] with batch k's write() in */
static int mfd;

static bool has_write(uint32_t k) { return writes && k % 2 == 0; }

/* Batch k's stores into `dst` (the mapping, or the model): a small one, a whole page, one across a page
 * boundary, a second store into a page stored already (a line stored twice), a store into the page batch k-1
 * wrote whole (its committed undo entry is retired at the fault), and every fourth batch a store into every
 * page (the whole file in one epoch). `report`: tell the explorer (the mapping's stores). */
static void batch(uint32_t k, char *dst, bool report) {
    uint64_t rs = 0x0a7b9e11ull ^ (uint64_t)k * 0x9e3779b97f4a7c15ull;
    static char buf[PAGE + 64];
    struct {
        uint64_t off;
        uint32_t n;
    } st[8 + DATA_BYTES / PAGE];
    uint32_t n = 0;
    at_rand(&rs);
    uint32_t small = 1 + (uint32_t)(at_rand(&rs) % 300);
    st[n].off = at_rand(&rs) % (DATA_BYTES - small), st[n++].n = small;
    st[n].off = (uint64_t)(k % (DATA_BYTES / PAGE)) * PAGE, st[n++].n = PAGE;
    uint64_t cross = (uint64_t)(1 + (k * 5) % (DATA_BYTES / PAGE - 1)) * PAGE;
    st[n].off = cross - 40, st[n++].n = 100;
    st[n].off = st[0].off + (small > 8 ? small / 2 : 0), st[n++].n = 8; /* again, inside the first store */
    if (k > 1) st[n].off = (uint64_t)((k - 1) % (DATA_BYTES / PAGE)) * PAGE + 640, st[n++].n = 70;
    if (k % 4 == 0)
        for (uint32_t p = 0; p < DATA_BYTES / PAGE; p++) st[n].off = (uint64_t)p * PAGE + 64u * (p % 64), st[n++].n = 16;
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t j = 0; j < st[i].n; j++) buf[j] = (char)at_rand(&rs);
        memcpy(dst + st[i].off, buf, st[i].n);
        if (report) dk_explorer_store(dst + st[i].off, st[i].n);
    }
    if (!has_write(k)) return;
    /* into the whole page stored above (saved this epoch), 60 bytes in: its undo copy exists */
    woff[k] = st[1].off + 60;
    for (uint32_t j = 0; j < WRITE_BYTES; j++) wbuf[k][j] = (char)at_rand(&rs);
}

/* Batch k's write() into the mapped file, as the kernel makes it: into the file (the memfd) without the mapping
 * (no write fault), then carried into the undo copies (dk_uwp_write_end). Reported as plain stores. */
static void write_file(struct dk_uwp *u, char *mem, uint32_t k) {
    struct dk_uwp_write w;
    AT_OK(dk_uwp_write_begin(u, &w));
    AT_CHECK(pwrite(mfd, wbuf[k], WRITE_BYTES, (off_t)woff[k]) == WRITE_BYTES, "pwrite: %s", strerror(errno));
    dk_explorer_store(mem + woff[k], WRITE_BYTES);
    dk_uwp_write_end(&w, woff[k], wbuf[k], WRITE_BYTES);
    dk_explorer_mark(WRITE_ACK | k);
}

static int check(const void *image, size_t bytes, const uint64_t *marks, size_t nmarks, char *why, size_t why_bytes,
                 void *ctx) {
    (void)ctx;
    struct alog_file *f;
    if (explore_recover_image(image, bytes, scratch, DATA_BYTES, log_bytes, &opts, &f, why, why_bytes)) return 1;
    alog_test_close_memory(f);
    uint64_t last = nmarks ? marks[nmarks - 1] : 0;
    if (last & WRITE_ACK) { /* batch k's write() returned, msync k not yet: the rollback keeps it */
        uint64_t k = last & ~WRITE_ACK;
        if (memcmp(scratch, pre[k], DATA_BYTES) == 0 || memcmp(scratch, states[k], DATA_BYTES) == 0) return 0;
        snprintf(why, why_bytes, "write() of batch %llu returned: the file is neither msync %llu with it nor msync %llu",
                 (unsigned long long)k, (unsigned long long)k - 1, (unsigned long long)k);
        return 1;
    }
    for (uint64_t k = last; k <= last + 1 && k <= epochs; k++)
        if (memcmp(scratch, states[k], DATA_BYTES) == 0) return 0;
    if (last < epochs && has_write((uint32_t)last + 1)) { /* its write() may be in flight: each byte old or new */
        uint32_t k = (uint32_t)last + 1;
        bool ok = true;
        for (uint32_t i = 0; i < DATA_BYTES && ok; i++) {
            bool in = i >= woff[k] && i < woff[k] + WRITE_BYTES;
            ok = scratch[i] == states[last][i] || (in && scratch[i] == wbuf[k][i - woff[k]]);
        }
        if (ok) return 0;
    }
    for (uint32_t i = 0; i < DATA_BYTES; i++)
        if (scratch[i] != states[last][i]) {
            snprintf(why, why_bytes, "file is neither msync %llu (completed) nor msync %llu: byte %u is %d, msync %llu "
                     "had %d", (unsigned long long)last, (unsigned long long)last + 1, i, scratch[i],
                     (unsigned long long)last, states[last][i]);
            return 1;
        }
    snprintf(why, why_bytes, "file is neither msync %llu nor %llu", (unsigned long long)last, (unsigned long long)last + 1);
    return 1;
}

int main(int argc, char **argv) {
    const char *variant = argc > 1 ? argv[1] : "correct";
    writes = !strcmp(variant, "writes");
    bool shadow = !strcmp(variant, "shadow");
    int broken = !strcmp(variant, "commit-before-pages") ? ALOG_BROKEN_UWP_COMMIT_BEFORE_PAGES
               : !strcmp(variant, "save-unfenced")     ? ALOG_BROKEN_UWP_SAVE_UNFENCED
                                                       : ALOG_BROKEN_NONE;
    if (!broken && strcmp(variant, "correct") && !writes && !shadow)
        AT_FAIL("usage: uwp_explore correct|writes|shadow|commit-before-pages|save-unfenced [SEED [EPOCHS]]");
    if (argc > 3) epochs = (uint32_t)strtoul(argv[3], NULL, 0);
    AT_CHECK(epochs >= 2 && epochs <= EPOCHS_MAX, "epochs: 2..%u", EPOCHS_MAX);
    daxkit_atomic_options_init(&opts);
    opts.policy = shadow ? DAXKIT_ATOMIC_JOURNAL : DAXKIT_ATOMIC_UNDO, opts.log_bytes = LOG_DATA_BYTES, opts.checkpoint_interval_us = 0;
    log_bytes = alog_test_log_bytes(LOG_DATA_BYTES);
    size_t region = DATA_BYTES + dk_round_up(log_bytes, PAGE);
    /* shmem, as a tmpfs file's mapping: what the engine's userfaultfd write-protects */
    mfd = (int)syscall(SYS_memfd_create, "uwp_explore", 0);
    AT_CHECK(mfd >= 0 && ftruncate(mfd, (off_t)region) == 0, "memfd: %s", strerror(errno));
    char *mem = mmap(NULL, region, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    AT_CHECK(mem != MAP_FAILED, "mmap: %s", strerror(errno));
    scratch = aligned_alloc(PAGE, region);
    AT_CHECK(scratch != NULL, "memory");
    for (uint32_t i = 0; i < DATA_BYTES; i++) mem[i] = (char)(i * 13 + 1);
    for (uint32_t k = 0; k <= epochs; k++) {
        states[k] = malloc(DATA_BYTES);
        AT_CHECK(states[k] != NULL, "memory");
        memcpy(states[k], k ? states[k - 1] : mem, DATA_BYTES);
        if (k) batch(k, states[k], false);
        if (!k || !has_write(k)) continue;
        pre[k] = malloc(DATA_BYTES);
        AT_CHECK(pre[k] != NULL, "memory");
        memcpy(pre[k], states[k - 1], DATA_BYTES);
        memcpy(pre[k] + woff[k], wbuf[k], WRITE_BYTES);
        memcpy(states[k] + woff[k], wbuf[k], WRITE_BYTES);
    }
    struct dk_uwp *u;
    void *addr;
    int rc = dk_uwp_test_map_memory(mem, DATA_BYTES, mem + DATA_BYTES, log_bytes, &opts, shadow, &u, &addr);
    if (rc == -EOPNOTSUPP || rc == -EPERM || rc == -ENOSYS) {
        fprintf(stderr, "SKIP: userfaultfd write-protection of shared memory unavailable (%s)\n", strerror(-rc));
        return 77;
    }
    AT_OK(rc);
    alog_test_broken = broken;
    AT_CHECK(dk_explorer_begin(mem, region) == 0, "explorer begin");
    uint64_t retired = 0;
    for (uint32_t k = 1; k <= epochs; k++) {
        batch(k, addr, !shadow); /* the shadow is the program's memory, not the file's media */
        if (has_write(k)) write_file(u, mem, k);
        AT_OK(dk_uwp_msync(u));
        dk_explorer_mark(k);
        if (k == 5) { /* a checkpoint pass (the thread's work: committed undo entries retired) */
            int64_t n = alog_checkpoint_committed(u->f);
            AT_CHECK(n >= 0, "checkpoint pass: %lld", (long long)n);
        }
    }
    dk_explorer_end();
    alog_test_broken = ALOG_BROKEN_NONE;
    unsigned long long faults = dk_uwp_faults(u);
    retired = u->f->ctr.sync_checkpoints;
    dk_uwp_test_unmap_memory(u);
    AT_CHECK(memcmp(mem, states[epochs], DATA_BYTES) == 0, "the mapping after the last msync is not its state");
    AT_CHECK(faults >= 2ull * epochs, "too few write faults (%llu): the mapping was not protected?", faults);
    struct dk_explorer_options eo = {.seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 0, .exhaustive_lines_max = 10,
                                     .samples_per_point = 64};
    struct dk_explorer_result r;
    rc = dk_explorer_run(&eo, check, NULL, &r);
    printf("uwp %s: %u msyncs, %llu write faults (pages saved), %llu committed entries retired at a fault, %llu events, "
           "%llu fences, %llu crash points (%llu sampled, up to %llu uncertain lines), %llu states in %.2f s (%.2f s "
           "CPU, %.0f states/s of CPU), %llu failing, seed=%llu\n",
           variant, epochs, faults, (unsigned long long)retired, (unsigned long long)r.events,
           (unsigned long long)r.fences, (unsigned long long)r.crash_points, (unsigned long long)r.sampled_points,
           (unsigned long long)r.uncertain_lines_max, (unsigned long long)r.states, r.seconds, r.cpu_seconds,
           r.cpu_seconds > 0 ? (double)r.states / r.cpu_seconds : 0.0, (unsigned long long)r.failures,
           (unsigned long long)r.seed);
    if (rc < 0) AT_FAIL("explorer: %d", rc);
    if (broken) {
        AT_CHECK(rc != 0, "the explorer did not catch the broken variant %s", variant);
        printf("ok: bug found: %s\nPASS\n", r.first_failure);
        return 0;
    }
    if (rc) AT_FAIL("%s", r.first_failure);
    AT_CHECK(r.crash_points > epochs, "too few crash points (%llu): nothing explored?", (unsigned long long)r.crash_points);
    printf("PASS\n");
    return 0;
}
