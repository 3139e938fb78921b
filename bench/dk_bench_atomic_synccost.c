/* The engine's own work in one sync against the number of dirty blocks (issue 4 target: within 20% between
 * 1 and 1,000), counted in instructions rather than wall time: run under callgrind, which counts only the
 * sync calls,
 *   valgrind --tool=callgrind --toggle-collect=daxkit_atomic_sync dk_bench_atomic_synccost DIR N POLICY
 * and divide the total by SYNCS (printed). Each round copies 128 B into N distinct 4 KiB blocks, then syncs;
 * no checkpoint thread (its passes would run inside some syncs' window under valgrind's serialised threads).
 * Run plainly it prints the median wall ns of one sync too. POLICY: undo, redo, journal, or kernel (pwrite
 * + fsync on the same file: the machine's own no-op sync on tmpfs, for comparison).
 * Diagnostics (session 21: where a sync's wall time after 1,000 blocks goes when its instructions are those of
 * the sync after 1), between the copies and the timed sync, untimed:
 *   DK_BENCH_SYNC_TOUCH_KIB=K  store into one byte every DK_BENCH_SYNC_TOUCH_STRIDE [64] bytes of a K KiB
 *                              scratch buffer on 4 KiB pages (64: evicts the caches; 4096: one line a page,
 *                              the TLB more than the caches) -- the copies' working set without their writes;
 *   DK_BENCH_SYNC_TOUCH_HUGE=1 ... on a transparent huge page instead (the same lines, a TLB entry per 2 MiB);
 *   DK_BENCH_SYNC_GAP_NS=T     spin T ns first (write-backs or non-temporal stores still in flight drain);
 *   DK_BENCH_SYNCS=S           S rounds instead of 50;
 *   DK_BENCH_SYNC_BYTES=B      copies of B bytes instead of 128 (4096: whole blocks; else at 512 into each).
 * The control (session 22: what the T3 target means when the wall time moves with the cache state):
 *   DK_BENCH_SYNC_CONTROL=1    each round makes the same N copies, but the first N - 1 go into a second file
 *                              of the same policy (the same offsets; synced, untimed, at the next round's
 *                              start), and only the last one into the timed file: a 1-block sync in the cache
 *                              state the N-block sync finds (the engine's and the kernel's memory touched the
 *                              same way). The N-block figure over this one is the sync's own growth with the
 *                              dirty blocks; the N-block figure over the plain 1-block one is the raw ratio. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "daxkit/atomic.h"

#define SYNCS_MAX 100000u

static unsigned long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}
static int cmp(const void *a, const void *b) {
    unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
    return x < y ? -1 : x > y;
}

static unsigned long long env_ull(const char *name, unsigned long long dflt) {
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 0) : dflt;
}

/* The untimed diagnostics between the copies and the sync (above) */
static char *scratch;
static unsigned long long touch_bytes, touch_stride, gap_ns;

static void between(unsigned r) {
    for (unsigned long long i = 0; i < touch_bytes; i += touch_stride) scratch[i] = (char)r;
    if (gap_ns)
        for (unsigned long long t = now_ns(); now_ns() - t < gap_ns;) {}
}

static int create_empty(const char *path) {
    FILE *f = fopen(path, "w");
    return f && fclose(f) == 0 ? 0 : 1;
}

/* A file the rounds copy into: the engine's handle, or the kernel's descriptor (policy "kernel") */
struct target {
    int fd;
    struct daxkit_atomic *a;
};

static int open_target(const char *path, const char *policy, struct target *t) {
    *t = (struct target){.fd = -1};
    if (!strcmp(policy, "kernel")) {
        t->fd = open(path, O_RDWR);
        return t->fd < 0 || ftruncate(t->fd, 64ll << 20) != 0;
    }
    struct daxkit_atomic_options o;
    daxkit_atomic_options_init(&o);
    o.policy = !strcmp(policy, "redo") ? DAXKIT_ATOMIC_REDO : !strcmp(policy, "journal") ? DAXKIT_ATOMIC_JOURNAL : DAXKIT_ATOMIC_UNDO;
    o.file_bytes_min = 64ull << 20;
    o.checkpoint_interval_us = 0;
    int rc = daxkit_atomic_map(path, &o, &t->a);
    if (rc) fprintf(stderr, "map %s: %d\n", path, rc);
    return rc != 0;
}

