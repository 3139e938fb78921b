/* Description: lazy adoption (src/upath/pending.c). An opened managed file is looked at only when first
 * used, and a new file (or one opened while no managed file is open) passes its first
 * DAXKIT_ADOPT_AFTER_IOS reads to the kernel. Each case is a rule that keeps that right; each fails
 * without its rule. Run with DAXKIT_ADOPT_AFTER_IOS=4. argv[1]: managed directory, argv[2]: case.
 *   unused    opened and closed, opened + fstat + closed, opened and read 4 times: no adoption (counter
 *             `opens` unchanged).
 *   write     a write adopts at once (never passed to the kernel): the append is staged, not in the file
 *             before the publish point -- appends stay all or nothing across a crash.
 *   epoch     a file read through the kernel while another descriptor of it is adopted and appends: the
 *             first is adopted before its next read, which sees the staged appends.
 *   trunc     an open with O_TRUNC while another descriptor of the file has staged appends: adopted at
 *             once, the staged appends are forgotten (the kernel cut the file after them).
 *   fork      a pending descriptor is adopted before fork: the child's reads through it and the parent's
 *             later read share one offset.
 *   lockclose a pending descriptor closed while the process holds a POSIX lock on its file: the lock is
 *             gone (the kernel drops it), so taking it again re-reads the size another process changed.
 *   offset    a pending descriptor read and lseek'ed in the kernel, then adopted: its offset carries over.
 *   fstatpass a descriptor opened while another file has staged appends (tar cf's sources while its archive
 *             is staged) and fstat'ed by the program passes its reads when its inode is apart from the
 *             process's open files (no adoption); one whose inode has staged appends is adopted by that
 *             fstat and reads them.
 *   created   a file created with O_CREAT|O_EXCL (pending, allowed to pass its reads: a new inode) and,
 *             before its first use, opened again by name and appended to (staged): the first descriptor's
 *             fstat and read see the staged bytes -- the second one's adoption moved the epoch.
 *   createdwrite  the same, then the first descriptor's own first write (over byte 0): it must join the
 *             entry the second one's adoption made, not adopt the file keyless as new -- two entries of one
 *             inode saw none of each other's bytes (diff_*_posix_stage, session 17: 8 of 10 shrunk seeds).
 *   forkwrite a file created (pending), then fork before its first write: the child appends through the
 *             inherited descriptor and exits, then the parent appends through its own -- one open file
 *             description, so one offset: the parent's record goes after the child's, not over it.
 *   keyless   a created file's first write adopts it without an fstat (counter keyless_adoptions); then
 *             the same file opened again by name (the look-up keys it first), a dup and a close of the
 *             first descriptor, a fork, an fsync and a publish past a page: every view shows every byte, and
 *             the file ends as written. */
#include <spawn.h>
#include <sys/wait.h>

#include "shim_test.h"

#define AFTER 4 /* DAXKIT_ADOPT_AFTER_IOS the test runs with */

static uint64_t counters[DK_C_COUNT];
static uint64_t count(int c) {
    CHECK(st_stats(getpid(), counters), "no stats file for this process");
    return counters[c];
}

static void expect_bytes(const char *path, const char *want, size_t n) {
    char got[4096];
    int fd = OK(open(path, O_RDONLY));
    ssize_t r = pread(fd, got, sizeof got, 0);
    OK(close(fd));
    CHECK(r == (ssize_t)n, "%s: %zd bytes, expected %zu", path, r, n);
    for (size_t i = 0; i < n; i++) CHECK(got[i] == want[i], "%s: byte %zu is '%c', expected '%c'", path, i, got[i], want[i]);
    CHECK(st_ksize(path) == (long long)n, "%s: kernel size %lld, expected %zu", path, st_ksize(path), n);
}

