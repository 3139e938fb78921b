/* Helpers shared by the tests/shim programs. Header-only: each test is one .c file plus this.
 *
 * Conventions (liburing-style): exit 0 pass, 1 fail, 77 skip with a printed reason. A failure prints
 * "FAIL: file:line: what" and exits at once. Programs run under libdaxkit.so (run.sh sets LD_PRELOAD and
 * DAXKIT_DIR) and get the managed directory as argv[1].
 *
 * Checking "from a separate process without the library": st_check() starts build/tests/shim_check with
 * raw clone/execve/wait4 system calls -- no libc wrapper the library interposes (fork, exec, spawn are
 * publish points and would move appends into the file themselves) -- and an environment without
 * LD_PRELOAD and DAXKIT_*. */
#ifndef DK_TESTS_SHIM_TEST_H
#define DK_TESTS_SHIM_TEST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/stats.h"

/* ---- reporting ---- */

static inline void st_vmsg(const char *kind, const char *file, int line, const char *fmt, va_list ap) {
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "%s: %s:%d: ", kind, file, line);
    n += vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    if (n > (int)sizeof buf - 2) n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    /* raw write: stdio buffers would be duplicated by fork, and write() may be fault-injected */
    syscall(SYS_write, 2, buf, (size_t)n);
}

__attribute__((format(printf, 3, 4), noreturn)) static inline void st_fail_at(const char *file, int line, const char *fmt,
                                                                        ...) {
    va_list ap;
    va_start(ap, fmt);
    st_vmsg("FAIL", file, line, fmt, ap);
    va_end(ap);
    exit(1);
}
__attribute__((format(printf, 3, 4), noreturn)) static inline void st_skip_at(const char *file, int line, const char *fmt,
                                                                        ...) {
    va_list ap;
    va_start(ap, fmt);
    st_vmsg("SKIP", file, line, fmt, ap);
    va_end(ap);
    exit(77);
}
__attribute__((format(printf, 3, 4))) static inline void st_note_at(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    st_vmsg("note", file, line, fmt, ap);
    va_end(ap);
}
#define FAIL(...) st_fail_at(__FILE__, __LINE__, __VA_ARGS__)
#define SKIP(...) st_skip_at(__FILE__, __LINE__, __VA_ARGS__)
#define NOTE(...) st_note_at(__FILE__, __LINE__, __VA_ARGS__)
/* CHECK(cond, fmt, ...): fails with the message when cond is false. */
#define CHECK(cond, ...)                \
    do {                                \
        if (!(cond)) FAIL(__VA_ARGS__); \
    } while (0)
/* A libc call that must succeed (returns >= 0): prints errno otherwise. */
#define OK(call) ST_OK_((call), #call, ST_CAT_(ok_r_, __COUNTER__))
/* (a name of its own per use: OK(close(OK(open(...)))) shadowed the outer one, -Wshadow) */
#define ST_CAT2_(a, b) a##b
#define ST_CAT_(a, b) ST_CAT2_(a, b)
#define ST_OK_(call, text, r)                                                            \
    ({                                                                                   \
        long r = (long)(call);                                                           \
        if (r < 0) FAIL("%s returned %ld, errno %d (%s)", text, r, errno, strerror(errno)); \
        r;                                                                               \
    })
/* A call that must fail with errno e. */
#define ERR(call, e)                                                                     \
    do {                                                                                 \
        errno = 0;                                                                       \
        long err_r_ = (long)(call);                                                      \
        int err_e_ = errno;                                                              \
        if (err_r_ != -1 || err_e_ != (e))                                               \
            FAIL("%s returned %ld errno %d (%s); expected -1 with errno %d (%s)", #call, err_r_, err_e_, \
                 strerror(err_e_), (e), strerror(e));                                    \
    } while (0)

/* A hang (deadlock) fails the test with a message instead of waiting for the ctest timeout. */
static inline void st_watchdog_fire(int sig) {
    (void)sig;
    static const char msg[] = "FAIL: watchdog: the test did not finish in time (a hang: deadlock or lost wake-up?)\n";
    syscall(SYS_write, 2, msg, sizeof msg - 1);
    syscall(SYS_exit_group, 1);
}
static inline void st_watchdog(unsigned seconds) {
    signal(SIGALRM, st_watchdog_fire);
    alarm(seconds);
}

/* A child's watchdog, from its parent: waits up to `ms` milliseconds (CLOCK_MONOTONIC, polled every millisecond)
 * for the child `c` to end. true: it ended, *st its wait status. false: it was still running -- killed (SIGKILL)
 * and reaped; the caller fails the test with what hung. */
