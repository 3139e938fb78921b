/* Description: the library's start-up -- the recovery of what a killed process left (size records, staging,
 * DAXKIT_ATOMIC logs, strict's logs) and the scan of inherited descriptors -- holds no descriptor at a number
 * the program could be given (common/internal_fd.h: every such open is a window, moved to the internal floor).
 * At start-up a thread a constructor started before the library's may already be opening files.
 *
 * How (test builds; crashpoint.h's start-up cues): a child of the driver writes, fsyncs and writes again three
 * managed files -- s.log, e.ext, a.db (the ctest entry routes them: stage, extend, DAXKIT_ATOMIC; or strict mode)
 * -- and is killed. A program started then recovers them: run once with DAXKIT_TEST_CRASH_START=count:FILE,
 * it lists the start-up's sites. Then for each site and occurrence (8 at most each) the leftovers are made again
 * and the program is started with raise:19:SITE:N: it stops itself there, and the driver lists /proc/PID/fd --
 * nothing but 0-2 below the internal floor (dk_internal_fd_floor of the child's RLIMIT_NOFILE) -- then lets it
 * run to its end (exit 0). The sites must include the adoption scan's and at least one recovery site (else the
 * leftovers were not what the test meant). Usage: shim_startup_fds DIR | DIR child. */
#include <dirent.h>
#include <sys/resource.h>

#include "common/config.h"
#include "common/crashpoint.h"
#include "shim_test.h"

#define SITES_MAX 32
#define PER_SITE_MAX 8

static const char *names[] = {"s.log", "e.ext", "a.db"};

/* A child that leaves work for the next start-up: two bursts of appends per file, an fsync between, SIGKILL. */
static void leave(const char *dir) {
    pid_t pid = OK(fork());
    if (pid == 0) {
        char p[PATH_MAX], b[8192];
        memset(b, 'x', sizeof b);
        for (int k = 0; k < 3; k++) {
            st_path(p, sizeof p, dir, names[k]);
            int fd = open(p, O_RDWR | O_CREAT | O_APPEND, 0644);
            if (fd < 0) _exit(2);
            for (int i = 0; i < 20; i++) {
                if (write(fd, b, sizeof b) != (ssize_t)sizeof b) _exit(3);
                if (i == 9 && fsync(fd) != 0) _exit(4);
            }
        }
        kill(getpid(), SIGKILL);
        _exit(5);
    }
    int st;
    OK(waitpid(pid, &st, 0));
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the leaver ended with status %#x", st);
}

static int floor_now(void) {
    struct rlimit rl;
    OK(getrlimit(RLIMIT_NOFILE, &rl));
    bool limited = rl.rlim_cur != RLIM_INFINITY;
    return dk_internal_fd_floor(limited ? (long)rl.rlim_cur : 0, limited);
}

/* This program again, exec'd with DAXKIT_TEST_CRASH_START=spec, only 0-2 open below the floor. */
static pid_t start(const char *self, const char *dir, const char *spec, int floor) {
    pid_t pid = OK(fork());
    if (pid == 0) {
        for (int n = 3; n < floor; n++) close(n);
        setenv("DAXKIT_TEST_CRASH_START", spec, 1);
        char *args[] = {(char *)self, (char *)dir, "child", NULL};
        execv("/proc/self/exe", args);
        _exit(4);
    }
    return pid;
}

/* The descriptors of stopped process pid below floor other than 0-2: printed; their count. */
static int low_fds(pid_t pid, int floor, const char *at) {
    char dirpath[64], link[PATH_MAX], target[PATH_MAX];
    snprintf(dirpath, sizeof dirpath, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(dirpath);
    CHECK(d, "opendir %s: %s", dirpath, strerror(errno));
    int bad = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long n = strtol(e->d_name, &end, 10);
        if (*end || e->d_name[0] == '.' || n <= 2 || n >= floor) continue;
        snprintf(link, sizeof link, "%s/%ld", dirpath, n);
        ssize_t l = readlink(link, target, sizeof target - 1);
        target[l < 0 ? 0 : l] = 0;
        NOTE("at %s: descriptor %ld of the library below the floor %d: %s", at, n, floor, target);
        bad++;
    }
    closedir(d);
    return bad;
}

int main(int argc, char **argv) {
    if (argc < 2) FAIL("usage: shim_startup_fds DIR [child]");
    if (argc > 2 && strcmp(argv[2], "child") == 0) return 0; /* the start-up is the test */
    st_watchdog(240);
    const char *dir = argv[1];
    int floor = floor_now();
    CHECK(floor > 5, "internal floor %d: no room below it for the test", floor);

    /* the start-up's sites, counted */
    char counts[PATH_MAX], spec[PATH_MAX + 16];
    snprintf(counts, sizeof counts, "%s/../startup-counts", dir);
    unlink(counts);
    leave(dir);
    snprintf(spec, sizeof spec, "count:%s", counts);
    int st;
    OK(waitpid(start(argv[0], dir, spec, floor), &st, 0));
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the counting run ended with status %#x", st);
    FILE *cf = fopen(counts, "r");
    CHECK(cf, "no counts in %s: a test build? (DAXKIT_TEST_CRASH_START)", counts);
    static char site[SITES_MAX][DK_CRASH_SITE_BYTES_MAX + 1];
    unsigned long occ[SITES_MAX];
    unsigned nsites = 0;
    bool adopt = false;
    while (nsites < SITES_MAX && fscanf(cf, "%96s %lu", site[nsites], &occ[nsites]) == 2) {
        if (!strcmp(site[nsites], "upath.adopt_inherited.scanning")) adopt = true;
        nsites++;
    }
    fclose(cf);
    CHECK(adopt && nsites >= 2, "the start-up reached %u sites (the adoption scan %s): the leftovers were not "
          "recovered at start-up?", nsites, adopt ? "among them" : "not");

    unsigned stops = 0;
    int bad = 0;
    for (unsigned i = 0; i < nsites; i++) {
        for (unsigned long n = 1; n <= occ[i] && n <= PER_SITE_MAX; n++) {
            leave(dir);
            char at[DK_CRASH_SITE_BYTES_MAX + 24];
            snprintf(at, sizeof at, "%.96s:%lu", site[i], n);
            snprintf(spec, sizeof spec, "raise:19:%s", at);
            pid_t pid = start(argv[0], dir, spec, floor);
            OK(waitpid(pid, &st, WUNTRACED));
            CHECK(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP, "the start-up never stopped at %s (status %#x), "
                  "which the counting run reached", at, st);
            stops++;
            bad += low_fds(pid, floor, at);
            kill(pid, SIGCONT);
            OK(waitpid(pid, &st, 0));
            CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the run stopped at %s ended with status %#x", at, st);
        }
    }
    CHECK(!bad, "%d descriptor(s) of the library's start-up at numbers the program can see (below %d)", bad, floor);
    printf("ok: %u stops at %u start-up sites, no descriptor of the library below %d\n", stops, nsites, floor);
    return 0;
}
