/* Description: what makes a 4 KiB write + sync slower than 2x the median (issue 4's latency target), op by
 * op, with a machine floor run in the same loop.
 *
 *   dk_bench_atomic_tail DIR VARIANT OPS SEED [PAIR [TRACE_CSV]]
 *     VARIANT, PAIR: journal | hybrid (the C API, DAXKIT_ATOMIC_PACE as set) | kernel (pwrite + fsync) |
 *       floor-io (the paced journal's memory work without the engine: the previous record copied with
 *       non-temporal stores into a random 4 KiB of a 64 MiB file, a 4 KiB record copied into a 2 MiB window,
 *       the record's lines written back, a fence, an 8-byte commit word written back, a fence -- what
 *       persistence itself costs on this machine) | floor-rec (the same without the apply: the record and
 *       the commit word made durable, the least any durable 4 KiB write does) | floor-mirror (an
 *       experiment: the record stored non-temporally and into a DRAM mirror the apply reads; not cheaper) |
 *       floor-busy (a 4 KiB copy padded to 900 ns of busy CPU: blind to anything that slows memory; floor-busy:NS
 *       padded to NS -- session 25: as long as the engine's op, to see what its length alone collects) |
 *       none (PAIR only).
 *     PAIR: each iteration runs one VARIANT op, then one PAIR op, each timed by its own rdtscp pair. A
 *       slowdown of the machine (the host's memory or another guest on the core) slows both ops of the same
 *       iteration; an engine's own cause slows only the VARIANT op.
 *
 * Every op slower than 2x its median is given one cause, the first that holds:
 *   long      over 10 us: an interrupt or a preemption (the 4 ms tick, the host); the floors see them too
 *   engine    the engine probe (loads only, after each op) moved: checkpoint (the thread or a copy applied a
 *             step), wrap (a pad: lap end or window), new-page (a record into a 2 MiB journal page not written
 *             this lap)
 *   machine   the PAIR op of the same iteration, or of the one before, was slow too (> 2x its median)
 *   none      nothing of the above
 * Stdout: one line per side (median/p99/p99.9/max ns), the causes, P(pair slow | variant slow) against
 * P(pair slow), and runs of consecutive slow ops; with TRACE_CSV, one row per slow op (with its engine event, if
 * any, whatever its cause, and its start in CLOCK_MONOTONIC microseconds, to line up with a `perf record -k mono`
 * of the CPU: bench/atomic_tail_irq.py). Session 25: the long ops that had an engine event too (the cause order
 * hid them), the engine's events over the whole loop and what the ops with one cost (tail-engine), and the
 * long ops per ms of the path's own op time (tail-rate). Page faults and
 * context switches of the whole loop (getrusage) are printed too: when they are 0, neither caused a slow op.
 * By phase (session 15): each VARIANT op is timed in two parts, the write (copy / pwrite; the floors' record made
 * durable) and the sync (sync / fsync; the floors' commit word): tail-phase (each phase's median, p99, p99.9),
 * tail-phase-hist (ops by multiple of the phase's own median) and tail-phase-slow (of the ops over 2x the op
 * median: which phase was over 2x its median, and the share of their excess time in each phase).
 * DK_TAIL_LABEL names VARIANT in the output: `kernel` under LD_PRELOAD with DAXKIT_ATOMIC=DIR/tail-data.bin is
 * the POSIX route (bench/atomic_tail.sh: posix-atomic); the engine probe is then not reachable (no engine cause).
 * DK_TAIL_FOOTPRINT=1: the memory the loop touched, per mapping (tail-footprint; a diagnostic, see footprint_begin).
 * Persistence: DAXKIT_PERSIST as set (run with flush: the dax code path on huge tmpfs, an EMULATION). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "atomic/alog.h"
#include "common/config.h"
#include "daxkit/atomic.h"
#include "persist/persist.h"

#define FILE_BYTES (64ull << 20)
#define WINDOW_BYTES (2ull << 20)
#define BS 4096u
#define REC_BYTES (BS + 16u)
#define LONG_NS 10000u

enum kind { K_NONE, K_JOURNAL, K_HYBRID, K_KERNEL, K_FLOOR_IO, K_FLOOR_REC, K_FLOOR_MIRROR, K_FLOOR_BUSY };
static const char *kind_name[] = {"none", "journal", "hybrid", "kernel", "floor-io", "floor-rec", "floor-mirror", "floor-busy"};

struct side {
    enum kind k;
    int fd;
    struct daxkit_atomic *a;
    char *file, *window; /* floor-io: the file and the journal window (mapped from DIR) */
    char *mirror;        /* floor-mirror: a DRAM copy of the window */
    uint64_t wpos, prev, commit_word_off;
    uint64_t s;
};

