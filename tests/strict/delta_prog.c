/* Description: the program of tests/strict/delta.sh (strict mode's delta records, session 29; docs/strict.md
 * "Delta records"), run with or without the library (LD_PRELOAD) -- it uses plain system calls only.
 *   diff FILE SEED OPS THREADS    seeded overwrites of a 256 KiB file, mostly 4 KiB pages rewritten with a few bytes
 *                                 changed (what strict mode logs as delta records), some with every byte changed,
 *                                 none changed, unaligned, 8 KiB; reads compared with an in-memory model, fsync every
 *                                 50, close and reopen every 97 (a checkpoint); THREADS threads, each on its own
 *                                 32 pages of the one file. Exit 1 at the first difference from the model; the
 *                                 script then compares the file with the kernel run's.
 *   page FILE PAGE TAG            rewrites page PAGE of FILE with bytes 100-107 and 3000-3003 set to TAG (a letter):
 *                                 the write tests crash in (DAXKIT_TEST_CRASH)
 *   race FILE ROUNDS WHO LOCK     writer WHO (A or B) rewrites page 0 ROUNDS times, alternating its version (the base
 *                                 page with its own bytes changed) and the base page; LOCK 1: each write and a read
 *                                 under a POSIX write lock of the page, the read must be exactly the page written;
 *                                 LOCK 0: no lock, each byte read must be the base's, A's or B's at that offset
 * (diff and page hold a POSIX write lock on the whole file: strict mode takes delta records only under one)
 *   base FILE                     writes the base file (64 pages of seeded bytes) and prints nothing
 * Exit 0 pass, 1 fail. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAGE 4096u
#define PAGES 64u
#define FILE_BYTES (PAGES * PAGE)

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}
static uint64_t below(uint64_t *s, uint64_t n) { return rng_next(s) % n; }

static void base_bytes(unsigned char *b) {
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < FILE_BYTES; i++) b[i] = (unsigned char)rng_next(&s);
}

/* A POSIX write lock on [off, off+len) (0: to the end): strict mode takes a delta record only under a record lock
 * the program holds on the file (review29 #9). */
static int lock_range(int fd, off_t off, off_t len, short type) {
    struct flock l = {.l_type = type, .l_whence = SEEK_SET, .l_start = off, .l_len = len};
    return fcntl(fd, F_SETLKW, &l);
}

static int write_all(int fd, const void *b, size_t n, off_t off) {
    return pwrite(fd, b, n, off) == (ssize_t)n ? 0 : -1;
}

static int make_base(const char *path) {
    static unsigned char b[FILE_BYTES];
    base_bytes(b);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write_all(fd, b, FILE_BYTES, 0) || fsync(fd) || close(fd)) return perror(path), 1;
    return 0;
}

/* ---- diff ---- */
struct worker {
    const char *path;
    int fd;
    unsigned t, threads;
    uint64_t seed;
    unsigned ops;
    unsigned char *model; /* the whole file; this thread touches its own pages only */
    int failed;
};

static void *work(void *arg) {
    struct worker *w = arg;
    uint64_t s = w->seed * 2654435761u + w->t + 1;
    unsigned first = w->t * (PAGES / w->threads), count = PAGES / w->threads;
    static __thread unsigned char buf[2 * PAGE], got[2 * PAGE];
    int fd = open(w->path, O_RDWR);
    if (fd < 0 || lock_range(fd, 0, 0, F_WRLCK)) return perror("open"), w->failed = 1, NULL;
    for (unsigned i = 0; i < w->ops && !w->failed; i++) {
        unsigned p = first + (unsigned)below(&s, count - 1); /* p + 1 is ours too */
        uint64_t kind = below(&s, 100);
        size_t n = PAGE;
        off_t off = (off_t)p * PAGE;
        if (kind < 8) off += 1 + (off_t)below(&s, PAGE - 1); /* unaligned, inside p and p + 1 */
        else if (kind < 13) n = 2 * PAGE;
        memcpy(buf, w->model + off, n);
        if (kind >= 13 && kind < 23) {
            for (size_t j = 0; j < n; j++) buf[j] = (unsigned char)rng_next(&s); /* every byte */
        } else if (kind >= 23 && kind < 28) {
            /* none changed */
        } else {
            for (unsigned r = 0, runs = 1 + (unsigned)below(&s, 4); r < runs; r++) {
                size_t at = below(&s, n), len = 1 + below(&s, r == 0 ? 130 : 16);
                for (size_t j = at; j < at + len && j < n; j++) buf[j] ^= (unsigned char)(1 + below(&s, 255));
            }
        }
        /* released and taken again before each write, as SQLite does each transaction (its release to no lock is a
         * whole-file unlock): the library follows the program's locks from a whole-file unlock on after a close of the
         * file, and from its first use (adoption) on */
        if (lock_range(fd, 0, 0, F_UNLCK) || lock_range(fd, 0, 0, F_WRLCK) || write_all(fd, buf, n, off))
            return perror("pwrite"), w->failed = 1, NULL;
        memcpy(w->model + off, buf, n);
        if (i % 16 == 15) { /* read back one of our ranges */
            unsigned q = first + (unsigned)below(&s, count - 1);
            off_t ro = (off_t)q * PAGE + (off_t)below(&s, PAGE);
            size_t rn = 1 + below(&s, PAGE);
            if (pread(fd, got, rn, ro) != (ssize_t)rn) return perror("pread"), w->failed = 1, NULL;
            if (memcmp(got, w->model + ro, rn)) {
                size_t k = 0;
                while (got[k] == w->model[ro + k]) k++;
                printf("FAIL: thread %u op %u: read of [%lld, +%zu) differs from the model at byte %lld\n", w->t, i,
                       (long long)ro, rn, (long long)ro + (long long)k);
                w->failed = 1;
            }
        }
        if (i % 50 == 49 && fsync(fd)) return perror("fsync"), w->failed = 1, NULL;
        if (i % 97 == 96) {
            close(fd);
            if ((fd = open(w->path, O_RDWR)) < 0 || lock_range(fd, 0, 0, F_WRLCK))
                return perror("reopen"), w->failed = 1, NULL; /* (a close drops the process's locks on the file) */
        }
    }
    close(fd);
    return NULL;
}

