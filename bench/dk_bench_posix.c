/* Description: 4 KiB POSIX data-path microbenchmark. Measures sequential and random read, sequential and
 * random overwrite, and append on one file (128 MiB by default) with fsync every N operations, through
 * whatever libc functions the process resolves -- the kernel when run plainly, daxkit when preloaded --
 * and, with --floor, the user-space floor for the same operations on the same medium (memcpy from a
 * populated mapping for reads; non-temporal store + sfence into a populated mapping for writes and
 * appends). Prints one CSV row per operation (see docs/benchmarks.md for the columns).
 *
 * Every block carries a tag in its first 8 bytes; reads check it, so a benchmark run is also a (weak)
 * correctness check of the path being measured. Exit 0 ok, 1 a check or a call failed, 2 bad usage. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"
#include "persist/persist.h"

#define BENCH_BS_MAX (1u << 20)
#define BENCH_OPS_MAX (1u << 24) /* 16 Mi samples x 8 B = 128 MiB of latencies at most */
#define TAG_MAGIC 0xda8c17b10c4b1a5eull

struct bench_cfg {
    const char *dir;
    const char *medium;
    const char *variant;
    uint64_t file_bytes;
    uint32_t bs;
    uint32_t ops;
    uint32_t fsync_every;
    uint32_t warmup_ops;
    uint64_t seed;
    int run_posix;
    int run_floor;
    char tests[128];
};

struct bench_result {
    const char *op;
    const char *variant;
    uint32_t ops;
    uint32_t fsync_every;
    double wall_s;
    uint64_t median_ns, p99_ns, mean_ns, fsync_median_ns;
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t xorshift64(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return *s = x;
}

static uint64_t block_tag(uint64_t blk) { return (blk * 0x9e3779b97f4a7c15ull) ^ TAG_MAGIC; }

static void die(const char *what, const char *path) {
    fprintf(stderr, "dk_bench_posix: %s %s: %s (errno %d)\n", what, path ? path : "", strerror(errno), errno);
    exit(1);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Sorts `lat` in place and fills the latency columns of `r`. */
static void summarise(uint64_t *lat, uint32_t n, uint64_t *fs, uint32_t nfs, struct bench_result *r) {
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; i++) sum += lat[i];
    qsort(lat, n, sizeof *lat, cmp_u64);
    r->median_ns = n ? lat[n / 2] : 0;
    r->p99_ns = n ? lat[(uint64_t)n * 99 / 100] : 0;
    r->mean_ns = n ? sum / n : 0;
    qsort(fs, nfs, sizeof *fs, cmp_u64);
    r->fsync_median_ns = nfs ? fs[nfs / 2] : 0;
}

static void print_header(void) {
    printf("medium,variant,op,bs,ops,fsync_every,ops_per_s,median_ns,p99_ns,mean_ns,fsync_median_ns,wall_s\n");
}

static void print_row(const struct bench_cfg *c, const struct bench_result *r) {
    printf("%s,%s,%s,%u,%u,%u,%.0f,%llu,%llu,%llu,%llu,%.4f\n", c->medium, r->variant, r->op, c->bs, r->ops,
           r->fsync_every, r->ops / r->wall_s, (unsigned long long)r->median_ns, (unsigned long long)r->p99_ns,
           (unsigned long long)r->mean_ns, (unsigned long long)r->fsync_median_ns, r->wall_s);
    fflush(stdout);
}

static int test_enabled(const struct bench_cfg *c, const char *op) {
    char list[130];
    snprintf(list, sizeof list, ",%s,", c->tests);
    char key[32];
    snprintf(key, sizeof key, ",%s,", op);
    return strstr(list, key) != NULL || strcmp(c->tests, "all") == 0;
}

/* Creates the data file through the measured path, every block tagged, and makes it durable. */
static void make_data_file(const char *path, const struct bench_cfg *c, char *buf) {
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) die("open", path);
    const uint32_t chunk_blocks = 256;
    char *chunk = aligned_alloc(4096, (size_t)c->bs * chunk_blocks);
    if (!chunk) die("aligned_alloc", NULL);
    uint64_t nblk = c->file_bytes / c->bs;
    for (uint64_t b = 0; b < nblk; b += chunk_blocks) {
        uint32_t n = (uint32_t)(nblk - b < chunk_blocks ? nblk - b : chunk_blocks);
        for (uint32_t i = 0; i < n; i++) {
            memcpy(chunk + (size_t)i * c->bs, buf, c->bs);
            uint64_t tag = block_tag(b + i);
            memcpy(chunk + (size_t)i * c->bs, &tag, sizeof tag);
        }
        ssize_t w = pwrite(fd, chunk, (size_t)n * c->bs, (off_t)(b * c->bs));
        if (w != (ssize_t)((size_t)n * c->bs)) die("pwrite (setup)", path);
    }
    if (fsync(fd) != 0) die("fsync (setup)", path);
    if (close(fd) != 0) die("close (setup)", path);
    free(chunk);
}

