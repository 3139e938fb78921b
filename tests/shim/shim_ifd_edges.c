/* Description: the library's descriptor windows (src/common/internal_fd.h) against two program habits (review
 * 14, findings 3 and 4), while a thread renames files in the strict root (each rename opens directories in a
 * window). locks: the main thread holds a POSIX lock on a file outside the root and dups or opens it again and
 * again; the lock must stay held (a move of the new descriptor down closed the kernel's number, and any close
 * of a file's descriptor drops the process's POSIX locks on it). stw: the main thread stops the renamer with
 * a signal whose handler waits (a stop-the-world collector), writes to /dev/null, resumes it; the write must
 * not wait for the stopped thread's window (SIGALRM after 10 s: a hang). cancel: a renamer thread is
 * cancelled (deferred, the default; rename is no cancellation point) and joined, again and again; the main
 * thread's write to /dev/null must not wait for a window the cancelled thread left open (review 15, finding 1:
 * a cancellation at a window's openat or close unwound with the window open -- a hang). Usage: shim_ifd_edges
 * DIR locks|stw|cancel SECONDS */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *root;
static volatile int stop;

static void *renamer(void *arg) {
    (void)arg;
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s/ifd-a", root);
    snprintf(b, sizeof b, "%s/ifd-b", root);
    close(open(a, O_CREAT | O_WRONLY, 0644));
    while (!stop) {
        rename(a, b);
        rename(b, a);
    }
    return NULL;
}

/* An OFD lock probe conflicts with this process's own POSIX lock on the file. */
static int lock_held(int probe) {
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 1};
    if (fcntl(probe, F_OFD_GETLK, &l) != 0) return perror("F_OFD_GETLK"), exit(2), 0;
    return l.l_type != F_UNLCK;
}

static int run_locks(time_t end) {
    char path[4096];
    snprintf(path, sizeof path, "%s/../ifd-lockfile", root);
    int fd = open(path, O_RDWR | O_CREAT, 0644), probe = open(path, O_RDWR);
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 1};
    if (fd < 0 || probe < 0 || fcntl(fd, F_SETLK, &l) != 0 || !lock_held(probe)) return fprintf(stderr, "setup\n"), 2;
    static int kept[1000];
    long n = 0;
    int nk = 0;
    while (time(NULL) < end) {
        int d = n & 1 ? dup(fd) : open(path, O_RDWR); /* kept open: only the library could close one */
        if (d < 0) return perror("dup/open"), 2;
        kept[nk++] = d, n++;
        if (!lock_held(probe)) {
            printf("FAIL: the process's POSIX lock is gone after %ld dups and opens of the locked file\n", n);
            return 1;
        }
        if (nk == 1000) { /* closing them drops the lock: take it again */
            for (int i = 0; i < nk; i++) close(kept[i]);
            nk = 0;
            if (fcntl(fd, F_SETLK, &l) != 0) return perror("F_SETLK"), 2;
        }
    }
    printf("ok: lock held through %ld dups and opens\n", n);
    return 0;
}

static sem_t stopped;
static volatile sig_atomic_t resumed;
static void on_stop(int sig) {
    (void)sig;
    sem_post(&stopped);
    sigset_t m;
    sigfillset(&m);
    sigdelset(&m, SIGUSR2);
    while (!resumed) sigsuspend(&m);
    resumed = 0;
}
static void on_resume(int sig) { (void)sig, resumed = 1; }

static int run_stw(pthread_t t, time_t end) {
    int null_fd = open("/dev/null", O_WRONLY);
    long n = 0;
    while (time(NULL) < end) {
        pthread_kill(t, SIGUSR1);
        while (sem_wait(&stopped) != 0 && errno == EINTR) {}
        alarm(10); /* the default action of SIGALRM ends a hung run */
        if (write(null_fd, "x", 1) != 1) return perror("write"), 2;
        alarm(0);
        pthread_kill(t, SIGUSR2);
        n++;
    }
    printf("ok: %ld stop-the-world rounds\n", n);
    return 0;
}

static void *cancelled_renamer(void *arg) {
    (void)arg;
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s/ifd-c", root);
    snprintf(b, sizeof b, "%s/ifd-d", root);
    for (;;) {
        rename(a, b);
        rename(b, a);
        pthread_testcancel(); /* (a cancellation point of its own: the loop ends even where rename is none) */
    }
    return NULL;
}

static int run_cancel(time_t end) {
    char a[4096];
    snprintf(a, sizeof a, "%s/ifd-c", root);
    close(open(a, O_CREAT | O_WRONLY, 0644));
    int null_fd = open("/dev/null", O_WRONLY);
    long n = 0;
    srand(1);
    while (time(NULL) < end) {
        pthread_t t;
        if (pthread_create(&t, NULL, cancelled_renamer, NULL) != 0) return perror("pthread_create"), 2;
        struct timespec ts = {0, 200000 + rand() % 2000000};
        nanosleep(&ts, NULL);
        pthread_cancel(t);
        pthread_join(t, NULL);
        alarm(10); /* the default action of SIGALRM ends a hung run */
        if (write(null_fd, "x", 1) != 1) return perror("write"), 2;
        alarm(0);
        n++;
    }
    printf("ok: %ld renamers cancelled, no write waited\n", n);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 4) return fprintf(stderr, "usage: %s DIR locks|stw|cancel SECONDS\n", argv[0]), 2;
    root = argv[1];
    if (!strcmp(argv[2], "cancel")) return run_cancel(time(NULL) + atoi(argv[3]));
    int stw = !strcmp(argv[2], "stw");
    if (stw) {
        sem_init(&stopped, 0, 0);
        struct sigaction s = {.sa_handler = on_stop};
        sigemptyset(&s.sa_mask);
        sigaddset(&s.sa_mask, SIGUSR2);
        sigaction(SIGUSR1, &s, NULL);
        struct sigaction r = {.sa_handler = on_resume};
        sigemptyset(&r.sa_mask);
        sigaction(SIGUSR2, &r, NULL);
    }
    pthread_t t;
    pthread_create(&t, NULL, renamer, NULL);
    time_t end = time(NULL) + atoi(argv[3]);
    int rc = stw ? run_stw(t, end) : run_locks(end);
    stop = 1;
    if (stw) pthread_kill(t, SIGUSR2);
    pthread_join(t, NULL);
    return rc;
}
