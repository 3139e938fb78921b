/* Description: failure-atomic updates (issue 4, part 5): the daxkit_atomic_* C API against the kernel path
 * (pwrite/pread + fsync on the same file system) in one run. Tests (--tests, comma-separated, default all):
 *   sizes    copies of 128 B, 1 KiB, 4 KiB, 64 KiB at random aligned offsets, sync every 1/10/100
 *   dirty    the cost of one sync after 1, 10, 100, 1000 dirty 4 KiB blocks (epoch commit: O(1)), each
 *            block dirtied by a 128 B copy (sub-block) or by a 4 KiB copy (the whole block); next to each
 *            (10 blocks and up) a "dirty-ctl" row: a 1-block sync after the same copies, all but the last
 *            into another file -- the same cache state (run_dirty)
 *   mix      read:write mixes 100:0 .. 0:100 of 4 KiB ops (sync every 10) under undo, redo, hybrid, journal
 *   (sizes and latency: kernel, hybrid and journal; dirty: kernel, undo, redo, journal)
 *   latency  4 KiB copy + sync, every op: median and p99.9; also `floor` (a 4 KiB memcpy into DRAM kept
 *            busy to DK_BENCH_FLOOR_NS [900] ns, + a fence: the machine's own tail for an op that long) and
 *            `floor-io` (the paced journal's write-backs and fences without the engine: the machine's tail
 *            for an op that waits for memory as the journal's does; V_FLOOR_IO). DK_BENCH_CLASSIFY=1: a second, instrumented pass per variant
 *            says on stderr what happened in each op slower than 2x the median (checkpoint, page fault,
 *            preemption, blocking, nothing seen); DK_BENCH_TRACE=FILE: a third pass says what the engine did in
 *            each slow op (journal record into a new 2 MiB page, window pad, checkpoint, pacing; run_latency)
 *   threads  4 KiB copies, sync every 10 per thread, 1 and 2 threads, on one shared file (one handle) and
 *            on private files (one per thread)
 *   mmap     a program storing 128 B / 4 KiB into its own mapping with msync every 1/10/100: the kernel's
 *            mmap + msync(MS_SYNC) against failure-atomic msync (src/atomic/uwp.h, userfaultfd write-protect:
 *            uwp-msync, the file's mapping protected (tmpfs); uwp-shadow-msync, a protected shmem shadow, the
 *            only one on XFS/ext4, forced on tmpfs for comparison; skipped where unavailable)
 * One CSV row per measurement on stdout (columns in print_header); cpu_ns_per_op is process CPU time
 * (all threads, user + system) per operation: on a shared, loaded machine it is steadier than wall time. Persistence follows DAXKIT_PERSIST
 * (flush: the dax code path on any medium, an EMULATION, labelled by the caller). Exit 0, 1 on an error. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atomic/alog.h"
#include "atomic/uwp.h"
#include "daxkit/atomic.h"
#include "persist/persist.h"

#define SAMPLES_MAX (1u << 20)

struct cfg {
    const char *dir, *medium, *tests;
    uint64_t file_bytes;
    uint32_t ops;
    uint64_t seed;
};

struct row {
    const char *variant, *test;
    uint32_t bs, sync_every, write_pct, dirty_blocks, ops;
    double wall_s;
    uint64_t cpu_ns;      /* process CPU time (user + system, all threads: the checkpoint thread too) */
    uint64_t median_ns, p999_ns, mean_ns, p99_ns, max_ns;
};

static struct cfg C = {.medium = "unknown", .tests = "sizes,dirty,mix,latency,threads,mmap", .file_bytes = 64ull << 20,
                       .ops = 20000, .seed = 42};
static uint64_t *lat;
static char path[4096];
static char *buf;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rnd(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return *s = x;
}

static void die(const char *what, int err) {
    fprintf(stderr, "dk_bench_atomic: %s: %s\n", what, strerror(err < 0 ? -err : err));
    exit(1);
}

static uint64_t cpu_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void print_header(void) {
    printf("medium,variant,test,bs,sync_every,write_pct,dirty_blocks,ops,ops_per_s,median_ns,p999_ns,mean_ns,wall_s,"
           "cpu_ns_per_op,p99_ns,max_ns\n");
}

