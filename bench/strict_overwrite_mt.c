/* strict_overwrite_mt FILE WRITES THREADS: THREADS threads each pwrite 4 KiB WRITES times over their own
 * 256 KiB of one file (made with appends + fsync first), no fsync; prints the wall time per write. Run it
 * under LD_PRELOAD=libdaxkit.so with DAXKIT_MODE=strict to count what strict mode's write path costs per
 * write: `valgrind --tool=callgrind` for instructions (THREADS=1), `perf stat -e task-clock` for CPU
 * (docs/benchmarks.md, "Strict mode, session 9"). Plain libc calls: no daxkit symbol is used. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define THREADS_MAX 16
#define PAGES_PER_THREAD 64

static int fd, writes;

static void *run(void *arg) {
    long t = (long)arg;
    char buf[4096];
    memset(buf, 'a' + (int)t, sizeof buf);
    for (int i = 0; i < writes; i++)
        if (pwrite(fd, buf, sizeof buf, (off_t)(t * PAGES_PER_THREAD + i % PAGES_PER_THREAD) * 4096) != sizeof buf)
            perror("pwrite"), exit(1);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4) return fprintf(stderr, "usage: strict_overwrite_mt FILE WRITES THREADS\n"), 2;
    writes = atoi(argv[2]);
    int threads = atoi(argv[3]);
    if (writes <= 0 || threads <= 0 || threads > THREADS_MAX) return fprintf(stderr, "bad WRITES or THREADS\n"), 2;
    fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return perror(argv[1]), 1;
    static char zero[4096];
    for (int i = 0; i < PAGES_PER_THREAD * threads; i++)
        if (write(fd, zero, sizeof zero) != sizeof zero) return perror("write"), 1;
    fsync(fd);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pthread_t th[THREADS_MAX];
    for (long t = 0; t < threads; t++) pthread_create(&th[t], NULL, run, (void *)t);
    for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%.1f ns/write\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / ((double)writes * threads));
    close(fd);
    return 0;
}
