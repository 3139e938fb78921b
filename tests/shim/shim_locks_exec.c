/* The program's record locks across exec are the kernel's (review 7, finding 26): POSIX locks survive an
 * exec while a descriptor of the file stays open, and the close of *any* descriptor of the file drops them
 * -- so the library's kept read-write descriptor of a file the program opened read-only and read enough to
 * map (auxfd.c), close-on-exec, took the lock away when the kernel closed it during the exec. Three files,
 * each opened O_RDONLY and mapped by reads, then execve of this program (under the library again), which
 * asks another process (raw system calls) about each lock:
 *   posix:   F_SETLK through a descriptor without FD_CLOEXEC -> held by us after the exec;
 *   ofd:     F_OFD_SETLK through a descriptor without FD_CLOEXEC -> held after the exec (the open file
 *            description's lock: the kernel reports pid -1);
 *   cloexec: F_SETLK through an O_CLOEXEC descriptor -> gone after the exec, as the kernel drops it.
 * argv[1]: managed directory. Run with DAXKIT_MAP_AFTER_IOS small (and with DAXKIT_ATOMIC=*: the engine's
 * kept descriptor). */
#include "shim_test.h"

static const char *names[] = {"posix", "ofd", "cloexec"};

/* The lock another process sees on the whole file: its type and pid (raw clone, openat, fcntl). */
static int lock_seen(const char *path, pid_t *pid) {
    int pfd[2];
    OK(pipe(pfd));
    pid_t c = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (c == 0) {
        int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR);
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
        if (fd < 0 || syscall(SYS_fcntl, fd, F_GETLK, &fl) != 0) syscall(SYS_exit_group, 2);
        int out[2] = {fl.l_type, fl.l_pid};
        syscall(SYS_write, pfd[1], out, sizeof out);
        syscall(SYS_exit_group, 0);
    }
    CHECK(c > 0, "clone: %s", strerror(errno));
    int st;
    CHECK(syscall(SYS_wait4, c, &st, 0, NULL) == c, "wait4");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the checker could not open %s or ask for its lock", path);
    int in[2];
    CHECK(read(pfd[0], in, sizeof in) == (ssize_t)sizeof in, "checker's answer");
    close(pfd[0]), close(pfd[1]);
    *pid = in[1];
    return in[0];
}

int main(int argc, char **argv) {
    CHECK(argc >= 2, "usage: %s DIR", argv[0]);
    char path[3][4096];
    for (int i = 0; i < 3; i++) snprintf(path[i], sizeof path[i], "%s/%s", argv[1], names[i]);
    if (argc > 2 && !strcmp(argv[2], "after-exec")) {
        pid_t me = getpid(), pid;
        int bad = 0;
        int t = lock_seen(path[0], &pid);
        if (t == F_UNLCK || pid != me) printf("FAIL: posix lock through a kept descriptor: %s after the exec (kernel: held by %d)\n", t == F_UNLCK ? "gone" : "other owner", (int)me), bad = 1;
        t = lock_seen(path[1], &pid);
        if (t == F_UNLCK || pid != -1) printf("FAIL: OFD lock: %s after the exec (kernel: held, pid -1)\n", t == F_UNLCK ? "gone" : "other owner"), bad = 1;
        t = lock_seen(path[2], &pid);
        if (t != F_UNLCK) printf("FAIL: posix lock through a close-on-exec descriptor: still held after the exec (kernel: dropped)\n"), bad = 1;
        if (!bad) printf("ok: posix lock kept, OFD lock kept, close-on-exec descriptor's lock dropped -- as the kernel\n");
        fflush(stdout);
        return bad;
    }
    static uint8_t buf[65536];
    int fds[3];
    for (int i = 0; i < 3; i++) {
        st_fill(buf, (uint32_t)i + 1, 0, sizeof buf);
        int w = OK(open(path[i], O_RDWR | O_CREAT | O_TRUNC, 0644));
        st_write_all(w, buf, sizeof buf);
        OK(fsync(w));
        OK(close(w));
        fds[i] = OK(open(path[i], O_RDONLY | (i == 2 ? O_CLOEXEC : 0)));
        struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET};
        OK(fcntl(fds[i], i == 1 ? F_OFD_SETLK : F_SETLK, &fl));
        for (int k = 0; k < 40; k++) CHECK(pread(fds[i], buf, 4096, (off_t)(k % 16) * 4096) == 4096, "pread");
    }
    st_require_library();
    uint64_t v[DK_C_COUNT];
    CHECK(st_stats(getpid(), v) && (v[DK_C_aux_opens] >= 3 || getenv("DAXKIT_ATOMIC")),
          "the library kept no descriptor of its own (aux_opens %llu): nothing tested", (unsigned long long)v[DK_C_aux_opens]);
    pid_t me = getpid(), pid;
    CHECK(lock_seen(path[0], &pid) != F_UNLCK && pid == me, "the posix lock is gone before the exec");
    char *av[] = {argv[0], argv[1], "after-exec", NULL};
    execv("/proc/self/exe", av);
    FAIL("execv: %s", strerror(errno));
}
