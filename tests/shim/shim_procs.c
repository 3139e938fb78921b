/* Description: descriptors across dup, fork, exec, vfork and posix_spawn, and stdio across fork, on a
 * managed file with appends not yet published -- content and offsets must be those the kernel gives:
 *   dup        dup/dup2/dup3/F_DUPFD/F_DUPFD_CLOEXEC share one offset; the copy outlives the original
 *   fork_lockstep  parent and child alternate writes through one inherited descriptor (shared offset):
 *              the records land in order, without overlap; the parent's offset afterwards is the end
 *   fork_race  parent and child write 400 records each through the inherited descriptor at once: every
 *              record present once, none torn
 *   fork_visible   appends made before fork are visible to the child (inherited fd, a fresh open, and a
 *              program without the library)
 *   exec_child a forked child execs `sh -c 'printf ... >&3'` on the inherited descriptor, then the parent
 *              continues at the shared offset
 *   exec_self  the program execs itself with the descriptor open; the new image continues at the offset
 *   spawn      posix_spawn with file actions (dup2 of a managed fd onto stdout, open of a managed file)
 *   vfork      vfork + exec of a shell appending to the inherited descriptor
 *   stdio      a FILE stream written by parent and child around fork
 * argv[1]: managed directory; argv[2]: case (or "all"). */
#include <spawn.h>
#include <sys/wait.h>

#include "shim_test.h"

extern char **environ;
static const char *dir;
static char self_exe[PATH_MAX];

static void expect_text(const char *path, const char *want, const char *what) {
    size_t len;
    char *got = st_slurp(path, &len);
    CHECK(len == strlen(want) && memcmp(got, want, len) == 0, "%s: file holds '%s' (%zu bytes), expected '%s'", what,
          got, len, want);
    free(got);
    CHECK(st_check("text", (char *)path, (char *)want) == 0, "%s: the kernel file (seen without the library) differs",
          what);
}

static void wait_ok(pid_t pid, const char *what) {
    int status;
    while (waitpid(pid, &status, 0) < 0) CHECK(errno == EINTR, "waitpid: %s", strerror(errno));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: child status 0x%x", what, status);
}

static off_t cur(int fd) { return lseek(fd, 0, SEEK_CUR); }

/* ---- dup ---- */

static void case_dup(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "dup");
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    int d1 = OK(dup(fd));
    int d2 = OK(dup2(fd, 40));
    int d3 = OK(dup3(fd, 41, O_CLOEXEC));
    int d4 = OK(fcntl(fd, F_DUPFD, 50));
    int d5 = OK(fcntl(fd, F_DUPFD_CLOEXEC, 60));
    CHECK(d2 == 40 && d3 == 41 && d4 >= 50 && d5 >= 60, "dup numbers %d %d %d %d", d2, d3, d4, d5);
    int fds[] = {fd, d1, d2, d3, d4, d5};
    const char *parts[] = {"aa", "bbb", "c", "dddd", "ee", "f"};
    off_t want = 0;
    for (int i = 0; i < 6; i++) {
        st_write_all(fds[i], parts[i], strlen(parts[i]));
        want += (off_t)strlen(parts[i]);
        for (int k = 0; k < 6; k++) CHECK(cur(fds[k]) == want, "after write %d: offset of copy %d is %lld, expected %lld", i, k, (long long)cur(fds[k]), (long long)want);
    }
    OK(lseek(d4, 2, SEEK_SET));
    CHECK(cur(d1) == 2, "lseek through one copy not seen by another");
    char b[4] = {0};
    CHECK(read(d5, b, 3) == 3 && !memcmp(b, "bbb", 3), "read through a copy at the shared offset got '%s'", b);
    CHECK(cur(fd) == 5, "read did not move the shared offset");
    OK(close(fd));
    OK(lseek(d1, 0, SEEK_END));
    st_write_all(d2, "G", 1); /* the original is closed: copies still work */
    /* dup2 onto an existing managed descriptor closes that one first */
    char path2[PATH_MAX];
    st_path(path2, sizeof path2, dir, "dup_other");
    int o = OK(open(path2, O_RDWR | O_CREAT | O_TRUNC, 0644));
    st_write_all(o, "other", 5);
    OK(dup2(d1, o));
    st_write_all(o, "H", 1);
    for (int i = 1; i < 6; i++) OK(close(fds[i]));
    OK(close(o));
    expect_text(path, "aabbbcddddeefGH", "dup");
    expect_text(path2, "other", "dup2 over a managed descriptor");
    printf("ok: dup family shares one offset\n");
}

/* ---- fork ---- */

