/* Description: a thread cancelled in close() of a managed descriptor (review 24, finding 1). glibc's close acts
 * on a pending deferred cancellation before its system call: the descriptor stays open, the thread unwinds. The
 * library's close had already begun: since session 24 it counts as a lock call in flight until after the
 * kernel's close (upath/reclock.c up_locks_close_begin), and it vacates the number until its close is done
 * (fdtab.c). A thread cancelled inside it left both behind: the count's share in flight for good -- no lock of
 * the process ever ran alone again, no refresh skip ever (`refresh_skips` frozen) -- and the number vacated, so
 * a write through the descriptor, still open, waited for ever. Now the managed close is a cancellation point
 * before it touches anything, and its kernel close is not one.
 * Here: a thread with cancellation disabled is cancelled, enables it and closes an adopted descriptor fd1 of the
 * file (argv[2] "adopted"; "pending": fd1 never used, lazy adoption). Then, in the main thread: the thread was
 * cancelled; after a whole-file release, a plain escalation round keeps the size it read (refresh_skips +1);
 * fd1 is open as without the library, and a pwrite, pread and close through it work.
 * argv[1]: managed directory. Exit 0 pass, 1 fail, 77 skip. */
#include <pthread.h>

#include "shim_test.h"

static int fd = -1, fd1 = -1;
static pthread_barrier_t bar;


/* A plain escalation round (st_escalation_skips): the widening keeps the size it read. */
static void plain_round(const char *when) {
    uint64_t n = st_escalation_skips(fd, when);
    printf("%s: refresh_skips +%llu\n", when, (unsigned long long)n);
    CHECK(n == 1, "%s: a plain escalation made %llu refresh skips (1 expected): a share of the lock calls' "
          "count in flight was left behind", when, (unsigned long long)n);
}

static void *t_main(void *arg) {
    (void)arg;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    pthread_barrier_wait(&bar); /* the main thread cancels this one */
    pthread_barrier_wait(&bar);
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
    close(fd1); /* the cancellation acts here, before the kernel's close */
    return NULL;
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    CHECK(argc == 3 && (!strcmp(argv[2], "adopted") || !strcmp(argv[2], "pending")), "usage: %s DIR adopted|pending",
          argv[0]);
    st_require_library();
    st_watchdog(30);
    setvbuf(stdout, NULL, _IONBF, 0);
    char path[PATH_MAX], buf[32];
    st_path(path, sizeof path, dir, "f");
    fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    memset(buf, 'a', 16);
    CHECK(write(fd, buf, 16) == 16, "write");
    OK(fsync(fd));
    for (int i = 0; i < 24; i++) CHECK(pread(fd, buf, 16, 0) == 16, "pread"); /* served from here on */
    plain_round("before");
    fd1 = OK(open(path, O_RDWR));
    if (!strcmp(argv[2], "adopted"))
        for (int i = 0; i < 24; i++) CHECK(pread(fd1, buf, 16, 0) == 16, "pread fd1");
    pthread_t t;
    pthread_barrier_init(&bar, NULL, 2);
    CHECK(pthread_create(&t, NULL, t_main, NULL) == 0, "pthread_create");
    pthread_barrier_wait(&bar);
    CHECK(pthread_cancel(t) == 0, "pthread_cancel");
    pthread_barrier_wait(&bar);
    void *res = NULL;
    pthread_join(t, &res);
    if (res != PTHREAD_CANCELED) SKIP("close did not act on the pending cancellation (not glibc's close?)");
    CHECK(fcntl(fd1, F_GETFD) >= 0, "fd1 closed by a close that was cancelled (glibc acts before the system call)");
    OK(st_setlk(fd, F_UNLCK, 0, 0)); /* the set known and empty again */
    plain_round("after a close cancelled");
    CHECK(pwrite(fd1, "zz", 2, 0) == 2, "pwrite through fd1 after the cancelled close: %s", strerror(errno));
    CHECK(pread(fd1, buf, 16, 0) == 16 && !memcmp(buf, "zz", 2), "pread through fd1 after the cancelled close");
    OK(close(fd1));
    OK(close(fd));
    printf("ok: %s: a close cancelled before the kernel's left no lock call in flight and the number usable\n",
           argv[2]);
    return 0;
}
