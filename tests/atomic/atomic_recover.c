/* Description: recovery is right, parallel and idempotent. A child maps a file (no checkpoint thread),
 * syncs copies to 40 blocks, copies to 30 other blocks without a sync, and SIGKILLs itself: the log holds
 * 40 committed and 30 uncommitted entries (redo: replay 40, drop 30; undo: roll back 30, drop the 10 committed
 * ones whose slots the 30 did not reuse -- the copies release committed undo entries, session 18). From a
 * snapshot of that state, recovery is interrupted after k applied entries (a simulated crash during
 * recovery, test hook) for several k, then run to the end: the file must always equal the last sync's
 * state; 1 and 4 recovery threads give the same file; recovering a recovered file changes nothing.
 * Usage: atomic_recover [DIR] */
#include <signal.h>
#include <sys/wait.h>

#include "atomic/alog.h"
#include "atomic_test.h"

#define FILE_BYTES (2u << 20)

static char path[700], log_path[800];
static char expect[FILE_BYTES];

static void blocks(struct daxkit_atomic *a, uint32_t first, uint32_t count, char tag, char *model) {
    char buf[300];
    for (uint32_t i = 0; i < count; i++) {
        uint64_t off = (uint64_t)(first + i) * 4096 + 100 + i;
        memset(buf, tag + (char)i, sizeof buf);
        if (a && daxkit_atomic_copy(a, off, buf, sizeof buf)) _exit(3);
        if (model) memcpy(model + off, buf, sizeof buf);
    }
}

static void make_crashed_state(uint32_t policy) {
    at_make_file(path, FILE_BYTES, 11);
    at_read_file(path, expect, FILE_BYTES);
    blocks(NULL, 0, 40, 'A', expect);
    pid_t pid = fork();
    if (pid == 0) {
        struct daxkit_atomic_options o = at_opts(policy, 0);
        o.log_bytes = 4u << 20;
        struct daxkit_atomic *a;
        if (daxkit_atomic_map(path, &o, &a)) _exit(2);
        blocks(a, 0, 40, 'A', NULL);
        if (daxkit_atomic_sync(a)) _exit(4);
        blocks(a, 100, 30, 'a', NULL);
        raise(SIGKILL);
    }
    int st;
    waitpid(pid, &st, 0);
    AT_CHECK(WIFSIGNALED(st), "child status 0x%x", st);
}

static char *slurp(const char *p, size_t *n) {
    int fd = open(p, O_RDONLY);
    AT_CHECK(fd >= 0, "open %s", p);
    struct stat s;
    fstat(fd, &s);
    char *b = malloc((size_t)s.st_size);
    AT_CHECK(pread(fd, b, (size_t)s.st_size, 0) == s.st_size, "read %s", p);
    close(fd);
    *n = (size_t)s.st_size;
    return b;
}

static void spill(const char *p, const char *b, size_t n) {
    int fd = open(p, O_WRONLY | O_TRUNC);
    AT_CHECK(fd >= 0 && pwrite(fd, b, n, 0) == (ssize_t)n, "restore %s", p);
    close(fd);
}

static struct daxkit_atomic_stats recover(uint32_t threads, uint64_t stop_after, int want_rc) {
    struct daxkit_atomic_options o = at_opts(DAXKIT_ATOMIC_HYBRID, 0);
    o.recovery_threads = threads;
    struct daxkit_atomic *a;
    alog_test_recover_apply_max = stop_after;
    int rc = daxkit_atomic_map(path, &o, &a);
    alog_test_recover_apply_max = 0;
    AT_CHECK(rc == want_rc, "map with recovery stopped after %llu: rc %d, want %d", (unsigned long long)stop_after, rc,
             want_rc);
    struct daxkit_atomic_stats s = {0};
    if (rc) return s;
    s = at_stats(a);
    AT_OK(daxkit_atomic_unmap(a));
    return s;
}

static void check_file(const char *what) {
    static char got[FILE_BYTES];
    at_read_file(path, got, FILE_BYTES);
    for (uint32_t i = 0; i < FILE_BYTES; i++)
        if (got[i] != expect[i]) AT_FAIL("%s: byte %u is %d, want %d", what, i, got[i], expect[i]);
}

static void run(uint32_t policy) {
    const char *name = policy == DAXKIT_ATOMIC_REDO ? "redo" : "undo";
    make_crashed_state(policy);
    size_t dn, ln;
    char *data = slurp(path, &dn), *log = slurp(log_path, &ln);
    uint64_t stops[] = {1, 7, 29}; /* fewer than the 30 (undo) or 40 (redo) entries to apply */
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++) {
        spill(path, data, dn), spill(log_path, log, ln);
        recover(1, stops[i], -EINTR);
        recover(1, stops[i] / 2 + 1, -EINTR); /* and a second crash during the second attempt */
        recover(1, 0, 0);
        check_file("recovery interrupted, then completed");
    }
    for (uint32_t threads = 1; threads <= 4; threads += 3) {
        spill(path, data, dn), spill(log_path, log, ln);
        struct daxkit_atomic_stats s = recover(threads, 0, 0);
        check_file(threads == 1 ? "recovery, 1 thread" : "recovery, 4 threads");
        bool redo = policy == DAXKIT_ATOMIC_REDO;
        AT_CHECK(s.recovered_redo == (redo ? 40u : 0u) && s.recovered_undo == (redo ? 0u : 30u),
                 "%s, %u threads: %llu redone, %llu undone", name, threads, (unsigned long long)s.recovered_redo,
                 (unsigned long long)s.recovered_undo);
        /* undo (session 18): the 30 copies after the sync released the 40 committed entries (no invalidation:
         * recovery ignores them) and the 30 new entries took 30 of their slots; the other 10 are still valid,
         * committed, and dropped */
        AT_CHECK(s.recovered_discarded == (redo ? 30u : 10u), "%s: %llu discarded", name,
                 (unsigned long long)s.recovered_discarded);
        printf("%s, %u thread(s): %llu redone, %llu undone, %llu dropped\n", name, threads,
               (unsigned long long)s.recovered_redo, (unsigned long long)s.recovered_undo,
               (unsigned long long)s.recovered_discarded);
    }
    struct daxkit_atomic_stats s = recover(2, 0, 0);
    AT_CHECK(s.recovered_redo + s.recovered_undo + s.recovered_discarded == 0, "a recovered log is empty");
    check_file("recovering a recovered file");
    free(data), free(log);
}

int main(int argc, char **argv) {
    at_setup_dir(argc, argv);
    at_path(path, sizeof path, "rec.bin");
    snprintf(log_path, sizeof log_path, "%s/.daxkit/rec.bin.alog", at_dir);
    run(DAXKIT_ATOMIC_REDO);
    run(DAXKIT_ATOMIC_UNDO);
    printf("PASS\n");
    return 0;
}
