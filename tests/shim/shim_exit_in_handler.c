/* _exit (async-signal-safe: the canonical way to stop from a handler) or exit in a signal handler that
 * interrupted an append of its thread (review 9, finding 30): the library's exit-time publish waited for the
 * file's mutex the interrupted append held -- the process never ended. argv[1]: managed directory; argv[2]:
 * _exit or exit. Each of RUNS children appends 4 KiB records with a one-shot timer (1-8 ms) whose handler
 * ends the process; every child must end within 10 s, and what the file holds must be whole records of its
 * bytes, at least the appends the child saw acknowledged before the one interrupted in sync and strict
 * modes (posix mode may lose that file's appends since its last publish point, as at a crash: documented).
 * argv[3] "close_loop": each child opens, appends to and closes 16 files in turn instead (the handler lands
 * in a close's publish, which holds the file's mutex too); every file must hold whole records. argv[2]
 * "exec": the handler execs /bin/true instead (the exec's publish point waited for that mutex: posix mode's
 * close_loop hung in run 0). argv[4] "no_timer": no timer -- the library raises SIGALRM itself at a crash point
 * (DAXKIT_TEST_CRASH=raise:14:SITE:N), e.g. inside the staging code holding heap_spare_mu: _exit's publish of
 * the first file gave its heap slot back into that mutex and waited for ever (about 1 run in 10-15 under load
 * with the timer; every run at that site). argv[2] "append_exit": the handler appends one record to a file of
 * its own (PATH.h, new), then calls _exit: the append's staging must not wait for the interrupted one either;
 * PATH.h must hold that record. DK_HANG_GDB=1 in the environment: a child that does not end has its stacks
 * printed by gdb before it is killed. */
#include <sys/time.h>

#include "shim_test.h"

enum { RUNS = 8, REC = 4096 };

