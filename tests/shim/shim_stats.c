/* Description: `daxkit stats PID --json` shows exactly the operations this process did on a managed file,
 * while it runs: 1 open, 7 appends (bytes counted), 3 overwrites, 4 reads, 2 fsyncs, 2 publishes, no
 * pass-through, no errors. The CLI is started with raw clone/execve (no publish point) and its output read
 * from a pipe while this process waits. argv[1]: managed directory. */
#include "shim_test.h"

static char json[8192];

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
    for (;;) {
        long r = syscall(SYS_read, p[0], json + got, sizeof json - 1 - got);
        if (r <= 0) break;
        got += (size_t)r;
    }
    json[got] = 0;
    syscall(SYS_close, p[0]);
    int status = 0;
    syscall(SYS_wait4, child, &status, 0, NULL);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "daxkit stats %s --json failed: %s", pid, json);
}

static unsigned long long counter(const char *name) {
    char key[64];
    snprintf(key, sizeof key, "\"%s\": ", name);
    const char *p = strstr(json, key);
    CHECK(p != NULL, "daxkit stats output lacks %s: %s", name, json);
    return strtoull(p + strlen(key), NULL, 10);
}

static void expect(const char *name, unsigned long long want) {
    unsigned long long got = counter(name);
    CHECK(got == want, "daxkit stats: %s = %llu, expected %llu (output: %s)", name, got, want, json);
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    st_require_library();
    st_watchdog(30);
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "stats");
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    static uint8_t buf[65536];
    st_fill(buf, 3, 0, sizeof buf);
    unsigned long long app_bytes = 0;
    for (int i = 0; i < 4; i++) st_write_all(fd, buf, 1000), app_bytes += 1000; /* 4 appends */
    OK(fsync(fd));                                                                 /* fsync 1, publish 1 */
    for (int i = 0; i < 3; i++) st_pwrite_all(fd, buf, 512, i * 1000);            /* 3 overwrites */
    for (int i = 0; i < 3; i++) st_write_all(fd, buf, 4096), app_bytes += 4096;    /* 3 appends (offset at end) */
    for (int i = 0; i < 4; i++) CHECK(pread(fd, buf, 100, i * 100) == 100, "pread"); /* 4 reads */
    OK(fdatasync(fd));                                                             /* fsync 2, publish 2 */
    run_stats();
    printf("daxkit stats: %s", json);
    expect("opens", 1);
    expect("appends", 7);
    expect("append_bytes", app_bytes);
    expect("writes", 3);
    expect("write_bytes", 3 * 512);
    expect("reads", 4);
    expect("read_bytes", 400);
    expect("fsyncs", 2);
    expect("publishes", 2);
    expect("passthrough", 0);
    expect("errors", 0);
    OK(close(fd));
    printf("ok: daxkit stats shows exactly the operations done\n");
    return 0;
}
