/* Description: a signal handler's fcntl lock call on a managed file whose mutex its thread holds (session 22).
 * The program appends 8,292 bytes to f and fsyncs; inside the fsync's publish, under f's mutex, the library
 * raises SIGUSR1 (DAXKIT_TEST_CRASH=raise:10:publish.before_clear:1, a test build), and the handler calls
 * fcntl(F_SETLK) on f: argv[2] "lock" takes a write lock on byte 100, "unlock" releases it (a publish point).
 * Both waited for the thread's own mutex forever before (main 2f387b1: 3 of 3 each); now the lock call's
 * bookkeeping leaves f's lock set unknown without the mutex, and the release publishes nothing of f (the
 * thread's publish is under way). The handler's call must return 0, f must hold its bytes, and a lock round
 * and an append after it must work as before.
 * argv[1]: managed directory. Exit 0 pass, 1 fail, 2 set-up, 77 (the cue did not fire: not a test build). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fd, type;
static volatile sig_atomic_t ran, rc = -2;

static void on_usr1(int sig) {
    (void)sig;
    struct flock l = {.l_type = (short)type, .l_whence = SEEK_SET, .l_start = 100, .l_len = 1};
    rc = fcntl(fd, F_SETLK, &l);
    ran = 1;
}

static int lock_round(int t) {
    struct flock l = {.l_type = (short)t, .l_whence = SEEK_SET, .l_start = 100, .l_len = 1};
    return fcntl(fd, F_SETLK, &l);
}

int main(int argc, char **argv) {
    if (argc != 3) return fprintf(stderr, "usage: %s MANAGED_DIR lock|unlock\n", argv[0]), 2;
    type = strcmp(argv[2], "unlock") == 0 ? F_UNLCK : F_WRLCK;
    char path[4096], buf[8292];
    snprintf(path, sizeof path, "%s/f", argv[1]);
    struct sigaction sa = {.sa_handler = on_usr1};
    sigaction(SIGUSR1, &sa, NULL);
    fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
    if (fd < 0) return perror(path), 2;
    if (type == F_UNLCK && lock_round(F_WRLCK) != 0) return perror("fcntl F_WRLCK"), 2; /* the handler releases it */
    memset(buf, 'h', sizeof buf);
    if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) return perror("write"), 2;
    if (fsync(fd) != 0) return perror("fsync"), 1; /* the cue fires in its publish */
    if (!ran) return printf("skip: the cue did not fire (not a test build)\n"), 77;
    printf("handler's %s returned %d\n", argv[2], (int)rc);
    if (rc != 0) return 1;
    memset(buf, 'i', 100);
    struct stat st;
    if (lock_round(F_WRLCK) != 0 || write(fd, buf, 100) != 100 || lock_round(F_UNLCK) != 0 || fsync(fd) != 0 ||
        fstat(fd, &st) != 0)
        return perror("the round after the handler"), 1;
    printf("size %lld (8392 expected)\n", (long long)st.st_size);
    return st.st_size == 8392 ? 0 : 1;
}