static void emit(struct row *r, uint32_t n) {
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; i++) sum += lat[i];
    qsort(lat, n, sizeof *lat, cmp_u64);
    r->median_ns = n ? lat[n / 2] : 0;
    r->p999_ns = n ? lat[(uint64_t)n * 999 / 1000] : 0;
    r->mean_ns = n ? sum / n : 0;
    r->p99_ns = n ? lat[(uint64_t)n * 99 / 100] : 0;
    r->max_ns = n ? lat[n - 1] : 0;
    printf("%s,%s,%s,%u,%u,%u,%u,%u,%.0f,%llu,%llu,%llu,%.4f,%.0f,%llu,%llu\n", C.medium, r->variant, r->test, r->bs,
           r->sync_every, r->write_pct, r->dirty_blocks, r->ops, r->wall_s > 0 ? r->ops / r->wall_s : 0,
           (unsigned long long)r->median_ns, (unsigned long long)r->p999_ns, (unsigned long long)r->mean_ns, r->wall_s,
           r->ops ? (double)r->cpu_ns / r->ops : 0, (unsigned long long)r->p99_ns, (unsigned long long)r->max_ns);
    fflush(stdout);
}

static bool want(const char *t) {
    char list[256], key[32];
    snprintf(list, sizeof list, ",%s,", C.tests);
    snprintf(key, sizeof key, ",%s,", t);
    return strstr(list, key) || !strcmp(C.tests, "all");
}

static void make_file_at(const char *p) {
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) die("create data file", errno);
    for (uint64_t off = 0; off < C.file_bytes; off += 1u << 20)
        if (pwrite(fd, buf, 1u << 20, (off_t)off) != 1 << 20) die("fill data file", errno);
    fsync(fd);
    close(fd);
}

static void make_file(void) { make_file_at(path); }

/* ---- the two paths behind one interface ---- */

enum variant { V_KERNEL, V_HYBRID, V_UNDO, V_REDO, V_JOURNAL, V_FLOOR, V_FLOOR_IO };
static const char *variant_name[] = {"kernel", "atomic-hybrid", "atomic-undo", "atomic-redo", "atomic-journal", "floor",
                                     "floor-io"};
/* V_FLOOR: a 4 KiB copy into 1 MiB of DRAM padded to floor_ns of busy CPU (DK_BENCH_FLOOR_NS, default 900: about
 * an atomic op), a fence as the "sync": whatever makes it slower is the machine (interrupts, preemption, the
 * hypervisor), which hits an op of the same length as often. */
static char *floor_buf;
static uint64_t floor_ns = 900;
#define FLOOR_BYTES (1u << 20)
/* V_FLOOR_IO: the paced journal's memory work without the engine (as bench/dk_bench_atomic_tail.c's floor-io):
 * the previous record copied non-temporally into the file's page, a 4 KiB record copied into a 2 MiB window,
 * the record's lines written back, a fence, an 8-byte commit word written back, a fence. The busy floor
 * above cannot see a machine that slows memory (its op waits for the clock, not for memory); this one
 * waits for the same write-backs as the journal, on a mapping of a second huge-tmpfs file. */
#define FLOOR_IO_WINDOW_BYTES (2ull << 20)
#define FLOOR_IO_REC_BYTES (4096u + 16u)
static char *floor_io_map; /* C.file_bytes of file, then the window */
static uint64_t floor_io_pos, floor_io_prev = UINT64_MAX;

struct target {
    enum variant v;
    int fd;
    struct daxkit_atomic *a;
};

static struct target open_target_at(enum variant v, const char *file) {
    struct target t = {.v = v, .fd = -1};
    if (v == V_FLOOR) {
        if (!floor_buf && !(floor_buf = aligned_alloc(4096, FLOOR_BYTES))) die("floor buffer", ENOMEM);
        memset(floor_buf, 1, FLOOR_BYTES);
        return t;
    }
    if (v == V_FLOOR_IO) {
        dk_persist_init(0); /* DK_FLUSH_AUTO: what the engine picks without DAXKIT_FLUSH */
        char p[4096 + 16];
        snprintf(p, sizeof p, "%s.floor", file);
        int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
        uint64_t len = C.file_bytes + FLOOR_IO_WINDOW_BYTES;
        if (fd < 0 || ftruncate(fd, (off_t)len) != 0) die("floor-io file", errno);
        floor_io_map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
        close(fd);
        unlink(p);
        if (floor_io_map == MAP_FAILED) die("floor-io mmap", errno);
        memset(floor_io_map, 1, len);
        floor_io_pos = 0, floor_io_prev = UINT64_MAX;
        return t;
    }
    if (v == V_KERNEL) {
        t.fd = open(file, O_RDWR);
        if (t.fd < 0) die("open", errno);
        return t;
    }
    struct daxkit_atomic_options o;
    daxkit_atomic_options_init(&o);
    o.policy = v == V_UNDO ? DAXKIT_ATOMIC_UNDO : v == V_REDO ? DAXKIT_ATOMIC_REDO
             : v == V_JOURNAL ? DAXKIT_ATOMIC_JOURNAL : DAXKIT_ATOMIC_HYBRID;
    o.log_bytes = 256ull << 20;
    int rc = daxkit_atomic_map(file, &o, &t.a);
    if (rc) die("daxkit_atomic_map", rc);
    return t;
}