static char buf[4096]; /* 'x' bytes (main) */
static size_t copy_bytes = 128;

static int copy_one(struct target *t, unsigned long long off) {
    return t->a ? daxkit_atomic_copy(t->a, off, buf, copy_bytes) != 0 : pwrite(t->fd, buf, copy_bytes, (off_t)off) != (ssize_t)copy_bytes;
}

static int sync_target(struct target *t) { return t->a ? daxkit_atomic_sync(t->a) != 0 : fsync(t->fd) != 0; }

static int close_target(struct target *t) { return t->a ? daxkit_atomic_unmap(t->a) != 0 : close(t->fd) != 0; }

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: dk_bench_atomic_synccost DIR N undo|redo|journal|kernel\n");
        return 2;
    }
    unsigned n = (unsigned)atoi(argv[2]);
    unsigned syncs = (unsigned)env_ull("DK_BENCH_SYNCS", 50);
    touch_bytes = env_ull("DK_BENCH_SYNC_TOUCH_KIB", 0) << 10, touch_stride = env_ull("DK_BENCH_SYNC_TOUCH_STRIDE", 64);
    gap_ns = env_ull("DK_BENCH_SYNC_GAP_NS", 0);
    copy_bytes = (size_t)env_ull("DK_BENCH_SYNC_BYTES", 128);
    if (n < 1 || n >= 16384 || syncs < 1 || syncs > SYNCS_MAX || !touch_stride || copy_bytes < 1 ||
        (copy_bytes > 3584 && copy_bytes != 4096)) {
        fprintf(stderr, "N: 1-16383 blocks; DK_BENCH_SYNCS: 1-%u; DK_BENCH_SYNC_TOUCH_STRIDE: not 0; "
                        "DK_BENCH_SYNC_BYTES: 1-3584 or 4096\n", SYNCS_MAX);
        return 2;
    }
    if (touch_bytes) {
        bool huge = env_ull("DK_BENCH_SYNC_TOUCH_HUGE", 0) != 0;
        size_t align = huge ? 2u << 20 : 0; /* a huge page needs a 2 MiB-aligned range */
        char *m = mmap(NULL, touch_bytes + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) return 1;
        scratch = huge ? (char *)(((uintptr_t)m + align - 1) & ~(uintptr_t)(align - 1)) : m;
        (void)madvise(scratch, touch_bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE); /* 4 KiB pages: a TLB entry each */
        memset(scratch, 1, touch_bytes);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/synccost.dat", argv[1]);
    if (create_empty(path)) return 1;
    memset(buf, 'x', sizeof buf);
    bool control = env_ull("DK_BENCH_SYNC_CONTROL", 0) != 0;
    struct target timed, other = {.fd = -1};
    if (open_target(path, argv[3], &timed)) return 1;
    if (control) {
        snprintf(path, sizeof path, "%s/synccost-control.dat", argv[1]);
        if (create_empty(path) || open_target(path, argv[3], &other)) return 1;
    }
    static unsigned long long lat[SYNCS_MAX];
    for (unsigned r = 0; r < syncs; r++) {
        unsigned long long first = (r * 1237ull * n) % (16384 - n);
        if (control && sync_target(&other)) return 1; /* the last round's N - 1 blocks, untimed */
        for (unsigned i = 0; i < n; i++)
            if (copy_one(control && i + 1 < n ? &other : &timed, (first + i) * 4096 + (copy_bytes < 4096 ? 512 : 0))) return 1;
        between(r);
        unsigned long long t = now_ns();
        int rc = sync_target(&timed);
        lat[r] = now_ns() - t;
        if (rc) return 1;
    }
    qsort(lat, syncs, sizeof lat[0], cmp);
    printf("dirty_blocks %u policy %s copy_bytes %zu control %d syncs %u median_ns %llu\n", n, argv[3], copy_bytes, control,
           syncs, lat[syncs / 2]);
    return close_target(&timed) | (control ? close_target(&other) : 0);
}