static inline bool st_wait_child(pid_t c, int *st, int ms) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (waitpid(c, st, WNOHANG) == c) return true;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >= ms) break;
        struct timespec step = {0, 1000000};
        nanosleep(&step, NULL);
    }
    kill(c, SIGKILL);
    waitpid(c, st, 0);
    return false;
}

/* ---- data patterns: the byte at file offset `off` written under `seed` ---- */

static inline uint8_t st_pat(uint32_t seed, uint64_t off) {
    uint64_t x = (off + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t)seed * 0xc2b2ae3d27d4eb4full;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 32;
    return (uint8_t)(x | 1); /* never 0: a zero byte is always "not written" */
}
static inline void st_fill(void *buf, uint32_t seed, uint64_t off, size_t n) {
    uint8_t *b = buf;
    for (size_t i = 0; i < n; i++) b[i] = st_pat(seed, off + i);
}
/* Index of the first byte that differs, or -1. */
static inline long st_mismatch(const void *buf, uint32_t seed, uint64_t off, size_t n) {
    const uint8_t *b = buf;
    for (size_t i = 0; i < n; i++)
        if (b[i] != st_pat(seed, off + i)) return (long)i;
    return -1;
}

/* ---- records: fixed-size, self-checking, for append races ---- */

#define ST_REC_MAGIC 0x5245434bu /* "RECK" */
struct st_rec {
    uint32_t magic;
    uint16_t writer;
    uint16_t len;      /* total record length in bytes, 32..4096, multiple of 8 */
    uint32_t seq;
    uint32_t sum;      /* checksum of everything after this field */
    uint64_t pad;      /* payload follows up to len */
};

static inline uint32_t st_sum(const uint8_t *p, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}
static inline size_t st_rec_len(uint16_t writer, uint32_t seq) { return 32 + 8 * ((writer * 7u + seq * 13u) % 60u); }
static inline void st_rec_make(void *buf, uint16_t writer, uint32_t seq) {
    struct st_rec *r = buf;
    size_t len = st_rec_len(writer, seq);
    r->magic = ST_REC_MAGIC;
    r->writer = writer;
    r->len = (uint16_t)len;
    r->seq = seq;
    r->pad = ((uint64_t)writer << 32) | seq;
    st_fill((uint8_t *)buf + sizeof *r, writer * 100003u + seq, 0, len - sizeof *r);
    r->sum = st_sum((const uint8_t *)&r->pad, len - offsetof(struct st_rec, pad));
}
/* Length of the valid record at p (with `avail` bytes), or 0 when torn or not a record. */
static inline size_t st_rec_check(const void *p, size_t avail) {
    const struct st_rec *r = p;
    if (avail < sizeof *r || r->magic != ST_REC_MAGIC || r->len < sizeof *r || r->len > avail) return 0;
    if (r->len != st_rec_len(r->writer, r->seq)) return 0;
    if (r->sum != st_sum((const uint8_t *)&r->pad, r->len - offsetof(struct st_rec, pad))) return 0;
    return r->len;
}

/* ---- files ---- */

static inline void st_path(char *out, size_t len, const char *dir, const char *name) {
    int n = snprintf(out, len, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= len) FAIL("the path %s/%s is longer than %zu bytes", dir, name, len);
}
static inline void st_write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) FAIL("write(%d, %zu) returned %zd errno %d (%s)", fd, n, w, errno, strerror(errno));
        p += w, n -= (size_t)w;
    }
}
static inline void st_pwrite_all(int fd, const void *buf, size_t n, off_t off) {
    const char *p = buf;
    while (n) {
        ssize_t w = pwrite(fd, p, n, off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) FAIL("pwrite(%d, %zu, %lld) returned %zd errno %d (%s)", fd, n, (long long)off, w, errno,
                         strerror(errno));
        p += w, n -= (size_t)w, off += w;
    }
}
/* What number n names now, "" when closed (a raw system call: the library's readlink takes no part). */
static inline void st_fd_target(int n, char *buf, size_t len) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", n);
    long r = syscall(SYS_readlinkat, AT_FDCWD, link, buf, len - 1);
    buf[r > 0 ? r : 0] = 0;
}
static inline off_t st_fsize(int fd) {
    struct stat st;
    OK(fstat(fd, &st));
    return st.st_size;
}

/* ---- the library ---- */

/* This process's live counters, summed (the library writes /dev/shm/daxkit/stats.PID). false when the
 * file does not exist: the library is not loaded, disabled, or has no managed directory. */