static char *buf;
static uint64_t busy_ns = 900; /* floor-busy's pad; floor-busy:NS sets it (session 25: a busy op as long as the engine's) */
static char path_data[4096], path_floor[4096];
static double ns_per_tick;

static void die(const char *what, int err) {
    fprintf(stderr, "dk_bench_atomic_tail: %s: %s\n", what, strerror(err < 0 ? -err : err));
    exit(1);
}

static uint64_t rnd(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return *s = x;
}

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t ticks(void) {
    unsigned aux;
    return __rdtscp(&aux);
}

static enum kind kind_of(const char *s) {
    if (!strncmp(s, "floor-busy:", 11)) {
        busy_ns = strtoull(s + 11, NULL, 0);
        return K_FLOOR_BUSY;
    }
    for (int k = 0; k <= K_FLOOR_BUSY; k++)
        if (!strcmp(s, kind_name[k])) return (enum kind)k;
    fprintf(stderr, "dk_bench_atomic_tail: unknown variant %s\n", s);
    exit(2);
}

static void fill_file(const char *p, uint64_t bytes) {
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) die(p, errno);
    for (uint64_t off = 0; off < bytes; off += 1u << 20)
        if (pwrite(fd, buf, 1u << 20, (off_t)off) != 1 << 20) die("fill", errno);
    fsync(fd);
    close(fd);
}