static int diff(const char *path, uint64_t seed, unsigned ops, unsigned threads) {
    static unsigned char model[FILE_BYTES], got[FILE_BYTES];
    if (make_base(path)) return 1;
    base_bytes(model);
    struct worker w[8];
    pthread_t th[8];
    if (threads < 1 || threads > 8) threads = 1;
    for (unsigned t = 0; t < threads; t++) {
        w[t] = (struct worker){.path = path, .t = t, .threads = threads, .seed = seed, .ops = ops, .model = model};
        pthread_create(&th[t], NULL, work, &w[t]);
    }
    int failed = 0;
    for (unsigned t = 0; t < threads; t++) pthread_join(th[t], NULL), failed |= w[t].failed;
    int fd = open(path, O_RDONLY);
    if (fd < 0 || pread(fd, got, FILE_BYTES, 0) != (ssize_t)FILE_BYTES) return perror("final read"), 1;
    close(fd);
    if (!failed && memcmp(got, model, FILE_BYTES)) {
        size_t k = 0;
        while (got[k] == model[k]) k++;
        printf("FAIL: the file differs from the model at byte %zu\n", k);
        failed = 1;
    }
    const char *cmd = getenv("DELTA_STATS_CMD"); /* the script's `daxkit stats` of this process */
    if (cmd) {
        char c[512];
        snprintf(c, sizeof c, "%s %d", cmd, (int)getpid());
        if (system(c) != 0) fprintf(stderr, "stats command failed\n");
    }
    if (!failed) printf("ok: %u threads x %u overwrites: every read and the file equal the model\n", threads, ops);
    return failed;
}

/* ---- page, race ---- */
static void version(unsigned char *pg, char who) { /* the base page 0 with WHO's bytes */
    if (who == 'A') memset(pg + 100, 'A', 8), memset(pg + 3000, 'A', 4);
    else memset(pg + 104, 'B', 8), memset(pg + 2000, 'B', 70);
}

static int page_write(const char *path, unsigned p, char tag) {
    unsigned char pg[PAGE];
    int fd = open(path, O_RDWR);
    if (fd < 0 || lock_range(fd, 0, 0, F_WRLCK) || pread(fd, pg, PAGE, (off_t)p * PAGE) != PAGE) return perror(path), 1;
    memset(pg + 100, tag, 8);
    memset(pg + 3000, tag, 4);
    if (write_all(fd, pg, PAGE, (off_t)p * PAGE)) return perror("pwrite"), 1;
    close(fd);
    return 0;
}

static int race(const char *path, unsigned rounds, char who, int lock) {
    static unsigned char all[FILE_BYTES];
    unsigned char p0[PAGE], va[PAGE], vb[PAGE], mine[PAGE], got[PAGE];
    base_bytes(all);
    memcpy(p0, all, PAGE), memcpy(va, p0, PAGE), memcpy(vb, p0, PAGE);
    version(va, 'A'), version(vb, 'B');
    memcpy(mine, who == 'A' ? va : vb, PAGE);
    int fd = open(path, O_RDWR);
    if (fd < 0) return perror(path), 1;
    for (unsigned r = 0; r < rounds; r++) {
        if (lock && lock_range(fd, 0, PAGE, F_WRLCK)) return perror("lock"), 1;
        if (write_all(fd, r % 2 ? p0 : mine, PAGE, 0)) return perror("pwrite"), 1;
        if (pread(fd, got, PAGE, 0) != PAGE) return perror("pread"), 1;
        if (lock) {
            if (memcmp(got, r % 2 ? p0 : mine, PAGE))
                return printf("FAIL: %c round %u: under the lock the page read is not the page just written\n", who, r), 1;
            if (lock_range(fd, 0, PAGE, F_UNLCK)) return perror("unlock"), 1;
        } else {
            for (unsigned i = 0; i < PAGE; i++)
                if (got[i] != p0[i] && got[i] != va[i] && got[i] != vb[i])
                    return printf("FAIL: %c round %u: byte %u is from no write (%d)\n", who, r, i, got[i]), 1;
        }
    }
    close(fd);
    const char *cmd = getenv("DELTA_STATS_CMD");
    if (cmd) {
        char c[512];
        snprintf(c, sizeof c, "%s %d", cmd, (int)getpid());
        if (system(c) != 0) fprintf(stderr, "stats command failed\n");
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && !strcmp(argv[1], "base")) return make_base(argv[2]);
    if (argc >= 6 && !strcmp(argv[1], "diff"))
        return diff(argv[2], strtoull(argv[3], NULL, 10), (unsigned)atoi(argv[4]), (unsigned)atoi(argv[5]));
    if (argc >= 5 && !strcmp(argv[1], "page")) return page_write(argv[2], (unsigned)atoi(argv[3]), argv[4][0]);
    if (argc >= 6 && !strcmp(argv[1], "race"))
        return race(argv[2], (unsigned)atoi(argv[3]), argv[4][0], atoi(argv[5]));
    fprintf(stderr, "usage: delta_prog base FILE | diff FILE SEED OPS THREADS | page FILE PAGE TAG | race FILE ROUNDS A|B 0|1\n");
    return 2;
}
