/* The engine's own work in one sync against the number of dirty blocks (issue 4 target: within 20% between
 * 1 and 1,000), counted in instructions rather than wall time: run under callgrind, which counts only the
 * sync calls,
 *   valgrind --tool=callgrind --toggle-collect=daxkit_atomic_sync dk_bench_atomic_synccost DIR N POLICY
 * and divide the total by SYNCS (printed). Each round copies 128 B into N distinct 4 KiB blocks, then syncs;
 * no checkpoint thread (its passes would run inside some syncs' window under valgrind's serialised threads).
 * Run plainly it prints the median wall ns of one sync too. POLICY: undo, redo or journal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daxkit/atomic.h"

#define SYNCS 50

static unsigned long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}
static int cmp(const void *a, const void *b) {
    unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: dk_bench_atomic_synccost DIR N undo|redo|journal\n");
        return 2;
    }
    unsigned n = (unsigned)atoi(argv[2]);
    char path[4096];
    snprintf(path, sizeof path, "%s/synccost.dat", argv[1]);
    FILE *f = fopen(path, "w");
    if (!f) return 1;
    fclose(f);
    struct daxkit_atomic_options o;
    daxkit_atomic_options_init(&o);
    o.policy = !strcmp(argv[3], "redo") ? DAXKIT_ATOMIC_REDO : !strcmp(argv[3], "journal") ? DAXKIT_ATOMIC_JOURNAL : DAXKIT_ATOMIC_UNDO;
    o.file_bytes_min = 64ull << 20;
    o.checkpoint_interval_us = 0;
    struct daxkit_atomic *a;
    int rc = daxkit_atomic_map(path, &o, &a);
    if (rc) {
        fprintf(stderr, "map: %d\n", rc);
        return 1;
    }
    char buf[128];
    memset(buf, 'x', sizeof buf);
    unsigned long long lat[SYNCS];
    for (unsigned r = 0; r < SYNCS; r++) {
        unsigned long long first = (r * 1237ull * n) % (16384 - n);
        for (unsigned i = 0; i < n; i++) daxkit_atomic_copy(a, (first + i) * 4096 + 512, buf, sizeof buf);
        unsigned long long t = now_ns();
        daxkit_atomic_sync(a);
        lat[r] = now_ns() - t;
    }
    qsort(lat, SYNCS, sizeof lat[0], cmp);
    printf("dirty_blocks %u policy %s syncs %d median_ns %llu\n", n, argv[3], SYNCS, lat[SYNCS / 2]);
    return daxkit_atomic_unmap(a) ? 1 : 0;
}
