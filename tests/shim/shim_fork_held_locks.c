/* Description: a fork child of a multi-threaded program must not inherit a library mutex another thread held
 * at the fork (review 15, finding 8). A root's mutex is held for milliseconds by the first use of the root in
 * a process -- the medium probe, the size-record file's creation, strict mode's log and staging file -- and
 * the fork handlers neither took it nor made it new in the child: the child's own first open, write or
 * strict create in the root then waited for a thread it does not have, for ever (main f41c8f3, strict: 3 of
 * 10 rounds). Each round is a fresh process X (so the root is new to it): X starts thread B, whose first
 * create + write + fsync in the root takes the root's mutex, and forks at a random moment 0-2 ms later; the
 * child creates and writes a file in the root and _exits. X gives the child 5 s. Rounds: argv[2] (default 40).
 * argv[1]: managed directory. Exit 0 pass, 1 fail (a child hung), 77 skip. */
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>

#include "shim_test.h"

static const char *dir;
static int round_no;

static void create_write(const char *name) {
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, name);
    int fd = open(p, O_RDWR | O_CREAT, 0644);
    if (fd < 0) return;
    char b[4096] = {1};
    if (write(fd, b, sizeof b) == (ssize_t)sizeof b) fsync(fd);
    close(fd);
}

static void *first_use(void *u) {
    (void)u;
    create_write(st_fmt("b%d", round_no));
    return NULL;
}

/* In X: 0 when the child ended, 1 when it hung (killed). */
static int one_round(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, first_use, NULL)) return 2;
    struct timespec d = {0, (rand() % 2000) * 1000L};
    nanosleep(&d, NULL);
    pid_t c = fork();
    if (c == 0) {
        create_write(st_fmt("c%d", round_no));
        _exit(0);
    }
    pthread_join(t, NULL);
    if (c < 0) return 2;
    for (int i = 0; i < 500; i++) { /* 5 s */
        if (waitpid(c, NULL, WNOHANG) == c) return 0;
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
    int rounds = argc > 2 ? atoi(argv[2]) : 40, hung = 0;
    st_watchdog((unsigned)(rounds * 6 + 30));
    for (round_no = 0; round_no < rounds; round_no++) {
        srand((unsigned)round_no * 7919u + 1);
        pid_t x = fork();
        if (x < 0) FAIL("fork: %s", strerror(errno));
        if (x == 0) _exit(one_round());
        int st;
        if (waitpid(x, &st, 0) != x) FAIL("waitpid: %s", strerror(errno));
        if (!WIFEXITED(st) || WEXITSTATUS(st) == 2) FAIL("round %d: the forking process failed (status %d)", round_no, st);
        if (WEXITSTATUS(st) == 1) {
            hung++;
            NOTE("round %d: the fork child hung (killed after 5 s)", round_no);
        }
    }
    CHECK(hung == 0, "%d of %d fork children hung on a library mutex another thread held at the fork", hung, rounds);
    printf("ok: %d rounds, no fork child hung\n", rounds);
    return 0;
}
