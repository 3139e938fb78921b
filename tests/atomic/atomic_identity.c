/* Description: a path-named log (the C API's) is bound to its file's identity, not only to (dev, inode)
 * (review 10, finding 1). A writer maps f (redo, no checkpoint thread, no pacing), syncs 'N' over the whole
 * file and is killed before anything applies it. Then:
 *   same     the same file is mapped again: the committed 'N' must be replayed (the check discards nothing
 *            that is the file's own);
 *   map      f is removed and a new, unrelated file of 'D' is made under the name on the same inode number
 *            (XFS and ext4 hand the freed number out at once): mapping it must give 'D', never the dead
 *            file's 'N';
 *   recover  the same, then `daxkit recover DIR` (alog_recover_dir): the new file keeps 'D'.
 * Before the fix the new file got 'N' in map and recover. Needs a file system that reuses inode numbers
 * (skips otherwise: tmpfs does not). Usage: atomic_identity DIR */
#include <signal.h>
#include <sys/wait.h>

#include "atomic/alog.h"
#include "atomic_test.h"

#define FILE_BYTES 8192u

static char path[700];

static void fill(const char *p, char c) {
    char buf[FILE_BYTES];
    memset(buf, c, sizeof buf);
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
    AT_CHECK(fd >= 0 && pwrite(fd, buf, sizeof buf, 0) == (ssize_t)sizeof buf && fsync(fd) == 0, "make %s", p);
    close(fd);
}

static char first_byte_if_all_same(const char *p) {
    char buf[FILE_BYTES];
    at_read_file(p, buf, FILE_BYTES);
    for (unsigned i = 1; i < FILE_BYTES; i++)
        if (buf[i] != buf[0]) return '?';
    return buf[0];
}

static ino_t inode_of(const char *p) {
    struct stat st;
    AT_CHECK(stat(p, &st) == 0, "stat %s", p);
    return st.st_ino;
}

/* f holds 'O'; a writer commits 'N' and dies before any checkpoint. */
static void crashed_writer(void) {
    fill(path, 'O');
    pid_t pid = fork();
    AT_CHECK(pid >= 0, "fork");
    if (pid == 0) {
        struct daxkit_atomic_options o = at_opts(DAXKIT_ATOMIC_REDO, 0);
        struct daxkit_atomic *a;
        char buf[FILE_BYTES];
        memset(buf, 'N', sizeof buf);
        if (daxkit_atomic_map(path, &o, &a) || daxkit_atomic_copy(a, 0, buf, sizeof buf) || daxkit_atomic_sync(a))
            _exit(2);
        raise(SIGKILL);
    }
    int st;
    AT_CHECK(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st), "writer status 0x%x", st);
    AT_CHECK(first_byte_if_all_same(path) == 'O', "the killed writer's commit reached the file already (%c): no test",
             first_byte_if_all_same(path));
}

/* Removes f and makes a new file of 'D' under its name on the same inode number. false: none came. */
static bool recreate_on_same_inode(void) {
    ino_t ino = inode_of(path);
    AT_CHECK(unlink(path) == 0, "unlink");
    for (int i = 0; i < 256; i++) {
        fill(path, 'D');
        if (inode_of(path) == ino) return true;
        char aside[760];
        snprintf(aside, sizeof aside, "%s.aside%d", path, i);
        AT_CHECK(rename(path, aside) == 0, "rename");
    }
    return false;
}

static char map_and_read(void) {
    struct daxkit_atomic_options o = at_opts(DAXKIT_ATOMIC_REDO, 0);
    struct daxkit_atomic *a;
    int rc = daxkit_atomic_map(path, &o, &a);
    if (rc) AT_FAIL("map %s: %d (%s)", path, rc, strerror(-rc));
    char c = 0;
    AT_OK(daxkit_atomic_read(a, 100, &c, 1));
    AT_OK(daxkit_atomic_unmap(a));
    return c;
}

int main(int argc, char **argv) {
    if (argc < 2) at_skip("usage: atomic_identity DIR (a file system that reuses inode numbers: XFS, ext4)");
    setenv("DAXKIT_ATOMIC_PACE", "0", 1); /* no commit applies what it committed: the log keeps the work */
    at_setup_dir(argc, argv);
    at_path(path, sizeof path, "table.bin");

    crashed_writer();
    char c = map_and_read();
    AT_CHECK(c == 'N' && first_byte_if_all_same(path) == 'N', "same: the file's own committed 'N' was not replayed: %c/%c",
             c, first_byte_if_all_same(path));
    printf("ok: same: the file's own log replayed (N)\n");

    crashed_writer();
    if (!recreate_on_same_inode()) at_skip("the file system gave no new file the freed inode number (tmpfs does not)");
    c = map_and_read();
    AT_CHECK(c == 'D' && first_byte_if_all_same(path) == 'D',
             "map: the new file on the dead file's inode number got '%c' (file '%c'); want 'D': the dead writer's "
             "commit applied to another file", c, first_byte_if_all_same(path));
    printf("ok: map: the new file keeps D (the dead file's log discarded)\n");

    crashed_writer();
    if (!recreate_on_same_inode()) at_skip("the file system gave no new file the freed inode number");
    struct alog_dir_report rep;
    AT_OK(alog_recover_dir(at_dir, &rep));
    AT_CHECK(first_byte_if_all_same(path) == 'D', "recover: the new file holds '%c' after `daxkit recover` (want 'D')",
             first_byte_if_all_same(path));
    printf("ok: recover: the new file keeps D (logs %llu, recovered %llu, failed %llu)\n", (unsigned long long)rep.logs,
           (unsigned long long)rep.recovered, (unsigned long long)rep.failed);
    c = map_and_read();
    AT_CHECK(c == 'D', "recover: a later map reads '%c' (want 'D')", c);
    printf("PASS\n");
    return 0;
}
