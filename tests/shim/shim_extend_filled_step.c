/* Extend-strategy appends that fill their extension step exactly (kernel size == logical size) are published
 * like any others (session 22, diff seed 793996801070). Before, the publish saw no extension to cut and left
 * the published size behind and the published-size record valid, so:
 *   crash: 2 MiB appended and fsynced, then the process killed -- recovery rolled the file back to the
 *          record's size: 0 bytes, every acknowledged byte lost;
 *   copy:  a copy_file_range into the file past its end (the kernel's write) was ignored (the record pinned
 *          the file) and cut by the close: the file 2,097,152 bytes where the kernel's is 2,118,658.
 * argv[1]: managed directory; run with DAXKIT_APPEND=extend. Exit 0 pass, 1 fail, 77 skip. */
#include "shim_test.h"

#include <sys/wait.h>

enum { STEP = 2 << 20, REC = 4096 };

static void append_step(int fd) {
    static char b[REC];
    for (uint64_t off = 0; off < STEP; off += REC) {
        st_fill(b, 7, off, REC);
        st_write_all(fd, b, REC);
    }
}

/* In a process started after the crash (a fresh library, which recovers the dead process's record): the
 * file holds the fsynced step. */
static int check_after_crash(const char *p) {
    int fd = open(p, O_RDONLY);
    CHECK(fd >= 0, "open %s: %s", p, strerror(errno));
    off_t size = st_fsize(fd);
    CHECK(size == STEP, "after the crash the file is %lld bytes; %d were appended and fsynced", (long long)size, STEP);
    static char b[STEP];
    CHECK(pread(fd, b, STEP, 0) == STEP, "pread: %s", strerror(errno));
    long bad = st_mismatch(b, 7, 0, STEP);
    CHECK(bad < 0, "after the crash byte %ld differs from what was fsynced", bad);
    close(fd);
    return 0;
}

static void run_child(char *const argv[], bool crash) {
    pid_t c = fork();
    CHECK(c >= 0, "fork: %s", strerror(errno));
    if (c == 0) {
        execv("/proc/self/exe", argv);
        _exit(5);
    }
    int st = 0;
    CHECK(waitpid(c, &st, 0) == c, "waitpid: %s", strerror(errno));
    if (crash) CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the writer ended with status %#x, not killed", st);
    else CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the check after the crash failed (status %#x)", st);
}

/* The writer (its own process): appends one step, fsyncs, dies. */
static int write_then_die(const char *p) {
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0, "open %s: %s", p, strerror(errno));
    append_step(fd);
    CHECK(fsync(fd) == 0, "fsync: %s", strerror(errno));
    kill(getpid(), SIGKILL); /* a process crash: no close, no exit handler */
    return 4;
}

static void copy_past_end(const char *p) {
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0, "open %s: %s", p, strerror(errno));
    append_step(fd);
    int d = dup(fd);
    CHECK(d >= 0, "dup: %s", strerror(errno));
    CHECK(lseek(fd, 0, SEEK_SET) == 0, "lseek: %s", strerror(errno));
    loff_t out = STEP + 21505;
    CHECK(copy_file_range(fd, NULL, d, &out, 1, 0) == 1, "copy_file_range: %s", strerror(errno));
    CHECK(st_fsize(d) == STEP + 21506, "after the copy fstat says %lld, want %d", (long long)st_fsize(d), STEP + 21506);
    CHECK(close(d) == 0 && close(fd) == 0, "close: %s", strerror(errno));
    struct stat sb;
    OK(stat(p, &sb));
    CHECK(sb.st_size == STEP + 21506, "after the close the file is %lld bytes, want %d (the copied byte cut off)",
          (long long)sb.st_size, STEP + 21506);
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    const char *a = getenv("DAXKIT_APPEND");
    if (!a || strcmp(a, "extend") != 0) SKIP("needs DAXKIT_APPEND=extend");
    char p[PATH_MAX];
    st_path(p, sizeof p, dir, "crash.bin");
    if (argc > 2 && strcmp(argv[2], "writer") == 0) return write_then_die(p);
    if (argc > 2 && strcmp(argv[2], "check") == 0) return check_after_crash(p);
    st_watchdog(60);
    run_child((char *[]){argv[0], argv[1], "writer", NULL}, true);
    run_child((char *[]){argv[0], argv[1], "check", NULL}, false);
    st_path(p, sizeof p, dir, "copy.bin");
    copy_past_end(p);
    NOTE("a step filled exactly: fsynced appends survive a crash; a copy_file_range past the end survives the close");
    return 0;
}
