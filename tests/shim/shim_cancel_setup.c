/* A thread cancelled (pthread_cancel, deferred) while its first strict operation builds the process's strict
 * log (review 11, finding 2): dk_oplog_open's system calls -- the zero fill's pwrite and fdatasync on the page
 * cache, the fsyncs of its publish, openat -- are cancellation points, and they ran with cancellation enabled
 * under the root's mutex: the thread died holding it and every later strict operation of the process waited
 * for ever. Each run is a child process (its own, new log): a thread pwrites 100 bytes of an existing file
 * (its first strict operation), the main thread cancels it after 0-20 ms, joins it, then pwrites itself; the
 * child must end within 10 s with the main thread's write done. A second part cancels a thread that loops on
 * a 64 KiB pwrite + fsync (checkpoints: fdatasync under the checkpoint lock's write side). argv[1]: DIR. */
#include <pthread.h>

#include "shim_test.h"

static int fd;
static bool loop;
static void *writer(void *a) {
    (void)a;
    static char b[65536];
    memset(b, 'T', sizeof b);
    if (loop)
        for (;;) (void)!pwrite(fd, b, sizeof b, 4096), fsync(fd);
    (void)!pwrite(fd, b, 100, 0);
    return NULL;
}

/* The child: 0 when its own write after the cancel succeeded. */
static int child(const char *path, unsigned delay_us) {
    fd = open(path, O_RDWR);
    if (fd < 0) return 2;
    if (loop && pwrite(fd, "m", 1, 100) != 1) return 3; /* the log exists before the thread starts */
    pthread_t t;
    if (pthread_create(&t, NULL, writer, NULL) != 0) return 4;
    usleep(delay_us);
    pthread_cancel(t);
    pthread_join(t, NULL);
    char b[100];
    memset(b, 'M', sizeof b);
    return pwrite(fd, b, sizeof b, 200) == (ssize_t)sizeof b ? 0 : 5;
}

int main(int argc, char **argv) {
    if (argc < 2) SKIP("usage: shim_cancel_setup DIR");
    char path[PATH_MAX];
    st_path(path, sizeof path, argv[1], "cancel_setup");
    /* made by raw system calls: this process logs nothing, so each child makes a log of its own */
    int r = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(r >= 0 && syscall(SYS_pwrite64, r, "old\n", 4, 0) == 4, "raw create of %s", path);
    syscall(SYS_close, r);
    static const unsigned delays_us[] = {0, 200, 500, 1000, 2000, 3000, 5000, 8000, 12000, 20000};
    unsigned runs = 0, hung = 0, failed = 0;
    for (int part = 0; part < 2; part++) {
        loop = part == 1;
        for (unsigned i = 0; i < sizeof delays_us / sizeof *delays_us; i++) {
            unsigned delay = loop ? 3000 + 4000 * i : delays_us[i];
            pid_t c = fork();
            CHECK(c >= 0, "fork: %s", strerror(errno));
            if (c == 0) _exit(child(path, delay));
            int st = 0;
            pid_t w = 0;
            for (int ms = 0; ms < 10000 && (w = waitpid(c, &st, WNOHANG)) == 0; ms += 10) usleep(10000);
            runs++;
            if (w == 0) {
                kill(c, SIGKILL);
                waitpid(c, &st, 0);
                hung++;
                NOTE("part %d, cancel after %u us: the main thread's write did not end within 10 s", part + 1, delay);
            } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                failed++;
                NOTE("part %d, cancel after %u us: child status 0x%x", part + 1, delay, st);
            }
        }
    }
    CHECK(hung == 0 && failed == 0, "%u of %u runs hung, %u failed", hung, runs, failed);
    printf("ok: %u runs, none hung\n", runs);
    return 0;
}
