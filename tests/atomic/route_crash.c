/* DAXKIT_ATOMIC crash test: an unmodified program (route_writer: overwrites, appends, holes, truncates,
 * fsync every few operations) runs under `daxkit run --atomic` and is SIGKILLed at random points, again and
 * again on the same file. Each restart recovers the file (library start-up, or in odd rounds the route's open)
 * and reports what it found:
 * that must be the state -- content hash AND size -- of the last completed fsync, or of the one in flight
 * when the kill came. A last run ends normally; the file read through the kernel, without daxkit, must then
 * be its final state exactly (the route cut the file back to its size at close). Every fourth killed round is
 * recovered by `daxkit recover DIR` instead, and the file read through the kernel must be a committed state.
 *
 *   route_crash [DIR|-] [ROUNDS] [mmap]     policy from DAXKIT_ATOMIC_POLICY; SEED=n reproduces (printed)
 *
 * With `mmap`: the same over DAXKIT_ATOMIC_MMAP -- mmap_writer stores into a MAP_SHARED mapping of a 1 MiB
 * file and calls msync(MS_SYNC); every restart must find the state of one completed msync. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct state {
    char hash[17];
    unsigned long long size;
    int valid;
};

static const char *build;
static char dir[4096], file[4200];
static int mmap_mode;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* direct: the program alone (the kernel path). startup_off: library start-up leaves DAXKIT_ATOMIC logs alone,
 * so that the route's open recovers the file (both recovery paths are exercised, round by round). */
static pid_t spawn(int out_fd, unsigned long long seed, long ops, int direct, int startup_off) {
    pid_t p = fork();
    if (p != 0) return p;
    dup2(out_fd, 1);
    if (startup_off) setenv("DAXKIT_ATOMIC_RECOVER_START", "0", 1);
    char prog[4200], seed_s[32], ops_s[32], glob[4200];
    snprintf(prog, sizeof prog, "%s/tests/%s", build, mmap_mode ? "mmap_writer" : "route_writer");
    snprintf(seed_s, sizeof seed_s, "%llu", seed);
    snprintf(ops_s, sizeof ops_s, "%ld", ops);
    snprintf(glob, sizeof glob, "%s/*", dir);
    /* ROUTE_SYNC_EVERY: operations between two fsyncs (default 7); a few thousand make a group larger than a
     * small DAXKIT_ATOMIC_LOG_BYTES (the journal grows: atomic_route_crash_journal-grow) */
    const char *every = getenv("ROUTE_SYNC_EVERY") ? getenv("ROUTE_SYNC_EVERY") : "7";
    if (direct) execl(prog, prog, file, seed_s, ops_s, every, (char *)NULL);
    char daxkit[4200];
    snprintf(daxkit, sizeof daxkit, "%s/bin/daxkit", build);
    execl(daxkit, daxkit, "run", "--dir", dir, mmap_mode ? "--atomic-mmap" : "--atomic", glob, "--", prog, file, seed_s,
          ops_s, every, (char *)NULL);
    _exit(127);
}

/* Reads "what HASH SIZE" lines until EOF; start gets the first, synced/pending the last of each. */
static void read_lines(int fd, struct state *start, struct state *synced, struct state *pending) {
    char buf[1 << 16];
    size_t used = 0;
    for (;;) {
        ssize_t r = read(fd, buf + used, sizeof buf - used - 1);
        if (r <= 0) break;
        used += (size_t)r;
        buf[used] = 0;
        char *line = buf, *nl;
        while ((nl = strchr(line, '\n'))) {
            *nl = 0;
            char what[16];
            struct state s = {.valid = 1};
            if (sscanf(line, "%15s %16s %llu", what, s.hash, &s.size) == 3) {
                if (!strcmp(what, "start")) *start = s;
                else if (!strcmp(what, "pending")) *pending = s;
                else if (!strcmp(what, "synced")) *synced = s;
            }
            line = nl + 1;
        }
        used = (size_t)(buf + used - line);
        memmove(buf, line, used);
    }
}

static int same(const struct state *a, const struct state *b) {
    return a->valid && b->valid && !strcmp(a->hash, b->hash) && a->size == b->size;
}