static struct target open_target(enum variant v) { return open_target_at(v, path); }

static void close_target(struct target *t) {
    if (t->a) {
        int rc = daxkit_atomic_unmap(t->a);
        if (rc) die("daxkit_atomic_unmap", rc);
    }
    if (t->fd >= 0) close(t->fd);
    if (t->v == V_FLOOR_IO) munmap(floor_io_map, C.file_bytes + FLOOR_IO_WINDOW_BYTES);
}

static void t_write(struct target *t, uint64_t off, uint32_t n) {
    if (t->v == V_FLOOR) { /* a 4 KiB copy, then the CPU kept busy until floor_ns have passed */
        uint64_t t0 = now_ns();
        memcpy(floor_buf + off % (FLOOR_BYTES - n + 1), buf, n);
        while (now_ns() - t0 < floor_ns) {}
    } else if (t->v == V_FLOOR_IO) {
        char *window = floor_io_map + C.file_bytes;
        if (floor_io_pos + FLOOR_IO_REC_BYTES > FLOOR_IO_WINDOW_BYTES - 64) floor_io_pos = 0;
        if (floor_io_prev != UINT64_MAX) dk_copy_nt(floor_io_map + off, window + floor_io_prev + 16, n); /* apply first */
        memcpy(window + floor_io_pos, &off, sizeof off);
        memcpy(window + floor_io_pos + 16, buf, n);
        dk_flush_range(window + floor_io_pos, FLOOR_IO_REC_BYTES);
        floor_io_prev = floor_io_pos, floor_io_pos += FLOOR_IO_REC_BYTES;
    } else if (t->a) {
        int rc = daxkit_atomic_copy(t->a, off, buf, n);
        if (rc) die("daxkit_atomic_copy", rc);
    } else if (pwrite(t->fd, buf, n, (off_t)off) != (ssize_t)n) {
        die("pwrite", errno);
    }
}

static void t_read(struct target *t, uint64_t off, uint32_t n, char *dst) {
    if (t->a) {
        int rc = daxkit_atomic_read(t->a, off, dst, n);
        if (rc) die("daxkit_atomic_read", rc);
    } else if (pread(t->fd, dst, n, (off_t)off) != (ssize_t)n) {
        die("pread", errno);
    }
}

static void t_sync(struct target *t) {
    if (t->v == V_FLOOR) {
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    } else if (t->v == V_FLOOR_IO) {
        uint64_t *word = (uint64_t *)(floor_io_map + C.file_bytes + FLOOR_IO_WINDOW_BYTES - 64);
        dk_fence();
        __atomic_store_n(word, *word + 1, __ATOMIC_RELAXED);
        dk_flush_range(word, sizeof *word);
        dk_fence();
    } else if (t->a) {
        int rc = daxkit_atomic_sync(t->a);
        if (rc) die("daxkit_atomic_sync", rc);
    } else if (fsync(t->fd) != 0) {
        die("fsync", errno);
    }
}

/* ---- tests ---- */

static void run_sizes(enum variant v, uint32_t bs, uint32_t sync_every) {
    struct target t = open_target(v);
    uint32_t ops = bs >= 65536 ? C.ops / 8 : C.ops;
    uint64_t s = C.seed, slots = C.file_bytes / bs;
    uint64_t t0 = now_ns(), c0 = cpu_now_ns();
    for (uint32_t i = 0; i < ops; i++) {
        uint64_t a = now_ns();
        t_write(&t, (rnd(&s) % slots) * bs, bs);
        if ((i + 1) % sync_every == 0) t_sync(&t);
        lat[i] = now_ns() - a;
    }
    struct row r = {.variant = variant_name[v], .test = "sizes", .bs = bs, .sync_every = sync_every, .write_pct = 100,
                    .dirty_blocks = 0, .ops = ops, .wall_s = (now_ns() - t0) / 1e9, .cpu_ns = cpu_now_ns() - c0};
    close_target(&t);
    emit(&r, ops);
}

