/* Random overwrites with an fsync every N, through whatever the process resolves (the kernel, or daxkit when
 * preloaded: strict mode, DAXKIT_ATOMIC, ...), measured over the pass only: wall time and process CPU time
 * (all threads: a background checkpoint thread's work counts), one CSV row:
 *   variant,bs,ops,fsync_every,ops_per_s,cpu_ns_per_op,median_ns,p999_ns,fsync_median_ns,op_median_ns,op_p999_ns,
 *   op_p90_ns,op_p99_ns,op_mean_ns,cpu_close_ns_per_op,bg_cpu_ns,ops_per_s_close
 * (median_ns, p999_ns: the write alone; op_*: the write plus the fsync after it, when one follows -- with
 * FSYNC_EVERY 1, the "write + fsync" latency; op_mean_ns includes what the percentiles hide, e.g. a
 * checkpoint's write-back burst every few thousand operations)
 *
 *   dk_bench_fsync_writes DIR VARIANT BS OPS FSYNC_EVERY [FILE_MIB=32] [SEED=1]
 * The file is written once first (every byte) and fsync'ed; the pass then overwrites BS bytes at random
 * BS-aligned offsets. Environment: DK_BENCH_WARM=1 reads the file once before the pass (its pages cached
 * however it was written: strict mode publishes the first writes by relinking, which leaves the page cache
 * empty); DK_BENCH_WARM_OPS=N runs N writes of the pass's kind (with its fsyncs) first, unmeasured: the
 * steady state, past the one-time first touch of a log's pages -- strict mode's log grows 2 MiB at a time
 * through its first lap (16 MiB), populated inside the writes that reach each step, and on this VM a fresh
 * 2 MiB page took 0.1-0.4 ms or 5-30 ms (session 19: strict's bimodal 128 B figures); DK_BENCH_DUMP_OPS=PATH
 * writes every op's latency (ns, pass order) to PATH, one per line;
 * DK_BENCH_SETTLE=1 waits, before the pass, until the process's CPU time stops growing (background threads done
 * with the writes that made the file: under DAXKIT_ATOMIC the 64 MiB written before the first fsync grow the
 * journal to 128 MiB and its checkpoint thread applies them -- up to ~200 ns per op of a 50,000-op pass when
 * it ran during the pass), and again after the close at the end. An extra last column, cpu_close_ns_per_op:
 * the process's CPU from the pass's start through close(fd) (and that second wait): work the pass left to
 * background threads or to the close -- the journal applies 128 B records only at a quarter full or at the
 * close -- counted per op. bg_cpu_ns: the CPU time of the process's other threads (a checkpoint thread) during the
 * pass, in ns (process CPU minus this thread's). ops_per_s_close: the pass's writes per second of wall time from
 * its start through close(fd)'s return (not the settling after it): the throughput with the close's work (a
 * journal's apply of the records it left) counted.
 * DK_BENCH_NO_OP_CLOCK=1: the pass reads no clock per op (the latency columns are then 0): the per-op clock reads
 * (two per write, two more per fsync) are ~20% of a 128 B DAXKIT_ATOMIC write's CPU (perf, session 16) and count
 * in every variant's ops_per_s, cpu_ns_per_op and cpu_close_ns_per_op alike; without them those columns measure
 * the writes and fsyncs alone (issue 4's T2 is stated in throughput). Everything else is the same pass.
 * Exit 0, 1 a call failed, 2 usage. */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench_clock.h"

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Until the process's CPU time grows by under 0.2 ms in 20 ms (its background threads idle), at most 3 s. */
static void settle_cpu(void) {
    for (int i = 0; i < 150; i++) {
        uint64_t c = cpu_ns();
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
        if (cpu_ns() - c < 200 * 1000) return;
    }
}

/* DK_BENCH_WARM_OPS writes (and their fsyncs), unmeasured; the pass's random stream continues after them. */
static int warm_up(int fd, char *buf, size_t bs, uint64_t blocks, uint32_t every, uint64_t *rng) {
    const char *env = getenv("DK_BENCH_WARM_OPS");
    uint64_t n = env ? strtoull(env, NULL, 0) : 0;
    for (uint64_t i = 0; i < n; i++) {
        *rng ^= *rng << 13, *rng ^= *rng >> 7, *rng ^= *rng << 17;
        if (pwrite(fd, buf, bs, (off_t)((*rng % blocks) * bs)) != (ssize_t)bs) return -1;
        if ((i + 1) % every == 0 && fsync(fd) != 0) return -1;
    }
    return n % every == 0 || fsync(fd) == 0 ? 0 : -1;
}