static void case_fork_lockstep(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "fork_lockstep");
    int fd = OK(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    st_write_all(fd, "header\n", 7); /* an append not yet published when fork comes */
    int p2c[2], c2p[2];
    OK(pipe(p2c));
    OK(pipe(c2p));
    const int rounds = 40;
    pid_t pid = OK(fork());
    char tok = 't';
    if (pid == 0) {
        for (int i = 0; i < rounds; i++) {
            CHECK(read(p2c[0], &tok, 1) == 1, "child: pipe");
            char line[32];
            int n = snprintf(line, sizeof line, "child %02d\n", i);
            st_write_all(fd, line, (size_t)n);
            CHECK(write(c2p[1], &tok, 1) == 1, "child: pipe");
        }
        OK(close(fd));
        _exit(0);
    }
    for (int i = 0; i < rounds; i++) {
        char line[32];
        int n = snprintf(line, sizeof line, "parent %02d\n", i);
        st_write_all(fd, line, (size_t)n);
        CHECK(write(p2c[1], &tok, 1) == 1, "parent: pipe");
        CHECK(read(c2p[0], &tok, 1) == 1, "parent: pipe");
    }
    wait_ok(pid, "fork_lockstep child");
    st_write_all(fd, "trailer\n", 8); /* the child is gone: the descriptor is ours again */
    char want[4096];
    size_t w = (size_t)snprintf(want, sizeof want, "header\n");
    for (int i = 0; i < rounds; i++) w += (size_t)snprintf(want + w, sizeof want - w, "parent %02d\nchild %02d\n", i, i);
    w += (size_t)snprintf(want + w, sizeof want - w, "trailer\n");
    CHECK(cur(fd) == (off_t)w, "parent offset %lld after the child's writes, expected %zu", (long long)cur(fd), w);
    OK(close(fd));
    expect_text(path, want, "fork_lockstep");
    close(p2c[0]), close(p2c[1]), close(c2p[0]), close(c2p[1]);
    printf("ok: parent and child alternate through one inherited descriptor\n");
}

static void case_fork_race(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "fork_race");
    int fd = OK(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    uint8_t rec[512];
    st_rec_make(rec, 0, 0);
    st_write_all(fd, rec, st_rec_len(0, 0));
    pid_t pid = OK(fork());
    uint16_t me = pid == 0 ? 1 : 0;
    for (uint32_t seq = me == 0 ? 1 : 0; seq < 400; seq++) {
        st_rec_make(rec, me, seq);
        st_write_all(fd, rec, st_rec_len(me, seq));
    }
    if (pid == 0) _exit(0);
    wait_ok(pid, "fork_race child");
    OK(close(fd));
    CHECK(st_check("records", path, "2", "400") == 0, "fork_race: records lost, doubled or torn");
    printf("ok: parent and child write concurrently through one inherited descriptor\n");
}

static void case_fork_visible(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "fork_visible");
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    static uint8_t buf[300000];
    st_fill(buf, 7, 0, sizeof buf);
    st_write_all(fd, buf, sizeof buf);
    pid_t pid = OK(fork());
    if (pid == 0) {
        static uint8_t got[sizeof buf];
        CHECK(pread(fd, got, sizeof got, 0) == (ssize_t)sizeof got && !memcmp(got, buf, sizeof got),
              "child: inherited descriptor does not show the parent's appends");
        int f2 = OK(open(path, O_RDONLY));
        CHECK(st_fsize(f2) == (off_t)sizeof buf, "child: a fresh open sees size %lld", (long long)st_fsize(f2));
        CHECK(pread(f2, got, sizeof got, 0) == (ssize_t)sizeof got && !memcmp(got, buf, sizeof got),
              "child: a fresh open does not show the parent's appends");
        OK(close(f2));
        CHECK(st_check("pattern", path, "0", st_fmt("%zu", sizeof buf), "7") == 0,
              "child: the kernel file lacks appends published at fork");
        _exit(0);
    }
    wait_ok(pid, "fork_visible child");
    OK(close(fd));
    printf("ok: appends made before fork are visible to the child\n");
}

/* ---- exec ---- */

static void case_exec_child(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "exec_child");
    int fd = OK(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    st_write_all(fd, "parent-before\n", 14);
    pid_t pid = OK(fork());
    if (pid == 0) {
        if (dup2(fd, 3) != 3) _exit(120);
        execl("/bin/sh", "sh", "-c", "printf 'shell one\\n' >&3; printf 'shell two\\n' >&3", (char *)NULL);
        _exit(121);
    }
    wait_ok(pid, "exec_child shell");
    CHECK(cur(fd) == 14 + 20, "parent offset %lld after the shell wrote, expected 34", (long long)cur(fd));
    st_write_all(fd, "parent-after\n", 13);
    OK(close(fd));
    expect_text(path, "parent-before\nshell one\nshell two\nparent-after\n", "exec_child");
    printf("ok: a forked child execs a shell appending to the inherited descriptor\n");
}

static int exec_self_stage2(int fd) {
    CHECK(cur(fd) == 6, "after exec: offset %lld, expected 6", (long long)cur(fd));
    CHECK(st_fsize(fd) == 6, "after exec: size %lld, expected 6", (long long)st_fsize(fd));
    st_write_all(fd, "second\n", 7);
    CHECK(cur(fd) == 13, "after exec: offset %lld after a write, expected 13", (long long)cur(fd));
    char b[16] = {0};
    CHECK(pread(fd, b, 13, 0) == 13 && !memcmp(b, "first\nsecond\n", 13), "after exec: pread got '%s'", b);
    OK(close(fd));
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "exec_self");
    expect_text(path, "first\nsecond\n", "exec_self");
    printf("ok: the descriptor's state survives execve of the program itself\n");
    return 0;
}

