/* Signal handlers that write to (and msync) files mapped under DAXKIT_ATOMIC_MMAP, interrupting their thread
 * inside a write of the same file, while another thread stores + msyncs (review 11, finding 20: the process
 * hung for good -- XFS: the handler's second read lock of u->writes behind a waiting msync; tmpfs: the
 * handler relocking the table's mutex its thread held). Run by mmap_signal.sh under `daxkit run --atomic-mmap`.
 *
 *   mmap_signal A B MS       A, B: 16 KiB files, both mapped. The main thread pwrites 64 'w' at 0 of A
 *                            for MS milliseconds; SIGALRM every 200 us (blocked in the other thread, so it interrupts
 *                            the main one) pwrites 64 'h' at 8192 of A, or of B every other time, and msyncs A
 *                            every 16th time; a second thread stores 'm' into A and B and msyncs them in turn.
 *
 * Passes when it ends (the script's timeout says "hung"), every handler call that failed did so with EDEADLK
 * (the documented refusal) and at most three quarters of the writes were refused, and both the mappings and, after a last msync, the files hold
 * the last bytes written: 'w' at 0 of A, 'h' at 8192 where a handler write succeeded, the last 'm' stores.
 * Exit 0 pass, 1 fail, 77 skip (no userfaultfd write-protection for shared memory: the kernel maps the files). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "uffd_probe.h"

#define FILE_BYTES 16384
#define CHECK(cond, ...) \
    do { \
        if (!(cond)) { printf("FAIL line %d: ", __LINE__), printf(__VA_ARGS__), printf("\n"); return 1; } \
    } while (0)

static int fd[2];
static char *map[2];
static volatile sig_atomic_t stop;
/* the handler's results (only the handler writes them: it never interrupts itself) */
static volatile long h_calls, h_ok[2], h_deadlk, h_other, h_other_errno, m_ok, m_deadlk, m_other;

static void on_alarm(int sig) {
    (void)sig;
    int e = errno;
    long n = h_calls++;
    if (n % 16 == 15) { /* an msync from the handler: done, or refused with EDEADLK */
        if (msync(map[0], FILE_BYTES, MS_SYNC) == 0) m_ok++;
        else if (errno == EDEADLK) m_deadlk++;
        else m_other++;
    } else {
        int i = (int)(n & 1);
        char b[64];
        memset(b, 'h', sizeof b);
        ssize_t r = pwrite(fd[i], b, sizeof b, 8192);
        if (r == (ssize_t)sizeof b) h_ok[i]++;
        else if (r < 0 && errno == EDEADLK) h_deadlk++;
        else h_other++, h_other_errno = r < 0 ? errno : 0;
    }
    errno = e;
}

static volatile long t2_msyncs, t2_fail;
static volatile unsigned char t2_last[2];

static void *storer(void *arg) {
    (void)arg;
    for (long i = 0; !stop; i++) {
        int k = (int)(i & 1);
        unsigned char c = (unsigned char)('a' + i % 26);
        map[k][4096 + (i / 2) % 100] = (char)c;
        map[k][4096 + 200] = (char)c;
        t2_last[k] = c;
        if (msync(map[k], FILE_BYTES, MS_SYNC) == 0) t2_msyncs++;
        else t2_fail++;
    }
    return NULL;
}

static int check_bytes(const char *what, const char *p, size_t off, size_t n, char c) {
    for (size_t i = 0; i < n; i++)
        CHECK(p[off + i] == c, "%s: byte %zu is %d, want '%c'", what, off + i, p[off + i], c);
    return 0;
}

