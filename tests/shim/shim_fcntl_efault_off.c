/* Description: a library that is loaded but off reads nothing of the caller's (ac69872, review 25 #4): fcntl's
 * lock commands with a struct flock pointer into an unreadable page return -1 EFAULT, as glibc's fcntl alone
 * does, instead of dying of SIGSEGV in the library's look at l_whence (f68d034's untracked-lock test looked at
 * it before up_enabled). The driver runs each case in a child exec'd without DAXKIT_DIR (off: no managed
 * directory) and once with DAXKIT_DISABLE=1; each child calls fcntl and fcntl64 with F_SETLK, F_SETLKW,
 * F_GETLK and F_OFD_SETLK on a descriptor of a file in the (unmanaged) directory. Exit 0 pass, 1 fail.
 * (With the library on: shim_efault.c, session 27.)
 * Negative control: fcntl_common's test with up_enabled last again (f68d034's order): every case dies of SIGSEGV.
 * Usage: shim_fcntl_efault_off DIR | DIR child. */
#include "shim_test.h"

int fcntl64(int fd, int cmd, ...);

static int child(const char *dir) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "efault");
    int fd = OK(open(path, O_RDWR | O_CREAT, 0644));
    void *bad = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(bad != MAP_FAILED, "mmap: %s", strerror(errno));
    static const struct {
        int cmd;
        const char *name;
    } cmds[] = {{F_SETLK, "F_SETLK"}, {F_SETLKW, "F_SETLKW"}, {F_GETLK, "F_GETLK"}, {F_OFD_SETLK, "F_OFD_SETLK"}};
    for (unsigned i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        for (int wide = 0; wide < 2; wide++) {
            errno = 0;
            int r = wide ? fcntl64(fd, cmds[i].cmd, bad) : fcntl(fd, cmds[i].cmd, bad);
            CHECK(r == -1 && errno == EFAULT, "%s(fd, %s, unreadable) returned %d errno %d (%s), expected -1 EFAULT",
                  wide ? "fcntl64" : "fcntl", cmds[i].name, r, errno, strerror(errno));
        }
    }
    OK(close(fd));
    return 0;
}

static void run_child(const char *self, const char *dir, bool disable) {
    pid_t pid = OK(fork());
    if (pid == 0) {
        if (disable) setenv("DAXKIT_DISABLE", "1", 1);
        else unsetenv("DAXKIT_DIR");
        char *args[] = {(char *)self, (char *)dir, "child", NULL};
        execv("/proc/self/exe", args);
        _exit(4);
    }
    int st;
    OK(waitpid(pid, &st, 0));
    CHECK(!WIFSIGNALED(st), "%s: the child died of signal %d (%s): the library read the caller's bad struct flock",
          disable ? "DAXKIT_DISABLE=1" : "no DAXKIT_DIR", WTERMSIG(st), strsignal(WTERMSIG(st)));
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: the child exited %d", disable ? "DAXKIT_DISABLE=1" : "no DAXKIT_DIR",
          WEXITSTATUS(st));
}

int main(int argc, char **argv) {
    if (argc < 2) FAIL("usage: shim_fcntl_efault_off DIR [child]");
    if (argc > 2 && strcmp(argv[2], "child") == 0) return child(argv[1]);
    CHECK(getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "libdaxkit"), "run under libdaxkit.so (run.sh)");
    st_watchdog(60);
    char outside[PATH_MAX];
    snprintf(outside, sizeof outside, "%s/..", argv[1]); /* unmanaged either way */
    run_child(argv[0], outside, false);
    run_child(argv[0], outside, true);
    printf("ok: fcntl/fcntl64 F_SETLK, F_SETLKW, F_GETLK, F_OFD_SETLK with an unreadable struct flock: -1 EFAULT, "
           "library off (no DAXKIT_DIR; DAXKIT_DISABLE=1)\n");
    return 0;
}
