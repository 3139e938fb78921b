/* Would O_DIRECT make a strict-mode record's durable write cheaper on a page-cache medium? (issue 3,
 * target "XFS 4 KiB fsync every 1": the gap to the kernel is CPU, not I/O.) Each variant has its own
 * preallocated, written file in DIR (as the log's blocks are), and the ops are interleaved op by op so
 * that the machine's load hits every variant alike:
 *   buffered-dsync    pwritev2(RWF_DSYNC), buffered, of today's 4 KiB inline record (5568 bytes), appended
 *   direct-dsync      the same through an O_DIRECT descriptor, 5632 bytes (rounded up to 512-byte sectors)
 *   direct-fdatasync  O_DIRECT pwrite of 5632 bytes, then fdatasync
 *   direct-dsync-4608 O_DIRECT + RWF_DSYNC of 4608 bytes (a block-aligned record: one sector + 4 KiB)
 *   kernel            pwrite 4096 bytes at a random page-aligned offset + fdatasync (the kernel path)
 * Per op: wall time and this thread's CPU time (CLOCK_THREAD_CPUTIME_ID). Then a second, phased pass
 * runs OPS ops of each variant alone and reads the CPU time of every kernel worker thread (kworker*,
 * where the loop device and the file system's log work run) over the phase: the I/O's CPU cost outside
 * the process. No library is involved (run it plainly). One CSV row per variant:
 *   medium,variant,bytes,ops,median_ns,p90_ns,cpu_median_ns,phase_ops,phase_self_cpu_ns_per_op,phase_kworker_cpu_ns_per_op
 *
 *   strict_direct_io DIR MEDIUM [OPS=2000]     exit 0, 1 a call failed, 2 usage */
#include <dirent.h>
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

static const char *const names[VARIANTS] = {"buffered-dsync", "direct-dsync", "direct-fdatasync",
                                            "direct-dsync-4608", "kernel"};
static const size_t bytes_of[VARIANTS] = {5568, 5632, 5632, 4608, 4096};
static const int direct_of[VARIANTS] = {0, 1, 1, 1, 0};

/* The log-like file, (re)opened O_DIRECT where the variant says. */
static int make_file(const char *dir, int v) {
    char path[4096];
    int fd = make_synced_file(dir, "direct_io", v, path);
    if (fd < 0 || !direct_of[v]) return fd;
    close(fd);
    return open(path, O_RDWR | O_DIRECT);
}

/* One operation of variant v; *next is its append offset. 0 or -1. */
static int one_op(int v, int fd, const char *buf, uint64_t *next, unsigned *rng) {
    size_t n = bytes_of[v];
    struct iovec io = {(void *)buf, n};
    if (v == 4) {
        *rng = *rng * 1103515245u + 12345u;
        uint64_t off = (uint64_t)((*rng >> 8) % KERNEL_PAGES) * 4096;
        if (pwrite(fd, buf, 4096, (off_t)off) != 4096) return -1;
        return fdatasync(fd);
    }
    uint64_t off = *next;
    *next += n;
    if (*next + 16384 > FILE_BYTES) *next = 0;
    if (v == 2) return pwrite(fd, buf, n, (off_t)off) == (ssize_t)n ? fdatasync(fd) : -1;
    return pwritev2(fd, &io, 1, (off_t)off, RWF_DSYNC) == (ssize_t)n ? 0 : -1;
}

/* utime + stime (clock ticks) of every kernel worker thread. */
static uint64_t kworker_ticks(void) {
    DIR *d = opendir("/proc");
    uint64_t sum = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[300], comm[64] = "";
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        snprintf(path, sizeof path, "/proc/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        if (!fgets(comm, sizeof comm, f)) comm[0] = 0;
        fclose(f);
        if (strncmp(comm, "kworker", 7) != 0) continue;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        if (!(f = fopen(path, "r"))) continue;
        char line[1024];
        if (fgets(line, sizeof line, f)) {
            char *p = strrchr(line, ')');
            unsigned long long ut = 0, stt = 0;
            /* fields after ")": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
            if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &stt) == 2)
                sum += ut + stt;
        }
        fclose(f);
    }
    if (d) closedir(d);
    return sum;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: strict_direct_io DIR MEDIUM [OPS]\n");
        return 2;
    }
    unsigned ops = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 0) : 2000;
    if (ops < 100) ops = 100;
    int fds[VARIANTS];
    for (int v = 0; v < VARIANTS; v++)
        if ((fds[v] = make_file(argv[1], v)) < 0) return perror("strict_direct_io: file"), 1;
    char *buf = aligned_alloc(4096, 8192);
    uint64_t *ns[VARIANTS], *cpu[VARIANTS], next[VARIANTS] = {0};
    if (!buf) return 1;
    memset(buf, 0x5a, 8192);
    for (int v = 0; v < VARIANTS; v++)
        if (!(ns[v] = malloc(sizeof(uint64_t) * ops)) || !(cpu[v] = malloc(sizeof(uint64_t) * ops))) return 1;
    unsigned rng = 1;
    for (unsigned i = 0; i < ops; i++)
        for (int v = 0; v < VARIANTS; v++) {
            uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), t0 = clock_ns(CLOCK_MONOTONIC);
            if (one_op(v, fds[v], buf, &next[v], &rng) != 0) return perror("strict_direct_io: write"), 1;
            ns[v][i] = clock_ns(CLOCK_MONOTONIC) - t0;
            cpu[v][i] = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
        }
    unsigned phase_ops = ops;
    long tick_ns = 1000000000l / sysconf(_SC_CLK_TCK);
    for (int v = 0; v < VARIANTS; v++) {
        uint64_t k0 = kworker_ticks(), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        for (unsigned i = 0; i < phase_ops; i++)
            if (one_op(v, fds[v], buf, &next[v], &rng) != 0) return perror("strict_direct_io: write"), 1;
        uint64_t self = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0, kw = (kworker_ticks() - k0) * (uint64_t)tick_ns;
        qsort(ns[v], ops, sizeof *ns[v], cmp_u64);
        qsort(cpu[v], ops, sizeof *cpu[v], cmp_u64);
        printf("%s,%s,%zu,%u,%llu,%llu,%llu,%u,%llu,%llu\n", argv[2], names[v], bytes_of[v], ops,
               (unsigned long long)ns[v][ops / 2], (unsigned long long)ns[v][ops * 9 / 10],
               (unsigned long long)cpu[v][ops / 2], phase_ops, (unsigned long long)(self / phase_ops),
               (unsigned long long)(kw / phase_ops));
    }
    for (int v = 0; v < VARIANTS; v++) {
        close(fds[v]);
        char path[4096];
        snprintf(path, sizeof path, "%s/direct_io.%d", argv[1], v);
        unlink(path);
    }
    return 0;
}
