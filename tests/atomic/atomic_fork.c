/* Description: a fork child lets go of the C API's log (review 10, finding 5). A writer maps a file (undo,
 * no checkpoint thread), syncs 'A', forks a worker that does not exec, copies 'B' without a sync and
 * SIGKILLs itself. While the worker lives, a new map of the file must succeed (not -EBUSY: the worker holds
 * no copy of the log's descriptor or mapping, which would keep the log's flock) and recover to 'A'; it copies
 * 'C', syncs, unmaps. The worker then unmaps its inherited handle and exits; the file must still hold 'C'
 * (the overdue recovery of the crashed epoch, run late, would roll it back to 'A'). In the worker: no
 * descriptor refers to the log, the handle's copy/read/sync fail with -EBADF, its unmap returns 0.
 * Before the fix: the map while the worker lives fails with -EBUSY, the worker still has the log open, and
 * its copy goes into the parent's log. Usage: atomic_fork [DIR] */
#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "atomic_test.h"

#define FILE_BYTES 8192u

struct worker_report {
    int log_fds, copy_rc, read_rc, sync_rc;
};

static int log_fds_open(void) {
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    char p[300], t[1024];
    while ((e = readdir(d))) {
        snprintf(p, sizeof p, "/proc/self/fd/%s", e->d_name);
        ssize_t k = readlink(p, t, sizeof t - 1);
        if (k > 0 && (t[k] = 0, strstr(t, ".alog"))) n++;
    }
    closedir(d);
    return n;
}

static bool holds(const char *path, char c) {
    char buf[FILE_BYTES];
    at_read_file(path, buf, FILE_BYTES);
    for (unsigned i = 0; i < FILE_BYTES; i++)
        if (buf[i] != c) return false;
    return true;
}

static void copy_all(struct daxkit_atomic *a, char c) {
    char buf[FILE_BYTES];
    memset(buf, c, sizeof buf);
    AT_OK(daxkit_atomic_copy(a, 0, buf, sizeof buf));
}

/* The writer (a child of the test): returns only in its worker, after the go byte. */
static void writer(const char *path, int report_fd, int go_fd) {
    struct daxkit_atomic_options o = at_opts(DAXKIT_ATOMIC_UNDO, 0);
    struct daxkit_atomic *a;
    if (daxkit_atomic_map(path, &o, &a)) _exit(2);
    copy_all(a, 'A');
    if (daxkit_atomic_sync(a)) _exit(3);
    pid_t w = fork();
    if (w < 0) _exit(4);
    if (w == 0) { /* the worker: a pre-fork server's child, no exec */
        char x = 'x', g;
        struct worker_report r = {.log_fds = log_fds_open(), .copy_rc = daxkit_atomic_copy(a, 0, &x, 1),
                                  .read_rc = daxkit_atomic_read(a, 0, &x, 1), .sync_rc = daxkit_atomic_sync(a)};
        if (write(report_fd, &r, sizeof r) != (ssize_t)sizeof r) _exit(5);
        if (read(go_fd, &g, 1) != 1) _exit(6);
        _exit(daxkit_atomic_unmap(a) == 0 ? 0 : 7);
    }
    copy_all(a, 'B'); /* not synced: the crash must roll it back */
    raise(SIGKILL);
    _exit(8);
}

int main(int argc, char **argv) {
    at_setup_dir(argc, argv);
    char path[700];
    at_path(path, sizeof path, "f");
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    char buf[FILE_BYTES];
    memset(buf, 'O', sizeof buf);
    AT_CHECK(fd >= 0 && pwrite(fd, buf, sizeof buf, 0) == (ssize_t)sizeof buf, "make %s", path);
    close(fd);
    AT_CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0, "PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
    int rep[2], go[2];
    AT_CHECK(pipe(rep) == 0 && pipe(go) == 0, "pipe");
    pid_t wr = fork();
    AT_CHECK(wr >= 0, "fork");
    if (wr == 0) {
        close(rep[0]), close(go[1]);
        writer(path, rep[1], go[0]);
    }
    close(rep[1]), close(go[0]);
    struct worker_report r;
    AT_CHECK(read(rep[0], &r, sizeof r) == (ssize_t)sizeof r, "no report from the worker");
    int st;
    AT_CHECK(waitpid(wr, &st, 0) == wr && WIFSIGNALED(st), "writer status 0x%x (want killed)", st);
    /* The worker is ours now (subreaper) and still lives. */
    printf("worker: %d log descriptor(s) open, copy %d, read %d, sync %d\n", r.log_fds, r.copy_rc, r.read_rc,
           r.sync_rc);
    struct daxkit_atomic_options o = at_opts(DAXKIT_ATOMIC_UNDO, 0);
    struct daxkit_atomic *a;
    int rc = daxkit_atomic_map(path, &o, &a);
    if (rc) {
        if (write(go[1], "g", 1) != 1) {}
        AT_FAIL("map while the crashed writer's fork child lives: %d (%s); want 0: the child must not hold the log",
                rc, strerror(-rc));
    }
    char got;
    AT_OK(daxkit_atomic_read(a, 0, &got, 1));
    AT_CHECK(holds(path, 'A') && got == 'A', "after recovery the file holds '%c' (want 'A', the last sync)", got);
    copy_all(a, 'C');
    AT_OK(daxkit_atomic_sync(a));
    AT_OK(daxkit_atomic_unmap(a));
    AT_CHECK(write(go[1], "g", 1) == 1, "go");
    pid_t k = wait(&st);
    AT_CHECK(k > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "worker status 0x%x (its unmap of the inherited handle)", st);
    at_read_file(path, buf, 1);
    AT_CHECK(holds(path, 'C'), "after the worker's exit the file holds '%c...' (want 'C': the acknowledged sync)", buf[0]);
    AT_OK(daxkit_atomic_map(path, &o, &a));
    AT_OK(daxkit_atomic_read(a, 0, &got, 1));
    AT_OK(daxkit_atomic_unmap(a));
    AT_CHECK(got == 'C' && holds(path, 'C'), "a later map sees '%c' (want 'C')", got);
    AT_CHECK(r.log_fds == 0, "the worker kept %d descriptor(s) of the log", r.log_fds);
    AT_CHECK(r.copy_rc == -EBADF && r.read_rc == -EBADF && r.sync_rc == -EBADF,
             "the worker's inherited handle: copy %d, read %d, sync %d (want -EBADF each)", r.copy_rc, r.read_rc,
             r.sync_rc);
    printf("PASS: the fork child let go of the log; recovery ran at once; the later sync stands\n");
    return 0;
}