static inline bool st_stats(pid_t pid, uint64_t out[DK_C_COUNT]) {
    /* The library makes a process's stats file at its first managed file; a test reading its own counters
     * before that has it made now (the test build's hook; a release build has none: no file, false). */
    int (*stats_now)(void) = pid == getpid() ? (int (*)(void))dlsym(RTLD_DEFAULT, "daxkit_test_stats_now") : NULL;
    if (stats_now) stats_now();
    char path[300];
    const char *dir = getenv("DAXKIT_STATS_DIR"); /* as the library and `daxkit stats` read it */
    snprintf(path, sizeof path, "%s/stats.%d", dir && dir[0] == '/' && strlen(dir) <= 200 ? dir : DK_STATS_DIR, (int)pid);
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    /* The layout first (session 27): a file of a library built with other counters has slots of another stride,
     * and a shorter one mapped at this build's size is a SIGBUS past its end -- said, not died of. A file
     * still being made (magic not yet set) is "no stats" as before. */
    struct stat st;
    struct {
        uint64_t magic;
        uint32_t counters;
    } head = {0, 0};
    bool sized = syscall(SYS_fstat, fd, &st) == 0;
    bool headed = sized && syscall(SYS_pread64, fd, &head, sizeof head, 0) == (long)sizeof head;
    if (!headed || head.magic != DK_STATS_MAGIC) {
        syscall(SYS_close, fd);
        return false;
    }
    if (head.counters != DK_C_COUNT || st.st_size < (off_t)sizeof(struct dk_stats_file)) {
        syscall(SYS_close, fd);
        FAIL("stats file %s: the library that wrote it has %u counters (%lld bytes); this test was built with %d "
             "(%zu bytes) -- the test and libdaxkit.so come from different builds: rebuild both (ninja) and run the "
             "test with its own build's library (DAXKIT_BUILD)",
             path, head.counters, (long long)st.st_size, (int)DK_C_COUNT, sizeof(struct dk_stats_file));
    }
    void *p = mmap(NULL, sizeof(struct dk_stats_file), PROT_READ, MAP_SHARED, fd, 0);
    syscall(SYS_close, fd);
    if (p == MAP_FAILED) return false;
    const struct dk_stats_file *f = p;
    bool ok = f->magic == DK_STATS_MAGIC;
    memset(out, 0, sizeof(uint64_t) * DK_C_COUNT);
    for (uint32_t s = 0; ok && s < f->slots && s < DK_STATS_SLOTS; s++)
        for (uint32_t c = 0; c < DK_C_COUNT; c++) out[c] += f->slot[s].v[c];
    munmap(p, sizeof(struct dk_stats_file));
    return ok;
}

/* This process's counter c (DK_C_...); fails the test when the library keeps no stats file. */
static inline uint64_t st_counter(int c) {
    uint64_t v[DK_C_COUNT];
    CHECK(st_stats(getpid(), v), "no stats file");
    return v[c];
}

/* fcntl F_SETLK of [start, start+len) (len 0: to the end), type F_RDLCK, F_WRLCK or F_UNLCK. */
static inline int st_setlk(int fd, short type, off_t start, off_t len) {
    struct flock l = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
    return fcntl(fd, F_SETLK, &l);
}
/* A plain escalation round on fd: a read lock on byte 0, a read (the size re-read), the lock widened to [0,2)
 * -- three lock calls -- then the whole file released. The refresh skips it made: 1 when the widening kept the
 * size it read (the lock set known, no lock call overlapping). */
static inline uint64_t st_escalation_skips(int fd, const char *when) {
    uint64_t s0 = st_counter(DK_C_refresh_skips);
    char buf[32];
    OK(st_setlk(fd, F_RDLCK, 0, 1));
    CHECK(pread(fd, buf, sizeof buf, 0) >= 8, "%s: pread", when);
    OK(st_setlk(fd, F_RDLCK, 0, 2));
    uint64_t s1 = st_counter(DK_C_refresh_skips);
    OK(st_setlk(fd, F_UNLCK, 0, 0));
    return s1 - s0;
}

/* Whether this process maps inode `ino` anywhere (/proc/self/maps): what the space of an unlinked file
 * hangs on. Asserting on the mapping, not on free space: XFS frees an unlinked inode's blocks in the
 * background, and the staging pool's thread may re-allocate given-back slots meanwhile (review 7,
 * finding 5: 4 of 17 runs red by free space). */
static inline bool st_maps_inode(ino_t ino) {
    FILE *m = fopen("/proc/self/maps", "r");
    CHECK(m, "/proc/self/maps: %s", strerror(errno));
    char line[4096];
    bool found = false;
    while (!found && fgets(line, sizeof line, m)) {
        unsigned long long i = 0;
        if (sscanf(line, "%*s %*s %*s %*s %llu", &i) == 1 && i == (unsigned long long)ino) found = true;
    }
    fclose(m);
    return found;
}

