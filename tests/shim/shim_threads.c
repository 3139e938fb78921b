/* Description: threads on one managed file. (1) 8 threads pwrite disjoint 1 MiB ranges through one shared
 * descriptor, in random chunk sizes and orders, into a pre-sized file and into an empty one (appends past
 * the end, holes); (2) the same through one descriptor per thread with lseek+write; (3) 8 threads append
 * self-checking records with O_APPEND (own descriptors, then one shared descriptor) while 2 reader threads
 * keep reading the whole file and one more fsyncs in a loop: a reader sees only intact records (plus a prefix of one record at the end),
 * never bytes that were not written. Final contents are checked in-process and by shim_check without the
 * library after fsync. (4) map_race: first writes far apart in a fresh file. (5) truncate_race: overwrites
 * and reads racing truncates (the file guard). (6) signal_nested: a handler reading the file its thread
 * reads, against truncates. (7) cancel_race: writers cancelled during truncates. argv[1]: managed dir. */
#include <pthread.h>
#include <sys/time.h>
#include <time.h>

#include "shim_test.h"

#define THREADS 8
#define REGION_BYTES (1u << 20)
#define RECS_PER_THREAD 1500
#define READERS 2

static const char *dir;

struct job {
    int fd;        /* the descriptor to use (shared or this thread's own) */
    const char *path;
    unsigned idx;
    uint32_t seed;
    bool use_write; /* lseek + write instead of pwrite */
};

static uint32_t rnd(uint32_t *s) {
    *s ^= *s << 13, *s ^= *s >> 17, *s ^= *s << 5;
    return *s;
}

static void *region_writer(void *arg) {
    struct job *j = arg;
    int fd = j->fd;
    uint64_t base = (uint64_t)j->idx * REGION_BYTES;
    static __thread uint8_t buf[65536];
    uint32_t s = j->seed * 2654435761u + j->idx + 1;
    /* chunks in an order that is neither forward nor backward: first the odd 64 KiB blocks, then the even */
    for (int pass = 0; pass < 2; pass++) {
        for (uint64_t blk = (uint64_t)pass; blk < REGION_BYTES / 65536; blk += 2) {
            uint64_t off = base + blk * 65536, end = off + 65536;
            while (off < end) {
                size_t n = 1 + rnd(&s) % 20000;
                if (n > end - off) n = (size_t)(end - off);
                st_fill(buf, j->seed, off, n);
                if (j->use_write) {
                    OK(lseek(fd, (off_t)off, SEEK_SET));
                    st_write_all(fd, buf, n);
                } else {
                    st_pwrite_all(fd, buf, n, (off_t)off);
                }
                off += n;
            }
        }
    }
    return NULL;
}

static void verify_pattern(int fd, const char *path, uint32_t seed, uint64_t len, const char *what) {
    CHECK(st_fsize(fd) == (off_t)len, "%s: size %lld, expected %llu", what, (long long)st_fsize(fd),
          (unsigned long long)len);
    uint8_t *buf = malloc(len);
    CHECK(pread(fd, buf, len, 0) == (ssize_t)len, "%s: short read", what);
    long m = st_mismatch(buf, seed, 0, len);
    CHECK(m < 0, "%s: byte %ld is 0x%02x, expected 0x%02x (read in-process)", what, m, buf[m], st_pat(seed, (uint64_t)m));
    free(buf);
    OK(fsync(fd));
    int rc = st_check("pattern", (char *)path, "0", st_fmt("%llu", (unsigned long long)len), st_fmt("%u", seed));
    CHECK(rc == 0, "%s: shim_check (no library) disagrees after fsync", what);
    rc = st_check("size", (char *)path, st_fmt("%llu", (unsigned long long)len));
    CHECK(rc == 0, "%s: kernel size wrong after fsync", what);
}

static void disjoint(const char *name, bool presize, bool shared, bool use_write, uint32_t seed) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, name);
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    if (presize) OK(ftruncate(fd, (off_t)THREADS * REGION_BYTES));
    pthread_t t[THREADS];
    struct job j[THREADS];
    for (unsigned i = 0; i < THREADS; i++) /* own descriptors are opened up front: see open_race */
        j[i] = (struct job){shared ? fd : (int)OK(open(path, O_RDWR)), path, i, seed, use_write};
    for (unsigned i = 0; i < THREADS; i++) CHECK(pthread_create(&t[i], NULL, region_writer, &j[i]) == 0, "pthread_create");
    for (unsigned i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    for (unsigned i = 0; i < THREADS && !shared; i++) OK(close(j[i].fd));
    char what[128];
    snprintf(what, sizeof what, "%s (%s, %s fd, %s)", name, presize ? "pre-sized" : "empty",
             shared ? "shared" : "per-thread", use_write ? "lseek+write" : "pwrite");
    verify_pattern(fd, path, seed, (uint64_t)THREADS * REGION_BYTES, what);
    OK(close(fd));
    static char last[128];
    if (strcmp(last, what)) printf("ok: disjoint ranges, %s\n", what);
    snprintf(last, sizeof last, "%s", what);
}

