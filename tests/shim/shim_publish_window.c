/* Description: a publish point must not return while another thread's publish of the same file can still be
 * rolled back by a crash (review 21, finding 02). Thread C appends 8,292 bytes -- a relink that can tear, so its
 * size record is made valid first -- and fsyncs; at the crash site publish.before_clear (C's relink done, pub_size
 * at the size, the record not yet cleared) the library raises SIGUSR1 on C (DAXKIT_TEST_CRASH=
 * raise:10:publish.before_clear:1, a test build). The handler lets thread B reach a publish point of the file
 * after C's append returned (argv[2]: flock -- flock(LOCK_UN) on it; other -- a lock round on a file outside the
 * managed directory, whose release publishes every file; close -- close of a duplicate of the descriptor) and
 * waits up to 1 s for B to return. B returning inside the window is the defect: the handler then kills the
 * process (SIGKILL), and publish_window.sh finds the appended bytes gone after recovery. B waiting (for the file's
 * mutex, which C holds) is right: C goes on, clears the record, and the file keeps its 8,292 bytes.
 * argv[1]: managed directory. Exit 0 (B waited), 77 (no cue: not a test build), 2 (set-up failed); killed. */
#ifndef _GNU_SOURCE /* (the build defines it) */
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

static int fd, dupfd;
static const char *mode;
static char other[4096];
static volatile int go, done;

static long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void say(const char *s) { (void)!write(2, s, strlen(s)); }

static void on_usr1(int sig) {
    (void)sig;
    __atomic_store_n(&go, 1, __ATOMIC_SEQ_CST);
    long t0 = now_ms();
    while (!__atomic_load_n(&done, __ATOMIC_SEQ_CST) && now_ms() - t0 < 1000) {}
    if (__atomic_load_n(&done, __ATOMIC_SEQ_CST)) {
        say("shim_publish_window: B's publish point returned inside C's publish (its size record still valid): crash now\n");
        kill(getpid(), SIGKILL);
    }
    say("shim_publish_window: B's publish point waited for C's publish\n");
}

static void *b_main(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&go, __ATOMIC_SEQ_CST)) {}
    if (!strcmp(mode, "flock")) {
        if (flock(fd, LOCK_UN) != 0) perror("B: flock LOCK_UN");
    } else if (!strcmp(mode, "other")) {
        int lfd = open(other, O_RDWR | O_CREAT, 0600);
        struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
        if (lfd < 0 || fcntl(lfd, F_SETLK, &l) != 0) perror("B: lock of the other file");
        l.l_type = F_UNLCK;
        if (lfd >= 0 && fcntl(lfd, F_SETLK, &l) != 0) perror("B: unlock of the other file");
        if (lfd >= 0) close(lfd);
    } else if (close(dupfd) != 0) {
        perror("B: close of the duplicate");
    }
    __atomic_store_n(&done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) return fprintf(stderr, "usage: shim_publish_window DIR flock|other|close\n"), 2;
    mode = argv[2];
    if (!getenv("DAXKIT_TEST_CRASH")) {
        printf("SKIP: needs DAXKIT_TEST_CRASH=raise:10:publish.before_clear:1 (a test build)\n");
        return 77;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/f", argv[1]);
    snprintf(other, sizeof other, "/tmp/shim_publish_window.%d.lock", (int)getpid());
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    dupfd = fd >= 0 ? dup(fd) : -1;
    if (fd < 0 || dupfd < 0) return perror("open"), 2;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t b;
    if (pthread_create(&b, NULL, b_main, NULL) != 0) return 2;
    static char buf[8292];
    memset(buf, 'x', sizeof buf);
    if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) return perror("C: write"), 2; /* C's append, returned */
    if (fsync(fd) != 0) return perror("C: fsync"), 2;                                    /* the cue is inside */
    pthread_join(b, NULL);
    unlink(other);
    if (!go) {
        printf("SKIP: the cue publish.before_clear was not reached (not a test build?)\n");
        return 77;
    }
    close(fd);
    printf("ok: %s: B's publish point waited for C's publish\n", mode);
    return 0;
}
