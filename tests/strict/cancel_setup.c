/* A thread cancelled (deferred) inside a strict operation must not leave a library lock held (review 11,
 * finding 2):
 *   first-write  the thread's pwrite is the process's first strict operation: the library makes its log
 *                under the root's mutex (openat, the zero fill's pwrite + fdatasync, fsyncs); the main thread
 *                cancels it as soon as the log's .tmp shows in DIR/.daxkit (the library tests cancellation at
 *                its entry, so only a cancellation that arrives during the set-up finds the window: the page
 *                cache's set-up takes milliseconds, and the main thread polls);
 *   close        the log exists and the thread has written; the cancellation is made pending before its close
 *                of a descriptor of the file, which is a checkpoint (the checkpoint lock's write side;
 *                fdatasync of the written file on the page cache, or of a file that grew).
 * Then the main thread writes and reads back: before the fix it waited for ever for the lock the cancelled
 * thread died holding (the script's timeout says so). Run under LD_PRELOAD=libdaxkit.so, DAXKIT_MODE=strict.
 *   cancel_setup FILE CASE      prints "main write ok" and exits 0, 1 on a failed call, 2 usage */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fd, close_case;
static pthread_barrier_t armed;

/* DIR/.daxkit holds a log being made (a .tmp). */
static int tmp_exists(const char *area) {
    DIR *d = opendir(area);
    struct dirent *e;
    int found = 0;
    while (d && !found && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        found = n > 4 && !strcmp(e->d_name + n - 4, ".tmp");
    }
    if (d) closedir(d);
    return found;
}

static void *worker(void *a) {
    (void)a;
    static char b[65536];
    memset(b, 'T', sizeof b);
    int dupfd = -1;
    if (!close_case) {
        pthread_barrier_wait(&armed); /* main polls for the log's .tmp from here */
        (void)!pwrite(fd, b, 100, 0);
        pthread_testcancel();
        return NULL;
    }
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    if (pwrite(fd, b, sizeof b, 4096) != (ssize_t)sizeof b) return (void *)1;
    dupfd = dup(fd);
    pthread_barrier_wait(&armed); /* main cancels now: pending from here */
    pthread_barrier_wait(&armed);
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL); /* deferred: acted on at the next cancellation point */
    close(dupfd);
    pthread_testcancel();
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[2], "first-write") && strcmp(argv[2], "close"))) return 2;
    close_case = !strcmp(argv[2], "close");
    fd = open(argv[1], O_RDWR);
    if (fd < 0) return perror("open"), 1;
    if (close_case && pwrite(fd, "m", 1, 100) != 1) return perror("pwrite"), 1; /* makes the log first */
    pthread_barrier_init(&armed, NULL, 2);
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0) return 1;
    pthread_barrier_wait(&armed);
    int seen = 0;
    if (!close_case) { /* cancel once the set-up has begun (or give up after 2-3 s: the window was missed) */
        char area[4200];
        snprintf(area, sizeof area, "%.4000s", argv[1]);
        char *slash = strrchr(area, '/');
        snprintf(slash ? slash + 1 : area, 16, ".daxkit");
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do {
            seen = tmp_exists(area);
            clock_gettime(CLOCK_MONOTONIC, &t1);
        } while (!seen && t1.tv_sec - t0.tv_sec < 3);
    }
    pthread_cancel(t);
    if (close_case) pthread_barrier_wait(&armed);
    void *res;
    pthread_join(t, &res);
    printf("%s: thread %s%s\n", argv[2], res == PTHREAD_CANCELED ? "cancelled" : res ? "failed" : "finished",
           close_case ? "" : seen ? " (cancelled during the log's set-up)" : " (the set-up was not seen)");
    fflush(stdout);
    char b[100], r[100];
    memset(b, 'M', sizeof b);
    ssize_t w = pwrite(fd, b, sizeof b, 200);
    if (w != (ssize_t)sizeof b || pread(fd, r, sizeof r, 200) != (ssize_t)sizeof r || memcmp(b, r, sizeof b))
        return printf("main write failed: %s\n", strerror(errno)), 1;
    printf("main write ok\n");
    return close(fd) == 0 ? 0 : 1;
}
