/* Description: a fork child of a multi-threaded program must not inherit a library mutex another thread held
 * at the fork -- the child would wait for a thread it does not have, for ever. The library raises SIGUSR1 on
 * cue inside the mutex (DAXKIT_TEST_CRASH=raise:10:SITE:1, test builds; stdio: where it was); thread B's handler tells the main
 * thread, which forks, and holds the mutex until the parent says it forked or HOLD_MS passed (a fork that
 * takes the mutex first waits that long). So each case holds the mutex at the fork in every run:
 *   root (SITE managed.root_probe.locked, or strict.log_create.root_locked in strict mode): B's first create
 *     in the root probes the medium (and makes strict mode's log) under the root's mutex; the child creates
 *     and writes a file in the root (review 15, finding 8: made new in the child, 08ea564; with random timing
 *     7 of 40 children hung without it).
 *   detach (SITE atomic_route.detach.unrouted, DAXKIT_ATOMIC=*.adb): B's SEEK_DATA on a routed file
 *     detaches its route under detach_mu (no file-table lock); the child creates, writes and closes a routed
 *     file, whose close detaches it (session 16: the fork now takes detach_mu and detaches every route).
 *   stdio (SITE stdio.cookie_of.walk): B's fileno() of a managed FILE looks its cookie up in the table of
 *     cookie streams (under its mutex until session 16: the child's fopen of a managed file waited for it;
 *     the table has no lock now); the child fopens, writes and fcloses a managed file.
 *   adopt (SITE atomic_route.adopt.engine_open, DAXKIT_ATOMIC=*.adb; no mutex held -- a window): B's create
 *     of a routed file has opened its engine, not attached the route yet; the fork makes B's descriptor
 *     shared. B then writes 4 KiB and closes: the file must hold them (session 19: a route attached after
 *     the fork cut the file to the engine's size at the close); the child creates, writes, closes its own.
 * Each round is a fresh process X (its counts and the root's state new): X starts B and waits for the cue,
 * forks, and gives the child 5 s. Rounds: argv[3] (default 2). argv[1]: managed directory, argv[2]: the case.
 * Exit 0 pass, 1 fail (a child hung), 77 skip. */
#include <poll.h>
#include <pthread.h>
#include <sys/wait.h>

#include "shim_test.h"

enum { ROOT, DETACH, STDIO, ADOPT };
enum { HOLD_MS = 700, CUE_WAIT_MS = 20000 };
static const char *dir;
static int mode, round_no, cue[2], forked[2];

/* B, inside the library's mutex: the cue, then held until the fork is made (or HOLD_MS). Raw system calls. */
static void on_cue(int sig) {
    (void)sig;
    syscall(SYS_write, cue[1], "c", (size_t)1);
    struct pollfd p = {.fd = forked[0], .events = POLLIN};
    syscall(SYS_poll, &p, 1, HOLD_MS);
}

static void create_write(const char *name, bool and_close) {
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, name);
    int fd = open(p, O_RDWR | O_CREAT, 0644);
    if (fd < 0) _exit(3);
    char b[4096] = {1};
    if (write(fd, b, sizeof b) != (ssize_t)sizeof b) _exit(3);
    if (mode == ADOPT && !and_close && fsync(fd) != 0) _exit(3); /* B: committed, whatever serves it */
    if (mode == ROOT) fsync(fd);
    if (mode == DETACH && !and_close) lseek(fd, 0, SEEK_DATA); /* the route detached: the cue */
    close(fd);
}

static void stdio_use(const char *name, bool is_b) {
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, name);
    FILE *fp = fopen(p, "w");
    if (!fp) _exit(3);
    if (is_b && fileno(fp) < 0) _exit(3); /* the cookie looked up: the cue */
    if (fwrite("stdio\n", 1, 6, fp) != 6 || fclose(fp) != 0) _exit(3);
}

static void *b_thread(void *u) {
    (void)u;
    if (mode == STDIO) stdio_use(st_fmt("b%d", round_no), true);
    else create_write(st_fmt(mode == DETACH || mode == ADOPT ? "b%d.adb" : "b%d", round_no), false);
    return NULL;
}

static bool cue_came(void) {
    struct pollfd p = {.fd = cue[0], .events = POLLIN};
    char c;
    return syscall(SYS_poll, &p, 1, CUE_WAIT_MS) == 1 && syscall(SYS_read, cue[0], &c, (size_t)1) == 1;
}

/* In X: 0 when the child ended, 1 when it hung (killed), 2 an error, 4 no cue, 5 B's file lost its write. */
static int one_round(void) {
    if (pipe2(cue, O_CLOEXEC) || pipe2(forked, O_CLOEXEC)) return 2;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_cue;
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t t;
    if (pthread_create(&t, NULL, b_thread, NULL)) return 2;
    if (!cue_came()) return 4;
    pid_t c = fork();
    if (c == 0) {
        if (mode == STDIO) stdio_use(st_fmt("c%d", round_no), false);
        else create_write(st_fmt(mode == DETACH || mode == ADOPT ? "c%d.adb" : "c%d", round_no), true);
        _exit(0);
    }
    syscall(SYS_write, forked[1], "f", (size_t)1);
    pthread_join(t, NULL);
    if (c < 0) return 2;
    char bp[PATH_MAX];
    st_path(bp, sizeof bp, dir, st_fmt("b%d.adb", round_no));
    if (mode == ADOPT && st_ksize(bp) != 4096) return 5; /* B's acknowledged write lost */
    int st = 0;
    for (int i = 0; i < 500; i++) { /* 5 s */
        if (waitpid(c, &st, WNOHANG) == c) return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 2;
        struct timespec w = {0, 10000000};
        nanosleep(&w, NULL);
    }
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    return 1;
}

int main(int argc, char **argv) {
    st_require_library();
    dir = st_dir(argc, argv);
    const char *names[] = {"root", "detach", "stdio", "adopt"};
    mode = -1;
    for (int i = 0; argc > 2 && i < 4; i++)
        if (strcmp(argv[2], names[i]) == 0) mode = i;
    if (mode < 0) SKIP("usage: shim_fork_held_locks DIR root|detach|stdio|adopt [ROUNDS]");
    if (!getenv("DAXKIT_TEST_CRASH")) SKIP("needs DAXKIT_TEST_CRASH=raise:10:SITE:1 (a test build)");
    int rounds = argc > 3 ? atoi(argv[3]) : 2, hung = 0;
    st_watchdog((unsigned)(rounds * 30 + 30));
    for (round_no = 0; round_no < rounds; round_no++) {
        pid_t x = fork();
        if (x < 0) FAIL("fork: %s", strerror(errno));
        if (x == 0) _exit(one_round());
        int st;
        if (waitpid(x, &st, 0) != x) FAIL("waitpid: %s", strerror(errno));
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 4,
              "round %d: the library's cue never came (the site was not reached: DAXKIT_TEST_CRASH?)", round_no);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 2, "round %d: the forking process or its child failed (status 0x%x)",
              round_no, st);
        CHECK(WEXITSTATUS(st) != 5, "round %d: B's routed file does not hold its acknowledged 4 KiB after a fork "
              "between its engine's open and its route's attach", round_no);
        if (WEXITSTATUS(st) == 1) {
            hung++;
            NOTE("round %d: the fork child hung (killed after 5 s)", round_no);
        }
    }
    CHECK(hung == 0, "%s: %d of %d fork children hung on a library mutex another thread held at the fork", argv[2],
          hung, rounds);
    printf("ok: %s, %d rounds, the mutex held at each fork, no fork child hung\n", argv[2], rounds);
    return 0;
}
