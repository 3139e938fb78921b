/* Description: SIGKILL right after writes return, no fsync, no close. Modes come from DAXKIT_MODE.
 *   self   publishes 100000 bytes with fsync, overwrites 8000 of them, appends 3 x 20000 bytes, writes the
 *          two acceptable images to OUT.all (everything) and OUT.pub (published appends + overwrites) with
 *          raw system calls, and kills itself with SIGKILL. crash.sh then checks the file without the
 *          library: sync mode must equal OUT.all (every acknowledged byte); posix mode must equal one of them
 *          (overwrites present, unpublished appends all-or-nothing).
 *   loop   a child appends records (fsync every 10 in posix mode), reporting each acknowledged write on a
 *          pipe; the parent kills it with SIGKILL after a random delay and checks the file without the
 *          library: intact records in order; sync mode: at least every acknowledged one; posix mode: exactly
 *          the records of some publish point (a multiple of 10, not beyond the acknowledged count).
 *          SHIM_CRASH_SYNC_EVERY=N fsyncs every N records instead of 10 (1: a log synced per record, which
 *          DAXKIT_APPEND=auto moves to extend with keep).
 *          Between the kill and the check, `daxkit recover DIR` runs (DK_RECOVER names the binary); the
 *          self case is recovered by crash.sh through the library's start-up instead.
 *   spill   (review 22, #02) a child writes 1 byte + fsync, calls sync() twice (the second finds nothing
 *           pinned: up_publish_all may skip its walk from then on), appends 128 KiB in one write (past
 *           DAXKIT_STAGE_SPILL_BYTES: in the kernel file under a size record), then reaches a publish point
 *           that walks every file -- argv[3]: sync (sync()) or flock (LOCK_UN of an unmanaged lock file) -- or
 *           the file's own fsync (fsync: nothing left to publish, the record still to end; session 27) --
 *           and is SIGKILLed; after `daxkit recover DIR` the file holds all 131,073 bytes (the spill's record
 *           went with that publish point; before the fix recovery cut the file back to 1 byte).
 * argv[1]: managed directory; argv[2]: self|loop|spill; argv[3] (self): OUT prefix, (spill): sync|flock|fsync;
 * argv[4] (loop): seed. */
#include <poll.h>
#include <sys/file.h>
#include <time.h>

#include "shim_test.h"

static bool sync_mode(void) {
    const char *m = getenv("DAXKIT_MODE");
    return m && !strcmp(m, "sync");
}

static void raw_kill_self(void) {
    syscall(SYS_kill, getpid(), SIGKILL);
    for (;;) pause();
}

static int case_self(const char *dir, const char *out) {
    char path[PATH_MAX], p_all[PATH_MAX], p_pub[PATH_MAX];
    st_path(path, sizeof path, dir, "crash_self");
    snprintf(p_all, sizeof p_all, "%s.all", out);
    snprintf(p_pub, sizeof p_pub, "%s.pub", out);
    size_t total = 100000 + 3 * 20000;
    uint8_t *img = malloc(total), *buf = malloc(total);
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    st_fill(img, 1, 0, 100000);
    st_write_all(fd, img, 100000);
    OK(fsync(fd));
    st_fill(buf, 2, 1000, 8000);
    st_pwrite_all(fd, buf, 8000, 1000);
    memcpy(img + 1000, buf, 8000);
    for (int i = 0; i < 3; i++) {
        uint64_t off = 100000 + (uint64_t)i * 20000;
        st_fill(img + off, 3, off, 20000);
        st_write_all(fd, img + off, 20000);
    }
    /* the acceptable images, written without the library's help */
    const char *a = st_expect_file(img, total), *b = st_expect_file(img, 100000);
    CHECK(syscall(SYS_renameat, AT_FDCWD, a, AT_FDCWD, p_all) == 0, "rename");
    CHECK(syscall(SYS_renameat, AT_FDCWD, b, AT_FDCWD, p_pub) == 0, "rename");
    raw_kill_self();
    return 1;
}

static uint32_t sync_every(void) {
    const char *e = getenv("SHIM_CRASH_SYNC_EVERY");
    return e && atoi(e) > 0 ? (uint32_t)atoi(e) : 10;
}

static void child_loop(const char *path, int ackfd, bool sync) {
    uint32_t every = sync_every();
    int fd = OK(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    uint8_t rec[512];
    for (uint32_t seq = 0;; seq++) {
        st_rec_make(rec, 0, seq);
        st_write_all(fd, rec, st_rec_len(0, seq));
        if (!sync && (seq + 1) % every == 0) OK(fsync(fd));
        uint32_t acked = sync ? seq + 1 : (seq + 1) / every * every; /* records promised durable */
        if (syscall(SYS_write, ackfd, &acked, sizeof acked) != sizeof acked) _exit(3);
        if (seq >= 200000) _exit(4);
    }
}

/* Recovery as a later user of the directory runs it: `daxkit recover DIR` ($DK_RECOVER is the daxkit
 * binary), before the file is checked. */
static void run_recover(const char *dir) {
    const char *bin = getenv("DK_RECOVER");
    CHECK(bin && *bin, "DK_RECOVER (the daxkit binary) is not set: crash.sh sets it");
    pid_t pid = OK(fork());
    if (pid == 0) {
        execl(bin, "daxkit", "recover", dir, (char *)NULL);
        _exit(127);
    }
    int status;
    OK(waitpid(pid, &status, 0));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "daxkit recover %s: status 0x%x", dir, status);
}