/* One sync after `dirty` blocks. control (test "dirty-ctl", session 22): the same copies, but the first dirty - 1
 * into a second file of the same variant (synced, untimed, at the next repetition's start) and only the last into
 * the timed one -- a 1-block sync in the cache state the dirty-block sync finds, so that the dirty-block figure
 * over it is the sync's own growth with the dirty blocks (the raw figure over the 1-block one also holds the
 * cache state the copies leave; docs/atomic.md, T3). */
static void run_dirty(enum variant v, uint32_t dirty, uint32_t bs, bool control) {
    char other_path[sizeof path + 8];
    snprintf(other_path, sizeof other_path, "%s.ctl", path);
    if (control) make_file_at(other_path);
    struct target t = open_target(v), other = control ? open_target_at(v, other_path) : (struct target){.fd = -1};
    uint32_t reps = dirty >= 1000 ? 60 : 300;
    uint64_t s = C.seed, blocks = C.file_bytes / 4096;
    uint64_t t0 = now_ns(), c0 = cpu_now_ns();
    for (uint32_t r = 0; r < reps; r++) {
        uint64_t first = rnd(&s) % (blocks - dirty);
        if (control) t_sync(&other);
        for (uint32_t i = 0; i < dirty; i++)
            t_write(control && i + 1 < dirty ? &other : &t, (first + i) * 4096 + (bs < 4096 ? 512 : 0), bs);
        uint64_t a = now_ns();
        t_sync(&t);
        lat[r] = now_ns() - a;
    }
    struct row r = {.variant = variant_name[v], .test = control ? "dirty-ctl" : "dirty", .bs = bs, .sync_every = dirty,
                    .write_pct = 100, .dirty_blocks = dirty, .ops = reps, .wall_s = (now_ns() - t0) / 1e9,
                    .cpu_ns = cpu_now_ns() - c0};
    close_target(&t);
    if (control) close_target(&other), unlink(other_path);
    emit(&r, reps);
}

static void run_mix(enum variant v, uint32_t write_pct) {
    struct target t = open_target(v);
    uint64_t s = C.seed ^ write_pct, hot_blocks = (16ull << 20) / 4096;
    static char dst[4096];
    uint64_t t0 = now_ns(), c0 = cpu_now_ns();
    for (uint32_t i = 0; i < C.ops; i++) {
        uint64_t off = (rnd(&s) % hot_blocks) * 4096, a = now_ns();
        if (rnd(&s) % 100 < write_pct) t_write(&t, off, 4096);
        else t_read(&t, off, 4096, dst);
        if ((i + 1) % 10 == 0) t_sync(&t);
        lat[i] = now_ns() - a;
    }
    struct daxkit_atomic_stats st;
    if (v == V_HYBRID && daxkit_atomic_get_stats(t.a, &st) == 0) /* stderr: the policy decisions taken */
        fprintf(stderr, "mix,%s,%u%% writes,%llu syncs,%llu policy switches\n", variant_name[v], write_pct,
                (unsigned long long)st.syncs, (unsigned long long)st.policy_switches);
    struct row r = {.variant = variant_name[v], .test = "mix", .bs = 4096, .sync_every = 10, .write_pct = write_pct,
                    .dirty_blocks = 0, .ops = C.ops, .wall_s = (now_ns() - t0) / 1e9, .cpu_ns = cpu_now_ns() - c0};
    close_target(&t);
    emit(&r, C.ops);
}

/* What happened in one op (DK_BENCH_CLASSIFY): the thread's page faults and context switches around it and the
 * engine's checkpoint counters. */
struct op_seen {
    long faults, preempted, blocked;
    uint64_t checkpointed;
};

static struct op_seen seen_now(const struct target *t) {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    struct op_seen o = {.faults = ru.ru_minflt + ru.ru_majflt, .preempted = ru.ru_nivcsw, .blocked = ru.ru_nvcsw};
    struct daxkit_atomic_stats st;
    if (t->a && daxkit_atomic_get_stats(t->a, &st) == 0) o.checkpointed = st.checkpointed_entries + st.sync_checkpoints;
    return o;
}

enum { SEEN_CHECKPOINT = 1, SEEN_FAULT = 2, SEEN_PREEMPTED = 4, SEEN_BLOCKED = 8 };
static uint8_t *seen_class;

static uint8_t classify(struct op_seen a, struct op_seen b) {
    return (uint8_t)((b.checkpointed != a.checkpointed ? SEEN_CHECKPOINT : 0) | (b.faults != a.faults ? SEEN_FAULT : 0) |
                     (b.preempted != a.preempted ? SEEN_PREEMPTED : 0) | (b.blocked != a.blocked ? SEEN_BLOCKED : 0));
}

