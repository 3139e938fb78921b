/* Helpers for tests/atomic programs (header-only). Exit 0 pass, 1 fail, 77 skip with a reason; a failure
 * prints "FAIL: file:line: what" (and the seed, where one is in use) and exits at once.
 * Each program takes an optional directory as argv[1] (default: a fresh directory under /dev/shm, or
 * $TMPDIR when /dev/shm is missing) and removes what it made. */
#ifndef DK_TESTS_ATOMIC_TEST_H
#define DK_TESTS_ATOMIC_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daxkit/atomic.h"

static uint64_t at_seed; /* printed with every failure when nonzero */
static char at_dir[512];
static bool at_dir_made;

#define AT_FAIL(...) at_fail_at(__FILE__, __LINE__, __VA_ARGS__)
#define AT_CHECK(cond, ...) ((cond) ? (void)0 : AT_FAIL(__VA_ARGS__))
#define AT_OK(expr)                                                                       \
    do {                                                                                  \
        int at_rc_ = (expr);                                                              \
        if (at_rc_ != 0) AT_FAIL("%s = %d (%s)", #expr, at_rc_, strerror(-at_rc_));       \
    } while (0)

__attribute__((format(printf, 3, 4), noreturn)) static void at_fail_at(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL: %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (at_seed) fprintf(stderr, " (reproduce with seed=%llu)", (unsigned long long)at_seed);
    fprintf(stderr, "\n");
    exit(1);
}

__attribute__((noreturn)) static inline void at_skip(const char *why) {
    fprintf(stderr, "SKIP: %s\n", why);
    exit(77);
}

static inline void at_rm_dir(void) {
    if (!at_dir_made) return;
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", at_dir);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", at_dir);
}

/* Sets at_dir to argv[1] or a fresh temporary directory (removed at exit). */
static inline void at_setup_dir(int argc, char **argv) {
    if (argc > 1 && argv[1][0]) {
        snprintf(at_dir, sizeof at_dir, "%s/atomic.%d", argv[1], (int)getpid());
    } else {
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
        snprintf(at_dir, sizeof at_dir, "%s/daxkit-atomic.%d", base, (int)getpid());
    }
    if (mkdir(at_dir, 0700) != 0) AT_FAIL("mkdir %s: %s", at_dir, strerror(errno));
    at_dir_made = true;
    atexit(at_rm_dir);
}

static inline void at_path(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", at_dir, name); }

/* Creates `name` with `bytes` bytes of a pattern derived from `tag`; returns nothing, fails on error. */
static inline void at_make_file(const char *path, uint64_t bytes, uint8_t tag) {
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) AT_FAIL("open %s: %s", path, strerror(errno));
    char buf[4096];
    for (uint64_t off = 0; off < bytes; off += sizeof buf) {
        for (size_t i = 0; i < sizeof buf; i++) buf[i] = (char)(tag + (off + i) * 7 / 3);
        size_t n = bytes - off < sizeof buf ? (size_t)(bytes - off) : sizeof buf;
        if (pwrite(fd, buf, n, (off_t)off) != (ssize_t)n) AT_FAIL("pwrite %s: %s", path, strerror(errno));
    }
    close(fd);
}

static inline void at_read_file(const char *path, char *buf, uint64_t bytes) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) AT_FAIL("open %s: %s", path, strerror(errno));
    if (pread(fd, buf, bytes, 0) != (ssize_t)bytes) AT_FAIL("pread %s: %s", path, strerror(errno));
    close(fd);
}

/* at_make_file, then its bytes read into `model` (the test's picture of what the file must hold). */
static inline void at_make_model_file(const char *path, uint64_t bytes, uint8_t tag, char *model) {
    at_make_file(path, bytes, tag);
    at_read_file(path, model, bytes);
}

/* The bytes of a test's copy number `tag`: a pattern that differs from copy to copy. */
static inline void at_fill(char *b, uint32_t n, uint64_t tag) {
    for (uint32_t i = 0; i < n; i++) b[i] = (char)(tag * 131 + i * 7 + 1);
}

static inline uint64_t at_rand(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return *s = x;
}

static inline uint64_t at_hash(const void *p, size_t n) {
    const unsigned char *c = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ull;
    return h;
}

static inline uint64_t at_seed_from_env(void) {
    const char *s = getenv("SEED");
    uint64_t v = s ? strtoull(s, NULL, 0) : 0;
    if (!v) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        v = ((uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)getpid() << 20) | 1;
    }
    return v;
}

/* "undo", "redo", "journal", else hybrid. */
/* undo|redo|journal|hybrid; journal-pace: the journal with pacing (sets DAXKIT_ATOMIC_PACE=1 for the engine);
 * journal-bound, journal-owed*: journal-pace with the sync's write-back bound at 16 bytes (DAXKIT_TEST_ATOMIC_JUNFLUSHED) */
static inline uint32_t at_policy(const char *name) {
    if (!strcmp(name, "journal-pace")) setenv("DAXKIT_ATOMIC_PACE", "1", 1);
    if (!strcmp(name, "journal-bound") || !strncmp(name, "journal-owed", 12)) {
        /* pacing, and every copy writes back the records before it (session 17), or hands them to its thread
         * (journal-owed, session 20: alog_journal.c, "Owed lines"; a line's worth at a time, so that the small
         * copies of the explorer's batches hand lines out) */
        setenv("DAXKIT_ATOMIC_PACE", "1", 1);
        setenv("DAXKIT_TEST_ATOMIC_JUNFLUSHED", "16", 1);
        if (!strncmp(name, "journal-owed", 12)) setenv("DAXKIT_TEST_ATOMIC_JOWED_MIN", "64", 1);
    }
    if (!strcmp(name, "journal")) setenv("DAXKIT_ATOMIC_PACE", "0", 1); /* the thread (pacing is the default) */
    if (!strncmp(name, "journal-window", 14)) { /* pacing, and an 8 KiB window: the journal wraps at commits */
        setenv("DAXKIT_ATOMIC_PACE", "1", 1);
        setenv("DAXKIT_TEST_ATOMIC_JWINDOW", "8192", 1);
    }
    /* the per-block engine (session 10): NAME-pace paces its commits (the default), NAME-thread has the thread */
    if (strncmp(name, "journal", 7) && strstr(name, "-pace")) setenv("DAXKIT_ATOMIC_PACE", "1", 1);
    if (strncmp(name, "journal", 7) && strstr(name, "-thread")) setenv("DAXKIT_ATOMIC_PACE", "0", 1);
    return !strncmp(name, "undo", 4) ? DAXKIT_ATOMIC_UNDO : !strncmp(name, "redo", 4) ? DAXKIT_ATOMIC_REDO
         : !strncmp(name, "journal", 7) ? DAXKIT_ATOMIC_JOURNAL : DAXKIT_ATOMIC_HYBRID;
}

static inline struct daxkit_atomic_options at_opts(uint32_t policy, uint32_t interval_us) {
    struct daxkit_atomic_options o;
    daxkit_atomic_options_init(&o);
    o.policy = policy;
    o.redo_write_pct = 100; /* the hybrid's tests keep its switch to redo reachable (the default never redoes) */
    o.checkpoint_interval_us = interval_us;
    o.log_bytes = 16u << 20;
    return o;
}

static inline struct daxkit_atomic_stats at_stats(struct daxkit_atomic *a) {
    struct daxkit_atomic_stats s;
    AT_OK(daxkit_atomic_get_stats(a, &s));
    return s;
}

#endif