/* ---- appends and concurrent readers ---- */

static volatile int appenders_done;
static unsigned long reader_reads, reader_records;

struct app_job {
    const char *path;
    int fd; /* shared O_APPEND descriptor or -1 */
    uint16_t writer;
};

static void *appender(void *arg) {
    struct app_job *j = arg;
    int fd = j->fd;
    uint8_t buf[512];
    for (uint32_t seq = 0; seq < RECS_PER_THREAD; seq++) {
        st_rec_make(buf, j->writer, seq);
        ssize_t w = write(fd, buf, st_rec_len(j->writer, seq));
        CHECK(w == (ssize_t)st_rec_len(j->writer, seq), "append by writer %u seq %u returned %zd errno %d",
              j->writer, seq, w, errno);
    }
    return NULL;
}

/* Parses buf[0, n): intact records, then at most a prefix of one more record. */
static unsigned long parse_prefix(const uint8_t *buf, size_t n, const char *who) {
    size_t off = 0;
    unsigned long recs = 0;
    while (off < n) {
        size_t len = st_rec_check(buf + off, n - off);
        if (len) {
            off += len, recs++;
            continue;
        }
        /* a tail: must be a prefix of the record it announces */
        const struct st_rec *r = (const void *)(buf + off);
        size_t tail = n - off;
        if (tail >= 16 && r->magic == ST_REC_MAGIC && r->writer < THREADS && r->seq < RECS_PER_THREAD) {
            uint8_t want[512];
            st_rec_make(want, r->writer, r->seq);
            if (tail < st_rec_len(r->writer, r->seq) && memcmp(want, buf + off, tail) == 0) return recs;
        }
        if (tail < 16 && memcmp(buf + off, "KCER", tail < 4 ? tail : 4) == 0) return recs; /* too short to say */
        FAIL("%s: bytes at offset %zu of a %zu-byte read are not an intact record nor a record prefix "
             "(first bytes %02x %02x %02x %02x): a reader saw bytes that were not written", who, off, n, buf[off],
             buf[off + 1 < n ? off + 1 : off], buf[off + 2 < n ? off + 2 : off], buf[off + 3 < n ? off + 3 : off]);
    }
    return recs;
}

static void *reader(void *arg) {
    int fd = (int)(intptr_t)arg;
    size_t cap = (size_t)THREADS * RECS_PER_THREAD * 512;
    uint8_t *buf = malloc(cap);
    unsigned long reads = 0, recs = 0;
    while (!__atomic_load_n(&appenders_done, __ATOMIC_ACQUIRE)) {
        ssize_t n = pread(fd, buf, cap, 0);
        CHECK(n >= 0, "reader pread failed: %s", strerror(errno));
        recs += parse_prefix(buf, (size_t)n, "reader (pread)");
        /* and through the offset: read from 0 in pieces */
        OK(lseek(fd, 0, SEEK_SET));
        size_t got = 0;
        for (;;) {
            ssize_t r = read(fd, buf + got, 4096);
            CHECK(r >= 0, "reader read failed: %s", strerror(errno));
            if (r == 0) break;
            got += (size_t)r;
        }
        recs += parse_prefix(buf, got, "reader (read)");
        reads += 2;
    }
    __atomic_add_fetch(&reader_reads, reads, __ATOMIC_RELAXED);
    __atomic_add_fetch(&reader_records, recs, __ATOMIC_RELAXED);
    free(buf);
    return NULL;
}

/* fsync in a loop while the appenders run: a publish point between an append's reservation and its
 * stores (extend strategy: io.c, append_inflight) must neither cut nor lose them. */
static void *syncer(void *arg) {
    int fd = (int)(intptr_t)arg;
    unsigned long n = 0;
    while (!__atomic_load_n(&appenders_done, __ATOMIC_ACQUIRE)) {
        OK(fsync(fd));
        n++;
    }
    return (void *)n;
}