/* This process's counters as `daxkit stats PID --json` prints them (NUL-terminated, in a static buffer).
 * The CLI is started with raw clone/execve (no publish point, the route stays attached) and read from a
 * pipe while this process waits. */
/* Every counter that moved between two st_stats snapshots, on one line (a failure's evidence). */
static inline void st_print_counter_deltas(const char *what, const uint64_t *before, const uint64_t *after) {
    static const char *const names[] = {
#define C(name, doc) #name,
#include "common/stats.def"
#undef C
    };
    printf("%s: counters moved:", what);
    for (int c = 0; c < DK_C_COUNT; c++)
        if (after[c] != before[c]) printf(" %s +%llu", names[c], (unsigned long long)(after[c] - before[c]));
    printf("\n");
}

static inline const char *st_stats_cli_json(void) {
    static char json[16384];
    int p[2];
    CHECK(syscall(SYS_pipe2, p, 0) == 0, "pipe2: %s", strerror(errno));
    const char *b = getenv("DAXKIT_BUILD");
    CHECK(b && *b, "DAXKIT_BUILD not set");
    static char cli[PATH_MAX], pid[16];
    snprintf(cli, sizeof cli, "%s/bin/daxkit", b);
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    char *argv[] = {cli, "stats", pid, "--json", NULL};
    static char *envp[] = {"PATH=/usr/bin:/bin", NULL};
    long child = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (child == 0) {
        syscall(SYS_dup2, p[1], 1);
        syscall(SYS_execve, cli, argv, envp);
        syscall(SYS_exit_group, 126);
    }
    syscall(SYS_close, p[1]);
    size_t got = 0;
    for (long r; (r = syscall(SYS_read, p[0], json + got, sizeof json - 1 - got)) > 0;) got += (size_t)r;
    json[got] = 0;
    syscall(SYS_close, p[0]);
    int status = 0;
    syscall(SYS_wait4, child, &status, 0, NULL);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "daxkit stats %s --json failed: %s", pid, json);
    return json;
}
/* The counter `name` in st_stats_cli_json's output; fails when it is not there. */
static inline unsigned long long st_json_counter(const char *json, const char *name) {
    char key[64];
    snprintf(key, sizeof key, "\"%s\": ", name);
    const char *p = strstr(json, key);
    CHECK(p != NULL, "daxkit stats output lacks %s: %s", name, json);
    return strtoull(p + strlen(key), NULL, 10);
}

/* Fails unless the library is loaded and manages a directory (the test would prove nothing). */
static inline void st_require_library(void) {
    uint64_t v[DK_C_COUNT];
    const char *pre = getenv("LD_PRELOAD");
    if (!pre || !strstr(pre, "libdaxkit")) FAIL("not running under libdaxkit.so (LD_PRELOAD=%s); use run.sh", pre ? pre : "");
    if (!st_stats(getpid(), v)) FAIL("libdaxkit.so is loaded but not active (no stats file): check DAXKIT_DIR");
}

/* The managed directory: argv[1], else the first DAXKIT_DIR entry. */
static inline const char *st_dir(int argc, char **argv) {
    static char buf[PATH_MAX];
    if (argc > 1 && argv[1][0] == '/') return argv[1];
    const char *d = getenv("DAXKIT_DIR");
    if (!d || !*d) FAIL("no managed directory: pass it as argv[1] or set DAXKIT_DIR");
    snprintf(buf, sizeof buf, "%s", d);
    char *colon = strchr(buf, ':');
    if (colon) *colon = 0;
    return buf;
}

/* ---- the checker: build/tests/shim_check, run without the library ---- */

static inline const char *st_check_bin(void) {
    static char path[PATH_MAX];
    if (path[0]) return path;
    const char *b = getenv("DAXKIT_BUILD");
    if (b && *b) snprintf(path, sizeof path, "%s/tests/shim_check", b);
    else { /* next to this program */
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 16);
        if (n <= 0) FAIL("cannot find shim_check: set DAXKIT_BUILD");
        path[n] = 0;
        char *slash = strrchr(path, '/');
        strcpy(slash + 1, "shim_check");
    }
    return path;
}

/* Runs `shim_check ARGS...` (NULL-terminated) in a new process without libdaxkit.so; returns its exit
 * status (0 = the check holds), or 128+signal. Its output goes to our stdout/stderr. */
