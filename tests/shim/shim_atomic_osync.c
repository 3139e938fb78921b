/* A write through an O_SYNC descriptor of a DAXKIT_ATOMIC file is committed before it returns: a process killed
 * right after it leaves the write in the file (the engine's recovery at the next open keeps the last commit),
 * where a write through a plain descriptor, killed before any fsync, is rolled back. The commit sits in the
 * route's write path under the thread's own "in this file's route" mark (session 21: a handler's publish-point
 * commit under that mark is skipped, and a check placed in the shared commit would have skipped this one too).
 * argv[1]: managed directory. Exit 0 pass, 1 fail, 77 skip. */
#include "shim_test.h"

enum { BLOCK = 4096 };

/* The child: 2 blocks of 'a' made durable by fsync, then one block of `c` at 0 through a descriptor opened with
 * `flags`; killed right after that write returns. */
static void writer(const char *p, int flags, char c) {
    static char a[2 * BLOCK], b[BLOCK];
    memset(a, 'a', sizeof a);
    memset(b, c, sizeof b);
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || pwrite(fd, a, sizeof a, 0) != (ssize_t)sizeof a || fsync(fd) != 0) _exit(2);
    int w = open(p, O_RDWR | flags);
    if (w < 0 || pwrite(w, b, sizeof b, 0) != (ssize_t)sizeof b) _exit(3);
    kill(getpid(), SIGKILL);
    _exit(4);
}

/* The first byte of the file after a child wrote `c` through a descriptor opened with `flags` and was killed. */
static char after_kill(const char *p, int flags, char c) {
    pid_t pid = fork();
    CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) writer(p, flags, c);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid, "waitpid: %s", strerror(errno));
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the writer did not reach its kill (status %d)", st);
    char got[BLOCK];
    int r = open(p, O_RDONLY); /* the engine recovers the killed process's log here */
    CHECK(r >= 0 && pread(r, got, sizeof got, 0) == (ssize_t)sizeof got, "read back: %s", strerror(errno));
    close(r);
    for (size_t i = 1; i < sizeof got; i++) CHECK(got[i] == got[0], "block 0 torn at byte %zu (%c / %c)", i, got[0], got[i]);
    return got[0];
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    if (!getenv("DAXKIT_ATOMIC")) SKIP("needs DAXKIT_ATOMIC (the file routed to the engine)");
    if (getenv("DAXKIT_ATOMIC_COMMIT")) SKIP("DAXKIT_ATOMIC_COMMIT set: the plain case below assumes commits at fsync");
    st_watchdog(60);
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, "osync.bin");
    char plain = after_kill(p, 0, 'p');
    CHECK(plain == 'a', "a plain write killed before any fsync survived (block 0 is '%c'): the case cannot tell a "
          "commit from none", plain);
    char osync = after_kill(p, O_SYNC, 's');
    CHECK(osync == 's', "a write through an O_SYNC descriptor was not committed when it returned (block 0 is '%c')",
          osync);
    NOTE("killed after the write: a plain write rolled back to the last fsync, an O_SYNC write kept");
    return 0;
}