static void appends(const char *name, bool shared) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, name);
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 0644));
    appenders_done = 0;
    reader_reads = reader_records = 0;
    pthread_t w[THREADS], r[READERS];
    struct app_job j[THREADS];
    int rfd[READERS];
    /* descriptors are opened up front (opening while others append: see open_race) */
    for (unsigned i = 0; i < READERS; i++) rfd[i] = (int)OK(open(path, O_RDONLY));
    for (unsigned i = 0; i < THREADS; i++)
        j[i] = (struct app_job){path, shared ? fd : (int)OK(open(path, O_WRONLY | O_APPEND)), (uint16_t)i};
    for (unsigned i = 0; i < READERS; i++)
        CHECK(pthread_create(&r[i], NULL, reader, (void *)(intptr_t)rfd[i]) == 0, "pthread_create");
    pthread_t s;
    CHECK(pthread_create(&s, NULL, syncer, (void *)(intptr_t)fd) == 0, "pthread_create");
    for (unsigned i = 0; i < THREADS; i++) CHECK(pthread_create(&w[i], NULL, appender, &j[i]) == 0, "pthread_create");
    for (unsigned i = 0; i < THREADS; i++) pthread_join(w[i], NULL);
    __atomic_store_n(&appenders_done, 1, __ATOMIC_RELEASE);
    for (unsigned i = 0; i < READERS; i++) pthread_join(r[i], NULL);
    void *syncs;
    pthread_join(s, &syncs);
    for (unsigned i = 0; i < READERS; i++) OK(close(rfd[i]));
    for (unsigned i = 0; i < THREADS && !shared; i++) OK(close(j[i].fd));
    /* in-process: the whole file */
    off_t size = st_fsize(fd);
    uint8_t *buf = malloc((size_t)size);
    CHECK(pread(fd, buf, (size_t)size, 0) == size, "short read of the appended file");
    unsigned long recs = parse_prefix(buf, (size_t)size, "final read");
    CHECK(recs == (unsigned long)THREADS * RECS_PER_THREAD, "final read: %lu records, expected %u", recs,
          THREADS * RECS_PER_THREAD);
    free(buf);
    OK(fsync(fd));
    int rc = st_check("records", path, st_fmt("%d", THREADS), st_fmt("%d", RECS_PER_THREAD));
    CHECK(rc == 0, "%s: shim_check (no library) found lost, doubled or torn records after fsync", name);
    OK(close(fd));
    printf("ok: O_APPEND from %d threads (%s descriptor), %d records each; readers did %lu reads (%lu records seen), "
           "%lu fsyncs meanwhile\n",
           THREADS, shared ? "one shared" : "own", RECS_PER_THREAD, reader_reads, reader_records,
           (unsigned long)(uintptr_t)syncs);
}

/* ---- opening the file while other threads append and overwrite ---- */

static void *open_close_loop(void *arg) {
    const char *path = arg;
    for (int i = 0; i < 2000 && !__atomic_load_n(&appenders_done, __ATOMIC_ACQUIRE); i++) {
        int fd = OK(open(path, i % 2 ? O_RDONLY : O_RDWR));
        char b[64];
        OK(pread(fd, b, sizeof b, 0));
        OK(close(fd));
    }
    return NULL;
}

static void open_race(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "open_race");
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 0644));
    appenders_done = 0;
    pthread_t w[4], o[4];
    struct app_job j[4];
    for (unsigned i = 0; i < 4; i++) {
        j[i] = (struct app_job){path, fd, (uint16_t)i};
        CHECK(pthread_create(&w[i], NULL, appender, &j[i]) == 0, "pthread_create");
    }
    for (unsigned i = 0; i < 4; i++) CHECK(pthread_create(&o[i], NULL, open_close_loop, path) == 0, "pthread_create");
    for (unsigned i = 0; i < 4; i++) pthread_join(w[i], NULL);
    __atomic_store_n(&appenders_done, 1, __ATOMIC_RELEASE);
    for (unsigned i = 0; i < 4; i++) pthread_join(o[i], NULL);
    OK(fsync(fd));
    CHECK(st_check("records", path, "4", st_fmt("%d", RECS_PER_THREAD)) == 0, "open_race: records wrong");
    OK(close(fd));
    if (0) printf("ok: 2 threads open/pread/close the file while 4 threads append to it\n");
}

/* ---- first writes into a fresh file, far apart, at the same moment ---- */

static pthread_barrier_t race_barrier;
struct far_job {
    int fd;
    unsigned k;
};
static void *far_writer(void *arg) {
    struct far_job *j = arg;
    static __thread uint8_t buf[65536];
    uint64_t off = (uint64_t)(j->k + 1) * (8u << 20);
    st_fill(buf, 21, off, sizeof buf);
    pthread_barrier_wait(&race_barrier);
    st_pwrite_all(j->fd, buf, sizeof buf, (off_t)off);
    return NULL;
}

/* Four threads pwrite 64 KiB at 8, 16, 24 and 32 MiB of an empty file. Whichever runs first makes the
 * kernel size jump (a write far past the end); the others then write below the published size. */
static void map_race(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "map_race");
    time_t until = time(NULL) + 4;
    int rounds = 0;
    for (; rounds == 0 || time(NULL) < until; rounds++) {
        int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
        pthread_t t[4];
        struct far_job j[4];
        pthread_barrier_init(&race_barrier, NULL, 4);
        for (unsigned i = 0; i < 4; i++) {
            j[i] = (struct far_job){fd, i};
            CHECK(pthread_create(&t[i], NULL, far_writer, &j[i]) == 0, "pthread_create");
        }
        for (unsigned i = 0; i < 4; i++) pthread_join(t[i], NULL);
        pthread_barrier_destroy(&race_barrier);
        CHECK(st_fsize(fd) == (off_t)(32u << 20) + 65536, "map_race: size %lld", (long long)st_fsize(fd));
        static uint8_t got[65536];
        for (unsigned k = 0; k < 4; k++) {
            uint64_t off = (uint64_t)(k + 1) * (8u << 20);
            CHECK(pread(fd, got, sizeof got, (off_t)off) == (ssize_t)sizeof got, "map_race: short read");
            CHECK(st_mismatch(got, 21, off, sizeof got) < 0, "map_race: data at %llu wrong", (unsigned long long)off);
        }
        OK(close(fd));
        OK(unlink(path));
    }
    printf("ok: %d rounds of four first writes far apart in a fresh file\n", rounds);
}

