/* vfork() under the library (review 11, finding 14: served as fork -- the child's stores never reached the
 * parent, and a failed exec looked like success in the spawn idiom below). The real vfork: the child shares
 * the parent's memory until it execs or exits, and nothing of the library runs in it (its calls pass to
 * libc), while the parent's managed files stay right:
 *   1. the child stores into a parent variable and _exits: the parent reads the store
 *   2. the spawn idiom: the child's failed execve stores errno for the parent (ENOENT)
 *   3. the parent's staged append, then a vfork child with a managed file on its stdout execs `sh -c 'echo B'`,
 *      then the parent appends again: the file reads A, B, C in order (the parent published before the
 *      vfork; the child's sh writes through the kernel)
 *   4. a vfork child closes and dup2s over the parent's close-on-exec managed descriptors (which the parent
 *      goes on serving) in its own table and _exits: the parent's descriptors and offsets are as they were,
 *      100 appends intact, and the library still serves the parent (counter reads)
 *   5. 200 vforks in a row, each child _exits at once: the parent's appends between them all intact
 * argv[1]: managed directory. */
#include "shim_test.h"

static volatile int shared_value;
static volatile int child_errno;

int main(int argc, char **argv) {
    if (argc < 2) SKIP("usage: shim_vfork DIR");
    st_watchdog(60);
    const char *dir = argv[1];
    /* 1 */
    pid_t c = vfork();
    if (c == 0) {
        shared_value = 42;
        _exit(0);
    }
    CHECK(c > 0, "vfork: %s", strerror(errno));
    OK(waitpid(c, NULL, 0));
    CHECK(shared_value == 42, "the vfork child's store did not reach the parent (%d): served as fork", shared_value);
    /* 2 */
    char *const nargv[] = {"/nonexistent/prog", NULL};
    char *const nenv[] = {NULL};
    c = vfork();
    if (c == 0) {
        execve(nargv[0], nargv, nenv);
        child_errno = errno;
        _exit(127);
    }
    int status = 0;
    OK(waitpid(c, &status, 0));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 127 && child_errno == ENOENT,
          "failed exec in a vfork child: status %#x, errno seen by the parent %d (want 127, ENOENT)", status,
          child_errno);
    /* 3 */
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, "vfork-out");
    volatile int fd = OK(open(p, O_RDWR | O_CREAT | O_TRUNC, 0644));
    st_write_all(fd, "A\n", 2);
    c = vfork();
    if (c == 0) {
        if (dup2(fd, 1) != 1) _exit(126);
        execl("/bin/sh", "sh", "-c", "echo B", (char *)NULL);
        _exit(127);
    }
    OK(waitpid(c, &status, 0));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "sh in the vfork child: status %#x", status);
    st_write_all(fd, "C\n", 2);
    char b[16] = {0};
    CHECK(pread(fd, b, sizeof b - 1, 0) == 6 && !strcmp(b, "A\nB\nC\n"), "the file reads '%s', want A B C", b);
    OK(close(fd));
    CHECK(st_check("text", p, "A\\nB\\nC\\n") == 0, "without the library the file is not A B C");
    /* 4 */
    st_path(p, sizeof p, dir, "vfork-kept");
    fd = OK(open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)); /* close-on-exec: still served by the parent */
    int fd2 = OK(open(p, O_RDONLY | O_CLOEXEC));
    static char rec[100];
    for (int i = 0; i < 100; i++) {
        memset(rec, 'a' + i % 26, sizeof rec);
        st_write_all(fd, rec, sizeof rec);
        if (i % 10 == 0) {
            c = vfork();
            if (c == 0) {
                close(fd);
                dup2(fd2, fd); /* the child's own table */
                _exit(0);
            }
            OK(waitpid(c, NULL, 0));
        }
    }
    CHECK(lseek(fd, 0, SEEK_CUR) == 10000, "the parent's offset after the children: %lld", (long long)lseek(fd, 0, SEEK_CUR));
    static char all[10000];
    uint64_t served = st_counter(DK_C_reads);
    CHECK(pread(fd2, all, sizeof all, 0) == 10000, "the parent reads back less than 10,000 bytes");
    /* a child's _exit that ran the library's exit path would have shut the library down in the parent */
    CHECK(st_counter(DK_C_reads) > served, "the parent's read was not served: the library stopped after the children");
    for (int i = 0; i < 100; i++)
        for (int j = 0; j < 100; j++)
            CHECK(all[i * 100 + j] == 'a' + i % 26, "record %d byte %d is '%c'", i, j, all[i * 100 + j]);
    OK(close(fd2));
    OK(close(fd));
    /* 5 */
    st_path(p, sizeof p, dir, "vfork-many");
    fd = OK(open(p, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644));
    for (volatile int i = 0; i < 200; i++) {
        st_write_all(fd, "0123456789", 10);
        c = vfork();
        if (c == 0) _exit(0);
        OK(waitpid(c, NULL, 0));
    }
    OK(close(fd));
    CHECK(st_ksize(p) == 2000, "after 200 vforks the file has %lld bytes, want 2000", st_ksize(p));
    printf("ok: vfork children share the parent's memory and leave its managed files alone\n");
    return 0;
}