static int case_loop(const char *dir, unsigned seed) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "crash_loop");
    bool sync = sync_mode();
    int p[2];
    OK(pipe(p));
    pid_t pid = OK(fork());
    if (pid == 0) {
        close(p[0]);
        child_loop(path, p[1], sync);
    }
    close(p[1]);
    srand(seed);
    long delay_us = 20000 + rand() % 150000;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint32_t acked = 0, v;
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        long el = (now.tv_sec - t0.tv_sec) * 1000000 + (now.tv_nsec - t0.tv_nsec) / 1000;
        if (el >= delay_us) break;
        struct pollfd pf = {p[0], POLLIN, 0};
        if (poll(&pf, 1, 1) > 0 && read(p[0], &v, sizeof v) == sizeof v) acked = v;
    }
    kill(pid, SIGKILL);
    while (read(p[0], &v, sizeof v) == sizeof v) acked = v; /* acks sent before the kill */
    int status;
    OK(waitpid(pid, &status, 0));
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "writer ended with status 0x%x before the kill", status);
    run_recover(dir);
    /* the file, seen without the library */
    CHECK(st_check("records", path, "1", "200001", "partial") == 0, "records torn or out of order after SIGKILL");
    long long size = st_ksize(path);
    uint32_t n = 0;
    for (long long off = 0; off < size; n++) off += (long long)st_rec_len(0, n);
    if (sync) {
        CHECK(n >= acked, "sync mode: %u records in the file, %u were acknowledged before SIGKILL", n, acked);
    } else {
        CHECK(n % sync_every() == 0, "posix mode: %u records in the file: not a publish point (every %u)", n,
              sync_every());
        CHECK(n >= acked, "posix mode: %u records in the file, %u were fsynced before SIGKILL", n, acked);
    }
    printf("ok: %s mode, SIGKILL after %ld us: %u records acknowledged, %u in the file\n", sync ? "sync" : "posix",
           delay_us, acked, n);
    return 0;
}

static void child_spill(const char *path, const char *how) {
    enum { BIG = 128 << 10 };
    static uint8_t buf[BIG];
    int fd = OK(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    st_fill(buf, 4, 0, 1);
    st_write_all(fd, buf, 1);
    OK(fsync(fd));
    sync();
    sync(); /* a walk that left nothing pinned: the next may be skipped unless something notes a pin */
    st_fill(buf, 4, 1, BIG);
    st_write_all(fd, buf, BIG); /* spills */
    if (!strcmp(how, "sync")) {
        sync();
    } else if (!strcmp(how, "fsync")) {
        OK(fsync(fd)); /* nothing to publish, but the record to end (session 27: upath.c sync_changes_nothing) */
    } else {
        char lock[PATH_MAX];
        snprintf(lock, sizeof lock, "/tmp/shim_crash_spill.%d.lock", (int)getpid());
        int lfd = OK(open(lock, O_RDWR | O_CREAT, 0644)); /* not managed */
        OK(flock(lfd, LOCK_EX));
        OK(flock(lfd, LOCK_UN)); /* a publish point of every file */
        unlink(lock);
    }
    raw_kill_self();
}

static int case_spill(const char *dir, const char *how) {
    CHECK(!strcmp(how, "sync") || !strcmp(how, "flock") || !strcmp(how, "fsync"), "spill: sync|flock|fsync, not %s",
          how);
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "crash_spill");
    pid_t pid = OK(fork());
    if (pid == 0) child_spill(path, how);
    int status;
    OK(waitpid(pid, &status, 0));
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the child ended with status 0x%x", status);
    run_recover(dir);
    long long size = st_ksize(path);
    CHECK(size == 131073, "after %s, SIGKILL and recovery the file has %lld bytes, expected 131073 (the spilled "
          "append was published by %s)", how, size, how);
    printf("ok: a spilled append published by %s survives SIGKILL and recovery (%lld bytes)\n", how, size);
    return 0;
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    CHECK(argc > 2, "usage: shim_crash DIR self OUT | DIR loop SEED | DIR spill sync|flock|fsync");
    st_require_library();
    st_watchdog(60);
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!strcmp(argv[2], "self")) return case_self(dir, argc > 3 ? argv[3] : "/tmp/shim_crash");
    if (!strcmp(argv[2], "loop")) return case_loop(dir, argc > 3 ? (unsigned)atoi(argv[3]) : 1);
    if (!strcmp(argv[2], "spill")) return case_spill(dir, argc > 3 ? argv[3] : "");
    FAIL("unknown case %s", argv[2]);
}