/* stderr: the ops slower than 2x the median, by the first thing seen in them (checkpoint > fault >
 * preemption > blocking > nothing), and the p99.9 without the preempted ones. */
static void report_classes(enum variant v, uint32_t n) {
    uint64_t *sorted = malloc(n * sizeof *sorted), *kept = malloc(n * sizeof *kept);
    if (!sorted || !kept) die("classify", ENOMEM);
    memcpy(sorted, lat, n * sizeof *lat);
    qsort(sorted, n, sizeof *sorted, cmp_u64);
    uint64_t median = sorted[n / 2], p999 = sorted[(uint64_t)n * 999 / 1000];
    uint32_t cnt[5] = {0}, k = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint8_t c = seen_class[i];
        if (!(c & SEEN_PREEMPTED)) kept[k++] = lat[i];
        if (lat[i] <= 2 * median) continue;
        cnt[c & SEEN_CHECKPOINT ? 0 : c & SEEN_FAULT ? 1 : c & SEEN_PREEMPTED ? 2 : c & SEEN_BLOCKED ? 3 : 4]++;
    }
    qsort(kept, k, sizeof *kept, cmp_u64);
    fprintf(stderr, "latency-classes,%s,ops %u,median %llu,p99.9 %llu,slow(>2x) %u: checkpoint %u fault %u preempted %u "
            "blocked %u unexplained %u,p99.9 of the ops not preempted %llu\n", variant_name[v], n,
            (unsigned long long)median, (unsigned long long)p999, cnt[0] + cnt[1] + cnt[2] + cnt[3] + cnt[4], cnt[0],
            cnt[1], cnt[2], cnt[3], cnt[4], (unsigned long long)(k ? kept[(uint64_t)k * 999 / 1000] : 0));
    free(sorted), free(kept);
}

/* DK_BENCH_TRACE=FILE: a third latency pass per variant (after the plain and the classified ones) takes an
 * engine probe after every op (loads only, no system call: alog_probe_of) and appends one row per op slower
 * than 2x the median to FILE -- what the engine did in it: a record into a 2 MiB page of the journal not written in this lap yet, a pad (wrap),
 * the head moved (applied records made durable), checkpoint or pacing work -- and a summary line per
 * variant to stderr (slow ops by what they did, and how many of all ops did the same). */
static FILE *trace;
static struct alog_probe *probes;
static uint64_t *op_start_ns, *class_lat;
static uint8_t *op_kind;

static uint64_t pct_of(const uint64_t *v, uint32_t n, uint64_t *median) {
    uint64_t *sorted = malloc(n * sizeof *sorted);
    if (!sorted) die("trace", ENOMEM);
    memcpy(sorted, v, n * sizeof *v);
    qsort(sorted, n, sizeof *sorted, cmp_u64);
    *median = sorted[n / 2];
    uint64_t p = sorted[(uint64_t)n * 999 / 1000];
    free(sorted);
    return p;
}

#define TRACE_PAGE_BYTES (2ull << 20)

static bool new_page(const struct alog_probe *a, const struct alog_probe *b) {
    if (!b->area_bytes || b->jtail == a->jtail) return false;
    uint64_t from = a->jtail % b->area_bytes, last = (b->jtail - 1) % b->area_bytes;
    return from / TRACE_PAGE_BYTES != last / TRACE_PAGE_BYTES || b->jtail - a->jtail > TRACE_PAGE_BYTES;
}