/* ---- overwrites and reads racing truncates (the file guard, src/upath/guard.h) ---- */

#define TR_BYTES (1u << 20)
#define TR_KEEP (TR_BYTES / 2) /* the main thread truncates to this and back up; below it nothing is cut */
#define TR_BLOCKS (TR_BYTES / 4096)
#define TR_THREADS 3

static volatile int tr_stop;
static uint32_t tr_gen[TR_BLOCKS]; /* last generation written to each block below TR_KEEP, by its owner */

/* Thread k owns the blocks b with b % TR_THREADS == k: writes a generation to one, then reads another
 * (anywhere: past the truncated end a read must return 0, inside it a whole block). */
static void *tr_worker(void *arg) {
    int fd = ((int *)arg)[0], k = ((int *)arg)[1];
    uint8_t buf[4096], got[4096];
    uint32_t s = 77u + (uint32_t)k;
    while (!__atomic_load_n(&tr_stop, __ATOMIC_RELAXED)) {
        uint32_t b = (rnd(&s) % (TR_BLOCKS / TR_THREADS)) * TR_THREADS + (uint32_t)k;
        uint32_t gen = b < TR_KEEP / 4096 ? ++tr_gen[b] : 0;
        st_fill(buf, gen * 131u + b, 0, sizeof buf);
        CHECK(pwrite(fd, buf, sizeof buf, (off_t)b * 4096) == (ssize_t)sizeof buf, "truncate_race: pwrite");
        ssize_t r = pread(fd, got, sizeof got, (off_t)(rnd(&s) % TR_BLOCKS) * 4096);
        CHECK(r == 0 || r == (ssize_t)sizeof got, "truncate_race: pread returned %zd", r);
    }
    return NULL;
}

/* Three threads overwrite and read 4 KiB blocks of a 1 MiB file while the main thread cuts it to
 * 512 KiB and grows it back, again and again. A store through the mapping past a cut end would kill
 * the process (SIGBUS); the truncate must wait for the overwrites in flight. Blocks below 512 KiB must
 * then hold their last generation, through the library and through the kernel. */
static void truncate_race(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "truncate_race");
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    OK(ftruncate(fd, TR_BYTES));
    static uint8_t zero[4096];
    for (uint32_t b = 0; b < TR_BLOCKS; b++) st_pwrite_all(fd, zero, sizeof zero, (off_t)b * 4096); /* mapped */
    uint64_t before[DK_C_COUNT], after[DK_C_COUNT];
    CHECK(st_stats(getpid(), before), "stats");
    pthread_t t[TR_THREADS];
    int args[TR_THREADS][2];
    for (int k = 0; k < TR_THREADS; k++) {
        args[k][0] = fd, args[k][1] = k;
        CHECK(pthread_create(&t[k], NULL, tr_worker, args[k]) == 0, "pthread_create");
    }
    time_t until = time(NULL) + 3;
    int rounds = 0;
    for (; rounds < 200 || time(NULL) < until; rounds++) {
        OK(ftruncate(fd, TR_KEEP));
        OK(ftruncate(fd, TR_BYTES));
        if (rounds >= 20000) break;
    }
    __atomic_store_n(&tr_stop, 1, __ATOMIC_RELAXED);
    for (int k = 0; k < TR_THREADS; k++) pthread_join(t[k], NULL);
    CHECK(st_stats(getpid(), after), "stats");
    uint8_t want[4096], got[4096];
    for (uint32_t b = 0; b < TR_KEEP / 4096; b++) {
        if (tr_gen[b]) st_fill(want, tr_gen[b] * 131u + b, 0, sizeof want);
        else memset(want, 0, sizeof want);
        CHECK(pread(fd, got, sizeof got, (off_t)b * 4096) == (ssize_t)sizeof got, "truncate_race: pread");
        CHECK(!memcmp(got, want, sizeof got), "truncate_race: block %u: not generation %u", b, tr_gen[b]);
        CHECK(syscall(SYS_pread64, fd, got, sizeof got, (off_t)b * 4096) == (long)sizeof got, "kernel pread");
        CHECK(!memcmp(got, want, sizeof got), "truncate_race: block %u in the kernel file: not generation %u", b,
              tr_gen[b]);
    }
    OK(close(fd));
    OK(unlink(path));
    CHECK(after[DK_C_guard_barriers] > before[DK_C_guard_barriers] || access("/proc/sys/kernel", F_OK) != 0,
          "no truncate took the guard's write side (membarrier unavailable?): the fast path was not tested");
    printf("ok: %d truncate rounds against %d overwriting and reading threads (%llu guard barriers)\n", rounds,
           TR_THREADS, (unsigned long long)(after[DK_C_guard_barriers] - before[DK_C_guard_barriers]));
}

