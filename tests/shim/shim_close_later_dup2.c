/* Description: a signal handler's close of a managed descriptor while its thread holds the file table's lock is
 * left to that thread (upath/table_nested.c); another thread's dup2 onto the number in the meantime must get
 * the program its new descriptor, open and naming the dup2's file -- the thread's deferred close must not close
 * it (review 16, finding 2; session 17).
 *
 * Two cues (test builds): DAXKIT_TEST_CRASH=raise:10:upath.publish_all.table_locked:1 raises SIGUSR1 inside the
 * thread's flock(LOCK_UN) publish walk, under the table's lock: the handler closes B (staged appends: the close
 * publishes them) -- returns 0, left to the thread. raise:12:upath.close_later.claimed:1 raises SIGUSR2 when the
 * thread has claimed that close and is about to carry it out.
 *   pending: the handler lets the other thread call dup2(X, B) and stays until that thread sleeps in it (it
 *     waits for the table's lock). The dup2 must take the pending close over (close_later_taken +1): the thread
 *     leaves the number alone. Before session 17 the thread took the close and ran it beside the dup2: with the
 *     SIGUSR2 handler waiting for the dup2 to return, the thread's close then closed X's new descriptor.
 *   closing: the other thread calls dup2(X, B) only from the SIGUSR2 handler (the thread is closing B): the dup2
 *     must wait for that close and then put X on the number.
 * Either way: dup2 returned B's number, the number names X (fstat), X's bytes read through it, and B's file
 * holds its appends whole in the kernel. A 30 s watchdog turns a hang into a failure.
 * argv[1]: managed directory; argv[2]: pending|closing. Exit 0 pass, 1 fail, 77 skip. */
#include <pthread.h>
#include <semaphore.h>
#include <sys/file.h>
#include <time.h>

#include "shim_test.h"

enum { BYTES = 8192 };
static int b_fd, x_fd, closing_case;
static sem_t go;
static volatile pid_t b_tid;
static volatile int b_calling, b_done, b_rc = -2, b_errno, h_close_rc = -2;
static volatile sig_atomic_t h1, h2;

static void *dup_thread(void *arg) {
    (void)arg;
    b_tid = (pid_t)syscall(SYS_gettid);
    while (sem_wait(&go) != 0) {}
    b_calling = 1;
    b_rc = dup2(x_fd, b_fd);
    b_errno = errno;
    b_done = 1;
    return NULL;
}

/* The dup2 thread sleeps (state S in /proc: a lock or futex wait inside the dup2). Raw system calls only. */
static bool dup_thread_asleep(void) {
    char p[64], buf[512];
    snprintf(p, sizeof p, "/proc/self/task/%d/stat", (int)b_tid);
    int fd = (int)syscall(SYS_openat, AT_FDCWD, p, O_RDONLY);
    if (fd < 0) return false;
    long n = syscall(SYS_read, fd, buf, sizeof buf - 1);
    syscall(SYS_close, fd);
    if (n <= 0) return false;
    buf[n] = 0;
    char *paren = strrchr(buf, ')');
    return paren && paren[1] == ' ' && paren[2] == 'S';
}