static void make_file(const char *path, const char *text) {
    int fd = OK(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    st_write_all(fd, text, strlen(text));
    OK(close(fd));
}

static int case_unused(const char *dir) {
    char *a = st_fmt("%s/a", dir);
    make_file(a, "0123456789");
    uint64_t opens = count(DK_C_opens);
    int fd = OK(open(a, O_RDWR));
    OK(close(fd));
    fd = OK(open(a, O_RDONLY));
    struct stat st;
    OK(fstat(fd, &st));
    CHECK(st.st_size == 10, "fstat size %lld", (long long)st.st_size);
    char buf[4];
    for (int i = 0; i < AFTER; i++) CHECK(read(fd, buf, 1) == 1 && buf[0] == '0' + i, "read %d", i);
    OK(close(fd));
    CHECK(count(DK_C_opens) == opens, "%llu adoptions of descriptors never used past the kernel",
          (unsigned long long)(count(DK_C_opens) - opens));
    CHECK(count(DK_C_lazy_closes) >= 2, "lazy closes not counted");
    printf("ok: unused\n");
    return 0;
}

static int case_write(const char *dir) {
    char *p = st_fmt("%s/w", dir);
    uint64_t opens = count(DK_C_opens);
    int fd = OK(open(p, O_WRONLY | O_CREAT | O_EXCL, 0644));
    CHECK(write(fd, "abc", 3) == 3, "write");
    CHECK(count(DK_C_opens) == opens + 1, "the write did not adopt the file");
    CHECK(st_ksize(p) == 0, "the append is in the kernel file (%lld bytes) before any publish point", st_ksize(p));
    OK(close(fd));
    expect_bytes(p, "abc", 3);
    printf("ok: write\n");
    return 0;
}

static int case_epoch(const char *dir) {
    char *p = st_fmt("%s/e", dir);
    make_file(p, "aaaa");
    int fd1 = OK(open(p, O_RDONLY));
    char buf[16];
    CHECK(read(fd1, buf, 1) == 1, "read 1"); /* through the kernel: pending */
    int fd2 = OK(open(p, O_WRONLY | O_APPEND));
    CHECK(write(fd2, "BBBB", 4) == 4, "append"); /* adopted: staged */
    CHECK(st_ksize(p) == 4, "the append is not staged: the case tests nothing");
    ssize_t r = read(fd1, buf, sizeof buf); /* must not pass: fd2's file is active */
    CHECK(r == 7 && !memcmp(buf, "aaaBBBB", 7), "read %zd bytes after another descriptor's append, expected 7", r);
    OK(close(fd1));
    OK(close(fd2));
    expect_bytes(p, "aaaaBBBB", 8);
    printf("ok: epoch\n");
    return 0;
}

static int case_trunc(const char *dir) {
    char *p = st_fmt("%s/t", dir);
    int fd1 = OK(open(p, O_RDWR | O_CREAT, 0644));
    struct stat st;
    OK(fstat(fd1, &st));
    OK(fcntl(fd1, F_SETFD, FD_CLOEXEC)); /* F_SETFD keeps it pending */
    OK(ftruncate(fd1, 0));               /* adopted */
    CHECK(write(fd1, "staged", 6) == 6, "append");
    CHECK(st_ksize(p) == 0, "the append is not staged (kernel size %lld): the case tests nothing", st_ksize(p));
    int fd2 = OK(open(p, O_WRONLY | O_TRUNC));
    OK(close(fd2));
    OK(close(fd1)); /* publish: nothing left to move */
    CHECK(st_ksize(p) == 0, "size %lld after O_TRUNC cut the file: staged appends came back", st_ksize(p));
    printf("ok: trunc\n");
    return 0;
}

/* The child reads through the inherited descriptor while the parent waits, then the parent reads while
 * the child is still alive (the child's exit would hand its offset back to the kernel). */
static int case_fork(const char *dir) {
    char *p = st_fmt("%s/f", dir);
    make_file(p, "0123456789abcdef");
    int fd = OK(open(p, O_RDONLY));
    int done[2], go[2];
    OK(pipe(done));
    OK(pipe(go));
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        char x;
        for (int i = 0; i < 2 * AFTER; i++)
            if (read(fd, &x, 1) != 1 || x != "0123456789abcdef"[i]) _exit(1);
        if (write(done[1], "d", 1) != 1 || read(go[0], &x, 1) != 1) _exit(1);
        _exit(0);
    }
    char x, c;
    CHECK(read(done[0], &x, 1) == 1, "the child did not read");
    CHECK(read(fd, &c, 1) == 1, "parent read");
    CHECK(write(go[1], "g", 1) == 1, "go");
    int status;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed");
    OK(close(fd));
    CHECK(c == '8', "the parent read '%c' after the child read 8 bytes of the shared description, expected '8'", c);
    printf("ok: fork\n");
    return 0;
}

