/* A thread cancelled (deferred) during its process's first staged append must not leave a library lock
 * held. That append makes the staging pool (the hidden area, the recovery of dead owners, the owner lock)
 * and the first staging file (openat, close, fallocate: cancellation points in glibc) under the file's
 * mutex and the pool's; the library tests cancellation at its entry, so only a cancellation that arrives
 * during that set-up finds the window. Each round is a fresh child process (no pool yet): a worker thread
 * appends 64 KiB through an O_APPEND descriptor while the child's main thread watches the area (inotify)
 * for the worker's owner lock (made in the set-up, before the staging file) and cancels the worker when it
 * is created. The main thread then appends, fsyncs, reads its bytes back and closes; a child that does not
 * finish within 10 s waited for a lock the cancelled worker died holding (before the fix: the pool's and
 * the file's mutexes, taken around stg_create in posix mode; strict mode had its own fix, c587b49).
 * Run with DAXKIT_STAGE_HEAP_BYTES=0 where relink copies (tmpfs), so that the first append takes a pool slot.
 *   shim_cancel_first_append DIR [ROUNDS]     exit 0 pass, 1 fail */
#include <pthread.h>
#include <sys/inotify.h>
#include <time.h>

#include "shim_test.h"

static int fd;
static pthread_barrier_t armed;

/* Waits (at most 3 s) until this process's owner lock (p<pid>-....lock-new, then .lock) is created in the
 * area: inotify, so that the cancellation follows it by microseconds. 1 when seen. */
static int wait_lock_created(int ino, pid_t pid) {
    char prefix[32];
    snprintf(prefix, sizeof prefix, "p%d-", (int)pid);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char buf[4096] __attribute__((aligned(8)));
    for (;;) {
        ssize_t n = read(ino, buf, sizeof buf);
        for (ssize_t off = 0; n > 0 && off < n;) {
            const struct inotify_event *e = (const void *)(buf + off);
            if (e->len && !strncmp(e->name, prefix, strlen(prefix))) return 1;
            off += (ssize_t)sizeof *e + e->len;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (t1.tv_sec - t0.tv_sec >= 3) return 0;
        if (n <= 0) usleep(100);
    }
}

static void *worker(void *a) {
    (void)a;
    static char b[65536];
    memset(b, 'W', sizeof b);
    pthread_barrier_wait(&armed); /* main polls for the owner lock from here */
    (void)!write(fd, b, sizeof b);
    pthread_testcancel();
    return NULL;
}

/* One round in a fresh process. Prints what happened; exit 0 when the main thread's append went through. */
static int round_child(const char *dir, int round) {
    char path[PATH_MAX], area[PATH_MAX];
    snprintf(path, sizeof path, "%s/log%d", dir, round);
    snprintf(area, sizeof area, "%s/.daxkit", dir);
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) return perror(path), 1;
    int ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (ino < 0 || inotify_add_watch(ino, area, IN_CREATE) < 0) return perror("inotify"), 1;
    pthread_barrier_init(&armed, NULL, 2);
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0) return 1;
    pthread_barrier_wait(&armed);
    int seen = wait_lock_created(ino, getpid());
    pthread_cancel(t);
    close(ino);
    void *res;
    pthread_join(t, &res);
    char m[4096], r[4096];
    memset(m, 'M', sizeof m);
    ssize_t w = write(fd, m, sizeof m);
    struct stat st;
    int ok = w == (ssize_t)sizeof m && fsync(fd) == 0 && fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof m;
    int rfd = ok ? open(path, O_RDONLY) : -1;
    ok = ok && rfd >= 0 && pread(rfd, r, sizeof r, st.st_size - (off_t)sizeof r) == (ssize_t)sizeof r &&
         !memcmp(m, r, sizeof m);
    if (rfd >= 0) close(rfd);
    printf("round %d: worker %s%s; main append %s (file %lld bytes)\n", round,
           res == PTHREAD_CANCELED ? "cancelled" : "finished", seen ? " (during the pool's set-up)" : " (set-up not seen)",
           ok ? "ok" : "FAILED", ok ? (long long)st.st_size : -1LL);
    fflush(stdout);
    return ok && close(fd) == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc < 2) return fprintf(stderr, "usage: shim_cancel_first_append DIR [ROUNDS]\n"), 2;
    int rounds = argc > 2 ? atoi(argv[2]) : 10, hung = 0, failed = 0;
    char area[PATH_MAX];
    snprintf(area, sizeof area, "%s/.daxkit", argv[1]);
    if (mkdir(area, 0700) != 0 && errno != EEXIST) return perror(area), 1; /* watched before the first round */
    for (int i = 0; i < rounds; i++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0) return perror("fork"), 1;
        if (pid == 0) _exit(round_child(argv[1], i));
        int status = 0, waited = 0;
        while (waitpid(pid, &status, WNOHANG) == 0 && waited < 1000) usleep(10000), waited++;
        if (waited >= 1000) {
            printf("round %d: FAIL: the child did not finish in 10 s (its main thread waits for a lock the "
                   "cancelled worker died holding)\n", i);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            hung++;
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            printf("round %d: FAIL: child status 0x%x\n", i, status);
            failed++;
        }
    }
    if (hung || failed) {
        printf("FAIL: %d of %d rounds hung, %d failed\n", hung, rounds, failed);
        return 1;
    }
    printf("ok: %d rounds, every main thread appended after its worker was cancelled\n", rounds);
    return 0;
}
