/* Description: inherited descriptors looked at when first used (posix mode; upath/fdtab.c "inherited
 * descriptors", session 29: no /proc/self/fd listing at start-up). A managed file inherited across exec at
 * descriptor 3 must still be this process's file at its first use, whatever the call: the process's own
 * appends staged through a descriptor it opened by name since are seen through the inherited one -- read,
 * fstat, lseek(SEEK_END) -- and a write through it lands after them (the kernel serves the inherited
 * descriptor: it is published first).
 *
 * How: the driver writes FILE ("A"), forks; the child leaves 0-2, puts FILE at 3 (O_RDWR|O_APPEND) and execs
 * this program again (the library starts afresh: nothing looked at yet). The exec'd program opens FILE by name,
 * appends "BBBB" (staged: no publish point yet) and only then uses descriptor 3 for the first time by the case's
 * call:
 *   read    pread(3) from 0 gives "ABBBB";
 *   fstat   fstat(3) says 5 bytes;
 *   seek    lseek(3, 0, SEEK_END) is 5;
 *   write   write(3, "C") (O_APPEND: the kernel's end) -- the file ends "ABBBBC";
 *   close   close(3) publishes nothing it must not, and open() gives 3 again (the lowest free number);
 *   pipe    descriptor 3 is a pipe's read end instead: read(3) gives what the driver wrote (not a file: passes).
 *   forklook  (test builds) a thread's first use of 3 stops inside the look, its number claimed (cue
 *           fdtab.inherited_look.claimed: a SIGUSR1 handler that waits), while the main thread forks; the fork
 *           child's lseek and pread of 3 must end (alarm 10 s) and read the file -- review29b #2: the child
 *           inherited the claim of a thread it does not have and spun for ever. Negative control: the fork
 *           child's clearing of claimed-not-known bits (fdtab.c up_fdtab_after_fork_child) removed.
 * Counter inherited_looks: 1 for the file cases (0 for pipe). Negative control: fdtab.c's up_fd_inherited_slow
 * returning NULL at once (nothing looked at: the inherited file passes to the kernel unseen) -- read gives 1
 * byte, seek 1, write lands before the staged appends ("ACBBBB"); fstat passes (the fstat's size is fixed by
 * inode); before the lazy looks (main 6810852: the start-up scan adopted it) every case passes (NO_COUNTERS=1:
 * no counter checks, for an older library).
 * Usage: shim_inherit_lazy DIR CASE (the driver) | DIR CASE child (the exec'd program). */
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "common/config.h"
#include "shim_test.h"

static char path[PATH_MAX];

static void expect_file(const char *want) {
    char got[64];
    int fd = OK(open(path, O_RDONLY));
    ssize_t r = OK(pread(fd, got, sizeof got, 0));
    OK(close(fd));
    CHECK(r == (ssize_t)strlen(want) && memcmp(got, want, (size_t)r) == 0, "the file holds %zd bytes '%.*s', expected '%s'",
          r, (int)(r > 0 ? r : 0), got, want);
}

static volatile int in_look, let_go;
static void hold_in_look(int sig) {
    (void)sig;
    in_look = 1;
    while (!let_go) sched_yield();
}
static void *first_use(void *arg) {
    (void)arg;
    char b;
    return (void *)(intptr_t)pread(3, &b, 1, 0);
}

static int forklook(void) {
    struct sigaction sa = {.sa_handler = hold_in_look, .sa_flags = SA_RESTART};
    OK(sigaction(SIGUSR1, &sa, NULL));
    pthread_t t;
    CHECK(pthread_create(&t, NULL, first_use, NULL) == 0, "child: pthread_create");
    for (int i = 0; i < 10000 && !in_look; i++) usleep(1000);
    CHECK(in_look, "child: the thread never stopped in the look (cue fdtab.inherited_look.claimed: a test build?)");
    pid_t pid = OK(fork());
    if (pid == 0) {
        alarm(10);
        char b = 0;
        if (lseek(3, 0, SEEK_CUR) < 0 || pread(3, &b, 1, 0) != 1 || b != 'A') _exit(2);
        _exit(0);
    }
    int st;
    OK(waitpid(pid, &st, 0));
    let_go = 1;
    void *r;
    pthread_join(t, &r);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: the fork child of a process inside a first look ended with "
          "status %#x (SIGALRM 14: it waited for ever for the look of a thread it does not have)", st);
    CHECK((intptr_t)r == 1, "child: the thread's pread gave %ld", (long)(intptr_t)r);
    printf("ok: forklook -- a fork during another thread's first look: the child looks again\n");
    return 0;
}