/* ---- a signal handler doing IO on the file its thread is reading, against truncates ---- */

static int nest_fd;
static volatile long nest_reads, nest_truncs, nest_handled;
static volatile int nest_stop;

static void nest_on_signal(int sig) {
    (void)sig;
    char b[4096];
    int saved = errno;
    (void)!pread(nest_fd, b, sizeof b, 0);
    nest_handled++;
    errno = saved;
}
static int nest_overwrite; /* signal_nested_write: the thread overwrites (strict mode: staged, waiting) */
static void *nest_reader(void *arg) {
    (void)arg;
    static char b[1 << 16]; /* inside the shortest size: always the guarded fast path, never f->mu */
    for (long i = 0; !nest_stop; i++) {
        if (nest_overwrite) (void)!pwrite(nest_fd, b, 4096, (i % 128) * 4096);
        else (void)!pread(nest_fd, b, sizeof b, 0);
        nest_reads++;
    }
    return NULL;
}
static void *nest_truncater(void *arg) {
    (void)arg;
    while (!nest_stop) (void)!ftruncate(nest_fd, 1 << 19), (void)!ftruncate(nest_fd, 1 << 20), nest_truncs++;
    return NULL;
}

/* A handler that reads the file its thread was reading (in a guarded section) while another thread
 * truncates: the nested read must not wait for the truncate that waits for the outer read. Progress is
 * checked every 10 ms; a stall of 0.5 s is the deadlock. (A handler interrupting a section under the file
 * mutex -- an append, a read of staged bytes -- still deadlocks: docs/guarantees.md.) */
static void signal_nested(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "signal_nested");
    nest_fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    static char z[1 << 20];
    memset(z, 1, sizeof z);
    for (int i = 0; i < 10; i++) st_pwrite_all(nest_fd, z, sizeof z, 0), (void)!pread(nest_fd, z, sizeof z, 0);
    OK(fsync(nest_fd)); /* published: reads are the fast path's, not staged reads under the file mutex */
    /* ... once the file is mapped: the first read of published bytes maps it under the file mutex, and a
     * handler reading meanwhile would wait for that mutex (the documented limit) -- 2 of 12 runs hung so. */
    CHECK(pread(nest_fd, z, 4096, 0) == 4096, "signal_nested: the mapping read");
    struct sigaction sa = {0}, old;
    sa.sa_handler = nest_on_signal;
    OK(sigaction(SIGUSR1, &sa, &old));
    pthread_t r, t;
    CHECK(pthread_create(&r, NULL, nest_reader, NULL) == 0 && pthread_create(&t, NULL, nest_truncater, NULL) == 0,
          "pthread_create");
    long last = -1;
    int stalls = 0;
    for (int i = 0; i < 150; i++) {
        for (int k = 0; k < 20; k++) pthread_kill(r, SIGUSR1), usleep(200);
        long now = nest_reads + nest_truncs;
        stalls = now == last ? stalls + 1 : 0;
        CHECK(stalls < 50, "no progress: reads %ld, truncates %ld, handler reads %ld (a deadlock)", nest_reads,
              nest_truncs, nest_handled);
        last = now;
        if (stalls) usleep(10000);
    }
    nest_stop = 1;
    pthread_join(r, NULL);
    pthread_join(t, NULL);
    OK(sigaction(SIGUSR1, &old, NULL));
    OK(close(nest_fd));
    OK(unlink(path));
    printf("ok: %ld reads, %ld truncate rounds, %ld reads from a signal handler nested in one\n", nest_reads,
           nest_truncs, nest_handled);
}

/* A handler that *writes* the file its thread is overwriting (review 8, finding 18: strict mode hung -- on the
 * staging mutex, on a checkpoint its thread's operation held off, on the file mutex of the apply; the lock
 * underneath released by the handler's read side once that was fixed). The worker overwrites 4 KiB pages of
 * the first MiB 100,000 times; SIGUSR1 every ~100 us writes from a handler, through a write-all loop that
 * retries EINTR and EAGAIN as most do (review 10, finding 22: an EAGAIN answer made it spin for ever): 4 KiB
 * at 1 MiB, 16 KiB at 1 MiB + 64 KiB (more than one inline record), or 4 KiB over the worker's page 255. A
 * handler write either completes or fails with EDEADLK (strict: it would have waited for its own thread;
 * docs/guarantees.md), never anything else, and at least one of each kind completes; 10 s without progress
 * is the deadlock or the spin. Then the file read back without the library: the handler's ranges all
 * 'h', the worker's last page its last write, page 255 one writer's whole page and what the library read. */