enum op_kind { OP_SEQREAD, OP_RANDREAD, OP_SEQWRITE, OP_RANDWRITE, OP_APPEND };
static const char *op_names[] = {"seqread", "randread", "seqwrite", "randwrite", "append"};

static uint64_t op_block(enum op_kind k, uint32_t i, uint64_t nblk, uint64_t *rng) {
    if (k == OP_RANDREAD || k == OP_RANDWRITE) return xorshift64(rng) % nblk;
    return i % nblk;
}

/* One measured pass of `n` operations (or an untimed warm-up when lat == NULL). Returns wall ns. */
static uint64_t posix_pass(enum op_kind k, int fd, const struct bench_cfg *c, char *buf, uint32_t n,
                           uint64_t *lat, uint64_t *fs, uint32_t *nfs, uint64_t *rng, const char *path) {
    uint64_t nblk = c->file_bytes / c->bs;
    uint64_t start = now_ns(), prev = start;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t blk = op_block(k, i, nblk, rng);
        off_t off = (off_t)(blk * c->bs);
        ssize_t r;
        if (k == OP_SEQREAD || k == OP_RANDREAD) {
            r = pread(fd, buf, c->bs, off);
            uint64_t tag;
            memcpy(&tag, buf, sizeof tag);
            if (r == (ssize_t)c->bs && tag != block_tag(blk)) {
                fprintf(stderr, "dk_bench_posix: %s: block %llu has tag %016llx, want %016llx\n", path,
                        (unsigned long long)blk, (unsigned long long)tag, (unsigned long long)block_tag(blk));
                exit(1);
            }
        } else {
            uint64_t tag = block_tag(k == OP_APPEND ? i : blk);
            memcpy(buf, &tag, sizeof tag);
            r = k == OP_APPEND ? write(fd, buf, c->bs) : pwrite(fd, buf, c->bs, off);
        }
        if (r != (ssize_t)c->bs) die(op_names[k], path);
        uint64_t t = now_ns();
        if (lat) lat[i] = t - prev;
        if (c->fsync_every && (i + 1) % c->fsync_every == 0) {
            if (fsync(fd) != 0) die("fsync", path);
            uint64_t t2 = now_ns();
            if (fs) fs[(*nfs)++] = t2 - t;
            t = t2;
        }
        prev = t;
    }
    return prev - start;
}

/* Reads back a sample of blocks after an append test and checks size and tags. */
static void check_append(int fd, const struct bench_cfg *c, char *buf, uint32_t n, const char *path) {
    struct stat st;
    if (fstat(fd, &st) != 0) die("fstat", path);
    if ((uint64_t)st.st_size != (uint64_t)n * c->bs) {
        fprintf(stderr, "dk_bench_posix: %s: size %lld after %u appends of %u, want %llu\n", path,
                (long long)st.st_size, n, c->bs, (unsigned long long)n * c->bs);
        exit(1);
    }
    for (uint32_t i = 0; i < n; i += 97) {
        if (pread(fd, buf, c->bs, (off_t)i * c->bs) != (ssize_t)c->bs) die("pread (append check)", path);
        uint64_t tag;
        memcpy(&tag, buf, sizeof tag);
        if (tag != block_tag(i)) {
            fprintf(stderr, "dk_bench_posix: %s: appended block %u has a wrong tag\n", path, i);
            exit(1);
        }
    }
}

