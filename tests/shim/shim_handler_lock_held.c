/* Description: a signal handler's publish point on a managed file whose mutex its thread holds (sessions 22-23).
 * The program appends 8,292 bytes to f and fsyncs; inside the fsync's publish, under f's mutex, the library
 * raises SIGUSR1 (DAXKIT_TEST_CRASH=raise:10:publish.before_clear:1, a test build), and the handler calls, per
 * argv[2]: "lock" fcntl(F_SETLK) write-locks byte 100; "unlock" releases it (a publish point); and on a dup of
 * f's descriptor (served by the library, where a second open would wait for lazy adoption and so publish
 * nothing): "seek_data" / "seek_hole" lseek from 0 (the kernel answers after a publish), "fchmod" (an attribute
 * change publishes first), "close" (a close publishes first). All waited for the thread's own mutex forever before (lock/unlock: main 2f387b1, 3 of 3
 * each; the other four: a library without publish_held_here in publish_file_then); now a lock call's
 * bookkeeping leaves f's lock set unknown without the mutex, and a publish point publishes nothing of f (the
 * thread's publish is under way). The handler's call must return what the kernel says, f must hold its bytes,
 * and a lock round and an append after it must work as before.
 * argv[1]: managed directory. Exit 0 pass, 1 fail, 2 set-up, 77 (the cue did not fire: not a test build). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum call { LOCK, UNLOCK, SEEK_DATA_0, SEEK_HOLE_0, FCHMOD, CLOSE };
static const char *const call_names[] = {"lock", "unlock", "seek_data", "seek_hole", "fchmod", "close"};
static const long call_expect[] = {0, 0, 0, 8292, 0, 0}; /* what the kernel answers (the bytes are in f) */

static int fd, fd2;
static enum call call;
static volatile sig_atomic_t ran;
static volatile long rc = -2;

static long handler_call(void) {
    struct flock l = {.l_type = call == UNLOCK ? F_UNLCK : F_WRLCK, .l_whence = SEEK_SET, .l_start = 100, .l_len = 1};
    switch (call) {
    case LOCK:
    case UNLOCK: return fcntl(fd, F_SETLK, &l);
    case SEEK_DATA_0: return (long)lseek(fd2, 0, SEEK_DATA);
    case SEEK_HOLE_0: return (long)lseek(fd2, 0, SEEK_HOLE);
    case FCHMOD: return fchmod(fd2, 0640);
    case CLOSE: return close(fd2);
    }
    return -3;
}

static void on_usr1(int sig) {
    (void)sig;
    rc = handler_call();
    ran = 1;
}

static int parse_call(const char *name) {
    for (unsigned i = 0; i < sizeof call_names / sizeof *call_names; i++)
        if (strcmp(name, call_names[i]) == 0) return call = (enum call)i, 0;
    return -1;
}

static int lock_round(int t) {
    struct flock l = {.l_type = (short)t, .l_whence = SEEK_SET, .l_start = 100, .l_len = 1};
    return fcntl(fd, F_SETLK, &l);
}

int main(int argc, char **argv) {
    if (argc != 3 || parse_call(argv[2]) != 0)
        return fprintf(stderr, "usage: %s MANAGED_DIR lock|unlock|seek_data|seek_hole|fchmod|close\n", argv[0]), 2;
    char path[4096], buf[8292];
    snprintf(path, sizeof path, "%s/f", argv[1]);
    struct sigaction sa = {.sa_handler = on_usr1};
    sigaction(SIGUSR1, &sa, NULL);
    fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
    if (fd < 0 || (fd2 = dup(fd)) < 0) return perror(path), 2;
    if (call == UNLOCK && lock_round(F_WRLCK) != 0) return perror("fcntl F_WRLCK"), 2; /* the handler releases it */
    memset(buf, 'h', sizeof buf);
    if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) return perror("write"), 2;
    if (fsync(fd) != 0) return perror("fsync"), 1; /* the cue fires in its publish */
    if (!ran) return printf("skip: the cue did not fire (not a test build)\n"), 77;
    printf("handler's %s returned %ld (%ld expected)\n", argv[2], (long)rc, call_expect[call]);
    if (rc != call_expect[call]) return 1;
    if (lseek(fd, 0, SEEK_END) != 8292) return perror("lseek SEEK_END after the handler"), 1; /* (a seek moved it) */
    memset(buf, 'i', 100);
    struct stat st;
    if (lock_round(F_WRLCK) != 0 || write(fd, buf, 100) != 100 || lock_round(F_UNLCK) != 0 || fsync(fd) != 0 ||
        fstat(fd, &st) != 0)
        return perror("the round after the handler"), 1;
    printf("size %lld (8392 expected), mode %o\n", (long long)st.st_size, (unsigned)(st.st_mode & 0777));
    if (call == FCHMOD && (st.st_mode & 0777) != 0640) return printf("the handler's fchmod was lost\n"), 1;
    return st.st_size == 8392 ? 0 : 1;
}
