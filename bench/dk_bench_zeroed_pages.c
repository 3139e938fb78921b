/* What an append into freshly zeroed pages costs (issue 2, the extend strategy's appends): 4 KiB
 * non-temporal copies + sfence into a 128 MiB shared mapping of a new file (huge tmpfs), the way daxkit's
 * extend strategy stores appends, by how the pages were zeroed. No library involved. One line per run:
 *   MODE,ahead_mib,cpu_ns_per_op,wall_ns_per_op
 *
 *   dk_bench_zeroed_pages DIR MODE [AHEAD_MIB=16]
 * MODE: floor     the mapping populated (zeroed) before the pass: the user-space floor of dk_bench_posix;
 *       fault     not populated: the copying thread faults (zeroes) each huge page itself;
 *       ahead     a second thread populates (MADV_POPULATE_WRITE) 2 MiB at a time, AHEAD_MIB ahead of the
 *                 copies (daxkit's prefault thread; AHEAD_MIB >= 128: all zeroed before the pass starts);
 *       other     populated before the pass, while a second thread zeroes another file's pages at the same
 *                 pace (memory bandwidth shared, no cache line in common).
 * cpu is the copying thread's CPU time (CLOCK_THREAD_CPUTIME_ID), robust to other load on the machine.
 * Exit 0, 1 a call failed, 2 usage. */
#include <fcntl.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#define MIB (1ull << 20)
#define TOTAL (128 * MIB)

static uint64_t ns(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

__attribute__((target("avx512f"))) static void copy_nt_avx512(char *d, const char *s, size_t n) {
    for (size_t i = 0; i < n; i += 64) _mm512_stream_si512((void *)(d + i), _mm512_loadu_si512((const void *)(s + i)));
}
__attribute__((target("avx2"))) static void copy_nt_avx2(char *d, const char *s, size_t n) {
    for (size_t i = 0; i < n; i += 32)
        _mm256_stream_si256((__m256i *)(d + i), _mm256_loadu_si256((const __m256i *)(s + i)));
}

static char *zeroed;          /* the mapping the second thread populates */
static volatile uint64_t done; /* bytes copied so far */
static uint64_t ahead;

static void *populate(void *arg) {
    (void)arg;
    for (uint64_t off = 0; off < TOTAL; off += 2 * MIB) {
        while (off > __atomic_load_n(&done, __ATOMIC_ACQUIRE) + ahead) __builtin_ia32_pause();
        if (madvise(zeroed + off, 2 * MIB, MADV_POPULATE_WRITE) != 0) return (void *)1;
    }
    return NULL;
}

static char *map_new(const char *dir, const char *name, int populate_now) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%d", dir, name, (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, (off_t)TOTAL) != 0) return NULL;
    char *m = mmap(NULL, TOTAL, PROT_READ | PROT_WRITE, MAP_SHARED | (populate_now ? MAP_POPULATE : 0), fd, 0);
    close(fd);
    unlink(path);
    return m == MAP_FAILED ? NULL : m;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: dk_bench_zeroed_pages DIR floor|fault|ahead|other [AHEAD_MIB]\n");
        return 2;
    }
    const char *mode = argv[2];
    ahead = (argc > 3 ? strtoull(argv[3], NULL, 0) : 16) * MIB;
    int floor = !strcmp(mode, "floor"), other = !strcmp(mode, "other"), bg = other || !strcmp(mode, "ahead");
    if (!floor && !other && !bg && strcmp(mode, "fault")) return 2;
    char *m = map_new(argv[1], "zeroed_pages", floor || other);
    if (!m) return 1;
    zeroed = other ? map_new(argv[1], "zeroed_pages_other", 0) : m;
    if (!zeroed) return 1;
    static char buf[4096] __attribute__((aligned(64)));
    memset(buf, 7, sizeof buf);
    __builtin_cpu_init();
    void (*copy)(char *, const char *, size_t) = __builtin_cpu_supports("avx512f") ? copy_nt_avx512 : copy_nt_avx2;
    pthread_t t;
    if (bg && pthread_create(&t, NULL, populate, NULL) != 0) return 1;
    if (bg) usleep(20000); /* let it get ahead */
    uint64_t c0 = ns(CLOCK_THREAD_CPUTIME_ID), w0 = ns(CLOCK_MONOTONIC);
    for (uint64_t off = 0; off < TOTAL; off += 4096) {
        copy(m + off, buf, 4096);
        _mm_sfence();
        __atomic_store_n(&done, off, __ATOMIC_RELEASE);
    }
    uint64_t c1 = ns(CLOCK_THREAD_CPUTIME_ID), w1 = ns(CLOCK_MONOTONIC);
    void *rc = NULL;
    if (bg) pthread_join(t, &rc);
    if (rc) return 1;
    uint64_t ops = TOTAL / 4096;
    printf("%s,%llu,%.0f,%.0f\n", mode, (unsigned long long)(ahead / MIB), (double)(c1 - c0) / ops, (double)(w1 - w0) / ops);
    return 0;
}