static bool use_exit, use_exec, use_append, close_loop, no_timer;
static char hpath[PATH_MAX + 8]; /* the path and ".h" (-Wformat-truncation) */
enum { LOOP_FILES = 16 };
static void on_alarm(int sig) {
    (void)sig;
    if (use_append) {
        static char hrec[REC];
        memset(hrec, 'a', sizeof hrec);
        int f = open(hpath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
        if (f < 0 || write(f, hrec, sizeof hrec) != (ssize_t)sizeof hrec) _exit(6);
    }
    if (use_exec) execl("/bin/true", "true", (char *)NULL); /* exec ends this image too: true exits 0 */
    if (use_exit) exit(0);
    _exit(use_exec ? 5 : 0);
}

/* The child: appends until the timer's handler ends it. acked: appends whose write returned. */
static void child(const char *path, unsigned delay_us, volatile uint64_t *acked) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    if (fd < 0) _exit(3);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    static char rec[REC];
    memset(rec, 'a', sizeof rec);
    if (write(fd, rec, sizeof rec) != (ssize_t)sizeof rec) _exit(4); /* the open and first append are done */
    __atomic_add_fetch(acked, 1, __ATOMIC_SEQ_CST);
    struct itimerval it = {{0, 0}, {0, (suseconds_t)delay_us}};
    if (!no_timer) setitimer(ITIMER_REAL, &it, NULL);
    for (unsigned i = 0; close_loop; i++) {
        char p[PATH_MAX + 16];
        snprintf(p, sizeof p, "%s.%u", path, i % LOOP_FILES);
        int f = open(p, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (f < 0 || write(f, rec, sizeof rec) != (ssize_t)sizeof rec) _exit(4);
        close(f);
    }
    for (;;) {
        if (write(fd, rec, sizeof rec) != (ssize_t)sizeof rec) _exit(4);
        __atomic_add_fetch(acked, 1, __ATOMIC_SEQ_CST);
    }
}

/* The file as the kernel has it after the next start-up's recovery (a process under the library: /bin/true
 * with this environment) -- an exit that skipped the interrupted file leaves it as a crash does (the
 * extend strategy's step past the end, a part of the interrupted record in it): whole records of 'a'.
 * Returns the number of records. */
static uint64_t check_file(const char *path) {
    pid_t t = fork();
    CHECK(t >= 0, "fork: %s", strerror(errno));
    if (t == 0) {
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
    }
    int tst;
    CHECK(waitpid(t, &tst, 0) == t && WIFEXITED(tst) && WEXITSTATUS(tst) == 0, "/bin/true under the library: 0x%x", tst);
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
    CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    static char buf[1 << 16];
    uint64_t total = 0;
    ssize_t r;
    while ((r = syscall(SYS_read, fd, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < r; i++)
            CHECK(buf[i] == 'a', "byte %llu of %s is 0x%02x, not 'a'", (unsigned long long)(total + (uint64_t)i), path,
                  (unsigned char)buf[i]);
        total += (uint64_t)r;
    }
    syscall(SYS_close, fd);
    CHECK(total % REC == 0, "%s holds %llu bytes: not whole records", path, (unsigned long long)total);
    return total / REC;
}

int main(int argc, char **argv) {
    if (argc < 3) SKIP("usage: shim_exit_in_handler DIR _exit|exit|exec|append_exit [close_loop [no_timer]]");
    use_exit = strcmp(argv[2], "exit") == 0;
    use_exec = strcmp(argv[2], "exec") == 0;
    use_append = strcmp(argv[2], "append_exit") == 0;
    close_loop = argc > 3 && strcmp(argv[3], "close_loop") == 0;
    no_timer = argc > 4 && strcmp(argv[4], "no_timer") == 0;
    const char *mode = getenv("DAXKIT_MODE");
    bool keeps_acked = mode && (strcmp(mode, "sync") == 0 || strcmp(mode, "strict") == 0);
    volatile uint64_t *acked = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(acked != MAP_FAILED, "mmap");
    char path[PATH_MAX];
    st_path(path, sizeof path, argv[1], "hx");
    snprintf(hpath, sizeof hpath, "%s.h", path);
    for (unsigned run = 0; run < RUNS; run++) {
        *acked = 0;
        pid_t c = fork();
        CHECK(c >= 0, "fork: %s", strerror(errno));
        if (c == 0) child(path, 1000 + 1000 * run, acked);
        int st = 0;
        pid_t w = 0;
        for (int waited_ms = 0; waited_ms < 10000 && (w = waitpid(c, &st, WNOHANG)) == 0; waited_ms += 10) usleep(10000);
        if (w == 0) {
            if (getenv("DK_HANG_GDB")) { /* the hung child's stacks on stderr (session 14 traced the hang so) */
                char cmd[128];
                snprintf(cmd, sizeof cmd, "gdb -p %d -batch -ex 'thread apply all bt' 1>&2", (int)c);
                if (system(cmd) != 0) NOTE("gdb could not dump the stacks of %d", (int)c);
            }
            kill(c, SIGKILL);
            waitpid(c, &st, 0);
            FAIL("run %u (%s after %u us): the process did not end within 10 s (%llu appends acknowledged)", run, argv[2],
                 1000 + 1000 * run, (unsigned long long)*acked);
        }
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "run %u: child status 0x%x", run, st);
        uint64_t recs = check_file(path);
        if (use_append) CHECK(check_file(hpath) == 1, "run %u: the handler's append is not in %s", run, hpath);
        for (unsigned i = 0; close_loop && i < LOOP_FILES; i++) {
            char p[PATH_MAX + 16];
            snprintf(p, sizeof p, "%s.%u", path, i);
            if (access(p, F_OK) == 0) check_file(p);
        }
        if (keeps_acked)
            CHECK(recs >= *acked, "run %u: %llu records in the file, %llu appends were acknowledged", run,
                  (unsigned long long)recs, (unsigned long long)*acked);
        NOTE("run %u: %llu appends acknowledged, %llu records in the file", run, (unsigned long long)*acked,
             (unsigned long long)recs);
    }
    return 0;
}
