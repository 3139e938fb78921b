/* The DAXKIT_ATOMIC counters add up (run under `daxkit run --atomic` with a 2 MiB log, by route_counts.sh):
 * every commit is counted, the early ones too -- a transaction larger than the log commits early
 * (atomic_log_full), and atomic_commits must equal fsyncs + early commits. The counters are read with
 * `daxkit stats PID --json`, started with raw clone/execve (a fork would detach the route: a commit).
 *
 *   route_counts FILE        exit 0 pass, 1 fail */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char json[16384];

#define CHECK(cond, ...) \
    do { \
        if (!(cond)) { printf("FAIL line %d: ", __LINE__), printf(__VA_ARGS__), printf("\n"), exit(1); } \
    } while (0)

static void run_stats(void) {
    int p[2];
    CHECK(syscall(SYS_pipe2, p, 0) == 0, "pipe2");
    const char *b = getenv("DAXKIT_BUILD");
    CHECK(b && *b, "DAXKIT_BUILD not set");
    static char cli[PATH_MAX], pid[16];
    snprintf(cli, sizeof cli, "%s/bin/daxkit", b);
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    char *argv[] = {cli, "stats", pid, "--json", NULL};
    static char *envp[] = {"PATH=/usr/bin:/bin", NULL};
    long child = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (child == 0) {
        syscall(SYS_dup2, p[1], 1);
        syscall(SYS_execve, cli, argv, envp);
        syscall(SYS_exit_group, 126);
    }
    syscall(SYS_close, p[1]);
    size_t got = 0;
    for (long r; (r = syscall(SYS_read, p[0], json + got, sizeof json - 1 - got)) > 0;) got += (size_t)r;
    json[got] = 0;
    syscall(SYS_close, p[0]);
    int status = 0;
    syscall(SYS_wait4, child, &status, 0, NULL);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "daxkit stats failed: %s", json);
}

static unsigned long long counter(const char *name) {
    char key[64];
    snprintf(key, sizeof key, "\"%s\": ", name);
    const char *p = strstr(json, key);
    CHECK(p != NULL, "daxkit stats output lacks %s: %s", name, json);
    return strtoull(p + strlen(key), NULL, 10);
}

int main(int argc, char **argv) {
    CHECK(argc > 1, "usage: route_counts FILE");
    int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0, "open");
    static char buf[64 << 10];
    int fsyncs = 0;
    for (int txn = 0; txn < 3; txn++) { /* 3 transactions of 5 MiB each: larger than the 2 MiB log */
        memset(buf, 'a' + txn, sizeof buf);
        for (int i = 0; i < 80; i++) CHECK(pwrite(fd, buf, sizeof buf, (off_t)i * (off_t)sizeof buf) == sizeof buf, "pwrite");
        CHECK(fsync(fd) == 0, "fsync");
        fsyncs++;
    }
    run_stats();
    unsigned long long commits = counter("atomic_commits"), early = counter("atomic_log_full");
    printf("route_counts: %d fsyncs, atomic_log_full %llu, atomic_commits %llu\n", fsyncs, early, commits);
    CHECK(early > 0, "no early commit: the transactions fit the log, the test proves nothing");
    CHECK(commits == (unsigned long long)fsyncs + early, "atomic_commits %llu != fsyncs %d + early commits %llu",
          commits, fsyncs, early);
    CHECK(close(fd) == 0, "close");
    printf("ok: every commit counted, the early ones too\n");
    return 0;
}
