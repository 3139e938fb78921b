/* Description: an inherited descriptor's offset after the child used it and ended. The parent writes,
 * forks; the child writes through the shared descriptor and exits; the parent, which made no call in
 * between, writes again: its bytes must follow the child's (one open file description, one offset), and
 * lseek must report the end. Checked again with the child appending via O_APPEND. argv[1]: managed dir. */
#include <spawn.h>
#include <sys/wait.h>

#include "shim_test.h"

/* How the child writes: 0 fork + write, 1 posix_spawn of a shell writing to the inherited descriptor,
 * 2 system() of the same. */
static void child_writes(int fd, const char *b, int how) {
    if (how == 0) {
        pid_t pid = fork();
        CHECK(pid >= 0, "fork: %s", strerror(errno));
        if (pid == 0) _exit(write(fd, b, 100) == 100 ? 0 : 1);
        int status;
        CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed");
        return;
    }
    char cmd[200];
    snprintf(cmd, sizeof cmd, "head -c 100 /dev/zero | tr '\\0' B >&%d", fd);
    if (how == 2) {
        CHECK(system(cmd) == 0, "system(%s) failed", cmd);
        return;
    }
    char *args[] = {"sh", "-c", cmd, NULL};
    extern char **environ;
    pid_t pid;
    CHECK(posix_spawn(&pid, "/bin/sh", NULL, NULL, args, environ) == 0, "posix_spawn");
    int status;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0, "spawned child failed");
}

static void child_then_parent(const char *path, int oflags, int how) {
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | oflags, 0644);
    CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    char a[100], b[100], c[100], got[300];
    memset(a, 'A', sizeof a), memset(b, 'B', sizeof b), memset(c, 'C', sizeof c);
    CHECK(write(fd, a, sizeof a) == (ssize_t)sizeof a, "parent write 1");
    child_writes(fd, b, how);
    CHECK(write(fd, c, sizeof c) == (ssize_t)sizeof c, "parent write 2");
    off_t end = lseek(fd, 0, SEEK_CUR);
    CHECK(end == 300, "offset after A, B (child %d), C: %lld, want 300 (flags %#x)", how, (long long)end, oflags);
    CHECK(pread(fd, got, sizeof got, 0) == 300, "pread");
    CHECK(!memcmp(got, a, 100) && !memcmp(got + 100, b, 100) && !memcmp(got + 200, c, 100),
          "file is not A*100 B*100 C*100 (child %d, flags %#x): the parent overwrote the child's bytes", how, oflags);
    close(fd);
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    st_require_library();
    st_watchdog(60);
    char path[4200];
    snprintf(path, sizeof path, "%s/fork-offset", dir);
    for (int how = 0; how < 3; how++) {
        child_then_parent(path, 0, how);
        child_then_parent(path, O_APPEND, how);
    }
    printf("ok: a fork child's writes move the shared offset for the parent\n");
    return 0;
}