int main(int argc, char **argv) {
    build = getenv("DAXKIT_BUILD");
    if (!build) {
        printf("SKIP: DAXKIT_BUILD is not set (run through ctest)\n");
        return 77;
    }
    mmap_mode = argc > 3 && !strcmp(argv[3], "mmap");
    int keep = argc > 1 && strcmp(argv[1], "-") != 0;
    if (keep) snprintf(dir, sizeof dir, "%s", argv[1]);
    /* A directory of its own: pids wrap at 32768 here, and a dir named by pid that a failed run left (with its
     * logs) would be met again by a later run. */
    else if (!mkdtemp(strcpy(dir, "/dev/shm/dk_route_crash.XXXXXX"))) return printf("FAIL: mkdtemp\n"), 1;
    int rounds = argc > 2 ? atoi(argv[2]) : 60;
    mkdir(dir, 0755);
    snprintf(file, sizeof file, "%s/data", dir);
    unlink(file);
    unsigned long long seed = getenv("SEED") ? strtoull(getenv("SEED"), NULL, 0) : (unsigned long long)time(NULL);
    const char *policy = getenv("DAXKIT_ATOMIC_POLICY");
    printf("route_crash: SEED=%llu dir %s rounds %d %s\n", seed, dir, rounds,
           mmap_mode ? "mmap + msync (DAXKIT_ATOMIC_MMAP)" : policy ? policy : "hybrid");
    srand((unsigned)seed);
    struct state committed = {.hash = "cbf29ce484222325", .size = 0, .valid = 1}; /* the empty file */
    if (mmap_mode) { /* a file of 1 MiB of zeros, made through the kernel */
        int fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || ftruncate(fd, 1 << 20) != 0 || fsync(fd) != 0) return 2;
        close(fd);
        unsigned long long h = 14695981039346656037ull;
        for (int i = 0; i < 1 << 20; i++) h = h * 1099511628211ull; /* (h ^ 0) * prime */
        snprintf(committed.hash, sizeof committed.hash, "%016llx", h);
        committed.size = 1 << 20;
    }
    struct state in_flight = {0};
    int kills_mid = 0, recovered_by_command = 0;
    for (int round = 0; round <= rounds; round++) {
        int last = round == rounds;
        int p[2];
        if (pipe(p) != 0) return 2;
        pid_t pid = spawn(p[1], seed + (unsigned long long)round, last ? 400 : 1000000, 0, round % 2);
        close(p[1]);
        if (!last) {
            /* 0-150 ms (ROUTE_CRASH_MAX_MS): start-up and recovery too */
            long max_us = getenv("ROUTE_CRASH_MAX_MS") ? atol(getenv("ROUTE_CRASH_MAX_MS")) * 1000 : 150000;
            uint64_t delay_ns = (uint64_t)(rand() % max_us) * 1000ull;
            uint64_t t0 = now_ns();
            while (now_ns() - t0 < delay_ns) usleep(200);
            kill(pid, SIGKILL);
        }
        struct state start = {0}, synced = {0}, pending = {0};
        read_lines(p[0], &start, &synced, &pending);
        close(p[0]);
        int status;
        waitpid(pid, &status, 0);
        if (start.valid) {
            if (!same(&start, &committed) && !same(&start, &in_flight)) {
                printf("FAIL round %d: recovered %s size %llu; last fsync %s size %llu, in flight %s size %llu "
                       "(SEED=%llu)\n", round, start.hash, start.size, committed.hash, committed.size,
                       in_flight.valid ? in_flight.hash : "-", in_flight.size, seed);
                return 1;
            }
            committed = start;
            kills_mid++;
        }
        /* No start line: killed in start-up or recovery, before any write; both candidates stay. */
        if (start.valid) {
            if (synced.valid) committed = synced;
            if (pending.valid && !same(&pending, &synced)) in_flight = pending;
            else in_flight = (struct state){0};
        }
        if (!last && !mmap_mode && round % 4 == 3) {
            /* `daxkit recover DIR` instead of the next open: the kernel view must then be a committed state. */
            char cmd[9000];
            snprintf(cmd, sizeof cmd, "'%s/bin/daxkit' recover '%s' > /dev/null", build, dir);
            if (system(cmd) != 0) {
                printf("FAIL round %d: daxkit recover failed\n", round);
                return 1;
            }
            int q[2];
            if (pipe(q) != 0) return 2;
            pid_t rp = spawn(q[1], 1, 0, 1, 0);
            close(q[1]);
            struct state k = {0}, ks = {0}, kp = {0};
            read_lines(q[0], &k, &ks, &kp);
            close(q[0]);
            waitpid(rp, NULL, 0);
            if (!same(&k, &committed) && !same(&k, &in_flight)) {
                printf("FAIL round %d: after daxkit recover the kernel file is %s size %llu; last fsync %s size %llu "
                       "(SEED=%llu)\n", round, k.hash, k.size, committed.hash, committed.size, seed);
                return 1;
            }
            committed = k;
            in_flight = (struct state){0};
            recovered_by_command++;
        }
        if (last && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
            printf("FAIL: the last run did not end normally (status %d)\n", status);
            return 1;
        }
        if (!last && WIFEXITED(status) && WEXITSTATUS(status) == 1) {
            printf("FAIL round %d: route_writer found a read or size different from its model (SEED=%llu)\n", round,
                   seed);
            return 1;
        }
    }
    /* Through the kernel, no daxkit: exact bytes and size. */
    int p[2];
    if (pipe(p) != 0) return 2;
    pid_t pid = spawn(p[1], 1, 0, 1, 0);
    close(p[1]);
    struct state start = {0}, synced = {0}, pending = {0};
    read_lines(p[0], &start, &synced, &pending);
    waitpid(pid, NULL, 0);
    if (!same(&start, &committed)) {
        printf("FAIL: after a clean close the kernel file is %s size %llu, the program's last state %s size %llu\n",
               start.hash, start.size, committed.hash, committed.size);
        return 1;
    }
    printf("route_crash: %d rounds (%d restarts saw a recovered file, %d recoveries by daxkit recover), final size "
           "%llu: ok\n", rounds, kills_mid, recovered_by_command, committed.size);
    if (!keep) {
        char cmd[4300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0) return 0;
    }
    return 0;
}