static inline int st_check_v(char *const args[]) {
    static char *envp[] = {"PATH=/usr/bin:/bin", NULL};
    char *argv[32];
    int n = 0;
    argv[n++] = (char *)st_check_bin();
    for (; args[n - 1] && n < 31; n++) argv[n] = args[n - 1];
    argv[n] = NULL;
    long pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (pid == 0) {
        syscall(SYS_execve, argv[0], argv, envp);
        syscall(SYS_exit_group, 126);
    }
    if (pid < 0) FAIL("clone for shim_check failed: %s", strerror(errno));
    int status = 0;
    while (syscall(SYS_wait4, pid, &status, 0, NULL) < 0)
        if (errno != EINTR) FAIL("wait4 for shim_check failed: %s", strerror(errno));
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}
#define st_check(...) st_check_v((char *const[]){__VA_ARGS__, NULL})

static inline char *st_fmt(const char *fmt, ...) {
    static char bufs[8][64];
    static int next;
    char *b = bufs[next++ % 8];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, 64, fmt, ap);
    va_end(ap);
    return b;
}

/* Size of a file as a process without the library sees it. */
static inline long long st_ksize(const char *path) {
    struct stat st;
    if (syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0) != 0) return -1;
    return (long long)st.st_size;
}

/* Writes `n` bytes to a fresh file outside the managed directory (raw system calls) and returns its
 * path: the expected image for `shim_check image`. Removed by st_expect_cleanup() or left in /tmp. */
static inline const char *st_expect_file(const void *buf, size_t n) {
    static char path[8][96];
    static int next;
    char *p = path[next++ % 8];
    snprintf(p, 96, "/tmp/shim_expect.%d.%d", (int)getpid(), next);
    int fd = (int)syscall(SYS_openat, AT_FDCWD, p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) FAIL("cannot create %s: %s", p, strerror(errno));
    const char *c = buf;
    while (n) {
        long w = syscall(SYS_write, fd, c, n);
        if (w <= 0) FAIL("write %s failed", p);
        c += w, n -= (size_t)w;
    }
    syscall(SYS_close, fd);
    return p;
}
/* `path` holds exactly buf[0, n): checked by shim_check without the library. */
static inline bool st_check_image(const char *path, const void *buf, size_t n) {
    const char *img = st_expect_file(buf, n);
    int rc = st_check("image", (char *)path, (char *)img);
    syscall(SYS_unlinkat, AT_FDCWD, img, 0);
    return rc == 0;
}
/* Reads the whole of `path` through a fresh descriptor (under the library when loaded). */
static inline char *st_slurp(const char *path, size_t *len) {
    int fd = (int)OK(open(path, O_RDONLY));
    off_t size = st_fsize(fd);
    char *buf = malloc((size_t)size + 1);
    ssize_t r = pread(fd, buf, (size_t)size, 0);
    CHECK(r == size, "read of %s returned %zd, size %lld", path, r, (long long)size);
    buf[size] = 0;
    OK(close(fd));
    *len = (size_t)size;
    return buf;
}

/* The handler tests' case child: a 20 s watchdog, and `handler` on SIGUSR1 (the library's cue). */
static inline void st_case_child_start(void (*handler)(int)) {
    st_watchdog(20);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigaction(SIGUSR1, &sa, NULL);
}

/* argv[2], the case, as an index into names[0, n); the test is skipped when it is missing or unknown. */
static inline int st_case_index(int argc, char **argv, const char *const *names, int n, const char *usage) {
    if (argc < 3) SKIP("usage: %s", usage);
    for (int i = 0; i < n; i++)
        if (strcmp(argv[2], names[i]) == 0) return i;
    SKIP("unknown case %s", argv[2]);
}

/* The handler tests' case runner: runs this program again as `argv[0] argv[1] argv[2] child` (exec'ed: the
 * library's crash point counts start at 0; this process's own calls may hit the site too, so SIGUSR1 is
 * ignored here) and waits for it up to 30 s. A child still running then is killed: FAIL (a hang: `waited`
 * says what for); one that ends other than with 0 fails the test too. */
static inline void st_run_case_child(char **argv, const char *waited) {
    signal(SIGUSR1, SIG_IGN);
    pid_t c = fork();
    CHECK(c >= 0, "fork: %s", strerror(errno));
    if (c == 0) {
        execl("/proc/self/exe", argv[0], argv[1], argv[2], "child", (char *)NULL);
        _exit(127);
    }
    int st = 0;
    if (!st_wait_child(c, &st, 30000)) FAIL("%s: the process did not end within 30 s (%s)", argv[2], waited);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: child status 0x%x (1: its watchdog -- a hang)", argv[2], st);
}

#endif