static void case_exec_self(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "exec_self");
    pid_t pid = OK(fork()); /* run the exec in a child so that "all" continues afterwards */
    if (pid == 0) {
        int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
        st_write_all(fd, "first\n", 6);
        char fdarg[16];
        snprintf(fdarg, sizeof fdarg, "%d", fd);
        execl(self_exe, self_exe, dir, "exec_self_stage2", fdarg, (char *)NULL);
        FAIL("execl %s: %s", self_exe, strerror(errno));
    }
    wait_ok(pid, "exec_self");
}

static void case_spawn(void) {
    char path[PATH_MAX], path2[PATH_MAX];
    st_path(path, sizeof path, dir, "spawn_out");
    st_path(path2, sizeof path2, dir, "spawn_opened");
    int fd = OK(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    st_write_all(fd, "before spawn\n", 13);
    int f2 = OK(open(path2, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    st_write_all(f2, "kept\n", 5); /* published at spawn; the child appends after it */
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd, 1);
    posix_spawn_file_actions_addopen(&fa, 4, path2, O_WRONLY | O_APPEND, 0);
    char *argv[] = {"sh", "-c", "printf 'from child\\n'; printf 'opened\\n' >&4", NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, environ);
    CHECK(rc == 0, "posix_spawn: %s", strerror(rc));
    posix_spawn_file_actions_destroy(&fa);
    wait_ok(pid, "spawned shell");
    CHECK(cur(fd) == 24, "offset %lld after the spawned program wrote, expected 24", (long long)cur(fd));
    st_write_all(fd, "after\n", 6);
    st_write_all(f2, "P\n", 2); /* f2's own offset is 5: this overwrites the start of the child's line */
    OK(close(fd));
    OK(close(f2));
    expect_text(path, "before spawn\nfrom child\nafter\n", "spawn (dup2 action)");
    expect_text(path2, "kept\nP\nened\n", "spawn (open action)");
    printf("ok: posix_spawn with dup2 and open file actions on managed files\n");
}

static void case_vfork(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "vfork");
    int fd = OK(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    st_write_all(fd, "pre\n", 4);
    pid_t pid = vfork();
    if (pid == 0) {
        if (dup2(fd, 3) != 3) _exit(120);
        execl("/bin/sh", "sh", "-c", "printf 'vforked\\n' >&3", (char *)NULL);
        _exit(121);
    }
    CHECK(pid > 0, "vfork: %s", strerror(errno));
    wait_ok(pid, "vfork child");
    st_write_all(fd, "post\n", 5);
    CHECK(cur(fd) == 17, "offset %lld, expected 17", (long long)cur(fd));
    OK(close(fd));
    expect_text(path, "pre\nvforked\npost\n", "vfork");
    printf("ok: vfork + exec appends through the inherited descriptor\n");
}

static void case_stdio(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "stdio");
    FILE *fp = fopen(path, "w");
    CHECK(fp != NULL, "fopen: %s", strerror(errno));
    fputs("parent one\n", fp);
    CHECK(fflush(fp) == 0, "fflush");
    fflush(stdout);
    pid_t pid = OK(fork());
    if (pid == 0) {
        fputs("child\n", fp);
        fprintf(fp, "child %d\n", 2);
        _exit(fclose(fp) == 0 ? 0 : 1);
    }
    wait_ok(pid, "stdio child");
    fputs("parent two\n", fp);
    CHECK(ftell(fp) == 11 + 6 + 8 + 11, "ftell %ld", ftell(fp));
    CHECK(fclose(fp) == 0, "fclose: %s", strerror(errno));
    expect_text(path, "parent one\nchild\nchild 2\nparent two\n", "stdio across fork");
    /* read back with stdio too */
    fp = fopen(path, "r");
    char line[64];
    int n = 0;
    while (fgets(line, sizeof line, fp)) n++;
    CHECK(n == 4, "fgets read %d lines", n);
    fclose(fp);
    printf("ok: a stdio stream written around fork\n");
}

int main(int argc, char **argv) {
    dir = st_dir(argc, argv);
    const char *which = argc > 2 ? argv[2] : "all";
    ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
    CHECK(n > 0, "readlink /proc/self/exe");
    self_exe[n] = 0;
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!strcmp(which, "exec_self_stage2")) return exec_self_stage2(atoi(argv[3]));
    st_require_library();
    st_watchdog(60);
    static const struct {
        const char *name;
        void (*fn)(void);
    } cases[] = {{"dup", case_dup},         {"fork_lockstep", case_fork_lockstep}, {"fork_race", case_fork_race},
                 {"fork_visible", case_fork_visible}, {"exec_child", case_exec_child}, {"exec_self", case_exec_self},
                 {"spawn", case_spawn},     {"vfork", case_vfork},                 {"stdio", case_stdio}};
    bool any = false;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (strcmp(which, "all") && strcmp(which, cases[i].name)) continue;
        cases[i].fn();
        any = true;
    }
    CHECK(any, "unknown case '%s'", which);
    return 0;
}