static int pread_bytes(int f, const char *what, size_t off, size_t n, char c) {
    char b[64];
    CHECK(n <= sizeof b && pread(f, b, n, (off_t)off) == (ssize_t)n, "pread: %s", strerror(errno));
    for (size_t i = 0; i < n; i++) CHECK(b[i] == c, "%s: byte %zu is %d, want '%c'", what, off + i, b[i], c);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 4) return fprintf(stderr, "usage: mmap_signal A B MS\n"), 2;
    if (uffd_wp_shmem_missing()) return printf("SKIP: no userfaultfd write-protection for shared memory here\n"), 77;
    long ms = atol(argv[3]);
    for (int i = 0; i < 2; i++) {
        fd[i] = open(argv[1 + i], O_RDWR);
        CHECK(fd[i] >= 0, "open %s: %s", argv[1 + i], strerror(errno));
        map[i] = mmap(NULL, FILE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd[i], 0);
        CHECK(map[i] != MAP_FAILED, "mmap %s: %s", argv[1 + i], strerror(errno));
    }
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    sigset_t ss;
    sigemptyset(&ss);
    sigaddset(&ss, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &ss, NULL);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, storer, NULL) == 0, "pthread_create");
    pthread_sigmask(SIG_UNBLOCK, &ss, NULL); /* the storer keeps it blocked: every SIGALRM lands here */
    struct itimerval it = {{0, 200}, {0, 200}};
    setitimer(ITIMER_REAL, &it, NULL);
    char b[64];
    memset(b, 'w', sizeof b);
    long done = 0, writes = 0;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        for (int i = 0; i < 100; i++, writes++)
            if (pwrite(fd[0], b, sizeof b, 0) == (ssize_t)sizeof b) done++;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 < ms);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    stop = 1;
    pthread_join(t, NULL);
    printf("main writes %ld of %ld; handler calls %ld: writes done %ld (A) + %ld (B), refused EDEADLK %ld, other "
           "failures %ld; msyncs done %ld, refused EDEADLK %ld, failed %ld; storer msyncs %ld (failed %ld)\n",
           done, writes, h_calls, h_ok[0], h_ok[1], h_deadlk, h_other, m_ok, m_deadlk, m_other, t2_msyncs, t2_fail);
    CHECK(done == writes, "the main thread's pwrites failed");
    CHECK(!h_other && !m_other, "a handler's write or msync failed otherwise than with EDEADLK (errno %ld: %s)",
          h_other_errno, strerror((int)h_other_errno));
    CHECK(!t2_fail, "the storer's msync failed");
    long h_writes = h_ok[0] + h_ok[1] + h_deadlk;
    CHECK(h_calls >= 20, "too few signals to test anything (%ld)", h_calls);
    /* refused only while the main thread is inside daxkit's handling of A (or waits for the storer's msync of A):
     * on XFS about 1 in 200, on tmpfs (the storer msyncs in a tight loop) up to half of A's */
    CHECK(h_ok[0] > 0 && h_ok[1] > 0 && h_deadlk * 4 <= h_writes * 3, "too many handler writes refused: %ld of %ld "
          "(A %ld done, B %ld done)", h_deadlk, h_writes, h_ok[0], h_ok[1]);
    if (check_bytes("A's mapping", map[0], 0, 64, 'w')) return 1;
    for (int i = 0; i < 2; i++) {
        if (h_ok[i] && check_bytes(i ? "B's mapping" : "A's mapping", map[i], 8192, 64, 'h')) return 1;
        CHECK(map[i][4096 + 200] == (char)t2_last[i], "the mapping lost the storer's last store");
        CHECK(msync(map[i], FILE_BYTES, MS_SYNC) == 0, "the last msync: %s", strerror(errno));
        if (h_ok[i] && pread_bytes(fd[i], i ? "file B" : "file A", 8192, 64, 'h')) return 1;
        if (pread_bytes(fd[i], i ? "file B" : "file A", 4096 + 200, 1, (char)t2_last[i])) return 1;
    }
    if (pread_bytes(fd[0], "file A", 0, 64, 'w')) return 1;
    printf("ok: no hang, handler writes and msyncs done or refused with EDEADLK, files and mappings agree\n");
    return 0;
}
