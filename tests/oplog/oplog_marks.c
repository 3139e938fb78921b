/* Description: completion marks (dk_oplog_mark_done, docs/oplog.md "Completion marks"). A child opens a log
 * with marks on DIR (argv[1]; /dev/shm when none), appends 10 records, marks the even ones applied and is
 * killed (SIGKILL, the marks' last stores unflushed); the scan must report records 0, 2, .., 8 done and the
 * odd ones not. Then the marks must count for nothing when they are not this boot's (the header's boot id
 * changed: a power loss and reboot), not this log's (the log's inode differs: another log took the name),
 * torn (crc), or gone (no .done file). dk_oplog_find_orphans removes a .done whose .log is gone, and a log
 * without dk_oplog_start_marks has no marks file. Exit 0 pass, 1 fail. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oplog/format.h"
#include "oplog/oplog.h"

#define RECORDS 10

static char dir[256], log_path[512], marks_path[520];
static int failed;

static void check(int ok, const char *what) {
    printf("%s: %s\n", ok ? "ok" : "FAIL", what);
    failed |= !ok;
}

struct seen {
    unsigned done_mask, all_mask;
};

static int seen_cb(const struct dk_oplog_record *r, void *ctx) {
    struct seen *s = ctx;
    uint32_t i;
    memcpy(&i, r->fixed48, sizeof i);
    if (i < 32) {
        s->all_mask |= 1u << i;
        if (r->done) s->done_mask |= 1u << i;
    }
    return 0;
}

static struct seen scan(void) {
    struct seen s = {0, 0};
    if (dk_oplog_scan(log_path, seen_cb, &s, NULL) != 0) s.all_mask = 0xdead;
    return s;
}

/* Rewrites the marks header through `edit` (keeping or breaking its crc). */
static void edit_header(void (*edit)(struct oplog_marks_header *), int fix_crc) {
    int fd = open(marks_path, O_RDWR);
    unsigned char line[DK_OPLOG_LINE_BYTES];
    if (fd < 0 || pread(fd, line, sizeof line, 0) != (ssize_t)sizeof line) perror(marks_path), exit(1);
    struct oplog_marks_header h;
    memcpy(&h, line, sizeof h);
    edit(&h);
    if (fix_crc) h.crc = oplog_marks_header_crc(&h);
    memcpy(line, &h, sizeof h);
    if (pwrite(fd, line, sizeof line, 0) != (ssize_t)sizeof line) perror("pwrite"), exit(1);
    close(fd);
}
static struct oplog_marks_header saved;
static void save(struct oplog_marks_header *h) { saved = *h; }
static void restore(struct oplog_marks_header *h) { *h = saved; }
static void other_boot(struct oplog_marks_header *h) { h->boot_id[3] ^= 0x5a; }
static void other_log(struct oplog_marks_header *h) { h->log_ino ^= 1; }
static void torn(struct oplog_marks_header *h) { h->pad0 ^= 1; } /* checked by the crc alone */

int main(int argc, char **argv) {
    snprintf(dir, sizeof dir, "%s/dk-oplog-marks.XXXXXX", argc > 1 ? argv[1] : "/dev/shm");
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    int pipefd[2];
    if (pipe(pipefd) != 0) return perror("pipe"), 1;
    pid_t pid = fork();
    if (pid == 0) {
        struct dk_oplog *log;
        if (dk_oplog_open(dir, "marks", DK_OPLOG_BYTES_MIN, &log) != 0) _exit(2);
        dk_oplog_start_marks(log);
        if (!dk_oplog_has_marks(log)) _exit(3);
        for (uint32_t i = 0; i < RECORDS; i++) {
            unsigned char fixed[48] = {0};
            uint64_t seq;
            memcpy(fixed, &i, sizeof i);
            if (dk_oplog_append(log, 64, fixed, NULL, 0, &seq) != 0) _exit(4);
            if (i % 2 == 0) dk_oplog_mark_done(log, seq);
        }
        dprintf(pipefd[1], "%s\n", dk_oplog_path(log));
        pause(); /* killed */
        _exit(5);
    }
    close(pipefd[1]);
    char line[600] = {0};
    ssize_t n = read(pipefd[0], line, sizeof line - 1);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    if (n <= 0) {
        printf("FAIL: the writer reported no log (exit %d): marks cannot be kept on %s?\n",
               WIFEXITED(status) ? WEXITSTATUS(status) : -1, dir);
        return 1;
    }
    line[strcspn(line, "\n")] = 0;
    snprintf(log_path, sizeof log_path, "%s", line);
    check(dk_oplog_marks_path(log_path, marks_path, sizeof marks_path) && access(marks_path, F_OK) == 0,
          "the log has a .done file next to it");
    struct seen s = scan();
    check(s.all_mask == 0x3ff && s.done_mask == 0x155, "records 0,2,4,6,8 done, 1,3,5,7,9 not (after SIGKILL)");
    edit_header(save, 0);
    edit_header(other_boot, 1);
    s = scan();
    check(s.all_mask == 0x3ff && s.done_mask == 0, "another boot's marks: no record done");
    edit_header(restore, 0);
    edit_header(other_log, 1);
    s = scan();
    check(s.all_mask == 0x3ff && s.done_mask == 0, "another log's marks: no record done");
    edit_header(restore, 0);
    edit_header(torn, 0);
    s = scan();
    check(s.all_mask == 0x3ff && s.done_mask == 0, "a torn marks header (crc): no record done");
    edit_header(restore, 0);
    s = scan();
    check(s.done_mask == 0x155, "the header restored: the marks count again");
    unlink(log_path);
    check(dk_oplog_find_orphans(dir, "marks", NULL, NULL) == 0 && access(marks_path, F_OK) != 0,
          "find_orphans removes marks whose log is gone");
    struct dk_oplog *plain;
    if (dk_oplog_open(dir, "plain", DK_OPLOG_BYTES_MIN, &plain) != 0) return perror("dk_oplog_open"), 1;
    char pm[600];
    check(!dk_oplog_has_marks(plain) && dk_oplog_marks_path(dk_oplog_path(plain), pm, sizeof pm) && access(pm, F_OK) != 0,
          "a log without dk_oplog_start_marks has no marks file");
    dk_oplog_close(plain, 1);
    rmdir(dir);
    return failed;
}