static int cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: dk_bench_fsync_writes DIR VARIANT BS OPS FSYNC_EVERY [FILE_MIB] [SEED]\n");
        return 2;
    }
    size_t bs = strtoul(argv[3], NULL, 0);
    uint32_t ops = (uint32_t)strtoul(argv[4], NULL, 0), every = (uint32_t)strtoul(argv[5], NULL, 0);
    uint64_t file_bytes = (argc > 6 ? strtoull(argv[6], NULL, 0) : 32) << 20;
    uint64_t rng = argc > 7 ? strtoull(argv[7], NULL, 0) * 2654435761u + 1 : 88172645463325252ull;
    if (!bs || bs > (1u << 20) || !ops || !every || file_bytes < bs) return 2;
    char path[4096];
    snprintf(path, sizeof path, "%s/fsync_writes.dat", argv[1]);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    char *buf = aligned_alloc(4096, 1 << 20);
    uint64_t *lat = calloc(ops, sizeof *lat), *fs = calloc(ops / every + 1, sizeof *fs), *op = calloc(ops, sizeof *op);
    if (fd < 0 || !buf || !lat || !fs || !op) return 1;
    memset(buf, 'a', 1 << 20);
    for (uint64_t off = 0; off < file_bytes; off += 1 << 20)
        if (pwrite(fd, buf, 1 << 20, (off_t)off) != 1 << 20) return 1;
    if (fsync(fd) != 0) return 1;
    if (getenv("DK_BENCH_WARM")) /* read the file once: its pages cached, however it was written */
        for (uint64_t off = 0; off < file_bytes; off += 1 << 20)
            if (pread(fd, buf, 1 << 20, (off_t)off) != 1 << 20) return 1;
    uint64_t blocks = file_bytes / bs, nfs = 0;
    if (warm_up(fd, buf, bs, blocks, every, &rng) != 0) return 1;
    bool settle = getenv("DK_BENCH_SETTLE") && *getenv("DK_BENCH_SETTLE") == '1';
    if (settle) settle_cpu();
    const char *no_clock = getenv("DK_BENCH_NO_OP_CLOCK");
    bool timed = !(no_clock && *no_clock == '1'); /* per-op latencies (two clock reads per call) */
    uint64_t t0 = now_ns(), c0 = cpu_ns(), m0 = thread_cpu_ns();
    for (uint32_t i = 0; i < ops; i++) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        buf[i % bs] = (char)i;
        uint64_t a = timed ? now_ns() : 0;
        if (pwrite(fd, buf, bs, (off_t)((rng % blocks) * bs)) != (ssize_t)bs) return 1;
        if (timed) lat[i] = op[i] = now_ns() - a;
        if ((i + 1) % every == 0) {
            a = timed ? now_ns() : 0;
            if (fsync(fd) != 0) return 1;
            fs[nfs] = timed ? now_ns() - a : 0;
            op[i] += fs[nfs++];
        }
    }
    uint64_t wall = now_ns() - t0, cpu = cpu_ns() - c0, op_sum = 0, main_cpu = thread_cpu_ns() - m0;
    uint64_t bg_cpu = cpu > main_cpu ? cpu - main_cpu : 0;
    if (close(fd) != 0) return 1;
    uint64_t wall_close = now_ns() - t0;
    if (settle) settle_cpu();
    uint64_t cpu_close = cpu_ns() - c0;
    const char *dump = getenv("DK_BENCH_DUMP_OPS"); /* every op's latency in pass order, one per line */
    FILE *df = dump ? fopen(dump, "w") : NULL;
    for (uint32_t i = 0; df && i < ops; i++) fprintf(df, "%llu\n", (unsigned long long)op[i]);
    if (df) fclose(df);
    for (uint32_t i = 0; i < ops; i++) op_sum += op[i];
    qsort(lat, ops, sizeof *lat, cmp);
    qsort(fs, nfs, sizeof *fs, cmp);
    qsort(op, ops, sizeof *op, cmp);
    printf("%s,%zu,%u,%u,%.0f,%.0f,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%.0f,%.0f,%llu,%.0f\n", argv[2], bs, ops, every, ops / (wall / 1e9),
           (double)cpu / ops,
           (unsigned long long)lat[ops / 2], (unsigned long long)lat[(uint64_t)ops * 999 / 1000],
           (unsigned long long)(nfs ? fs[nfs / 2] : 0), (unsigned long long)op[ops / 2],
           (unsigned long long)op[(uint64_t)ops * 999 / 1000], (unsigned long long)op[(uint64_t)ops * 90 / 100],
           (unsigned long long)op[(uint64_t)ops * 99 / 100], (double)op_sum / ops, (double)cpu_close / ops,
           (unsigned long long)bg_cpu, ops / (wall_close / 1e9));
    unlink(path);
    return 0;
}