static void run_posix(const struct bench_cfg *c, enum op_kind k, char *buf, uint64_t *lat, uint64_t *fs) {
    char path[4096];
    uint64_t rng = c->seed;
    uint32_t nfs = 0;
    struct bench_result r = {.op = op_names[k], .variant = c->variant, .ops = c->ops,
                             .fsync_every = c->fsync_every};
    if (k == OP_APPEND) {
        snprintf(path, sizeof path, "%s/dkb.append", c->dir);
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) die("open", path);
        r.wall_s = posix_pass(k, fd, c, buf, c->ops, lat, fs, &nfs, &rng, path) / 1e9;
        if (fsync(fd) != 0) die("fsync", path);
        check_append(fd, c, buf, c->ops, path);
        if (close(fd) != 0) die("close", path);
        if (unlink(path) != 0) die("unlink", path);
    } else {
        snprintf(path, sizeof path, "%s/dkb.data", c->dir);
        int fd = open(path, O_RDWR);
        if (fd < 0) die("open", path);
        uint32_t nfs_warm = 0;
        posix_pass(k, fd, c, buf, c->warmup_ops, NULL, NULL, &nfs_warm, &rng, path);
        r.wall_s = posix_pass(k, fd, c, buf, c->ops, lat, fs, &nfs, &rng, path) / 1e9;
        if (close(fd) != 0) die("close", path);
    }
    summarise(lat, c->ops, fs, nfs, &r);
    print_row(c, &r);
}

/* Maps `path` shared, writable and fully faulted in for writing (a store to every page first), so the
 * floor measures copies only, never page faults. */
static char *map_populated(const char *path, uint64_t bytes, int create) {
    int fd = open(path, O_RDWR | (create ? O_CREAT | O_TRUNC : 0), 0644);
    if (fd < 0) die("open (floor)", path);
    if (create && ftruncate(fd, (off_t)bytes) != 0) die("ftruncate (floor)", path);
    /* 2 MiB-aligned address so huge-page media can map with PMDs. */
    size_t huge = 2u << 20;
    char *area = mmap(NULL, bytes + huge, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED) die("mmap (reserve)", path);
    char *aligned = (char *)(((uintptr_t)area + huge - 1) & ~(uintptr_t)(huge - 1));
    char *m = mmap(aligned, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd, 0);
    if (m == MAP_FAILED) die("mmap (floor)", path);
    close(fd);
    for (uint64_t o = 0; o < bytes; o += 4096) ((volatile char *)m)[o] = m[o];
    return m;
}

static void run_floor(const struct bench_cfg *c, enum op_kind k, char *buf, uint64_t *lat) {
    char path[4096];
    uint64_t rng = c->seed;
    uint64_t nblk = c->file_bytes / c->bs;
    int append = k == OP_APPEND;
    snprintf(path, sizeof path, "%s/%s", c->dir, append ? "dkb.floor" : "dkb.data");
    uint64_t bytes = append ? (uint64_t)c->ops * c->bs : c->file_bytes;
    char *m = map_populated(path, bytes, append);
    if (append) nblk = c->ops;
    struct bench_result r = {.op = op_names[k], .variant = "floor", .ops = c->ops, .fsync_every = 0};
    for (int pass = 0; pass < 2; pass++) { /* pass 0: warm-up */
        uint32_t n = pass ? c->ops : (append ? 0 : c->warmup_ops);
        uint64_t start = now_ns(), prev = start;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t blk = op_block(k, i, nblk, &rng);
            char *p = m + blk * c->bs;
            if (k == OP_SEQREAD || k == OP_RANDREAD) {
                memcpy(buf, p, c->bs);
                __asm__ volatile("" : : "r"(buf) : "memory");
            } else {
                uint64_t tag = block_tag(blk);
                memcpy(buf, &tag, sizeof tag);
                dk_copy_nt(p, buf, c->bs);
                dk_fence();
            }
            uint64_t t = now_ns();
            if (pass) lat[i] = t - prev;
            prev = t;
        }
        if (pass) r.wall_s = (prev - start) / 1e9;
    }
    if (munmap(m, bytes) != 0) die("munmap (floor)", path);
    if (append && unlink(path) != 0) die("unlink (floor)", path);
    summarise(lat, c->ops, NULL, 0, &r);
    print_row(c, &r);
}

