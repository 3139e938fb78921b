/* Description: a signal handler's publish point on a managed file whose mutex its thread holds (sessions 22-23).
 * The program appends 8,292 bytes to f (close_same: 200) and fsyncs; inside the fsync's publish, under f's mutex, the library
 * raises SIGUSR1 (DAXKIT_TEST_CRASH=raise:10:publish.before_clear:1, a test build), and the handler calls, per
 * argv[2]: "lock" fcntl(F_SETLK) write-locks byte 100; "unlock" releases it (a publish point); and on a dup of
 * f's descriptor (served by the library, where a second open would wait for lazy adoption and so publish
 * nothing): "seek_data" / "seek_hole" lseek from 0 (the kernel answers after a publish), "fchmod" (an attribute
 * change publishes first), "close" (a close publishes first); "close_same": the handler closes f's only
 * descriptor inside its thread's unlock (the second publish: 100 bytes fsynced first keep a heap slot; cue
 * occurrence 2, handler_lock_held.sh). All waited for the thread's own mutex forever before (lock/unlock: main
 * 2f387b1, 3 of 3 each; the other four: a library without publish_held_here in publish_file_then; close and
 * close_same: main 7ea2ab0, the close's second publish and its last-close bookkeeping); now a lock call's
 * bookkeeping leaves f's lock set unknown without the mutex, and a publish point publishes nothing of f (the
 * thread's publish is under way). The handler's call must return what the kernel says, f must hold its bytes,
 * and a lock round and an append after it must work as before.
 * argv[1]: managed directory. Exit 0 pass, 1 fail, 2 set-up, 77 (the cue did not fire: not a test build). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum call { LOCK, UNLOCK, SEEK_DATA_0, SEEK_HOLE_0, FCHMOD, CLOSE, CLOSE_SAME };
static const char *const call_names[] = {"lock", "unlock", "seek_data", "seek_hole", "fchmod", "close", "close_same"};
static const long call_expect[] = {0, 0, 0, 8292, 0, 0, 0}; /* what the kernel answers (the bytes are in f) */

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
    case CLOSE_SAME: return close(fd);
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

/* Up to the handler: n bytes in f, published by the call the handler interrupts (fsync; close_same: an
 * unlock after 100 bytes fsynced; n = 200 there: bursts that small keep a heap slot past the publish, which the
 * last close frees under f's mutex). 0, 1 the call failed, 2 set-up. */
static int write_then_publish(char *buf, size_t n) {
    memset(buf, 'h', n);
    if (call == CLOSE_SAME) {
        if (write(fd, buf, 100) != 100 || fsync(fd) != 0 || lock_round(F_WRLCK) != 0) return perror("set-up"), 2;
        if (write(fd, buf, n - 100) != (ssize_t)(n - 100)) return perror("write"), 2;
        int r = lock_round(F_UNLCK); /* the cue fires in its publish; the handler closed fd: the kernel's EBADF */
        return r == 0 || errno == EBADF ? 0 : (perror("fcntl F_UNLCK"), 1);
    }
    if (call == UNLOCK && lock_round(F_WRLCK) != 0) return perror("fcntl F_WRLCK"), 2; /* the handler releases it */
    if (write(fd, buf, n) != (ssize_t)n) return perror("write"), 2;
    return fsync(fd) != 0 ? (perror("fsync"), 1) : 0; /* the cue fires in its publish */
}

int main(int argc, char **argv) {
    if (argc != 3 || parse_call(argv[2]) != 0)
        return fprintf(stderr, "usage: %s MANAGED_DIR lock|unlock|seek_data|seek_hole|fchmod|close|close_same\n",
                       argv[0]),
               2;
    char path[4096], buf[8292];
    snprintf(path, sizeof path, "%s/f", argv[1]);
    struct sigaction sa = {.sa_handler = on_usr1};
    sigaction(SIGUSR1, &sa, NULL);
    fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
    if (fd < 0 || (call != CLOSE_SAME && (fd2 = dup(fd)) < 0)) return perror(path), 2; /* (close_same: fd alone) */
    size_t n = call == CLOSE_SAME ? 200 : sizeof buf;
    int r = write_then_publish(buf, n);
    if (r) return r;
    if (!ran) return printf("skip: the cue did not fire (not a test build)\n"), 77;
    printf("handler's %s returned %ld (%ld expected)\n", argv[2], (long)rc, call_expect[call]);
    if (rc != call_expect[call]) return 1;
    if (call == CLOSE_SAME && (fd = open(path, O_RDWR)) < 0) return perror("reopen"), 1;
    if (lseek(fd, 0, SEEK_END) != (off_t)n) return perror("lseek SEEK_END after the handler"), 1; /* (a seek moved it) */
    memset(buf, 'i', 100);
    struct stat st;
    if (lock_round(F_WRLCK) != 0 || write(fd, buf, 100) != 100 || lock_round(F_UNLCK) != 0 || fsync(fd) != 0 ||
        fstat(fd, &st) != 0)
        return perror("the round after the handler"), 1;
    printf("size %lld (%zu expected), mode %o\n", (long long)st.st_size, n + 100, (unsigned)(st.st_mode & 0777));
    if (call == FCHMOD && (st.st_mode & 0777) != 0640) return printf("the handler's fchmod was lost\n"), 1;
    return st.st_size == (off_t)(n + 100) ? 0 : 1;
}