static int child(const char *c) {
    if (!strcmp(c, "forklook")) return forklook();
    if (!strcmp(c, "pipe")) {
        char buf[16];
        ssize_t r = OK(read(3, buf, sizeof buf));
        CHECK(r == 4 && !memcmp(buf, "pipe", 4), "child: the inherited pipe gave %zd bytes", r);
        uint64_t v[DK_C_COUNT];
        if (!getenv("NO_COUNTERS") && st_stats(getpid(), v)) CHECK(v[DK_C_inherited_looks] == 0, "child: inherited_looks %llu for a pipe",
                                         (unsigned long long)v[DK_C_inherited_looks]);
        printf("ok: an inherited pipe passes\n");
        return 0;
    }
    int fd = OK(open(path, O_WRONLY | O_APPEND));
    st_write_all(fd, "BBBB", 4); /* staged: no publish point until the close below */
    if (!strcmp(c, "read")) {
        char buf[64];
        ssize_t r = OK(pread(3, buf, sizeof buf, 0));
        CHECK(r == 5 && !memcmp(buf, "ABBBB", 5), "child: pread through the inherited descriptor gave %zd bytes '%.*s', "
              "expected 'ABBBB' (the staged appends unseen: it was not looked at)", r, (int)(r > 0 ? r : 0), buf);
    } else if (!strcmp(c, "fstat")) {
        struct stat st;
        OK(fstat(3, &st));
        CHECK(st.st_size == 5, "child: fstat of the inherited descriptor says %lld bytes, expected 5", (long long)st.st_size);
    } else if (!strcmp(c, "seek")) {
        off_t end = OK(lseek(3, 0, SEEK_END));
        CHECK(end == 5, "child: lseek(SEEK_END) of the inherited descriptor gave %lld, expected 5", (long long)end);
    } else if (!strcmp(c, "write")) {
        st_write_all(3, "C", 1);
    } else if (!strcmp(c, "close")) {
        OK(close(3));
        int again = OK(open("/dev/null", O_RDONLY));
        CHECK(again == 3, "child: open after the close gave %d, expected 3", again);
        OK(close(again));
    } else {
        FAIL("unknown case %s", c);
    }
    OK(close(fd));
    expect_file(!strcmp(c, "write") ? "ABBBBC" : "ABBBB");
    uint64_t v[DK_C_COUNT];
    CHECK(getenv("NO_COUNTERS") || st_stats(getpid(), v), "child: no stats file");
    CHECK(getenv("NO_COUNTERS") || v[DK_C_inherited_looks] == (!strcmp(c, "close") ? 0u : 1u), "child: inherited_looks %llu",
          (unsigned long long)v[DK_C_inherited_looks]);
    printf("ok: %s -- the inherited file is this process's at its first use\n", c);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) FAIL("usage: shim_inherit_lazy DIR CASE [child]");
    st_path(path, sizeof path, argv[1], "inherited");
    if (argc > 3 && !strcmp(argv[3], "child")) return child(argv[2]);
    st_watchdog(60);
    int fd = OK(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    st_write_all(fd, "A", 1);
    OK(close(fd));
    bool pipe_case = !strcmp(argv[2], "pipe");
    int p[2] = {-1, -1};
    if (pipe_case) {
        OK(pipe(p));
        st_write_all(p[1], "pipe", 4);
    }
    struct rlimit rl;
    OK(getrlimit(RLIMIT_NOFILE, &rl));
    int top = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 4096 ? 4096 : (int)rl.rlim_cur;
    pid_t pid = OK(fork());
    if (pid == 0) {
        int f = pipe_case ? p[0] : open(path, O_RDWR | O_APPEND);
        if (f < 0 || dup2(f, 3) != 3) _exit(3);
        /* the library's own descriptors are at its internal floor, far above: they answer EBADF */
        for (int n = 4; n < top; n++) close(n);
        char *args[] = {argv[0], argv[1], argv[2], "child", NULL};
        if (!strcmp(argv[2], "forklook")) setenv("DAXKIT_TEST_CRASH", "raise:10:fdtab.inherited_look.claimed:1", 1);
        execv("/proc/self/exe", args);
        _exit(4);
    }
    int st;
    OK(waitpid(pid, &st, 0));
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the exec'd child ended with status %#x", st);
    if (!pipe_case) expect_file(!strcmp(argv[2], "write") ? "ABBBBC" : !strcmp(argv[2], "forklook") ? "A" : "ABBBB");
    printf("ok: case %s\n", argv[2]);
    return 0;
}