static void usage(void) {
    fprintf(stderr,
            "usage: dk_bench_posix --dir DIR [--medium NAME] [--variant NAME] [--file-mib N] [--bs BYTES]\n"
            "         [--ops N] [--warmup N] [--fsync-every N] [--seed N] [--tests LIST] [--floor|--floor-only]\n"
            "         [--header]\n"
            "  LIST: comma-separated of seqread,randread,seqwrite,randwrite,append (default all)\n"
            "  --floor adds the user-space floor rows (variant 'floor'); --floor-only prints only those.\n");
    exit(2);
}

static void parse_args(int argc, char **argv, struct bench_cfg *c, int *header) {
    static const struct option longopts[] = {
        {"dir", 1, 0, 'd'},     {"medium", 1, 0, 'm'}, {"variant", 1, 0, 'v'}, {"file-mib", 1, 0, 'f'},
        {"bs", 1, 0, 'b'},      {"ops", 1, 0, 'n'},    {"warmup", 1, 0, 'w'},  {"fsync-every", 1, 0, 's'},
        {"seed", 1, 0, 'r'},    {"tests", 1, 0, 't'},  {"floor", 0, 0, 'F'},   {"floor-only", 0, 0, 'O'},
        {"header", 0, 0, 'H'},  {"help", 0, 0, 'h'},   {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (o) {
        case 'd': c->dir = optarg; break;
        case 'm': c->medium = optarg; break;
        case 'v': c->variant = optarg; break;
        case 'f': c->file_bytes = strtoull(optarg, NULL, 0) << 20; break;
        case 'b': c->bs = (uint32_t)strtoul(optarg, NULL, 0); break;
        case 'n': c->ops = (uint32_t)strtoul(optarg, NULL, 0); break;
        case 'w': c->warmup_ops = (uint32_t)strtoul(optarg, NULL, 0); break;
        case 's': c->fsync_every = (uint32_t)strtoul(optarg, NULL, 0); break;
        case 'r': c->seed = strtoull(optarg, NULL, 0); break;
        case 't': snprintf(c->tests, sizeof c->tests, "%s", optarg); break;
        case 'F': c->run_floor = 1; break;
        case 'O': c->run_floor = 1, c->run_posix = 0; break;
        case 'H': *header = 1; break;
        default: usage();
        }
    }
    if (!c->dir || c->bs < 64 || c->bs > BENCH_BS_MAX || c->bs % 64 || c->file_bytes < c->bs) usage();
    if (c->ops == 0) c->ops = (uint32_t)(c->file_bytes / c->bs);
    if (c->ops > BENCH_OPS_MAX) usage();
    if (c->seed == 0) c->seed = 0x2545f4914f6cdd1dull;
}

int main(int argc, char **argv) {
    struct bench_cfg c = {.medium = "unknown", .variant = "kernel", .file_bytes = 128ull << 20, .bs = 4096,
                          .fsync_every = 10, .warmup_ops = 2048, .run_posix = 1, .tests = "all"};
    int header = 0;
    parse_args(argc, argv, &c, &header);
    dk_persist_init(DK_FLUSH_AUTO);
    char *buf = aligned_alloc(4096, c.bs);
    uint64_t *lat = calloc(c.ops, sizeof *lat);
    uint64_t *fs = calloc(c.ops, sizeof *fs);
    if (!buf || !lat || !fs) die("calloc", NULL);
    for (uint32_t i = 0; i < c.bs; i++) buf[i] = (char)(i * 31 + 7);
    if (header) print_header();

    char path[4096];
    snprintf(path, sizeof path, "%s/dkb.data", c.dir);
    /* Appends alone need no data file (its 128 MiB, made through staging under daxkit, would change the
     * memory state an append-only run measures: bench/append_memstate.sh). */
    int data = 0;
    for (int k = OP_SEQREAD; k < OP_APPEND; k++) data |= test_enabled(&c, op_names[k]);
    if (data) make_data_file(path, &c, buf);
    for (int k = OP_SEQREAD; k <= OP_APPEND; k++) {
        if (!test_enabled(&c, op_names[k])) continue;
        if (c.run_posix) run_posix(&c, (enum op_kind)k, buf, lat, fs);
        if (c.run_floor) run_floor(&c, (enum op_kind)k, buf, lat);
    }
    if (data && unlink(path) != 0) die("unlink", path);
    free(buf), free(lat), free(fs);
    return 0;
}
