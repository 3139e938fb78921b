/* Description: operation-log microbenchmark (src/oplog). Measures append latency of one-line records (the
 * common strict-mode operation: one 64-byte line, one fence), of records carrying small data (64 B and
 * 1 KiB in data lines: the small logged write), from 1 and 2 threads appending to one log; and the recovery
 * scan rate: a log filled with one-line records is scanned by dk_oplog_scan with a callback that does a
 * minimal replay (reads the 48-byte payload), reported as entries per second (issue 3 target: >= 1 million
 * per second on huge-page tmpfs). Prints CSV rows:
 *   medium,op,threads,data_bytes,ops,ops_per_s,median_ns,p99_ns,mean_ns,wall_s
 * Usage: dk_bench_oplog [--dir DIR] [--medium NAME] [--ops N] [--log-bytes N]. Exit 0 ok, 1 failure. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"
#include "oplog/oplog.h"
#include "persist/persist.h"

#define THREADS_MAX 2u

struct bench {
    const char *dir, *medium;
    uint32_t ops;
    size_t log_bytes;
};

struct worker {
    struct dk_oplog *log;
    uint32_t ops;
    size_t data_bytes;
    uint64_t *lat_ns;
    int rc;
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void *worker_main(void *p) {
    struct worker *w = p;
    struct dk_oplog_op op = {.dev = 1, .ino = 2, .length = 4096};
    static const unsigned char data[1024] = {1};
    for (uint32_t i = 0; i < w->ops; i++) {
        op.file_offset = (uint64_t)i * 4096;
        uint64_t t0 = now_ns();
        int rc = dk_oplog_append(w->log, DK_OPLOG_WRITE_STAGED, &op, w->data_bytes ? data : NULL, w->data_bytes, NULL);
        w->lat_ns[i] = now_ns() - t0;
        if (rc != 0) return w->rc = rc, NULL;
    }
    return NULL;
}

static void print_row(const struct bench *b, const char *op, unsigned threads, size_t data_bytes, uint64_t ops,
                      double wall_s, uint64_t *lat, uint64_t lat_n) {
    uint64_t median = 0, p99 = 0, sum = 0;
    if (lat_n) {
        qsort(lat, lat_n, sizeof *lat, cmp_u64);
        median = lat[lat_n / 2], p99 = lat[lat_n * 99 / 100];
        for (uint64_t i = 0; i < lat_n; i++) sum += lat[i];
    }
    printf("%s,%s,%u,%zu,%lu,%.0f,%lu,%lu,%lu,%.4f\n", b->medium, op, threads, data_bytes, (unsigned long)ops,
           (double)ops / wall_s, (unsigned long)median, (unsigned long)p99, (unsigned long)(lat_n ? sum / lat_n : 0),
           wall_s);
    fflush(stdout);
}

/* `threads` threads append `ops` records each of `data_bytes` to a fresh log. */
static int bench_append(const struct bench *b, unsigned threads, size_t data_bytes) {
    struct dk_oplog *log;
    int rc = dk_oplog_open(b->dir, "bench", b->log_bytes, &log);
    if (rc != 0) return fprintf(stderr, "open in %s: %d\n", b->dir, rc), 1;
    uint64_t lines = (uint64_t)threads * b->ops * (1 + (data_bytes + 47) / 48);
    uint32_t ops = lines > dk_oplog_lines_capacity(log) ? (uint32_t)(dk_oplog_lines_capacity(log) / threads /
                                                                     (1 + (data_bytes + 47) / 48))
                                                        : b->ops;
    uint64_t *lat = malloc((size_t)threads * ops * sizeof *lat);
    struct worker w[THREADS_MAX];
    pthread_t t[THREADS_MAX];
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < threads; i++) {
        w[i] = (struct worker){log, ops, data_bytes, lat + (size_t)i * ops, 0};
        pthread_create(&t[i], NULL, worker_main, &w[i]);
    }
    for (unsigned i = 0; i < threads; i++) pthread_join(t[i], NULL), rc |= w[i].rc;
    double wall = (double)(now_ns() - t0) * 1e-9;
    if (rc == 0) print_row(b, "append", threads, data_bytes, (uint64_t)threads * ops, wall, lat, (uint64_t)threads * ops);
    free(lat);
    dk_oplog_close(log, 1);
    return rc != 0;
}

static int replay_cb(const struct dk_oplog_record *r, void *ctx) {
    const struct dk_oplog_op *op = r->fixed48;
    *(uint64_t *)ctx += op->file_offset + op->length + r->type; /* a replay reads every field it needs */
    return 0;
}

/* Fills a log with one-line records, then times recovery's scan of it (best of 3). */
static int bench_scan(const struct bench *b) {
    struct dk_oplog *log;
    int rc = dk_oplog_open(b->dir, "bench", b->log_bytes, &log);
    if (rc != 0) return fprintf(stderr, "open: %d\n", rc), 1;
    struct dk_oplog_op op = {.dev = 1, .ino = 2, .length = 4096};
    uint64_t n = 0;
    while (dk_oplog_append(log, DK_OPLOG_WRITE_STAGED, &op, NULL, 0, NULL) == 0) op.file_offset += 4096, n++;
    double best = 1e9;
    struct dk_oplog_scan_stats st = {0};
    for (int rep = 0; rep < 3 && rc == 0; rep++) {
        uint64_t sum = 0, t0 = now_ns();
        rc = dk_oplog_scan(dk_oplog_path(log), replay_cb, &sum, &st);
        double s = (double)(now_ns() - t0) * 1e-9;
        if (st.records_valid != n) rc = fprintf(stderr, "scan found %lu of %lu\n", (unsigned long)st.records_valid,
                                                (unsigned long)n);
        if (s < best) best = s;
    }
    if (rc == 0) print_row(b, "scan_replay", 1, 0, n, best, NULL, 0);
    dk_oplog_close(log, 1);
    return rc != 0;
}

int main(int argc, char **argv) {
    struct bench b = {"/dev/shm", "unknown", 200000, DK_OPLOG_BYTES_DEFAULT};
    static const struct option opts[] = {{"dir", 1, 0, 'd'}, {"medium", 1, 0, 'm'}, {"ops", 1, 0, 'n'},
                                         {"log-bytes", 1, 0, 'l'}, {0, 0, 0, 0}};
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        if (c == 'd') b.dir = optarg;
        else if (c == 'm') b.medium = optarg;
        else if (c == 'n') b.ops = (uint32_t)strtoul(optarg, NULL, 0);
        else if (c == 'l') b.log_bytes = strtoull(optarg, NULL, 0);
        else return 1;
    }
    dk_config_load(&dk_cfg, NULL, NULL);
    dk_persist_init(dk_cfg.flush);
    int bad = 0;
    printf("medium,op,threads,data_bytes,ops,ops_per_s,median_ns,p99_ns,mean_ns,wall_s\n");
    bad |= bench_append(&b, 1, 0);
    bad |= bench_append(&b, 1, 64);
    bad |= bench_append(&b, 1, 1024);
    bad |= bench_append(&b, 2, 0);
    bad |= bench_scan(&b);
    return bad;
}
