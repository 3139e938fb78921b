/* Description: the tests' stats reader (shim_test.h st_stats) checks the file's layout before it maps it
 * (session 27; wal26's note): a stats file written by a library built with other counters than the test fails
 * the test with a message that says so, instead of a SIGBUS (a test built with more counters mapped past the
 * shorter file's end) or sums read at the wrong slot stride (a library with more counters). Fake stats files of
 * a pid that is not running, in a directory of their own (DAXKIT_STATS_DIR), each read by st_stats in a child:
 *   fewer    the writer has 16 counters fewer (its file 8 KiB shorter): exit 1 with "different builds", no signal
 *   more     the writer has 16 counters more: exit 1 with "different builds" (before: wrong sums, no failure)
 *   same     this build's layout, counters 1 + 2 in two slots: st_stats true, the sum 3 (positive control)
 *   making   magic not yet set (the library still making it): st_stats false, no failure
 * Negative control: st_stats without the check dies of SIGBUS in `fewer` and returns in `more`.
 * Usage: shim_stats_layout DIR. Exit 0 pass, 1 fail. */
#include "shim_test.h"

#define FAKE_PID 0x7ffffff0 /* above pid_max's limit (4,194,304): never a running process */

static char sdir[PATH_MAX + 32];

/* A stats file of FAKE_PID as a library with `counters` counters writes it: counter 0 is 1 in slot 0 and 2 in
 * slot 1, at that library's slot stride. */
static void write_fake(uint32_t counters, uint64_t magic) {
    size_t stride = (counters * sizeof(uint64_t) + 63) / 64 * 64;
    size_t head = offsetof(struct dk_stats_file, slot);
    size_t size = head + DK_STATS_SLOTS * stride;
    char *b = calloc(1, size);
    CHECK(b, "calloc");
    struct dk_stats_file *f = (struct dk_stats_file *)b;
    f->magic = magic;
    f->counters = counters;
    f->slots = DK_STATS_SLOTS;
    f->pid = FAKE_PID;
    f->slots_used = 2;
    uint64_t one = 1, two = 2;
    memcpy(b + head, &one, sizeof one);
    memcpy(b + head + stride, &two, sizeof two);
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/stats.%d", sdir, FAKE_PID);
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    st_write_all(fd, b, size);
    OK(close(fd));
    free(b);
}

/* st_stats(FAKE_PID) in a child: its status; its stderr in err. The child prints "read N" when st_stats
 * returned true with counter 0 = N, "none" when false. */
static int read_in_child(char *err, size_t errlen, char *out, size_t outlen) {
    int pe[2], po[2];
    OK(pipe(pe));
    OK(pipe(po));
    pid_t pid = OK(fork());
    if (pid == 0) {
        dup2(pe[1], 2);
        dup2(po[1], 1);
        uint64_t v[DK_C_COUNT];
        bool ok = st_stats(FAKE_PID, v);
        if (ok) printf("read %llu\n", (unsigned long long)v[0]);
        else printf("none\n");
        fflush(stdout);
        _exit(0);
    }
    close(pe[1]);
    close(po[1]);
    ssize_t n = read(pe[0], err, errlen - 1);
    err[n > 0 ? n : 0] = 0;
    n = read(po[0], out, outlen - 1);
    out[n > 0 ? n : 0] = 0;
    close(pe[0]);
    close(po[0]);
    int st;
    OK(waitpid(pid, &st, 0));
    return st;
}

static void expect_refused(const char *what, uint32_t counters) {
    write_fake(counters, DK_STATS_MAGIC);
    char err[2048], out[256];
    int st = read_in_child(err, sizeof err, out, sizeof out);
    CHECK(!WIFSIGNALED(st), "%s: st_stats died of signal %d (%s) on a file of %u counters (this build: %d)", what,
          WTERMSIG(st), strsignal(WTERMSIG(st)), counters, (int)DK_C_COUNT);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1,
          "%s: st_stats on a file of %u counters (this build: %d) did not fail the test: exit %d, printed '%s'", what,
          counters, (int)DK_C_COUNT, WEXITSTATUS(st), out);
    CHECK(strstr(err, "different builds") != NULL, "%s: the failure does not say why: %s", what, err);
    printf("ok: %s: %u counters (this build %d) refused: %s", what, counters, (int)DK_C_COUNT, err);
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    st_watchdog(60);
    setvbuf(stdout, NULL, _IONBF, 0);
    snprintf(sdir, sizeof sdir, "%s/stats_layout", dir);
    CHECK(mkdir(sdir, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", sdir, strerror(errno));
    CHECK(setenv("DAXKIT_STATS_DIR", sdir, 1) == 0, "setenv");
    CHECK(DK_C_COUNT > 16, "DK_C_COUNT %d", (int)DK_C_COUNT);
    expect_refused("fewer", DK_C_COUNT - 16);
    expect_refused("more", DK_C_COUNT + 16);
    char err[2048], out[256];
    write_fake(DK_C_COUNT, DK_STATS_MAGIC);
    int st = read_in_child(err, sizeof err, out, sizeof out);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && !strcmp(out, "read 3\n"),
          "same: st_stats on this build's layout: status 0x%x, printed '%s', stderr '%s' (expected 'read 3')", st, out,
          err);
    write_fake(DK_C_COUNT, 0);
    st = read_in_child(err, sizeof err, out, sizeof out);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && !strcmp(out, "none\n"),
          "making: st_stats on a file without its magic: status 0x%x, printed '%s', stderr '%s' (expected 'none')", st,
          out, err);
    printf("ok: same: counters summed over slots (3); making: no stats yet\n");
    return 0;
}