static volatile long hw_done, hw_ok[3], hw_refused, hw_retries, hw_other, hw_signals;
static volatile int hw_stop;
static char hw_page[16384];
static const off_t hw_at[3] = {1 << 20, (1 << 20) + (64 << 10), 255 * 4096};
static const size_t hw_len[3] = {4096, 16384, 4096};
static ssize_t hw_write_all(int fd, const char *p, size_t n, off_t off) {
    size_t done = 0;
    while (done < n) {
        ssize_t w = pwrite(fd, p + done, n - done, off + (off_t)done);
        if (w < 0 && (errno == EINTR || errno == EAGAIN)) {
            hw_retries++;
            continue;
        }
        if (w <= 0) return -1;
        done += (size_t)w;
    }
    return (ssize_t)done;
}
static void hw_on_signal(int sig) {
    (void)sig;
    int saved = errno;
    int k = (int)(hw_signals++ % 3);
    ssize_t w = hw_write_all(nest_fd, hw_page, hw_len[k], hw_at[k]);
    if (w == (ssize_t)hw_len[k]) hw_ok[k]++;
    else if (w < 0 && errno == EDEADLK) hw_refused++;
    else hw_other++;
    errno = saved;
}
static void *hw_worker(void *arg) {
    (void)arg;
    static char b[4096];
    for (long i = 0; i < 100000 && !hw_stop; i++) {
        memset(b, 'a' + (int)(i % 26), sizeof b);
        if (pwrite(nest_fd, b, sizeof b, (off_t)(i % 256) * 4096) != (ssize_t)sizeof b) hw_other++;
        hw_done = i + 1;
    }
    return NULL;
}
static void signal_handler_write(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "signal_handler_write");
    nest_fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    static char z[2 << 20];
    memset(z, 'z', sizeof z);
    st_pwrite_all(nest_fd, z, sizeof z, 0);
    OK(fsync(nest_fd));
    for (int i = 0; i < 40; i++) CHECK(pread(nest_fd, z, 4096, (off_t)i * 4096) == 4096, "pread"); /* mapped */
    memset(hw_page, 'h', sizeof hw_page);
    struct sigaction sa = {0}, old;
    sa.sa_handler = hw_on_signal;
    sa.sa_flags = SA_RESTART;
    OK(sigaction(SIGUSR1, &sa, &old));
    pthread_t w;
    CHECK(pthread_create(&w, NULL, hw_worker, NULL) == 0, "pthread_create");
    long last = -1;
    struct timespec since; /* the last progress: 10 s without any is the deadlock or the spin (a count of
                            * rounds, ~0.5 s, failed once on XFS at load 27; 12 runs by hand then passed) */
    clock_gettime(CLOCK_MONOTONIC, &since);
    while (hw_done < 100000) {
        for (int k = 0; k < 20 && hw_done < 100000; k++) pthread_kill(w, SIGUSR1), usleep(100);
        long now = hw_done;
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (now != last) since = t;
        if (t.tv_sec - since.tv_sec >= 10) {
            hw_stop = 1;
            FAIL("no progress: %ld overwrites, %ld+%ld+%ld handler writes, %ld refused, %ld EAGAIN/EINTR retries (a "
                 "deadlock, or a retry loop spinning)", hw_done, hw_ok[0], hw_ok[1], hw_ok[2], hw_refused, hw_retries);
        }
        last = now;
    }
    pthread_join(w, NULL);
    OK(sigaction(SIGUSR1, &old, NULL));
    CHECK(hw_other == 0, "%ld writes failed otherwise than with EDEADLK", hw_other);
    CHECK(hw_retries == 0, "%ld handler writes answered EAGAIN or EINTR (a retry loop spins on them)", hw_retries);
    CHECK(hw_ok[0] > 0 && hw_ok[1] > 0 && hw_ok[2] > 0,
          "a kind of handler write never completed (%ld, %ld, %ld; %ld refused): the test proves nothing", hw_ok[0],
          hw_ok[1], hw_ok[2], hw_refused);
    char lib[4096], got[16384];
    CHECK(pread(nest_fd, lib, sizeof lib, hw_at[2]) == (ssize_t)sizeof lib, "pread of page 255");
    OK(fsync(nest_fd));
    OK(close(nest_fd));
    int r = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
    CHECK(r >= 0, "raw open");
    for (int k = 0; k < 2; k++) {
        CHECK(syscall(SYS_pread64, r, got, hw_len[k], hw_at[k]) == (long)hw_len[k], "raw read");
        CHECK(memcmp(got, hw_page, hw_len[k]) == 0, "the handler's %zu bytes at %ld are not all 'h' without the library",
              hw_len[k], (long)hw_at[k]);
    }
    CHECK(syscall(SYS_pread64, r, got, 4096, (off_t)(99999 % 256) * 4096) == 4096 && got[0] == 'a' + 99999 % 26 &&
              got[4095] == got[0], "the worker's last page is not its last write");
    CHECK(syscall(SYS_pread64, r, got, 4096, hw_at[2]) == 4096, "raw read of page 255");
    for (int i = 1; i < 4096; i++) CHECK(got[i] == got[0], "page 255 mixes two writes at byte %d", i);
    CHECK(memcmp(got, lib, 4096) == 0, "page 255 without the library ('%c') is not what the library read ('%c')",
          got[0], lib[0]);
    syscall(SYS_close, r);
    OK(unlink(path));
    printf("ok: signal_handler_write: 100000 overwrites, %ld signals, handler writes %ld + %ld + %ld, %ld refused "
           "with EDEADLK, %ld retries\n", hw_signals, hw_ok[0], hw_ok[1], hw_ok[2], hw_refused, hw_retries);
}