/* Until the dup2 returned, or (asleep_too) sleeps inside it; at most 3 s. */
static void wait_for_dup(bool asleep_too) {
    for (int ms = 0; ms < 3000 && !b_done && !(asleep_too && b_calling && dup_thread_asleep()); ms++) {
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static void on_usr1(int sig) { /* inside the table's lock */
    (void)sig;
    int e = errno;
    h1++;
    h_close_rc = close(b_fd);
    if (!closing_case) {
        sem_post(&go);
        wait_for_dup(true);
    }
    errno = e;
}

static void on_usr2(int sig) { /* the thread claimed the handler's close, before carrying it out */
    (void)sig;
    int e = errno;
    h2++;
    if (closing_case) sem_post(&go);
    wait_for_dup(closing_case); /* pending (the old library): until the dup2 returned */
    errno = e;
}

static int open_in(const char *dir, const char *name, int flags) {
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, name);
    int fd = open(p, flags, 0644);
    CHECK(fd >= 0, "open %s: %s", p, strerror(errno));
    return fd;
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    if (argc < 3 || (strcmp(argv[2], "pending") != 0 && strcmp(argv[2], "closing") != 0))
        SKIP("usage: shim_close_later_dup2 DIR pending|closing");
    if (!getenv("DAXKIT_TEST_CRASH"))
        SKIP("needs DAXKIT_TEST_CRASH=raise:10:upath.publish_all.table_locked:1,raise:12:upath.close_later.claimed:1");
    closing_case = strcmp(argv[2], "closing") == 0;
    st_watchdog(30);
    CHECK(sem_init(&go, 0, 0) == 0, "sem_init: %s", strerror(errno));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0, "sigaction");
    sa.sa_handler = on_usr2;
    CHECK(sigaction(SIGUSR2, &sa, NULL) == 0, "sigaction");

    static char buf[BYTES], got[BYTES];
    b_fd = open_in(dir, "b", O_WRONLY | O_CREAT | O_TRUNC | O_APPEND);
    memset(buf, 'b', sizeof buf);
    st_write_all(b_fd, buf, sizeof buf); /* staged: published by whoever closes it */
    x_fd = open_in(dir, "x", O_RDWR | O_CREAT | O_TRUNC);
    memset(buf, 'x', sizeof buf);
    st_write_all(x_fd, buf, sizeof buf);
    int l1 = open_in(dir, "l1", O_RDWR | O_CREAT);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, dup_thread, NULL) == 0, "pthread_create");
    while (!b_tid) sched_yield();
    uint64_t later0 = st_counter(DK_C_close_later), taken0 = st_counter(DK_C_close_later_taken);

    CHECK(flock(l1, LOCK_EX) == 0, "flock: %s", strerror(errno));
    CHECK(flock(l1, LOCK_UN) == 0, "flock LOCK_UN: %s", strerror(errno)); /* the handlers run in its walk */
    if (!h1) sem_post(&go);
    pthread_join(t, NULL);
    uint64_t later = st_counter(DK_C_close_later) - later0, taken = st_counter(DK_C_close_later_taken) - taken0;
    printf("%s: handler close %d, dup2 returned %d (errno %d); close_later +%llu, close_later_taken +%llu; SIGUSR2 %s\n",
           argv[2], h_close_rc, b_rc, b_errno, (unsigned long long)later, (unsigned long long)taken,
           h2 ? "raised" : "not raised");
    CHECK(h1 == 1, "the SIGUSR1 handler ran %d times (the crash point was not reached: DAXKIT_TEST_CRASH?)", (int)h1);
    CHECK(h_close_rc == 0 && later == 1, "the handler's close returned %d, close_later +%llu: not left to the thread",
          h_close_rc, (unsigned long long)later);
    CHECK(b_rc == b_fd, "dup2(X, %d) returned %d: %s", b_fd, b_rc, strerror(b_errno));
    struct stat bs, xs;
    CHECK(fstat(b_fd, &bs) == 0, "the program's new descriptor %d was closed: %s", b_fd, strerror(errno));
    CHECK(fstat(x_fd, &xs) == 0 && bs.st_ino == xs.st_ino, "descriptor %d does not name X", b_fd);
    CHECK(pread(b_fd, got, sizeof got, 0) == (ssize_t)sizeof got && !memcmp(got, buf, sizeof got),
          "X's bytes do not read back through %d", b_fd);
    CHECK(!closing_case || h2 == 1, "closing: the thread did not claim the handler's close (SIGUSR2 not raised)");
    CHECK(taken == (closing_case ? 0u : 1u), "close_later_taken +%llu", (unsigned long long)taken);
    OK(close(b_fd));
    OK(close(x_fd));
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, "b");
    CHECK(st_ksize(p) == BYTES, "B holds %lld bytes in the kernel, not %d: its close did not publish it", st_ksize(p),
          BYTES);
    printf("OK\n");
    return 0;
}