static void report_trace(enum variant v, uint32_t n, const struct alog_probe *first) {
    uint64_t median, p999 = pct_of(lat, n, &median);
    enum { K_PAGE, K_WRAP, K_CKPT, K_PACED, K_HEAD, K_NONE, K_N };
    static const char *kname[K_N] = {"new-page", "wrap", "checkpoint", "paced", "head-moved", "none"};
    uint32_t slow[K_N] = {0}, all[K_N] = {0}, nslow = 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct alog_probe *a = i ? &probes[i - 1] : first, *b = &probes[i];
        bool wr = b->jwraps != a->jwraps, pg = !wr && new_page(a, b),
             ck = b->checkpointed != a->checkpointed || b->sync_checkpoints != a->sync_checkpoints,
             pc = b->paced != a->paced, hd = b->jhead != a->jhead;
        int k = pg ? K_PAGE : wr ? K_WRAP : ck ? K_CKPT : pc ? K_PACED : hd ? K_HEAD : K_NONE;
        all[k]++, op_kind[i] = (uint8_t)k;
        if (lat[i] <= 2 * median) continue;
        slow[k]++, nslow++;
        fprintf(trace, "%s,%u,%llu,%llu,%llu,%d,%d,%d,%d,%lld\n", variant_name[v], i, (unsigned long long)lat[i],
                (unsigned long long)(op_start_ns[i] - op_start_ns[0]) / 1000,
                (unsigned long long)(b->area_bytes ? b->jtail % b->area_bytes >> 10 : 0), pg, wr, ck, pc,
                (long long)(b->jhead - a->jhead) >> 10);
    }
    fprintf(stderr, "latency-trace,%s,ops %u,median %llu,p99.9 %llu,slow(>2x) %u:", variant_name[v], n,
            (unsigned long long)median, (unsigned long long)p999, nslow);
    for (int k = 0; k < K_N; k++) fprintf(stderr, " %s %u/%u", kname[k], slow[k], all[k]);
    fprintf(stderr, " (slow/all ops); median ns of the ops that:");
    for (int k = 0; k < K_N; k++) {
        uint32_t m = 0;
        for (uint32_t i = 0; i < n; i++)
            if (op_kind[i] == k) class_lat[m++] = lat[i];
        uint64_t med = 0;
        if (m) pct_of(class_lat, m, &med);
        if (m) fprintf(stderr, " %s %llu", kname[k], (unsigned long long)med);
    }
    fprintf(stderr, "\n");
    fflush(trace);
}

enum lat_pass { PASS_PLAIN, PASS_CLASSIFIED, PASS_TRACED };

static void run_latency(enum variant v, enum lat_pass pass) {
    bool classified = pass == PASS_CLASSIFIED;
    struct target t = open_target(v);
    uint64_t s = C.seed, slots = C.file_bytes / 4096;
    bool traced = pass == PASS_TRACED;
    struct alog_probe first = {0};
    if (traced && t.a) alog_probe_of(t.a, &first);
    uint64_t t0 = now_ns(), c0 = cpu_now_ns();
    for (uint32_t i = 0; i < C.ops; i++) {
        struct op_seen before = classified ? seen_now(&t) : (struct op_seen){0};
        uint64_t a = now_ns();
        t_write(&t, (rnd(&s) % slots) * 4096, 4096);
        t_sync(&t);
        lat[i] = now_ns() - a;
        if (classified) seen_class[i] = classify(before, seen_now(&t));
        if (traced) {
            op_start_ns[i] = a;
            if (t.a) alog_probe_of(t.a, &probes[i]);
        }
    }
    struct row r = {.variant = variant_name[v], .test = "latency", .bs = 4096, .sync_every = 1, .write_pct = 100,
                    .dirty_blocks = 0, .ops = C.ops, .wall_s = (now_ns() - t0) / 1e9, .cpu_ns = cpu_now_ns() - c0};
    close_target(&t);
    if (traced) report_trace(v, C.ops, &first);
    else if (classified) report_classes(v, C.ops);
    else emit(&r, C.ops);
}

/* ---- threads: one shared handle, or private files ---- */

struct thr {
    struct target *t;
    uint32_t id, ops;
    uint64_t lo, blocks; /* the thread's 4 KiB blocks: [lo, lo + blocks) */
};

static void *thr_main(void *arg) {
    struct thr *a = arg;
    uint64_t s = C.seed * 31 + a->id;
    for (uint32_t i = 0; i < a->ops; i++) {
        t_write(a->t, (a->lo + rnd(&s) % a->blocks) * 4096, 4096);
        if ((i + 1) % 10 == 0) t_sync(a->t);
    }
    return NULL;
}

static void run_threads(enum variant v, uint32_t nthreads, bool shared) {
    struct target t[2];
    char saved[4096];
    snprintf(saved, sizeof saved, "%s", path);
    for (uint32_t i = 0; i < nthreads; i++) {
        if (!shared && i > 0) { /* private files: a second file */
            snprintf(path, sizeof path, "%s/bench-atomic-%u.bin", C.dir, i);
            make_file();
        }
        if (shared && i > 0) t[i] = t[0];
        else t[i] = open_target(v);
        snprintf(path, sizeof path, "%s", saved);
    }
    struct thr a[2];
    pthread_t tid[2];
    uint64_t blocks = C.file_bytes / 4096;
    uint64_t t0 = now_ns(), c0 = cpu_now_ns();
    for (uint32_t i = 0; i < nthreads; i++) {
        a[i] = (struct thr){&t[i], i, C.ops / 2, shared ? i * (blocks / 2) : 0, shared ? blocks / 2 : blocks};
        pthread_create(&tid[i], NULL, thr_main, &a[i]);
    }
    for (uint32_t i = 0; i < nthreads; i++) pthread_join(tid[i], NULL);
    static const char *names[2][2] = {{"threads1-private", "threads1-shared"}, {"threads2-private", "threads2-shared"}};
    struct row r = {.variant = variant_name[v], .test = names[nthreads - 1][shared], .bs = 4096,
                    .sync_every = 10, .write_pct = 100, .dirty_blocks = 0, .ops = nthreads * (C.ops / 2),
                    .wall_s = (now_ns() - t0) / 1e9, .cpu_ns = cpu_now_ns() - c0};
    for (uint32_t i = 0; i < nthreads; i++)
        if (!(shared && i > 0)) close_target(&t[i]);
    for (uint32_t i = 1; i < nthreads && !shared; i++) {
        char p2[4096];
        snprintf(p2, sizeof p2, "%s/bench-atomic-%u.bin", C.dir, i);
        unlink(p2);
    }
    lat[0] = 0; /* no per-op latencies here: throughput only */
    emit(&r, 1);
}