/* A handler reading the file its thread is reading while that read holds the file mutex: the first reads
 * of a file (unmapped, under the mutex: DAXKIT_MAP_AFTER_IOS) and the first mapping (review 8, finding 9:
 * both hung); with `adopt_by_fcntl`, while the thread adopts the descriptor (finding 12: spun forever). Each round opens, reads 100 bytes and closes; SIGALRM every 50 us reads 16 bytes of the same
 * descriptor. The watchdog catches the hang. */
static volatile int first_fd = -1;
static volatile long first_handled;
static void first_on_signal(int sig) {
    (void)sig;
    int saved = errno, fd = first_fd;
    char b[16];
    if (fd >= 0 && pread(fd, b, sizeof b, 0) == (ssize_t)sizeof b && b[0] == 's') first_handled++;
    errno = saved;
}
static void signal_nested_first(bool adopt_by_fcntl) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "signal_nested_first");
    int w = OK(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    char b[8192];
    memset(b, 's', sizeof b);
    st_write_all(w, b, sizeof b);
    OK(close(w));
    struct sigaction sa = {0}, old;
    sa.sa_handler = first_on_signal;
    sa.sa_flags = SA_RESTART;
    OK(sigaction(SIGALRM, &sa, &old));
    struct itimerval it = {{0, 50}, {0, 50}}, none = {{0, 0}, {0, 0}};
    OK(setitimer(ITIMER_REAL, &it, NULL));
    long rounds = 0;
    for (; rounds < 30000; rounds++) {
        int fd = OK(open(path, O_RDONLY));
        first_fd = fd;
        if (adopt_by_fcntl) { /* lazy adoption's first use: the handler's read meets the adoption (review 8, 12) */
            struct flock l = {.l_type = F_RDLCK, .l_whence = SEEK_SET};
            OK(fcntl(fd, F_GETLK, &l));
        }
        CHECK(pread(fd, b, 100, 0) == 100 && b[0] == 's', "signal_nested_first: round %ld: the read", rounds);
        first_fd = -1;
        OK(close(fd));
    }
    OK(setitimer(ITIMER_REAL, &none, NULL));
    OK(sigaction(SIGALRM, &old, NULL));
    OK(unlink(path));
    CHECK(first_handled > 0, "signal_nested_first: no handler read in %ld rounds (the timer never fired?)", rounds);
    printf("ok: signal_nested_first: %ld rounds of open + first read + close, %ld reads from a handler\n", rounds,
           first_handled);
}

/* A handler reading the file its thread is overwriting while that write holds the file mutex around a
 * kernel call: the first, unmapped overwrites, and a file sized by ftruncate filled from its front (the
 * front's allocation, holes.c) -- review 9, finding 25: 6 of 6 runs hung. Each round opens with O_TRUNC,
 * sizes 64 MiB (ftruncate, or fallocate), writes 512 pages from the front; SIGALRM every 50 us reads 16
 * bytes at 60 MiB. The watchdog catches the hang. */
static volatile int over_fd = -1;
static volatile long over_handled;
static void over_on_signal(int sig) {
    (void)sig;
    int saved = errno, fd = over_fd;
    char b[16];
    if (fd >= 0 && pread(fd, b, sizeof b, 60 << 20) == (ssize_t)sizeof b) over_handled++;
    errno = saved;
}
static void signal_nested_overwrite(void) {
    char path[PATH_MAX], b[4096];
    st_path(path, sizeof path, dir, "signal_nested_overwrite");
    memset(b, 'w', sizeof b);
    struct sigaction sa = {0}, old;
    sa.sa_handler = over_on_signal;
    sa.sa_flags = SA_RESTART;
    OK(sigaction(SIGALRM, &sa, &old));
    struct itimerval it = {{0, 50}, {0, 50}}, none = {{0, 0}, {0, 0}};
    OK(setitimer(ITIMER_REAL, &it, NULL));
    for (int round = 0; round < 60; round++) {
        int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
        if (round % 2) OK(fallocate(fd, 0, 0, 64 << 20));
        else OK(ftruncate(fd, 64 << 20));
        over_fd = fd;
        for (int i = 0; i < 512; i++) CHECK(pwrite(fd, b, sizeof b, (off_t)i * 4096) == (ssize_t)sizeof b, "pwrite");
        over_fd = -1;
        OK(close(fd));
    }
    OK(setitimer(ITIMER_REAL, &none, NULL));
    OK(sigaction(SIGALRM, &old, NULL));
    OK(unlink(path));
    CHECK(over_handled > 0, "signal_nested_overwrite: no handler read (the timer never fired?)");
    printf("ok: signal_nested_overwrite: 60 rounds of 512 front overwrites, %ld reads from a handler\n", over_handled);
}

