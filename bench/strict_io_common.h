/* What the strict record-write benchmarks share (strict_record_io.c, strict_direct_io.c): a clock, the
 * qsort order for latencies, and the file they write into -- FILE_BYTES of zeros, written and synced, so
 * its blocks are allocated and written as a log's are. Header-only: each benchmark is one .c file. */
#ifndef DK_BENCH_STRICT_IO_COMMON_H
#define DK_BENCH_STRICT_IO_COMMON_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define FILE_BYTES (64u << 20)

static inline uint64_t clock_ns(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* DIR/NAME.V created, FILE_BYTES of zeros written and synced; its path in path[4096]. fd or -1. */
static inline int make_synced_file(const char *dir, const char *name, int v, char path[4096]) {
    if (snprintf(path, 4096, "%s/%s.%d", dir, name, v) >= 4096) return -1;
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return -1;
    static char zeros[1 << 20];
    for (uint64_t off = 0; off < FILE_BYTES; off += sizeof zeros)
        if (pwrite(fd, zeros, sizeof zeros, (off_t)off) != (ssize_t)sizeof zeros) return -1;
    return fsync(fd) == 0 ? fd : -1;
}

#endif