/* A program's own mapping: stores, then msync (kernel) or dk_uwp_msync (failure-atomic). mode 0: kernel;
 * 1: dk_uwp_map (the shadow by itself where the file's mapping cannot be protected); 2: the shadow forced.
 * Returns whether the failure-atomic mapping was the shadow. */
static bool run_mmap(int mode, uint32_t bs, uint32_t sync_every) {
    struct dk_uwp *u = NULL;
    char *m = NULL;
    int fd = -1;
    bool atomic = mode != 0, shadow = false;
    if (atomic) {
        void *addr;
        size_t len;
        struct daxkit_atomic_options o;
        daxkit_atomic_options_init(&o);
        o.log_bytes = 256ull << 20;
        int rc = mode == 2 ? dk_uwp_map_shadow(path, &o, &u, &addr, &len) : dk_uwp_map(path, &o, &u, &addr, &len);
        if (rc) {
            fprintf(stderr, "dk_bench_atomic: mmap test: failure-atomic msync unavailable here (%s); skipped\n",
                    strerror(-rc));
            return false;
        }
        m = addr;
        shadow = dk_uwp_shadowed(u);
    } else {
        fd = open(path, O_RDWR);
        m = fd < 0 ? MAP_FAILED : mmap(NULL, C.file_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
        if (m == MAP_FAILED) die("mmap", errno);
    }
    uint32_t ops = C.ops / 4;
    uint64_t s = C.seed, slots = C.file_bytes / 4096;
    uint64_t t0 = now_ns(), c0 = cpu_now_ns();
    for (uint32_t i = 0; i < ops; i++) {
        uint64_t a = now_ns();
        memcpy(m + (rnd(&s) % slots) * 4096 + (bs < 4096 ? 1000 : 0), buf, bs);
        if ((i + 1) % sync_every == 0) {
            int rc = atomic ? dk_uwp_msync(u) : msync(m, C.file_bytes, MS_SYNC);
            if (rc) die("msync", atomic ? rc : errno);
        }
        lat[i] = now_ns() - a;
    }
    struct row r = {.variant = !atomic ? "kernel-msync" : shadow ? "uwp-shadow-msync" : "uwp-msync", .test = "mmap", .bs = bs,
                    .sync_every = sync_every, .write_pct = 100, .dirty_blocks = 0, .ops = ops,
                    .wall_s = (now_ns() - t0) / 1e9, .cpu_ns = cpu_now_ns() - c0};
    if (atomic) {
        int rc = dk_uwp_unmap(u);
        if (rc) die("dk_uwp_unmap", rc);
    } else {
        munmap(m, C.file_bytes);
        close(fd);
    }
    emit(&r, ops);
    return shadow;
}

static void parse(int argc, char **argv) {
    static const struct option lo[] = {{"dir", 1, 0, 'd'},  {"medium", 1, 0, 'm'}, {"tests", 1, 0, 't'},
                                       {"ops", 1, 0, 'n'},  {"file-mib", 1, 0, 'f'}, {"seed", 1, 0, 's'},
                                       {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'd': C.dir = optarg; break;
        case 'm': C.medium = optarg; break;
        case 't': C.tests = optarg; break;
        case 'n': C.ops = (uint32_t)strtoul(optarg, NULL, 0); break;
        case 'f': C.file_bytes = strtoull(optarg, NULL, 0) << 20; break;
        case 's': C.seed = strtoull(optarg, NULL, 0) | 1; break;
        default: exit(2);
        }
    }
    if (!C.dir || C.ops == 0 || C.ops > SAMPLES_MAX || C.file_bytes < (32ull << 20)) {
        fprintf(stderr, "usage: dk_bench_atomic --dir DIR [--medium NAME] [--tests sizes,dirty,mix,latency] "
                        "[--ops N<=%u] [--file-mib M>=32] [--seed S]\n", SAMPLES_MAX);
        exit(2);
    }
}

int main(int argc, char **argv) {
    parse(argc, argv);
    lat = malloc(SAMPLES_MAX * sizeof *lat);
    buf = aligned_alloc(4096, 1u << 20);
    if (!lat || !buf) die("malloc", ENOMEM);
    for (uint32_t i = 0; i < 1u << 20; i++) buf[i] = (char)(i * 31 + 7);
    snprintf(path, sizeof path, "%s/bench-atomic.bin", C.dir);
    make_file();
    print_header();
    const uint32_t sizes[] = {128, 1024, 4096, 65536}, syncs[] = {1, 10, 100};
    const enum variant all[] = {V_KERNEL, V_HYBRID, V_UNDO, V_REDO, V_JOURNAL};
    const enum variant main3[] = {V_KERNEL, V_HYBRID, V_JOURNAL};
    if (want("sizes"))
        for (int b = 0; b < 4; b++)
            for (int k = 0; k < 3; k++)
                for (int v = 0; v < 3; v++) run_sizes(main3[v], sizes[b], syncs[k]);
    if (want("dirty")) {
        const uint32_t dirty[] = {1, 10, 100, 1000};
        for (int b = 0; b < 2; b++)
            for (int d = 0; d < 4; d++)
                for (int v = 0; v < 5; v++)
                    if (all[v] != V_HYBRID) {
                        run_dirty(all[v], dirty[d], b ? 4096 : 128, false);
                        if (dirty[d] > 1) run_dirty(all[v], dirty[d], b ? 4096 : 128, true); /* side by side */
                    }
    }
    if (want("mix")) {
        /* DK_BENCH_MIX_PCT / DK_BENCH_MIX_VARIANT: one cell only (instruction counts under callgrind) */
        const char *only_pct = getenv("DK_BENCH_MIX_PCT"), *only_v = getenv("DK_BENCH_MIX_VARIANT");
        const uint32_t pct[] = {0, 10, 25, 40, 50, 75, 90, 100};
        for (int p = 0; p < 8; p++)
            for (int v = 0; v < 5; v++)
                if ((!only_pct || (uint32_t)atoi(only_pct) == pct[p]) && (!only_v || !strcmp(only_v, variant_name[all[v]])))
                    run_mix(all[v], pct[p]);
    }
    if (want("threads"))
        for (uint32_t n = 1; n <= 2; n++)
            for (int sh = 0; sh < 2; sh++)
                for (int v = 0; v < 2; v++) run_threads(all[v], n, sh == 1);
    if (want("mmap"))
        for (int b = 0; b < 4; b += 2)
            for (int k = 0; k < 3; k++)
                for (int v = 0; v < 3; v++)
                    if (run_mmap(v, sizes[b], syncs[k]) && v == 1) break; /* the shadow already */
    if (want("latency")) {
        const enum variant lat_variants[] = {V_FLOOR, V_FLOOR_IO, V_KERNEL, V_HYBRID, V_JOURNAL};
        bool classify_too = getenv("DK_BENCH_CLASSIFY") && (seen_class = malloc(C.ops)) != NULL;
        if (getenv("DK_BENCH_FLOOR_NS")) floor_ns = strtoull(getenv("DK_BENCH_FLOOR_NS"), NULL, 0);
        if (getenv("DK_BENCH_TRACE")) {
            if (!(trace = fopen(getenv("DK_BENCH_TRACE"), "a"))) die("DK_BENCH_TRACE", errno);
            probes = calloc(C.ops, sizeof *probes), op_start_ns = calloc(C.ops, sizeof *op_start_ns);
            op_kind = malloc(C.ops), class_lat = calloc(C.ops, sizeof *class_lat);
            if (!probes || !op_start_ns || !op_kind || !class_lat) die("trace", ENOMEM);
            fprintf(trace, "variant,op,ns,t_us,tail_kib,new_page,wrap,checkpoint,paced,head_moved_kib\n");
        }
        for (int v = 0; v < 5; v++) {
            run_latency(lat_variants[v], PASS_PLAIN);
            if (classify_too) run_latency(lat_variants[v], PASS_CLASSIFIED);
            if (trace) run_latency(lat_variants[v], PASS_TRACED);
        }
    }
    unlink(path);
    return 0;
}