/* ---- cancelled writers against truncates ---- */

static int cancel_fd;
static volatile int cancel_stop;
static void *cancel_writer(void *arg) {
    (void)arg;
    char b[4096] = {0};
    uint32_t s = 1;
    for (;;) (void)!pwrite(cancel_fd, b, sizeof b, (off_t)(rnd(&s) % 128) * 4096);
    return NULL;
}
static void *cancel_truncater(void *arg) {
    (void)arg;
    while (!cancel_stop) (void)!ftruncate(cancel_fd, 1 << 20), (void)!ftruncate(cancel_fd, 3 << 19);
    return NULL;
}

/* Writers cancelled at random points while another thread truncates: no lock of the library may stay
 * held by a cancelled thread (the watchdog catches a truncate that never returns). */
static void cancel_race(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "cancel_race");
    cancel_fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    static char z[1 << 20];
    for (int i = 0; i < 4; i++) st_pwrite_all(cancel_fd, z, sizeof z, 0), (void)!pread(cancel_fd, z, sizeof z, 0);
    OK(fsync(cancel_fd));
    pthread_t t;
    CHECK(pthread_create(&t, NULL, cancel_truncater, NULL) == 0, "pthread_create");
    uint32_t s = 7;
    int rounds = 0;
    for (time_t until = time(NULL) + 3; rounds < 300 || time(NULL) < until; rounds++) {
        pthread_t w;
        CHECK(pthread_create(&w, NULL, cancel_writer, NULL) == 0, "pthread_create");
        usleep(100 + rnd(&s) % 900);
        pthread_cancel(w);
        pthread_join(w, NULL);
        OK(ftruncate(cancel_fd, 1 << 20));
        if (rounds >= 3000) break;
    }
    cancel_stop = 1;
    pthread_join(t, NULL);
    OK(close(cancel_fd));
    OK(unlink(path));
    printf("ok: %d writers cancelled during truncates\n", rounds);
}

int main(int argc, char **argv) {
    dir = st_dir(argc, argv);
    const char *which = argc > 2 ? argv[2] : "all";
    bool all = !strcmp(which, "all");
    st_require_library();
    st_watchdog(!strcmp(which, "open_race") ? 20 : 40); /* the deadlock shows within a second */
    setvbuf(stdout, NULL, _IONBF, 0);
    bool any = false;
    if (all || !strcmp(which, "disjoint_shared")) {
        disjoint("disjoint_shared_presized", true, true, false, 11);
        disjoint("disjoint_shared_empty", false, true, false, 12);
        any = true;
    }
    if (all || !strcmp(which, "disjoint_own")) {
        disjoint("disjoint_own_presized", true, false, true, 13);
        disjoint("disjoint_own_empty", false, false, true, 14);
        any = true;
    }
    if (all || !strcmp(which, "append")) {
        appends("append_own", false);
        appends("append_shared", true);
        any = true;
    }
    if (all || !strcmp(which, "open_race")) {
        time_t until = time(NULL) + 8; /* racy: as many rounds as fit in 8 seconds */
        for (int round = 0; round == 0 || time(NULL) < until; round++) open_race();
        any = true;
    }
    if (all || !strcmp(which, "map_race")) {
        map_race();
        any = true;
    }
    if (all || !strcmp(which, "truncate_race")) {
        truncate_race();
        any = true;
    }
    if (all || !strcmp(which, "signal_nested_write")) {
        nest_overwrite = 1; /* the handler's read interrupts an overwrite: in strict mode, inside its lock */
        signal_nested();
        nest_overwrite = 0;
        any = true;
    }
    if (all || !strcmp(which, "signal_nested")) {
        signal_nested();
        any = true;
    }
    if (!strcmp(which, "signal_handler_write")) { /* strict mode's case (posix and sync: no refusals) */
        signal_handler_write();
        any = true;
    }
    if (all || !strcmp(which, "signal_nested_first")) {
        signal_nested_first(false);
        any = true;
    }
    if (all || !strcmp(which, "signal_nested_adopt")) {
        signal_nested_first(true);
        any = true;
    }
    if (all || !strcmp(which, "signal_nested_overwrite")) {
        signal_nested_overwrite();
        any = true;
    }
    if (all || !strcmp(which, "cancel_race")) {
        cancel_race();
        any = true;
    }
    CHECK(any, "unknown case '%s' (disjoint_shared|disjoint_own|append|open_race|map_race|truncate_race|"
               "signal_nested|signal_nested_write|signal_handler_write|signal_nested_first|signal_nested_adopt|signal_nested_overwrite|"
               "cancel_race|all)", which);
    return 0;
}
