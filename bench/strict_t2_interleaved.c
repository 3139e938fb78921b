/* Issue 3's target 2 (XFS, 4 KiB random overwrites, fsync every 1: strict never slower than the kernel),
 * measured op by op in ONE process so that the machine's load hits every variant alike: run it under
 * LD_PRELOAD=libdaxkit.so with DAXKIT_MODE=strict and DAXKIT_DIR=DIR/strict -- the file in DIR/strict is
 * strict-served, the files in DIR/kernel and DIR/floor are outside DAXKIT_DIR and kernel-served. Variants,
 * taken in turn, the order rotated every op:
 *   kernel  pwrite 4 KiB at a random 4 KiB-aligned offset of a 32 MiB file + fsync (what the kernel does)
 *   strict  the same calls on the strict-served file (daxkit: the record's durable write + the apply)
 *   floor   strict's two system calls without the library: an O_DIRECT pwritev2(RWF_DSYNC) of RECORD_BYTES
 *           (today's 4 KiB record: 5,632) appended to a preallocated, written 64 MiB log-like file, then
 *           pwrite 4 KiB into a 32 MiB file (the apply)
 * Per variant: median, p90 and mean latency, median thread CPU per op (CLOCK_THREAD_CPUTIME_ID: the
 * caller's own CPU, kernel workers excluded); then per op the ratio strict / kernel and floor / kernel
 * (median over the ops of the same round: each round's three ops ran back to back). One line per variant:
 *   variant,ops,median_ns,p90_ns,mean_ns,cpu_median_ns,median_ratio_to_kernel_per_round
 *
 *   strict_t2_interleaved DIR OPS [RECORD_BYTES=5632] [SEED=1]      exit 0, 1 a call failed, 2 usage */
#ifndef _GNU_SOURCE /* (the build defines it) */
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "strict_io_common.h"

#define DATA_BYTES (32u << 20)
#define BS 4096u
enum { KERNEL, STRICT, FLOOR, VARIANTS };
static const char *const names[VARIANTS] = {"kernel", "strict", "floor"};

/* DIR/SUB/f: DATA_BYTES written in 1 MiB pieces, fsync'ed (through the library for DIR/strict). */
static int make_data(const char *dir, const char *sub, char *buf) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/f", dir, sub);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return -1;
    for (uint64_t off = 0; off < DATA_BYTES; off += 1 << 20)
        if (pwrite(fd, buf, 1 << 20, (off_t)off) != 1 << 20) return -1;
    return fsync(fd) == 0 ? fd : -1;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: strict_t2_interleaved DIR OPS [RECORD_BYTES=5632] [SEED=1]\n");
        return 2;
    }
    const char *dir = argv[1];
    uint32_t ops = (uint32_t)strtoul(argv[2], NULL, 0);
    size_t rec = argc > 3 ? strtoul(argv[3], NULL, 0) : 5632;
    uint64_t rng = (argc > 4 ? strtoull(argv[4], NULL, 0) : 1) * 2654435761u + 1;
    if (!ops || rec < 512 || rec % 512 || rec > (1u << 20)) return 2;
    char *buf = aligned_alloc(4096, 1 << 20);
    uint64_t *lat[VARIANTS], *cpu[VARIANTS], *ratio[2];
    for (int v = 0; v < VARIANTS; v++) lat[v] = calloc(ops, 8), cpu[v] = calloc(ops, 8);
    ratio[0] = calloc(ops, 8), ratio[1] = calloc(ops, 8);
    if (!buf || !ratio[0] || !ratio[1]) return 1;
    memset(buf, 'a', 1 << 20);
    int fd[VARIANTS];
    fd[KERNEL] = make_data(dir, "kernel", buf);
    fd[STRICT] = make_data(dir, "strict", buf);
    fd[FLOOR] = make_data(dir, "floor", buf);
    char fdir[4096], lpath[4096];
    snprintf(fdir, sizeof fdir, "%s/floor", dir);
    int lfd = make_synced_file(fdir, "log", 0, lpath); /* FILE_BYTES of written zeros, like the log's */
    if (lfd < 0) return 1;
    close(lfd);
    lfd = open(lpath, O_RDWR | O_DIRECT);
    for (int v = 0; v < VARIANTS; v++)
        if (fd[v] < 0 || !lat[v] || !cpu[v]) return 1;
    if (lfd < 0) return 1;
    uint64_t next = 0, blocks = DATA_BYTES / BS;
    for (uint32_t i = 0; i < ops; i++) {
        for (int k = 0; k < VARIANTS; k++) {
            int v = (int)((i + (uint32_t)k) % VARIANTS);
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            off_t off = (off_t)((rng % blocks) * BS);
            buf[i % BS] = (char)i;
            uint64_t c = clock_ns(CLOCK_THREAD_CPUTIME_ID), t = clock_ns(CLOCK_MONOTONIC);
            if (v == FLOOR) {
                struct iovec io = {buf, rec};
                if (pwritev2(lfd, &io, 1, (off_t)next, RWF_DSYNC) != (ssize_t)rec) return 1;
                next += rec;
                if (next + rec > FILE_BYTES) next = 0;
                if (pwrite(fd[v], buf, BS, off) != (ssize_t)BS) return 1;
            } else {
                if (pwrite(fd[v], buf, BS, off) != (ssize_t)BS || fsync(fd[v]) != 0) return 1;
            }
            lat[v][i] = clock_ns(CLOCK_MONOTONIC) - t;
            cpu[v][i] = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c;
        }
        ratio[0][i] = lat[STRICT][i] * 1000 / (lat[KERNEL][i] ? lat[KERNEL][i] : 1);
        ratio[1][i] = lat[FLOOR][i] * 1000 / (lat[KERNEL][i] ? lat[KERNEL][i] : 1);
    }
    qsort(ratio[0], ops, 8, cmp_u64);
    qsort(ratio[1], ops, 8, cmp_u64);
    for (int v = 0; v < VARIANTS; v++) {
        double sum = 0;
        for (uint32_t i = 0; i < ops; i++) sum += (double)lat[v][i];
        qsort(lat[v], ops, 8, cmp_u64);
        qsort(cpu[v], ops, 8, cmp_u64);
        double r = v == KERNEL ? 1.0 : ratio[v == STRICT ? 0 : 1][ops / 2] / 1000.0;
        printf("%s,%u,%llu,%llu,%.0f,%llu,%.3f\n", names[v], ops, (unsigned long long)lat[v][ops / 2],
               (unsigned long long)lat[v][(uint64_t)ops * 9 / 10], sum / ops, (unsigned long long)cpu[v][ops / 2], r);
    }
    return 0;
}
