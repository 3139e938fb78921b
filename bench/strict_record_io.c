/* Does a strict-mode record's size decide what its durable write costs on a page-cache medium? (issue 3:
 * the block-aligned record format question.) Interleaved in one run, op by op, so that the machine's load
 * hits every variant alike; each variant has its own preallocated, written file in DIR:
 *   line        pwritev2(RWF_DSYNC) of one 64-byte record line, appended
 *   page        pwritev2(RWF_DSYNC) of 4096 bytes at a page-aligned offset (a block-aligned record's data)
 *   line+page   4160 bytes: 64 bytes at the end of one page and the next page (block-aligned data + head)
 *   inline      5568 bytes appended (today's inline record of a 4 KiB write: 87 lines)
 *   kernel      pwrite 4096 bytes at a random page-aligned offset + fdatasync (the kernel path)
 * No library is involved (run it plainly). One CSV row per variant:
 *   medium,variant,bytes,ops,median_ns,mean_ns,p99_ns
 *
 *   strict_record_io DIR MEDIUM [OPS=2000]     exit 0, 1 a call failed, 2 usage */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "strict_io_common.h"

#define VARIANTS 5
#define KERNEL_PAGES 8192u /* the kernel variant's random offsets: a 32 MiB range */

static const char *const names[VARIANTS] = {"line", "page", "line+page", "inline", "kernel"};
static const size_t bytes_of[VARIANTS] = {64, 4096, 4160, 5568, 4096};

/* The log-like file the records go to. */
static int make_file(const char *dir, int v) {
    char path[4096];
    return make_synced_file(dir, "record_io", v, path);
}

/* One operation of variant v; *next is its append offset. 0 or -1. */
static int one_op(int v, int fd, const char *buf, uint64_t *next, unsigned *rng) {
    struct iovec io = {(void *)buf, bytes_of[v]};
    uint64_t off = *next;
    switch (v) {
    case 2: off = *next + 4096 - 64; *next += 8192; break; /* the line ends a page, the data fills the next */
    case 4: {
        *rng = *rng * 1103515245u + 12345u;
        off = (uint64_t)((*rng >> 8) % KERNEL_PAGES) * 4096;
        if (pwrite(fd, buf, 4096, (off_t)off) != 4096) return -1;
        return fdatasync(fd);
    }
    case 1: *next += 4096; break;
    default: *next += bytes_of[v]; break;
    }
    if (*next + 16384 > FILE_BYTES) *next = 0;
    return pwritev2(fd, &io, 1, (off_t)off, RWF_DSYNC) == (ssize_t)bytes_of[v] ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: strict_record_io DIR MEDIUM [OPS]\n");
        return 2;
    }
    unsigned ops = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 0) : 2000;
    if (ops < 100) ops = 100;
    int fds[VARIANTS];
    for (int v = 0; v < VARIANTS; v++)
        if ((fds[v] = make_file(argv[1], v)) < 0) return perror("strict_record_io: file"), 1;
    char *buf = aligned_alloc(4096, 8192);
    uint64_t *ns[VARIANTS], sum[VARIANTS] = {0}, next[VARIANTS] = {0};
    if (!buf) return 1;
    memset(buf, 0x5a, 8192);
    for (int v = 0; v < VARIANTS; v++)
        if (!(ns[v] = malloc(sizeof(uint64_t) * ops))) return 1;
    unsigned rng = 1;
    for (unsigned i = 0; i < ops; i++)
        for (int v = 0; v < VARIANTS; v++) {
            uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
            if (one_op(v, fds[v], buf, &next[v], &rng) != 0) return perror("strict_record_io: write"), 1;
            ns[v][i] = clock_ns(CLOCK_MONOTONIC) - t0;
            sum[v] += ns[v][i];
        }
    for (int v = 0; v < VARIANTS; v++) {
        qsort(ns[v], ops, sizeof *ns[v], cmp_u64);
        printf("%s,%s,%zu,%u,%llu,%llu,%llu\n", argv[2], names[v], bytes_of[v], ops,
               (unsigned long long)ns[v][ops / 2], (unsigned long long)(sum[v] / ops),
               (unsigned long long)ns[v][ops * 99 / 100]);
        close(fds[v]);
        char path[4096];
        snprintf(path, sizeof path, "%s/record_io.%d", argv[1], v);
        unlink(path);
    }
    return 0;
}