static void open_side(struct side *x, enum kind k, uint64_t seed) {
    *x = (struct side){.k = k, .fd = -1, .s = seed};
    if (k == K_JOURNAL || k == K_HYBRID) {
        struct daxkit_atomic_options o;
        daxkit_atomic_options_init(&o);
        o.policy = k == K_JOURNAL ? DAXKIT_ATOMIC_JOURNAL : DAXKIT_ATOMIC_HYBRID;
        o.log_bytes = 256ull << 20; /* as bench/dk_bench_atomic.c's latency test */
        int rc = daxkit_atomic_map(path_data, &o, &x->a);
        if (rc) die("daxkit_atomic_map", rc);
    } else if (k == K_KERNEL) {
        if ((x->fd = open(path_data, O_RDWR)) < 0) die("open", errno);
    } else if (k >= K_FLOOR_IO) {
        int fd = open(path_floor, O_RDWR);
        if (fd < 0) die("open floor", errno);
        char *m = mmap(NULL, FILE_BYTES + WINDOW_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
        close(fd);
        if (m == MAP_FAILED) die("mmap floor", errno);
        x->file = m, x->window = m + FILE_BYTES;
        x->commit_word_off = WINDOW_BYTES - 64;
    }
}

static void close_side(struct side *x) {
    if (x->a) {
        int rc = daxkit_atomic_unmap(x->a);
        if (rc) die("daxkit_atomic_unmap", rc);
    }
    if (x->fd >= 0) close(x->fd);
    if (x->file) munmap(x->file, FILE_BYTES + WINDOW_BYTES);
}

static uint64_t ticks(void);

/* One 4 KiB write + sync at a random 4 KiB of the 64 MiB file. *mid: the clock between its two phases -- the
 * write (copy, pwrite; the floors' record made durable) and the sync (sync, fsync; the floors' commit word). */
static void op(struct side *x, uint64_t *mid) {
    uint64_t off = (rnd(&x->s) % (FILE_BYTES / BS)) * BS;
    switch (x->k) {
    case K_JOURNAL:
    case K_HYBRID: {
        int rc = daxkit_atomic_copy(x->a, off, buf, BS);
        *mid = ticks();
        if (!rc) rc = daxkit_atomic_sync(x->a);
        if (rc) die("atomic copy/sync", rc);
        return;
    }
    case K_KERNEL:
        if (pwrite(x->fd, buf, BS, (off_t)off) != BS) die("pwrite", errno);
        *mid = ticks();
        if (fsync(x->fd) != 0) die("fsync", errno);
        return;
    case K_FLOOR_IO:  /* the paced journal's memory work (alog_journal.c append, pace_apply, commit) */
    case K_FLOOR_REC: { /* the same without the apply: the least a durable 4 KiB write can do */
        if (x->wpos + REC_BYTES > x->commit_word_off) x->wpos = 0;
        char *rec = x->window + x->wpos;
        /* the apply first, as the journal does since session 11 (its stores drain during the copy) */
        if (x->k == K_FLOOR_IO && x->prev != UINT64_MAX) dk_copy_nt(x->file + off, x->window + x->prev + 16, BS);
        memcpy(rec, &off, sizeof off);
        memcpy(rec + 16, buf, BS);
        dk_flush_range(rec, REC_BYTES);
        dk_fence();
        *mid = ticks();
        uint64_t *word = (uint64_t *)(x->window + x->commit_word_off);
        __atomic_store_n(word, *word + 1, __ATOMIC_RELAXED);
        dk_flush_range(word, sizeof *word);
        dk_fence();
        x->prev = x->wpos, x->wpos += REC_BYTES;
        return;
    }
    case K_FLOOR_MIRROR: { /* the record non-temporal into the window and plainly into a DRAM mirror; the
                            * apply reads the mirror (cached) */
        if (!x->mirror && !(x->mirror = aligned_alloc(4096, WINDOW_BYTES))) die("mirror", ENOMEM);
        if (x->wpos + REC_BYTES > x->commit_word_off) x->wpos = 0;
        char hdr[16] = {0};
        memcpy(hdr, &off, sizeof off);
        dk_copy_nt(x->window + x->wpos, hdr, sizeof hdr);
        dk_copy_nt(x->window + x->wpos + 16, buf, BS);
        memcpy(x->mirror + x->wpos + 16, buf, BS);
        if (x->prev != UINT64_MAX) dk_copy_nt(x->file + off, x->mirror + x->prev + 16, BS);
        dk_fence();
        uint64_t *word = (uint64_t *)(x->window + x->commit_word_off);
        __atomic_store_n(word, *word + 1, __ATOMIC_RELAXED);
        dk_flush_range(word, sizeof *word);
        dk_fence();
        x->prev = x->wpos, x->wpos += REC_BYTES;
        break;
    }
    case K_FLOOR_BUSY: {
        uint64_t t0 = mono_ns();
        memcpy(x->file + off, buf, BS);
        while (mono_ns() - t0 < busy_ns) {}
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        break;
    }
    case K_NONE: break;
    }
    *mid = ticks(); /* one phase */
}

/* Until the process's CPU time grows by under 0.2 ms in 20 ms, at most 3 s: the POSIX route's checkpoint
 * thread applies the 64 MiB written to make the file (the journal grown to 128 MiB) -- 0.2-9 ms of its CPU
 * ran in the first ops of the pass otherwise (bench/dk_bench_fsync_writes.c, DK_BENCH_SETTLE). */
static void settle_cpu(void) {
    for (int i = 0; i < 150; i++) {
        struct timespec ts = {0, 20 * 1000 * 1000}, c0, c1;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
        nanosleep(&ts, NULL);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
        if ((c1.tv_sec - c0.tv_sec) * 1000000000ll + (c1.tv_nsec - c0.tv_nsec) < 200 * 1000) return;
    }
}

/* DK_TAIL_FOOTPRINT=1 (session 25): the memory the loop touched, from the referenced bits -- cleared before the
 * loop (/proc/self/clear_refs), summed per mapping after it (/proc/self/smaps, Referenced). The host's stalls the
 * guest does not see (the vCPU not running) grow with it: floor-busy:2000 over a 768 MiB file had 149-157 per
 * 50,000 ops against 19-20 over 64 MiB (session 25). A diagnostic: clearing the bits may cost the loop's first
 * touches, so not for the latency figures. */
static bool footprint_begin(void) {
    const char *e = getenv("DK_TAIL_FOOTPRINT");
    if (!e || !atoi(e)) return false;
    FILE *c = fopen("/proc/self/clear_refs", "w");
    if (!c) return false;
    fputs("1", c);
    fclose(c);
    return true;
}

static void footprint_end(const char *name) {
    FILE *m = fopen("/proc/self/smaps", "r");
    if (!m) return;
    char line[512], map[160] = "", top[4][160] = {{0}};
    unsigned long long kb, total = 0, topkb[4] = {0};
    while (fgets(line, sizeof line, m)) {
        if (sscanf(line, "Referenced: %llu kB", &kb) == 1) {
            total += kb;
            for (int i = 0; i < 4; i++)
                if (kb > topkb[i]) {
                    for (int j = 3; j > i; j--) topkb[j] = topkb[j - 1], memcpy(top[j], top[j - 1], sizeof top[j]);
                    topkb[i] = kb, snprintf(top[i], sizeof top[i], "%s", map);
                    break;
                }
        } else if (sscanf(line, "%llx-%llx", &kb, &kb) == 2) { /* a mapping's first line */
            char *path = strchr(line, '/');
            snprintf(map, sizeof map, "%s", path ? strrchr(path, '/') + 1 : "[anon]");
            map[strcspn(map, "\n")] = 0;
        }
    }
    fclose(m);
    printf("tail-footprint,%s,referenced in the loop %.1f MiB:", name, total / 1024.0);
    for (int i = 0; i < 4 && topkb[i]; i++) printf(" %s %.1f MiB", top[i], topkb[i] / 1024.0);
    printf("\n");
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

struct stats {
    uint64_t median, p99, p999, max;
};

static struct stats stats_of(const uint64_t *v, uint32_t n) {
    uint64_t *s = malloc(n * sizeof *s);
    if (!s) die("stats", ENOMEM);
    memcpy(s, v, n * sizeof *v);
    qsort(s, n, sizeof *s, cmp_u64);
    struct stats r = {s[n / 2], s[(uint64_t)n * 99 / 100], s[(uint64_t)n * 999 / 1000], s[n - 1]};
    free(s);
    return r;
}

static bool new_page(const struct alog_probe *a, const struct alog_probe *b) {
    if (!b->area_bytes || b->jtail == a->jtail) return false;
    uint64_t from = a->jtail % b->area_bytes, last = (b->jtail - 1) % b->area_bytes;
    return from / WINDOW_BYTES != last / WINDOW_BYTES || b->jtail - a->jtail > WINDOW_BYTES;
}

enum cause { C_LONG, C_CKPT, C_WRAP, C_PAGE, C_MACHINE, C_NONE, C_N };
static const char *cause_name[C_N] = {"long(>10us)", "engine:checkpoint", "engine:wrap", "engine:new-page",
                                      "machine(pair slow too)", "none"};

/* The engine's event between two probes (one op), C_NONE if none */
static enum cause engine_event(const struct alog_probe *p, const struct alog_probe *q) {
    return q->checkpointed != p->checkpointed || q->sync_checkpoints != p->sync_checkpoints ? C_CKPT
         : q->jwraps != p->jwraps ? C_WRAP
         : new_page(p, q) ? C_PAGE : C_NONE;
}

#define DK_MIN_U64(a, b) ((a) < (b) ? (a) : (b))

/* The latency by phase (write, sync): each phase's median and p99.9, a histogram of each phase's op times in
 * multiples of that phase's median, and of the ops slower than 2x the op median, which phase was over 2x its
 * own median and where their excess time (over the phases' medians) went. */
static void phases(const char *name, const uint64_t *l, const uint64_t *pw, const uint64_t *psy, uint32_t n,
                   uint64_t median) {
    struct stats w = stats_of(pw, n), y = stats_of(psy, n);
    static const double edge[] = {1.25, 1.5, 2, 3, 5, 10};
    uint32_t hw[7] = {0}, hy[7] = {0}, slow = 0, slow_w = 0, slow_y = 0, slow_both = 0;
    double excess_w = 0, excess_y = 0;
    for (uint32_t i = 0; i < n; i++) {
        int bw = 0, by = 0;
        while (bw < 6 && pw[i] > edge[bw] * (double)(w.median ? w.median : 1)) bw++;
        while (by < 6 && psy[i] > edge[by] * (double)(y.median ? y.median : 1)) by++;
        hw[bw]++, hy[by]++;
        if (l[i] <= 2 * median) continue;
        slow++;
        bool sw = pw[i] > 2 * w.median, sy = psy[i] > 2 * y.median;
        slow_w += sw && !sy, slow_y += sy && !sw, slow_both += sw && sy;
        excess_w += pw[i] > w.median ? (double)(pw[i] - w.median) : 0;
        excess_y += psy[i] > y.median ? (double)(psy[i] - y.median) : 0;
    }
    printf("tail-phase,%s,write median %llu p99 %llu p99.9 %llu,sync median %llu p99 %llu p99.9 %llu\n", name,
           (unsigned long long)w.median, (unsigned long long)w.p99, (unsigned long long)w.p999,
           (unsigned long long)y.median, (unsigned long long)y.p99, (unsigned long long)y.p999);
    printf("tail-phase-hist,%s,ops by multiple of the phase's median (<=1.25 <=1.5 <=2 <=3 <=5 <=10 >10),write", name);
    for (int b = 0; b < 7; b++) printf(" %u", hw[b]);
    printf(",sync");
    for (int b = 0; b < 7; b++) printf(" %u", hy[b]);
    double ex = excess_w + excess_y;
    printf("\ntail-phase-slow,%s,slow(>2x) %u: write alone over 2x %u, sync alone %u, both %u, neither %u,excess in "
           "write %.0f%% sync %.0f%%\n", name, slow, slow_w, slow_y, slow_both, slow - slow_w - slow_y - slow_both,
           ex > 0 ? 100 * excess_w / ex : 0, ex > 0 ? 100 * excess_y / ex : 0);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: dk_bench_atomic_tail DIR journal|hybrid|kernel|floor-io|floor-busy OPS SEED "
                        "[PAIR [TRACE_CSV]]\n");
        return 2;
    }
    const char *dir = argv[1];
    enum kind ka = kind_of(argv[2]), kb = argc > 5 ? kind_of(argv[5]) : K_NONE;
    uint32_t n = (uint32_t)strtoul(argv[3], NULL, 0);
    uint64_t seed = strtoull(argv[4], NULL, 0) | 1;
    FILE *trace = argc > 6 ? fopen(argv[6], "a") : NULL;
    const char *name_a = getenv("DK_TAIL_LABEL") ? getenv("DK_TAIL_LABEL") : argv[2]; /* posix-atomic */
    if (n < 1000 || n > (1u << 22) || ka == K_NONE) die("OPS 1000..4M and a variant", EINVAL);
    if (argc > 6 && !trace) die(argv[6], errno);
    dk_persist_init(DK_FLUSH_AUTO);
    buf = aligned_alloc(4096, 1u << 20);
    uint64_t *la = malloc(n * sizeof *la), *lb = malloc(n * sizeof *lb), *t = malloc(n * sizeof *t);
    uint64_t *pa = malloc(n * sizeof *pa), *ps = malloc(n * sizeof *ps); /* A's write and sync phases */
    struct alog_probe *pr = calloc(n + 1, sizeof *pr);
    if (!buf || !la || !lb || !t || !pr || !pa || !ps) die("malloc", ENOMEM);
    for (uint32_t i = 0; i < 1u << 20; i++) buf[i] = (char)(i * 31 + 7);
    /* touched now, not in the loop (not zeros: the compiler makes malloc + memset 0 a calloc, touching nothing) */
    memset(la, 1, n * sizeof *la), memset(lb, 1, n * sizeof *lb), memset(t, 1, n * sizeof *t);
    memset(pa, 1, n * sizeof *pa), memset(ps, 1, n * sizeof *ps);
    memset(pr, 1, (n + 1) * sizeof *pr);
    snprintf(path_data, sizeof path_data, "%s/tail-data.bin", dir);
    snprintf(path_floor, sizeof path_floor, "%s/tail-floor.bin", dir);
    fill_file(path_data, FILE_BYTES);
    fill_file(path_floor, FILE_BYTES + WINDOW_BYTES);
    struct side A, B;
    open_side(&A, ka, seed);
    open_side(&B, kb, seed * 7919);
    A.prev = B.prev = UINT64_MAX;
    if (A.a) alog_probe_of(A.a, &pr[0]);
    settle_cpu();
    uint64_t mid;
    for (uint32_t i = 0; i < 2000; i++) op(&A, &mid), op(&B, &mid); /* warm: caches, the journal's first window */
    struct rusage r0, r1;
    bool footprint = footprint_begin();
    getrusage(RUSAGE_SELF, &r0);
    if (A.a) alog_probe_of(A.a, &pr[0]);
    uint64_t ns0 = mono_ns(), c0 = ticks();
    for (uint32_t i = 0; i < n; i++) {
        uint64_t x = ticks();
        op(&A, &mid);
        uint64_t y = ticks();
        pa[i] = mid - x;
        op(&B, &mid);
        uint64_t z = ticks();
        la[i] = y - x, lb[i] = z - y, t[i] = x - c0;
        if (A.a) alog_probe_of(A.a, &pr[i + 1]);
    }
    uint64_t c1 = ticks(), ns1 = mono_ns();
    getrusage(RUSAGE_SELF, &r1);
    if (footprint) footprint_end(name_a);
    ns_per_tick = (double)(ns1 - ns0) / (double)(c1 - c0);
    for (uint32_t i = 0; i < n; i++) {
        la[i] = (uint64_t)(la[i] * ns_per_tick), lb[i] = (uint64_t)(lb[i] * ns_per_tick);
        pa[i] = DK_MIN_U64((uint64_t)(pa[i] * ns_per_tick), la[i]), ps[i] = la[i] - pa[i];
    }
    struct stats sa = stats_of(la, n), sb = kb != K_NONE ? stats_of(lb, n) : (struct stats){0};
    printf("tail,%s,ops %u,median %llu,p99 %llu,p99.9 %llu,max %llu,ratio %.2f\n", name_a, n,
           (unsigned long long)sa.median, (unsigned long long)sa.p99, (unsigned long long)sa.p999,
           (unsigned long long)sa.max, (double)sa.p999 / (double)sa.median);
    if (kb != K_NONE)
        printf("tail,pair:%s,ops %u,median %llu,p99 %llu,p99.9 %llu,max %llu,ratio %.2f\n", kind_name[kb], n,
               (unsigned long long)sb.median, (unsigned long long)sb.p99, (unsigned long long)sb.p999,
               (unsigned long long)sb.max, (double)sb.p999 / (double)sb.median);
    uint32_t count[C_N] = {0}, long_engine[C_N] = {0}, slow_a = 0, slow_b = 0, both = 0, runs[9] = {0}, run = 0;
    if (trace) fprintf(trace, "variant,pair,op,ns,pair_ns,t_us,cause,engine,mono_us\n");
    for (uint32_t i = 0; i < n; i++) {
        bool sl_b = kb != K_NONE && lb[i] > 2 * sb.median, sl_b_prev = i && kb != K_NONE && lb[i - 1] > 2 * sb.median;
        slow_b += sl_b;
        bool sl_a = la[i] > 2 * sa.median;
        if (sl_a) run++;
        if (!sl_a || i + 1 == n) {
            if (run) runs[run > 8 ? 8 : run]++;
            run = 0;
        }
        if (!sl_a) continue;
        slow_a++, both += sl_b;
        enum cause e = A.a ? engine_event(&pr[i], &pr[i + 1]) : C_NONE;
        enum cause c = la[i] > LONG_NS ? C_LONG : e != C_NONE ? e : sl_b || sl_b_prev ? C_MACHINE : C_NONE;
        count[c]++;
        if (c == C_LONG && e != C_NONE) long_engine[e]++; /* the engine's event inside a long op (session 25) */
        if (trace)
            fprintf(trace, "%s,%s,%u,%llu,%llu,%.1f,%s,%s,%.1f\n", name_a, kind_name[kb], i, (unsigned long long)la[i],
                    (unsigned long long)lb[i], t[i] * ns_per_tick / 1000, cause_name[c], e != C_NONE ? cause_name[e] : "-",
                    (double)ns0 / 1000 + t[i] * ns_per_tick / 1000);
    }
    printf("tail-causes,%s,pair %s,slow(>2x) %u of %u:", name_a, kind_name[kb], slow_a, n);
    for (int c = 0; c < C_N; c++) printf(" %s %u", cause_name[c], count[c]);
    printf(",of the long: with an engine event");
    for (int c = C_CKPT; c <= C_PAGE; c++) printf(" %s %u", cause_name[c] + 7, long_engine[c]);
    printf("\n");
    if (kb != K_NONE)
        printf("tail-pair,%s,P(pair slow | slow) %.3f,P(pair slow) %.4f\n", name_a,
               slow_a ? (double)both / slow_a : 0, (double)slow_b / n);
    printf("tail-runs,%s,runs of consecutive slow ops by length:", name_a);
    for (int l = 1; l <= 8; l++) printf(" %s%d %u", l == 8 ? ">=" : "", l, runs[l]);
    if (A.a) { /* the engine's events over the whole loop, slow op or not, and what the ops with one cost (session 25) */
        uint64_t *ev = malloc(n * sizeof *ev);
        uint32_t ne = 0, ev_long = 0;
        if (!ev) die("malloc", ENOMEM);
        for (uint32_t i = 0; i < n; i++)
            if (engine_event(&pr[i], &pr[i + 1]) != C_NONE) ev[ne++] = la[i], ev_long += la[i] > LONG_NS;
        struct stats se = ne ? stats_of(ev, ne) : (struct stats){0};
        printf("\ntail-engine,%s,over the loop: wraps %llu,checkpointed entries %llu,sync checkpoints %llu,paced entries "
               "%llu,ops with an engine event %u: median %llu ns max %llu over 10 us %u", name_a,
               (unsigned long long)(pr[n].jwraps - pr[0].jwraps),
               (unsigned long long)(pr[n].checkpointed - pr[0].checkpointed),
               (unsigned long long)(pr[n].sync_checkpoints - pr[0].sync_checkpoints),
               (unsigned long long)(pr[n].paced - pr[0].paced), ne, (unsigned long long)se.median,
               (unsigned long long)se.max, ev_long);
        free(ev);
    }
    printf("\ntail-rusage,%s,minor faults %ld,major faults %ld,voluntary switches %ld,involuntary switches %ld\n",
           name_a, r1.ru_minflt - r0.ru_minflt, r1.ru_majflt - r0.ru_majflt, r1.ru_nvcsw - r0.ru_nvcsw,
           r1.ru_nivcsw - r0.ru_nivcsw);
    phases(name_a, la, pa, ps, n, sa.median);
    /* A diagnostic, not the target: at 50,000 ops the p99.9 is the 50th slowest op, and ops hit by an interrupt or
     * a preemption (> 10 us) are 25-70 per run at load 10-20 on 2 vCPUs (session 15) -- the p99.9 then says how
     * busy the machine was. The same statistics of the other ops say what the path itself does. */
    uint32_t kept = 0, longs = 0;
    double op_ms = 0;
    for (uint32_t i = 0; i < n; i++) {
        op_ms += (double)DK_MIN_U64(la[i], LONG_NS) / 1e6; /* a preempted op is exposed until it is preempted */
        if (la[i] > LONG_NS) longs++;
        else t[kept++] = la[i]; /* t: no longer needed */
    }
    /* Session 25: interrupts and the host's stalls land on an op at a rate per unit of the op's own time (~0.4-0.5
     * per ms on the session-25 machine, the same on every path), so a path whose median is over ~2.5 us collects
     * more than 50 of them per 50,000 ops and its p99.9 is one of them. Each path's rate, compared in one run,
     * says whether a path has stalls of its own (a higher rate) or only a longer op (the same rate). Op time: each op
     * counted up to 10 us. */
    printf("tail-rate,%s,ops over 10 us %u in %.1f ms of the path's op time: %.3f per ms,loop %.1f ms from "
           "CLOCK_MONOTONIC %llu ns\n", name_a, longs, op_ms, op_ms > 0 ? longs / op_ms : 0, (double)(ns1 - ns0) / 1e6,
           (unsigned long long)ns0);
    if (kept > 1000) {
        struct stats sk = stats_of(t, kept);
        printf("tail-short,%s,ops over 10 us %u (p99.9 is the %uth slowest),of the others: median %llu p99 %llu p99.9 "
               "%llu ratio %.2f\n", name_a, longs, n - (uint32_t)((uint64_t)n * 999 / 1000),
               (unsigned long long)sk.median, (unsigned long long)sk.p99, (unsigned long long)sk.p999,
               (double)sk.p999 / (double)sk.median);
    }
    close_side(&A);
    close_side(&B);
    if (trace) fclose(trace);
    unlink(path_data);
    unlink(path_floor);
    return 0;
}