/* Another program (spawned: a fork would make this process re-read every size anyway) takes the write
 * lock, which only works if ours was dropped, and cuts the file. */
static int lockclose_child(const char *path) {
    int cfd = open(path, O_RDWR);
    struct flock w = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (cfd < 0 || fcntl(cfd, F_SETLK, &w) != 0 || ftruncate(cfd, 100) != 0) return 1;
    return 0;
}

static int case_lockclose(const char *dir, const char *self) {
    char *p = st_fmt("%s/l", dir);
    int fd = OK(open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    char data[8192];
    memset(data, 'x', sizeof data);
    struct flock lk = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    OK(fcntl(fd, F_SETLK, &lk)); /* adopted: the lock is followed */
    CHECK(pwrite(fd, data, sizeof data, 0) == (ssize_t)sizeof data, "write");
    OK(fsync(fd));
    lk.l_type = F_UNLCK;
    OK(fcntl(fd, F_SETLK, &lk));
    lk.l_type = F_RDLCK;
    OK(fcntl(fd, F_SETLK, &lk));
    char buf[64];
    CHECK(pread(fd, buf, sizeof buf, 0) == (ssize_t)sizeof buf, "read"); /* size read while the lock is held */
    int other = OK(open(p, O_RDONLY)); /* pending */
    OK(close(other));                  /* the kernel drops our lock on the file */
    extern char **environ;
    char *args[] = {(char *)self, (char *)dir, "lockclose_child", p, NULL};
    pid_t pid;
    CHECK(posix_spawn(&pid, self, NULL, NULL, args, environ) == 0, "posix_spawn");
    int status;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the other program could not lock and cut the file: our lock was not dropped?");
    OK(fcntl(fd, F_SETLK, &lk)); /* taken again: must not count as "held since the size was read" */
    ssize_t r = pread(fd, data, sizeof data, 0);
    CHECK(r == 100, "read %zd bytes of a file another process cut to 100 under its lock", r);
    OK(close(fd));
    printf("ok: lockclose\n");
    return 0;
}

static int case_offset(const char *dir) {
    char *p = st_fmt("%s/o", dir);
    make_file(p, "0123456789");
    int fd = OK(open(p, O_RDONLY));
    uint64_t opens = count(DK_C_opens);
    char buf[4];
    CHECK(read(fd, buf, 2) == 2 && buf[1] == '1', "read 1");
    CHECK(lseek(fd, 5, SEEK_SET) == 5, "lseek");
    OK(fsync(fd)); /* may pass: still pending */
    for (int i = 1; i < AFTER; i++) CHECK(read(fd, buf, 1) == 1 && buf[0] == '4' + i, "read %d", i + 1);
    CHECK(count(DK_C_opens) == opens, "adopted before %d reads", AFTER);
    CHECK(lseek(fd, 0, SEEK_CUR) == 8, "offset");
    CHECK(read(fd, buf, 1) == 1, "read 5 (adopted here)");
    CHECK(count(DK_C_opens) == opens + 1, "not adopted after %d reads", AFTER);
    CHECK(buf[0] == '8', "read '%c' at the adoption, expected '8': the offset did not carry over", buf[0]);
    CHECK(lseek(fd, 0, SEEK_CUR) == 9, "offset %lld after adoption, expected 9", (long long)lseek(fd, 0, SEEK_CUR));
    OK(close(fd));
    printf("ok: offset\n");
    return 0;
}

/* fd's fstat, then a read from its offset, show the staged bytes `want` (the file holds nothing else). */
static void expect_staged(int fd, const char *want, const char *who) {
    size_t n = strlen(want);
    struct stat st;
    OK(fstat(fd, &st));
    CHECK(st.st_size == (off_t)n, "%s: fstat size %lld, %zu bytes staged", who, (long long)st.st_size, n);
    char buf[16];
    ssize_t r = read(fd, buf, sizeof buf);
    CHECK(r == (ssize_t)n && !memcmp(buf, want, n), "%s: read %zd bytes of %zu staged: passed to the kernel?", who, r, n);
}

static int case_fstatpass(const char *dir) {
    char *a = st_fmt("%s/pa", dir), *b = st_fmt("%s/pb", dir);
    make_file(b, "0123456789"); /* its entry is closed, with nothing unpublished */
    int fa = OK(open(a, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    CHECK(write(fa, "xyz", 3) == 3, "append");
    CHECK(st_ksize(a) == 0, "the append is not staged (kernel size %lld): the case tests nothing", st_ksize(a));
    uint64_t opens = count(DK_C_opens), passes = count(DK_C_lazy_fstat_passes);
    int fd = OK(open(b, O_RDONLY)); /* another file is active: no passing by the open's rule */
    struct stat st;
    OK(fstat(fd, &st));
    CHECK(st.st_size == 10, "fstat size %lld", (long long)st.st_size);
    char buf[16];
    for (int i = 0; i < AFTER; i++) CHECK(read(fd, buf, 1) == 1 && buf[0] == '0' + i, "read %d", i);
    OK(close(fd));
    CHECK(count(DK_C_opens) == opens, "%llu adoptions of a descriptor whose file the fstat showed apart",
          (unsigned long long)(count(DK_C_opens) - opens));
    CHECK(count(DK_C_lazy_fstat_passes) == passes + 1, "the pass was not counted");
    /* the same steps on the file with staged appends: its reads must come from daxkit */
    fd = OK(open(a, O_RDONLY));
    expect_staged(fd, "xyz", "a descriptor opened after the appends");
    OK(close(fd));
    OK(close(fa));
    expect_bytes(a, "xyz", 3);
    printf("ok: fstatpass\n");
    return 0;
}

static int case_created(const char *dir) {
    char *p = st_fmt("%s/c", dir);
    int fd1 = OK(open(p, O_RDWR | O_CREAT | O_EXCL, 0644)); /* pending; a new inode: may pass */
    int fd2 = OK(open(p, O_WRONLY | O_APPEND));
    CHECK(write(fd2, "abc", 3) == 3, "append");
    CHECK(st_ksize(p) == 0, "the append is not staged (kernel size %lld): the case tests nothing", st_ksize(p));
    expect_staged(fd1, "abc", "the created descriptor");
    OK(close(fd2));
    OK(close(fd1));
    expect_bytes(p, "abc", 3);
    printf("ok: created\n");
    return 0;
}

static int case_createdwrite(const char *dir) {
    char *p = st_fmt("%s/cw", dir);
    int fd1 = OK(open(p, O_RDWR | O_CREAT | O_EXCL, 0644)); /* pending: keyless at its first write, if alone */
    int fd2 = OK(open(p, O_RDWR | O_APPEND));
    CHECK(write(fd2, "abc", 3) == 3, "append");
    CHECK(st_ksize(p) == 0, "the append is not staged (kernel size %lld): the case tests nothing", st_ksize(p));
    CHECK(write(fd1, "X", 1) == 1, "the created descriptor's first write");
    char got[8] = {0};
    CHECK(pread(fd2, got, sizeof got, 0) == 3 && !memcmp(got, "Xbc", 3), "the appending descriptor reads '%.3s', not 'Xbc'", got);
    CHECK(pread(fd1, got, sizeof got, 0) == 3 && !memcmp(got, "Xbc", 3), "the created descriptor reads '%.3s', not 'Xbc'", got);
    OK(close(fd1));
    OK(close(fd2));
    expect_bytes(p, "Xbc", 3);
    printf("ok: createdwrite\n");
    return 0;
}

static int case_forkwrite(const char *dir) {
    char *p = st_fmt("%s/fw", dir);
    int fd = OK(open(p, O_WRONLY | O_CREAT | O_EXCL, 0644)); /* pending */
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) _exit(write(fd, "child-", 6) == 6 ? 0 : 1);
    int status;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's write failed");
    CHECK(write(fd, "parent", 6) == 6, "parent write");
    off_t at = lseek(fd, 0, SEEK_CUR);
    CHECK(at == 12, "offset %lld after the child's 6 bytes and the parent's 6, expected 12", (long long)at);
    OK(close(fd));
    expect_bytes(p, "child-parent", 12);
    printf("ok: forkwrite\n");
    return 0;
}

/* A created file, written once through fd (adopted without its inode number), and what must stay right. */
static int case_keyless(const char *dir) {
    char *p = st_fmt("%s/k", dir), *q = st_fmt("%s/k2", dir);
    uint64_t keyless = count(DK_C_keyless_adoptions);
    int fd = OK(open(p, O_RDWR | O_CREAT | O_EXCL, 0644));
    CHECK(write(fd, "abc", 3) == 3, "append");
    CHECK(count(DK_C_keyless_adoptions) == keyless + 1, "the first write did not adopt the created file keyless");
    CHECK(st_ksize(p) == 0, "the append is not staged (kernel size %lld): the case tests nothing", st_ksize(p));
    int again = OK(open(p, O_RDONLY)); /* by name: its adoption looks the inode up, which keys the first */
    expect_staged(again, "abc", "the file opened again by name");
    OK(close(again));
    /* a dup, then the first descriptor closed: the file lives on through the dup */
    int fd2 = OK(open(q, O_RDWR | O_CREAT | O_EXCL, 0644));
    CHECK(write(fd2, "xy", 2) == 2, "append k2");
    int dup2nd = OK(dup(fd2));
    OK(close(fd2));
    int other = OK(open(st_fmt("%s/k3", dir), O_RDWR | O_CREAT | O_EXCL, 0644)); /* takes fd2's number */
    CHECK(other == fd2, "the closed number %d was not given again (%d): the case tests less", fd2, other);
    CHECK(write(dup2nd, "z", 1) == 1, "append k2 through the dup");
    again = OK(open(q, O_RDONLY));
    expect_staged(again, "xyz", "k2 opened again after its first descriptor closed");
    OK(close(again));
    OK(close(other));
    OK(close(dup2nd));
    expect_bytes(q, "xyz", 3);
    /* a fork while keyless: the child appends through the shared description, then the parent */
    OK(close(fd));
    OK(unlink(p));
    fd = OK(open(p, O_WRONLY | O_CREAT | O_EXCL, 0644));
    CHECK(write(fd, "P1", 2) == 2, "append before the fork");
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) _exit(write(fd, "C", 1) == 1 ? 0 : 1);
    int status;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's write failed");
    CHECK(write(fd, "P2", 2) == 2, "append after the fork");
    OK(close(fd));
    expect_bytes(p, "P1CP2", 5);
    /* an fsync, and a publish of three pages (a published-size record names the file by its number) */
    OK(unlink(p));
    fd = OK(open(p, O_WRONLY | O_CREAT | O_EXCL, 0644));
    static char big[3 * 4096 + 10];
    memset(big, 'b', sizeof big);
    CHECK(write(fd, big, sizeof big) == (ssize_t)sizeof big, "big append");
    OK(fsync(fd));
    CHECK(st_ksize(p) == (long long)sizeof big, "kernel size %lld after fsync, %zu written", st_ksize(p), sizeof big);
    OK(close(fd));
    printf("ok: keyless\n");
    return 0;
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    st_require_library();
    st_watchdog(120);
    const char *c = argc > 2 ? argv[2] : "";
    const char *after = getenv("DAXKIT_ADOPT_AFTER_IOS");
    if (!after || atoi(after) != AFTER) SKIP("run with DAXKIT_ADOPT_AFTER_IOS=%d", AFTER);
    if (!strcmp(c, "unused")) return case_unused(dir);
    if (!strcmp(c, "epoch")) return case_epoch(dir);
    if (!strcmp(c, "write")) return case_write(dir);
    if (!strcmp(c, "trunc")) return case_trunc(dir);
    if (!strcmp(c, "fork")) return case_fork(dir);
    if (!strcmp(c, "lockclose")) return case_lockclose(dir, argv[0]);
    if (!strcmp(c, "lockclose_child")) return lockclose_child(argv[3]);
    if (!strcmp(c, "offset")) return case_offset(dir);
    if (!strcmp(c, "fstatpass")) return case_fstatpass(dir);
    if (!strcmp(c, "created")) return case_created(dir);
    if (!strcmp(c, "createdwrite")) return case_createdwrite(dir);
    if (!strcmp(c, "forkwrite")) return case_forkwrite(dir);
    if (!strcmp(c, "keyless")) return case_keyless(dir);
    FAIL("unknown case '%s'", c);
}
