/* DAXKIT_ATOMIC with threads (run under `daxkit run --atomic`, see CMakeLists): 4 writer threads pwrite
 * random pieces into their own 1 MiB region of one file (two of them also read their region back and check
 * it), one thread fsyncs and another appends past the end in a loop, all at once; then every region must
 * equal its thread's model, and the appended tail its own, read back through the route and, after close,
 * through the file as it is. Exit 0 pass, 1 fail. */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REGION (1u << 20)
#define WRITERS 4
#define OPS 4000

static int fd;
static char model[WRITERS][REGION];
static volatile int stop, failed;
static uint64_t appended;

static uint64_t next(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

static void *writer(void *arg) {
    int t = (int)(intptr_t)arg;
    uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(t + 1);
    char buf[8192], back[8192];
    for (int i = 0; i < OPS && !failed; i++) {
        uint32_t n = 1 + (uint32_t)(next(&s) % sizeof buf), off = (uint32_t)(next(&s) % (REGION - n));
        memset(buf, 'A' + (int)(next(&s) % 26), n);
        if (pwrite(fd, buf, n, (off_t)t * REGION + off) != (ssize_t)n) failed = 1;
        memcpy(model[t] + off, buf, n);
        if (t < 2 && (i % 7) == 0) {
            uint32_t m = 1 + (uint32_t)(next(&s) % sizeof back), o = (uint32_t)(next(&s) % (REGION - m));
            if (pread(fd, back, m, (off_t)t * REGION + o) != (ssize_t)m || memcmp(back, model[t] + o, m) != 0) {
                fprintf(stderr, "route_threads: thread %d read back a different region at %u\n", t, o);
                failed = 1;
            }
        }
    }
    return NULL;
}

static void *syncer(void *arg) {
    (void)arg;
    while (!stop && !failed)
        if (fsync(fd) != 0) failed = 1;
    return NULL;
}

static void *appender(void *arg) {
    (void)arg;
    char buf[777];
    int afd = open((const char *)arg, O_WRONLY | O_APPEND);
    if (afd < 0) return failed = 1, NULL;
    for (int i = 0; !stop && !failed && i < 2000; i++) {
        memset(buf, '0' + i % 10, sizeof buf);
        if (write(afd, buf, sizeof buf) != (ssize_t)sizeof buf) failed = 1;
        else __atomic_add_fetch(&appended, sizeof buf, __ATOMIC_RELAXED);
    }
    close(afd);
    return NULL;
}

static int check(int rfd, const char *when) {
    char *buf = malloc(REGION);
    for (int t = 0; t < WRITERS; t++) {
        if (pread(rfd, buf, REGION, (off_t)t * REGION) != REGION || memcmp(buf, model[t], REGION) != 0) {
            fprintf(stderr, "route_threads: region %d differs from its model %s\n", t, when);
            return 1;
        }
    }
    for (uint64_t i = 0; i < appended; i += 777) {
        char c;
        if (pread(rfd, &c, 1, (off_t)(WRITERS * REGION + i)) != 1 || c != '0' + (char)((i / 777) % 10)) {
            fprintf(stderr, "route_threads: appended record %llu wrong %s\n", (unsigned long long)(i / 777), when);
            return 1;
        }
    }
    off_t end = lseek(rfd, 0, SEEK_END);
    if (end != (off_t)(WRITERS * REGION + appended)) {
        fprintf(stderr, "route_threads: size %lld, want %llu %s\n", (long long)end,
                (unsigned long long)(WRITERS * REGION + appended), when);
        return 1;
    }
    free(buf);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, WRITERS * REGION) != 0) return 1;
    pthread_t w[WRITERS], sy, ap;
    for (int t = 0; t < WRITERS; t++) pthread_create(&w[t], NULL, writer, (void *)(intptr_t)t);
    pthread_create(&sy, NULL, syncer, NULL);
    pthread_create(&ap, NULL, appender, argv[1]);
    for (int t = 0; t < WRITERS; t++) pthread_join(w[t], NULL);
    stop = 1;
    pthread_join(sy, NULL);
    pthread_join(ap, NULL);
    if (failed || check(fd, "through the open file")) return 1;
    if (close(fd) != 0) return 1;
    int rfd = open(argv[1], O_RDONLY);
    if (rfd < 0 || check(rfd, "after close")) return 1;
    printf("route_threads: %d writers x %d pwrites, %llu bytes appended by another descriptor, fsyncs throughout: ok\n",
           WRITERS, OPS, (unsigned long long)appended);
    return 0;
}
