/* Description: strict mode, a checkpoint asked for by a signal handler inside a strict operation or checkpoint of
 * its own thread (session 27, exit26's note). up_strict_checkpoint took the checkpoint lock's write side again:
 * inside the thread's checkpoint glibc's wrlock answered EDEADLK without taking it (ignored), the handler's
 * checkpoint ran unlocked and its unlock released the thread's hold -- the interrupted checkpoint's own unlock then
 * underflowed the lock's reader count and the process's next checkpoint hung; inside the thread's strict write the
 * write side waited for the thread's own read side, for ever. Now such a checkpoint is not made (strict_ck_nested):
 * fallocate fails with EDEADLK, an O_TRUNC open goes on without it (its truncate unlogged, as any truncate of such
 * a handler).
 *
 *   shim_strict_ck_nested DIR WHERE WHAT
 *     WHERE  ckpt   the cue strict.checkpoint.before_durable (a close's checkpoint; DAXKIT_TEST_CRASH=
 *                   raise:10:strict.checkpoint.before_durable:1)
 *            write  the cue strict.write.logged (the first write; DAXKIT_TEST_CRASH=raise:10:strict.write.logged:1)
 *     WHAT   fallocate  the handler grows f by fallocate: must fail with EDEADLK (or succeed), never hang
 *            otrunc     the handler opens g (5,000 bytes) with O_TRUNC: must return a descriptor, g empty
 * A child does it all, then writes f again and closes it twice (two more checkpoints); the parent gives it 30 s.
 * Exit 0 pass, 1 fail (hung: the child is killed), 77 skip (the cue did not fire: not a test build). */
#include "shim_test.h"

struct shared {
    volatile int cue, rc, err, done;
};
static struct shared *sh;
static const char *what;
static char fpath[PATH_MAX], gpath[PATH_MAX];
static int ffd = -1;

static void on_cue(int sig) {
    (void)sig;
    int e = errno;
    sh->cue++;
    if (!strcmp(what, "fallocate")) {
        errno = 0;
        sh->rc = fallocate(ffd, 0, 0, 16384);
        sh->err = errno;
    } else {
        errno = 0;
        sh->rc = open(gpath, O_WRONLY | O_TRUNC); /* (left open: a close is a publish point) */
        sh->err = errno;
    }
    errno = e;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: shim_strict_ck_nested DIR ckpt|write fallocate|otrunc\n");
        return 2;
    }
    const char *dir = argv[1], *where = argv[2];
    what = argv[3];
    CHECK(!strcmp(where, "ckpt") || !strcmp(where, "write"), "WHERE: ckpt or write, not %s", where);
    CHECK(!strcmp(what, "fallocate") || !strcmp(what, "otrunc"), "WHAT: fallocate or otrunc, not %s", what);
    const char *m = getenv("DAXKIT_MODE");
    if (!m || strcmp(m, "strict")) SKIP("strict mode only");
    setvbuf(stdout, NULL, _IONBF, 0);
    signal(SIGUSR1, SIG_IGN); /* (this process passes the cue too) */
    st_path(fpath, sizeof fpath, dir, "ck_f");
    st_path(gpath, sizeof gpath, dir, "ck_g");
    static char b[5000];
    memset(b, 'b', sizeof b);
    int g = (int)syscall(SYS_openat, AT_FDCWD, gpath, O_WRONLY | O_CREAT | O_TRUNC, 0644); /* without the library */
    CHECK(g >= 0 && syscall(SYS_write, g, b, sizeof b) == (long)sizeof b, "set-up of g");
    syscall(SYS_close, g);
    sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(sh != MAP_FAILED, "mmap");
    sh->rc = -2;
    pid_t c = fork();
    CHECK(c >= 0, "fork");
    if (c == 0) {
        struct sigaction sa = {.sa_handler = on_cue};
        sigaction(SIGUSR1, &sa, NULL);
        static char a[4096];
        memset(a, 'A', sizeof a);
        ffd = open(fpath, O_RDWR | O_CREAT | O_TRUNC, 0644);
        if (ffd < 0 || write(ffd, a, sizeof a) != (ssize_t)sizeof a) _exit(2); /* write: the cue fires here */
        int f2 = open(fpath, O_RDWR);
        if (f2 < 0 || close(f2) != 0) _exit(3); /* ckpt: a publish point's checkpoint -- the cue fires here */
        /* more checkpoints: they hung once the handler's unlock had released the interrupted checkpoint's hold */
        for (int i = 0; i < 2; i++) {
            memset(a, 'a' + i, sizeof a);
            if (pwrite(ffd, a, sizeof a, 0) != (ssize_t)sizeof a) _exit(4);
            f2 = open(fpath, O_RDWR);
            if (f2 < 0 || close(f2) != 0) _exit(5);
        }
        sh->done = 1;
        _exit(0);
    }
    int st = 0;
    if (!st_wait_child(c, &st, 30000)) {
        if (!sh->cue) SKIP("the cue did not fire (DAXKIT_TEST_CRASH unset, or not a test build)");
        FAIL("%s %s: the child hung (handler %s: rc %d, errno %d): the handler's checkpoint %s", where, what,
             sh->rc == -2 ? "never returned" : "returned", sh->rc, sh->err,
             sh->rc == -2 ? "waited for its own thread's operation" : "released its thread's hold, a later one waited for ever");
    }
    if (!sh->cue) SKIP("the cue did not fire (DAXKIT_TEST_CRASH unset, or not a test build)");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && sh->done, "%s %s: the child ended with status 0x%x", where, what, st);
    if (!strcmp(what, "fallocate")) {
        CHECK(sh->rc == 0 || (sh->rc == -1 && sh->err == EDEADLK), "fallocate in the handler: rc %d errno %d", sh->rc,
              sh->err);
    } else {
        CHECK(sh->rc >= 0, "open with O_TRUNC in the handler: rc %d errno %d", sh->rc, sh->err);
        struct stat gs;
        CHECK(syscall(SYS_stat, gpath, &gs) == 0 && gs.st_size == 0, "g is %lld bytes after the O_TRUNC open",
              (long long)gs.st_size);
    }
    char buf[4096];
    int r = (int)syscall(SYS_openat, AT_FDCWD, fpath, O_RDONLY);
    CHECK(r >= 0 && syscall(SYS_read, r, buf, sizeof buf) == (long)sizeof buf, "read f back");
    for (size_t i = 0; i < sizeof buf; i++) CHECK(buf[i] == 'b', "f byte %zu is 0x%02x, not the last write's 'b'", i, buf[i]);
    printf("%s %s: the handler's %s %s; the later checkpoints went through\n", where, what, what,
           sh->rc >= 0 ? "succeeded" : "failed with EDEADLK");
    return 0;
}
