/* Description: publish points and what other processes see.
 *   visibility  this process appends without fsync: another program (shim_check, without the library)
 *               does not see the appends (stage strategy) -- then sees exactly them after each publish
 *               point: fsync, fdatasync, close, fcntl unlock, flock unlock, mmap of the file by the program,
 *               fork. With argv[3] = "extend" the pre-publish check is relaxed to "published bytes
 *               unchanged" (the extend strategy lets others see a zero-filled tail: documented deviation);
 *               "extend-keep" (DAXKIT_EXTEND_SYNC=keep) relaxes the size check after fsync/fdatasync too.
 *   lock_append two processes, 300 iterations each, take an fcntl write lock, read the last counter line
 *               of a file and append the next one, unlock: the file ends up holding 1..600 in order.
 *   lock_flock  the same with flock(LOCK_EX)/flock(LOCK_UN).
 *   lock_lockf  lockf(F_ULOCK) publishes (another program sees the appends), F_TEST/F_TLOCK as glibc's, the
 *               range from the library's offset after served writes (fcntl's SEEK_CUR ranges too); then the
 *               counter with lockf(F_LOCK/F_ULOCK).
 *   lock_overwrite  the same with a counter overwritten in place at offset 0 (fcntl locks).
 *   append_relink  appends through an O_APPEND descriptor published by fsync (unaligned sizes, several
 *               rounds): the file equals what was written (XFS refuses FICLONERANGE into an O_APPEND file).
 *   lock_escalate  SQLite's lock pattern (a read lock on a "shared" byte, read, then write locks on a
 *               "reserved" and the "shared" byte while the first is held, overwrite, unlock all): the size
 *               is re-read once per round, not after each escalation (counters size_rereads and
 *               refresh_skips); and a lock taken that way still sees another process's append made under a
 *               lock that did not conflict with the held one: an append at SEEK_END after it lands past
 *               the other process's bytes (upath/reclock.c). Also run by two processes at once.
 *   lock_unknown  what the lock bookkeeping cannot follow makes the set unknown (review 7, finding 13): a
 *               shared lock given relative to the offset (SEEK_CUR) is not counted as held, so the
 *               escalations after it re-read the size; a thread cancelled while waiting in F_SETLKW does
 *               not switch the bookkeeping off for the process (escalations skip re-reads again after it).
 *   lock_mapped a file the program maps (SQLite's -shm) is not followed by the lock bookkeeping (session 25):
 *               before the mapping its escalations skip the size re-read; once it is mapped none does (counter
 *               lock_set_untracked +1, refresh_skips +0), the counter under the escalation rounds stays exact
 *               -- also with another process running them at once -- and another process's append under a
 *               lock that does not conflict is seen by SEEK_END after an escalation. Another (unmapped) file's
 *               escalations, interleaved with lock calls on the mapped one (from this thread and a second one),
 *               still skip their re-reads: the mapped file's calls leave the count of lock calls balanced.
 *   lock_other_mapped, lock_refresh_mapped  (explicit only) the lock file is mapped by the program, so its lock
 *               calls take the untracked way (session 25): its release still publishes another file's appends,
 *               its acquisition still makes another process's shrink of another file seen by a read inside the
 *               old end.
 *   lock_pin_owner  (explicit only) a publish that unpins the only file pinned since the last walk of the open
 *               files records that walk (session 26, counter publish_walks_recorded): 5 rounds of one file's
 *               append + fdatasync + a lock round on another file make 5 records and 5 walk skips; with a second
 *               file's appends pinned too the fdatasync records none, and the release publishes them.
 *   lock_put_off  (explicit only) a lock's size re-read put off (session 26), what it protects first: another
 *               process appends 5,000 bytes, and after a lock on a mapped lock file (SQLite's -shm) and a put-off
 *               pwrite over their head + fdatasync, fstat, SEEK_END and a read past this process's end see the
 *               other's bytes; another process cuts the file to 8 bytes, and after a lock and a put-off pwrite at
 *               the old end, an overwrite inside the old end (the owed re-read, with appends staged) lands in the
 *               kernel's file -- no SIGBUS from a store past the cut -- and reads between the cut and the append
 *               see zeros; another cut, a put-off pwrite at the end and fdatasync, then a read in the cut's hole: the
 *               kernel's (hole_kernel_ios +1), not the mapping's. Then a SQLite WAL's growth: after each lock round
 *               on the mapped file, two pwrites at the end and an fdatasync make no size re-read (counters
 *               refresh_put_off +3, size_rereads +0 a round), and another program sees each round's bytes.
 *   lock_read_put_off  (explicit only) a read's re-read put off below the probe page and the program's fstat
 *               taken as the re-read (session 28; SQLite's rollback-mode transaction: read lock, 16 bytes at 24,
 *               fstat): another process's cut to 8 bytes before the lock makes the reads after it return 0 (the
 *               kernel's, no SIGBUS, no zeros from the mapping), also with the fstat first (whose answer then is
 *               not the re-read: refresh_by_fstat +0); its growth is seen by the fstat and a read across the old end; 10
 *               rounds make no size re-read of the library's (RTM, tmpfs).
 *   fstat_race  (explicit; DAXKIT_TEST_CRASH=raise:10:upath.fstat_end:1) a signal handler cuts the file between the
 *               kernel's fstat after a lock and the library's decision: the cut is kept (a read past it returns 0).
 *   lock_other  the release of a lock on another file publishes this one's appends -- also after releases
 *               with nothing to publish, which skip the walk of the open files (counter publish_walk_skips:
 *               upath.c, up_publish_all): appends of 100 B, 5,000 B, 70,000 B and 3 B, each followed by a
 *               lock round on the other file and a look by another program, then a round with nothing new.
 *   lock_other_strict  strict mode (DAXKIT_STRICT_APPLY=checkpoint): a lock release with nothing pinned skips
 *               the walk of the open files too (session 21), and still checkpoints -- 4 KiB overwrites waiting
 *               for the checkpoint are in the file for another program after each lock round on a file
 *               outside the managed directory (its release publishes through up_publish_all alone).
 *   lock_release_strict  strict mode (DAXKIT_STRICT_APPLY=checkpoint), the lock file managed (its calls take
 *               shim/fd.c's served_lock, its releases upath.c's up_publish_release): a release with nothing to
 *               do makes no checkpoint; one after a 4 KiB overwrite does, and another program sees the block --
 *               locks on another managed file and on the written file itself, by turns.
 *   auto_keep   DAXKIT_APPEND=auto with a log fsynced after every single record: after
 *               DAXKIT_AUTO_KEEP_AFTER (8) such fsyncs the file moves to extend with keep (counter auto_keeps),
 *               unless it was appended through O_APPEND (a shared log: another program's record follows);
 *               from then on another program sees every fsynced byte and a size at least theirs (a zero-filled
 *               tail: the documented deviation), and exactly the records after close, after an flock unlock
 *               of the reopened file (which moves it back to stage), and after a batch of two appends per
 *               fsync. argv[3] "never" (DAXKIT_AUTO_KEEP_AFTER=0, or the stage strategy): the size after every
 *               fsync is exact.
 *   fsync_idle  (explicit only, DAXKIT_APPEND=auto) an fsync with nothing to publish takes no mutex (session 27)
 *               but still ends an append streak: 7 + idle + 7 single-append fsyncs do not move the log to
 *               extend with keep, one more does; appends after an idle fdatasync are published by the next.
 *   o_append_hint  a log appended through O_APPEND and fdatasync'ed after every single record under stage
 *               (redis's AOF with appendfsync always) is counted once (o_append_sync_logs) after
 *               DAXKIT_AUTO_KEEP_AFTER (8) such fsyncs in a row -- the hint at README's AOF setting -- and stays
 *               stage: another program sees exactly the fsynced records after each fsync; a log synced every
 *               two records, and one without O_APPEND, are not counted. argv[3] "never"
 *               (DAXKIT_AUTO_KEEP_AFTER=0): none is.
 * argv[1]: managed directory; argv[2]: case (or "all"). */
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/file.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <linux/magic.h>

#include "common/cpu.h"
#include "shim_test.h"
#include "wait_in_syscall.h"

static const char *dir;
static bool extend_mode;

static bool keep_mode; /* DAXKIT_EXTEND_SYNC=keep */

static void seen_bytes_by_other(const char *path, uint64_t published, const char *after) {
    CHECK(st_check("pattern", (char *)path, "0", st_fmt("%llu", (unsigned long long)published), "5") == 0,
          "after %s: another program does not see the %llu published bytes", after, (unsigned long long)published);
}

static void seen_by_other(const char *path, uint64_t published, uint64_t logical, const char *after) {
    seen_bytes_by_other(path, published, after); /* every published byte, with the pattern */
    if (!extend_mode || published == logical)
        CHECK(st_check("size", (char *)path, st_fmt("%llu", (unsigned long long)published)) == 0,
              "after %s: another program sees size %lld; expected %llu (logical size here %llu)", after,
              st_ksize(path), (unsigned long long)published, (unsigned long long)logical);
}

/* fsync and fdatasync publish; with DAXKIT_EXTEND_SYNC=keep the extend strategy keeps its extension there (the
 * logical size is made durable in its published-size record): another program sees the bytes, and a size at
 * least theirs. */
static void seen_after_sync(const char *path, uint64_t published, uint64_t logical, const char *after) {
    if (!keep_mode) return seen_by_other(path, published, logical, after);
    seen_bytes_by_other(path, published, after);
    CHECK(st_ksize(path) >= (long long)published, "after %s: another program sees size %lld, below the %llu published bytes",
          after, st_ksize(path), (unsigned long long)published);
}

static uint64_t append(int fd, uint64_t at, size_t n) {
    static uint8_t buf[4 << 20];
    st_fill(buf, 5, at, n);
    st_write_all(fd, buf, n);
    CHECK(st_fsize(fd) == (off_t)(at + n), "this process does not see its own append (size %lld, expected %llu)",
          (long long)st_fsize(fd), (unsigned long long)(at + n));
    return at + n;
}

static void case_visibility(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "visibility");
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    uint64_t pub = 0, size = 0;

    size = append(fd, size, 5000);
    seen_by_other(path, pub, size, "appends without a publish point");
    OK(fsync(fd));
    pub = size;
    seen_after_sync(path, pub, size, "fsync");

    size = append(fd, size, 70000);
    seen_by_other(path, pub, size, "more appends");
    OK(fdatasync(fd));
    pub = size;
    seen_after_sync(path, pub, size, "fdatasync");

    size = append(fd, size, 3000);
    seen_by_other(path, pub, size, "appends before close");
    OK(close(fd));
    pub = size;
    seen_by_other(path, pub, size, "close");

    fd = OK(open(path, O_RDWR));
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    OK(fcntl(fd, F_SETLKW, &l));
    OK(lseek(fd, 0, SEEK_END));
    size = append(fd, size, 4096);
    seen_by_other(path, pub, size, "appends under an fcntl lock");
    l.l_type = F_UNLCK;
    OK(fcntl(fd, F_SETLK, &l));
    pub = size;
    seen_by_other(path, pub, size, "fcntl unlock");

    OK(flock(fd, LOCK_EX));
    size = append(fd, size, 10);
    seen_by_other(path, pub, size, "appends under flock");
    OK(flock(fd, LOCK_UN));
    pub = size;
    seen_by_other(path, pub, size, "flock unlock");

    size = append(fd, size, 2 << 20);
    seen_by_other(path, pub, size, "a 2 MiB append");
    void *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(m != MAP_FAILED, "mmap: %s", strerror(errno));
    pub = size;
    seen_by_other(path, pub, size, "mmap by the program");
    CHECK(st_mismatch(m, 5, 0, size) < 0, "the program's own mapping does not show its appends");
    OK(munmap(m, size));

    size = append(fd, size, 777);
    seen_by_other(path, pub, size, "appends before fork");
    pid_t pid = OK(fork());
    if (pid == 0) _exit(0);
    int status;
    OK(waitpid(pid, &status, 0));
    pub = size;
    seen_by_other(path, pub, size, "fork");
    OK(close(fd));
    printf("ok: other programs see appends exactly at publish points\n");
}

/* ---- lock-disciplined counters in two processes ---- */

enum lock_kind { LK_FCNTL, LK_FLOCK, LK_LOCKF };

static void lock(int fd, enum lock_kind k, bool on) {
    if (k == LK_FLOCK) {
        OK(flock(fd, on ? LOCK_EX : LOCK_UN));
        return;
    }
    if (k == LK_LOCKF) { /* the whole file: lockf's range starts at the offset */
        off_t at = OK(lseek(fd, 0, SEEK_CUR));
        OK(lseek(fd, 0, SEEK_SET));
        OK(lockf(fd, on ? F_LOCK : F_ULOCK, 0));
        OK(lseek(fd, at, SEEK_SET));
        return;
    }
    struct flock l = {.l_type = on ? F_WRLCK : F_UNLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    OK(fcntl(fd, F_SETLKW, &l));
}

static void counter_worker(const char *path, enum lock_kind k, bool overwrite, int iters) {
    int fd = OK(open(path, O_RDWR));
    for (int i = 0; i < iters; i++) {
        lock(fd, k, true);
        off_t size = st_fsize(fd);
        unsigned v = 0;
        char line[17] = {0};
        off_t at = overwrite ? 0 : size - 16;
        if (overwrite || size > 0) {
            CHECK(size % 16 == 0, "counter file size %lld is not a multiple of 16", (long long)size);
            CHECK(pread(fd, line, 16, at) == 16, "pread of the counter at %lld failed", (long long)at);
            CHECK(sscanf(line, "%u", &v) == 1, "counter line '%s' unreadable", line);
        }
        snprintf(line, sizeof line, "%015u\n", v + 1);
        if (overwrite) st_pwrite_all(fd, line, 16, 0);
        else {
            OK(lseek(fd, 0, SEEK_END));
            st_write_all(fd, line, 16);
        }
        lock(fd, k, false);
    }
    OK(close(fd));
}

static void case_lock(const char *name, enum lock_kind k, bool overwrite) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, name);
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    if (overwrite) st_write_all(fd, "000000000000000\n", 16);
    OK(close(fd));
    const int iters = 300;
    pid_t pid[2];
    for (int i = 0; i < 2; i++) {
        pid[i] = OK(fork());
        if (pid[i] == 0) {
            counter_worker(path, k, overwrite, iters);
            _exit(0);
        }
    }
    for (int i = 0; i < 2; i++) {
        int status;
        OK(waitpid(pid[i], &status, 0));
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: worker %d status 0x%x", name, i, status);
    }
    if (overwrite) {
        char want[17];
        snprintf(want, sizeof want, "%015u\n", 2 * iters);
        CHECK(st_check("text", path, want) == 0, "%s: final counter wrong", name);
    } else {
        CHECK(st_check("counter", path, st_fmt("%d", 2 * iters)) == 0, "%s: counter file wrong", name);
    }
    printf("ok: %s: two processes x %d locked read-modify-write iterations, final value exact\n", name, iters);
}

/* lockf(3) (review 9, finding 10): glibc's lockf calls its internal fcntl, which a preload never sees; the
 * shim's own lockf makes F_ULOCK a publish point and F_LOCK a size refresh as fcntl's are. Then the lock
 * counter of two processes under lockf, and lockf's range starts at the descriptor's offset -- the
 * library's, after served writes. */
static void case_lockf(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "lockf");
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 0644));
    OK(lockf(fd, F_LOCK, 0));
    uint64_t size = append(fd, 0, 100);
    size = append(fd, size, 5000);
    OK(lseek(fd, 0, SEEK_SET));
    OK(lockf(fd, F_ULOCK, 0));
    seen_by_other(path, size, size, "lockf(F_ULOCK)");
    OK(lockf(fd, F_TLOCK, 0));
    OK(lockf(fd, F_TEST, 0)); /* our own lock: 0 */
    OK(lockf(fd, F_ULOCK, 0));
    ERR(lockf(fd, 42, 0), EINVAL);
    ERR(lockf(-1, F_LOCK, 0), EBADF);
    OK(close(fd));
    /* the range from the offset: 7,000 bytes written (served), then lockf(F_LOCK, 10) is [7000, 7010) */
    fd = OK(open(path, O_RDWR | O_TRUNC));
    static char buf[7000];
    st_write_all(fd, buf, sizeof buf);
    OK(lockf(fd, F_LOCK, 10));
    struct flock rel = {.l_type = F_WRLCK, .l_whence = SEEK_CUR, .l_start = 20, .l_len = 5}; /* [7020, 7025) */
    OK(fcntl(fd, F_SETLK, &rel));
    int pipefd[2];
    OK(pipe(pipefd));
    pid_t pid = OK(fork());
    if (pid == 0) { /* another process: which bytes are locked? */
        int cfd = OK(open(path, O_RDWR));
        struct flock at_off = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 7000, .l_len = 10};
        struct flock at_0 = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10};
        struct flock rel_off = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 7020, .l_len = 5};
        struct flock rel_0 = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 20, .l_len = 5};
        OK(fcntl(cfd, F_GETLK, &at_off));
        OK(fcntl(cfd, F_GETLK, &at_0));
        OK(fcntl(cfd, F_GETLK, &rel_off));
        OK(fcntl(cfd, F_GETLK, &rel_0));
        char r = at_off.l_type != F_UNLCK && at_0.l_type == F_UNLCK ? 'y' : 'n';
        if (r == 'y' && !(rel_off.l_type != F_UNLCK && rel_0.l_type == F_UNLCK)) r = 'c';
        OK(lseek(cfd, 7000, SEEK_SET));
        int t = lockf(cfd, F_TEST, 10); /* held by the parent: EACCES */
        if (!(t == -1 && errno == EACCES)) r = 't';
        if (write(pipefd[1], &r, 1) != 1) _exit(1);
        _exit(0);
    }
    char r = 0;
    CHECK(read(pipefd[0], &r, 1) == 1, "the child said nothing");
    int status;
    OK(waitpid(pid, &status, 0));
    CHECK(r != 'n', "lockf(F_LOCK, 10) after 7,000 written bytes did not lock [7000, 7010) (the kernel's offset?)");
    CHECK(r != 't', "lockf(F_TEST) in another process did not see the lock (EACCES)");
    CHECK(r != 'c', "fcntl(F_SETLK) with SEEK_CUR + 20 after 7,000 written bytes did not lock [7020, 7025)");
    OK(lockf(fd, F_ULOCK, 10));
    OK(close(fd));
    close(pipefd[0]), close(pipefd[1]);
    printf("ok: lockf: F_ULOCK publishes (another program sees %llu bytes), F_TEST/F_TLOCK/EINVAL/EBADF as glibc's, "
           "the range starts at the library's offset (and fcntl's SEEK_CUR ranges)\n", (unsigned long long)size);
    case_lock("lock_lockf", LK_LOCKF, false);
}

static void case_append_relink(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "append_relink");
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 0644));
    static uint8_t buf[3 << 20];
    size_t sizes[] = {100000, 3000000, 4096, 777, 2 << 20};
    uint64_t at = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        st_fill(buf, 5, at, sizes[i]);
        st_write_all(fd, buf, sizes[i]);
        at += sizes[i];
        OK(fsync(fd));
        CHECK(st_check("pattern", path, "0", st_fmt("%llu", (unsigned long long)at), "5") == 0 &&
                  st_check("size", path, st_fmt("%llu", (unsigned long long)at)) == 0,
              "append_relink: after append %zu (%zu bytes) and fsync, the file is not what was written", i, sizes[i]);
    }
    OK(close(fd));
    printf("ok: appends through an O_APPEND descriptor land exactly at each fsync\n");
}

/* ---- lock escalation (upath/reclock.c) ---- */

enum { SHARED_BYTE = 100, RESERVED_BYTE = 200, WRITER_BYTE = 300 };

static void range_lock(int fd, short type, off_t at) {
    struct flock l = {.l_type = type, .l_whence = SEEK_SET, .l_start = at, .l_len = type == F_UNLCK && at == 0 ? 0 : 1};
    OK(fcntl(fd, F_SETLKW, &l));
}

/* One SQLite-like transaction: shared, read, reserved, exclusive (the shared byte as a write lock),
 * overwrite the counter at 0, release everything. With `writers`, a write lock on a byte of their own
 * first: two processes escalating with blocking locks would deadlock (SQLite's own locks do not wait). */
static void escalate_round(int fd, bool writers) {
    char line[17] = {0};
    unsigned v = 0;
    if (writers) range_lock(fd, F_WRLCK, WRITER_BYTE);
    range_lock(fd, F_RDLCK, SHARED_BYTE);
    CHECK(pread(fd, line, 16, 0) == 16 && sscanf(line, "%u", &v) == 1, "lock_escalate: counter unreadable");
    range_lock(fd, F_WRLCK, RESERVED_BYTE);
    range_lock(fd, F_WRLCK, SHARED_BYTE);
    snprintf(line, sizeof line, "%015u\n", v + 1);
    st_pwrite_all(fd, line, 16, 0);
    range_lock(fd, F_UNLCK, 0);
}

static int wait_byte(int rfd) {
    char c = 0;
    CHECK(read(rfd, &c, 1) == 1, "lock_escalate: pipe closed");
    return c;
}

/* As in case_lock_escalate's second part, but the parent's line goes through an O_APPEND descriptor right
 * after the escalation (no SEEK_END, no read first): the append's offset must be the exact end too. Strict
 * mode decides it before the write path would check an unsure end (upath/io.c write_op): without that
 * check the parent's line overwrote the other process's. */
static void append_after_escalation(const char *path) {
    int fd = OK(open(path, O_RDWR | O_TRUNC));
    st_write_all(fd, "000000000000000\n", 16);
    OK(fsync(fd));
    for (int i = 0; i < 24; i++) OK(pread(fd, (char[16]){0}, 16, 0)); /* mapped */
    range_lock(fd, F_UNLCK, 0); /* the lock bookkeeping starts known (a close left it unknown) */
    int to_child[2], to_parent[2];
    OK(pipe(to_child));
    OK(pipe(to_parent));
    pid_t pid = OK(fork());
    if (pid == 0) {
        OK(close(fd));
        int cfd = OK(open(path, O_RDWR | O_APPEND));
        OK(write(to_parent[1], "r", 1));
        wait_byte(to_child[0]);
        range_lock(cfd, F_WRLCK, RESERVED_BYTE);
        st_write_all(cfd, "child..........\n", 16);
        range_lock(cfd, F_UNLCK, 0);
        OK(write(to_parent[1], "c", 1));
        OK(close(cfd));
        _exit(0);
    }
    wait_byte(to_parent[0]);
    range_lock(fd, F_RDLCK, SHARED_BYTE);
    OK(pread(fd, (char[16]){0}, 16, 0)); /* the size is read here: 16 */
    OK(write(to_child[1], "p", 1));
    wait_byte(to_parent[0]);
    range_lock(fd, F_WRLCK, RESERVED_BYTE); /* held since the size was read: no re-read */
    OK(fcntl(fd, F_SETFL, O_APPEND));
    st_write_all(fd, "parent.........\n", 16);
    range_lock(fd, F_UNLCK, 0);
    int status;
    OK(waitpid(pid, &status, 0));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "lock_escalate: child status 0x%x", status);
    OK(close(fd));
    CHECK(st_check("text", (char *)path, "000000000000000\nchild..........\nparent.........\n") == 0,
          "lock_escalate: an O_APPEND write after an escalation did not land behind another process's append");
    printf("ok: lock_escalate: an O_APPEND write after an escalation lands behind another process's append\n");
}

static void case_lock_escalate(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "lock_escalate");
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    st_write_all(fd, "000000000000000\n", 16);
    OK(fsync(fd));
    const int rounds = 200;
    for (int i = 0; i < 24; i++) OK(pread(fd, (char[16]){0}, 16, 0)); /* mapped: reads stop going to the kernel */
    const char *j0 = st_stats_cli_json();
    unsigned long long rereads0 = st_json_counter(j0, "size_rereads"), skips0 = st_json_counter(j0, "refresh_skips");
    for (int i = 0; i < rounds; i++) escalate_round(fd, false);
    const char *j1 = st_stats_cli_json();
    unsigned long long rereads = st_json_counter(j1, "size_rereads") - rereads0;
    unsigned long long skips = st_json_counter(j1, "refresh_skips") - skips0;
    CHECK(rereads <= (unsigned long long)rounds + 2, "lock_escalate: %llu size re-reads in %d rounds (one per round expected)",
          rereads, rounds);
    CHECK(skips >= 2ull * rounds, "lock_escalate: %llu escalations without a re-read in %d rounds (expected %d)", skips,
          rounds, 2 * rounds);
    printf("ok: lock_escalate: %d rounds, %llu size re-reads, %llu escalations without one\n", rounds, rereads, skips);

    /* Another process appends under a lock that does not conflict with the one held here (the reserved
     * byte), after this process read the size holding the shared byte; this process then takes the
     * reserved byte (no re-read) and appends at SEEK_END: behind the other's line, as with the kernel. */
    int to_child[2], to_parent[2];
    OK(pipe(to_child));
    OK(pipe(to_parent));
    pid_t pid = OK(fork());
    if (pid == 0) {
        OK(close(fd)); /* while both processes hold it, the kernel would serve the parent's descriptor */
        int cfd = OK(open(path, O_RDWR));
        OK(write(to_parent[1], "r", 1));
        wait_byte(to_child[0]);
        range_lock(cfd, F_WRLCK, RESERVED_BYTE);
        OK(lseek(cfd, 0, SEEK_END));
        st_write_all(cfd, "child..........\n", 16);
        range_lock(cfd, F_UNLCK, 0); /* publishes */
        OK(write(to_parent[1], "c", 1));
        OK(close(cfd));
        _exit(0);
    }
    wait_byte(to_parent[0]);
    range_lock(fd, F_RDLCK, SHARED_BYTE);
    char line[16];
    CHECK(pread(fd, line, 16, 0) == 16, "lock_escalate: pread");
    off_t before = st_fsize(fd);
    OK(write(to_child[1], "p", 1));
    wait_byte(to_parent[0]);
    range_lock(fd, F_WRLCK, RESERVED_BYTE);
    /* A read across the end as it was: the other process's line must come with it, not a cut record
     * (review 7, finding 4: 8 bytes of 24 before the fix). */
    char across[32];
    ssize_t got = pread(fd, across, sizeof across, before - 8);
    CHECK(got == 24 && !memcmp(across + 8, "child..........\n", 16),
          "lock_escalate: a read across the old end after the escalation returned %zd bytes (want 24: the other "
          "process's line)", got);
    off_t at = OK(lseek(fd, 0, SEEK_END));
    CHECK(at == before + 16, "lock_escalate: SEEK_END after the escalation is %lld; the other process's append made it %lld",
          (long long)at, (long long)before + 16);
    st_write_all(fd, "parent.........\n", 16);
    range_lock(fd, F_UNLCK, 0);
    int status;
    OK(waitpid(pid, &status, 0));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "lock_escalate: child status 0x%x", status);
    OK(close(fd));
    char want[64];
    snprintf(want, sizeof want, "%015u\nchild..........\nparent.........\n", rounds);
    CHECK(st_check("text", path, want) == 0, "lock_escalate: the file is not counter + child's line + parent's line");
    printf("ok: lock_escalate: an append after an escalation lands behind another process's append\n");
    append_after_escalation(path);

    /* Two processes running the rounds at once: the counter ends exact. */
    fd = OK(open(path, O_RDWR | O_TRUNC));
    st_write_all(fd, "000000000000000\n", 16);
    OK(close(fd));
    pid_t w[2];
    for (int i = 0; i < 2; i++) {
        w[i] = OK(fork());
        if (w[i] == 0) {
            int wfd = OK(open(path, O_RDWR));
            for (int r = 0; r < rounds; r++) escalate_round(wfd, true);
            OK(close(wfd));
            _exit(0);
        }
    }
    for (int i = 0; i < 2; i++) {
        OK(waitpid(w[i], &status, 0));
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "lock_escalate: worker %d status 0x%x", i, status);
    }
    snprintf(want, sizeof want, "%015u\n", 2 * rounds);
    CHECK(st_check("text", path, want) == 0, "lock_escalate: two processes: final counter wrong");
    printf("ok: lock_escalate: two processes x %d escalating rounds, final counter exact\n", rounds);
}

static pid_t lock_waiter_tid;

static void *wait_for_lock(void *arg) {
    int fd = *(int *)arg;
    __atomic_store_n(&lock_waiter_tid, gettid(), __ATOMIC_RELEASE);
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = WRITER_BYTE, .l_len = 1};
    fcntl(fd, F_SETLKW, &l); /* blocks: the other process holds the byte; cancelled here */
    return NULL;
}

static unsigned long long skips_now(void) { return st_json_counter(st_stats_cli_json(), "refresh_skips"); }

static void case_lock_unknown(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "lock_unknown");
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    st_write_all(fd, "000000000000000\n", 16);
    OK(fsync(fd));
    for (int i = 0; i < 24; i++) OK(pread(fd, (char[16]){0}, 16, 0));
    for (int i = 0; i < 3; i++) escalate_round(fd, false); /* the bookkeeping works here */
    unsigned long long s0 = skips_now();
    for (int i = 0; i < 3; i++) escalate_round(fd, false);
    unsigned long long s1 = skips_now();
    CHECK(s1 - s0 >= 6, "lock_unknown: %llu escalations without a re-read in 3 plain rounds (expected 6)", s1 - s0);

    /* (a) the shared lock relative to the offset: the kernel used the offset at its call, which another
     * thread may move before the library looks -- not followed, so not held: the escalations re-read. */
    unsigned long long u0 = st_json_counter(st_stats_cli_json(), "lock_set_unknown");
    OK(lseek(fd, SHARED_BYTE, SEEK_SET));
    struct flock cur = {.l_type = F_RDLCK, .l_whence = SEEK_CUR, .l_start = 0, .l_len = 1};
    OK(fcntl(fd, F_SETLKW, &cur));
    CHECK(pread(fd, (char[16]){0}, 16, 0) == 16, "lock_unknown: pread");
    range_lock(fd, F_WRLCK, RESERVED_BYTE);
    range_lock(fd, F_WRLCK, SHARED_BYTE);
    range_lock(fd, F_UNLCK, 0);
    unsigned long long s2 = skips_now(), u1 = st_json_counter(st_stats_cli_json(), "lock_set_unknown");
    CHECK(s2 == s1, "lock_unknown: %llu escalations skipped their re-read after a SEEK_CUR shared lock", s2 - s1);
    CHECK(u1 > u0, "lock_unknown: lock_set_unknown did not count the SEEK_CUR lock");

    /* (c) a thread cancelled while it waits in F_SETLKW for a byte another process holds. */
    int to_child[2], to_parent[2];
    OK(pipe(to_child));
    OK(pipe(to_parent));
    pid_t pid = OK(fork());
    if (pid == 0) {
        int cfd = OK(open(path, O_RDWR));
        range_lock(cfd, F_WRLCK, WRITER_BYTE);
        OK(write(to_parent[1], "l", 1));
        wait_byte(to_child[0]);
        _exit(0);
    }
    wait_byte(to_parent[0]);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, wait_for_lock, &fd) == 0, "lock_unknown: pthread_create");
    while (!__atomic_load_n(&lock_waiter_tid, __ATOMIC_ACQUIRE)) usleep(1000);
    CHECK(wait_in_syscall(lock_waiter_tid, SYS_fcntl, 20000), "lock_unknown: the thread did not wait for the lock in 20 s");
    CHECK(pthread_cancel(t) == 0, "lock_unknown: pthread_cancel");
    void *res = NULL;
    CHECK(pthread_join(t, &res) == 0 && res == PTHREAD_CANCELED, "lock_unknown: the waiting thread was not cancelled");
    OK(write(to_child[1], "x", 1));
    int status;
    OK(waitpid(pid, &status, 0));
    range_lock(fd, F_UNLCK, 0);
    for (int i = 0; i < 3; i++) escalate_round(fd, false);
    unsigned long long s3 = skips_now();
    CHECK(s3 - s2 >= 6,
          "lock_unknown: %llu escalations without a re-read in 3 rounds after a thread was cancelled in F_SETLKW "
          "(expected 6: the bookkeeping switched itself off)", s3 - s2);
    OK(close(fd));
    printf("ok: lock_unknown: a SEEK_CUR lock is not counted as held; a cancelled F_SETLKW leaves the count working\n");
}

static void *mapped_rounds(void *arg) {
    int fd = *(int *)arg;
    for (int i = 0; i < 200; i++) {
        range_lock(fd, F_RDLCK, WRITER_BYTE + 1);
        range_lock(fd, F_UNLCK, WRITER_BYTE + 1);
    }
    return NULL;
}

static void case_lock_mapped(void) {
    char path[PATH_MAX], other[PATH_MAX];
    st_path(path, sizeof path, dir, "lock_mapped");
    st_path(other, sizeof other, dir, "lock_mapped_other");
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    st_write_all(fd, "000000000000000\n", 16);
    OK(fsync(fd));
    for (int i = 0; i < 24; i++) OK(pread(fd, (char[16]){0}, 16, 0));
    for (int i = 0; i < 3; i++) escalate_round(fd, false);
    unsigned long long s0 = skips_now();
    for (int i = 0; i < 3; i++) escalate_round(fd, false);
    unsigned long long s1 = skips_now();
    CHECK(s1 - s0 >= 6, "lock_mapped: %llu escalations without a re-read in 3 rounds before the mapping (expected 6)",
          s1 - s0);
    unsigned long long m0 = st_json_counter(st_stats_cli_json(), "lock_set_untracked");
    char *map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(map != MAP_FAILED, "lock_mapped: mmap: %s", strerror(errno));
    for (int i = 0; i < 20; i++) escalate_round(fd, false);
    unsigned long long s2 = skips_now(), m1 = st_json_counter(st_stats_cli_json(), "lock_set_untracked");
    CHECK(s2 == s1, "lock_mapped: %llu escalations of the mapped file skipped their size re-read", s2 - s1);
    CHECK(m1 == m0 + 1, "lock_mapped: lock_set_untracked +%llu (1 expected: the mapped file)", m1 - m0);
    CHECK(!memcmp(map, "000000000000026\n", 16), "lock_mapped: the mapping shows %.16s after 26 rounds", map);

    /* Another process appends under the reserved byte while this one holds the shared byte; after this
     * process's escalation SEEK_END is past that line. */
    int to_child[2], to_parent[2];
    OK(pipe(to_child));
    OK(pipe(to_parent));
    pid_t pid = OK(fork());
    if (pid == 0) {
        int cfd = OK(open(path, O_RDWR));
        OK(write(to_parent[1], "r", 1));
        wait_byte(to_child[0]);
        range_lock(cfd, F_WRLCK, RESERVED_BYTE);
        OK(lseek(cfd, 0, SEEK_END));
        st_write_all(cfd, "child..........\n", 16);
        range_lock(cfd, F_UNLCK, 0);
        OK(write(to_parent[1], "c", 1));
        OK(close(cfd));
        _exit(0);
    }
    wait_byte(to_parent[0]);
    range_lock(fd, F_RDLCK, SHARED_BYTE);
    off_t before = st_fsize(fd);
    OK(write(to_child[1], "p", 1));
    wait_byte(to_parent[0]);
    range_lock(fd, F_WRLCK, RESERVED_BYTE);
    off_t at = OK(lseek(fd, 0, SEEK_END));
    CHECK(at == before + 16, "lock_mapped: SEEK_END after the escalation is %lld; the other process's append made it %lld",
          (long long)at, (long long)before + 16);
    range_lock(fd, F_UNLCK, 0);
    int status;
    OK(waitpid(pid, &status, 0));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "lock_mapped: child status 0x%x", status);

    /* Two processes running the rounds on the mapped file at once (each maps it): the counter ends exact. */
    pid_t w[2];
    for (int i = 0; i < 2; i++) {
        w[i] = OK(fork());
        if (w[i] == 0) {
            int wfd = OK(open(path, O_RDWR));
            void *wm = mmap(NULL, 4096, PROT_READ, MAP_SHARED, wfd, 0);
            CHECK(wm != MAP_FAILED, "lock_mapped: worker mmap: %s", strerror(errno));
            for (int r = 0; r < 200; r++) escalate_round(wfd, true);
            OK(close(wfd));
            _exit(0);
        }
    }
    for (int i = 0; i < 2; i++) {
        OK(waitpid(w[i], &status, 0));
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "lock_mapped: worker %d status 0x%x", i, status);
    }
    CHECK(!memcmp(map, "000000000000426\n", 16), "lock_mapped: two processes: the counter reads %.16s (426 expected)", map);

    /* Another file's bookkeeping, with the mapped file's lock calls in between and beside it. */
    int ofd = OK(open(other, O_RDWR | O_CREAT | O_TRUNC, 0644));
    st_write_all(ofd, "000000000000000\n", 16);
    OK(fsync(ofd));
    for (int i = 0; i < 24; i++) OK(pread(ofd, (char[16]){0}, 16, 0));
    pthread_t t;
    CHECK(pthread_create(&t, NULL, mapped_rounds, &fd) == 0, "lock_mapped: pthread_create");
    CHECK(pthread_join(t, NULL) == 0, "lock_mapped: pthread_join");
    unsigned long long s3 = skips_now();
    for (int i = 0; i < 3; i++) {
        escalate_round(ofd, false);
        escalate_round(fd, false);
    }
    unsigned long long s4 = skips_now();
    CHECK(s4 - s3 == 6, "lock_mapped: %llu escalations without a re-read in 3 rounds of the unmapped file between the "
          "mapped file's (6 expected)", s4 - s3);
    OK(munmap(map, 4096));
    OK(close(ofd));
    OK(close(fd));
    OK(unlink(other));
    printf("ok: lock_mapped: no re-read skipped once mapped, counters exact, another file's skips unaffected\n");
}

/* After write + fsync another process reads the written bytes in the file (review 7, finding 8: strict
 * mode's staged overwrites waited for the next checkpoint, not for fsync), and an apply after fsync never
 * lands over another process's later write (8b). The other process is the kernel view: raw system calls. */
static void case_fsync_visible(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "fsync_visible");
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    static char a[65536], b[4096];
    memset(a, 'a', sizeof a);
    memset(b, 'B', sizeof b);
    st_write_all(fd, a, sizeof a);
    OK(fsync(fd));
    for (int i = 0; i < 4; i++) CHECK(pread(fd, a, 4096, 0) == 4096, "fsync_visible: pread"); /* mapped */
    int raw = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR);
    CHECK(raw >= 0, "fsync_visible: raw open");
    for (int round = 0; round < 8; round++) {
        off_t at = (off_t)round * 4096;
        st_pwrite_all(fd, b, sizeof b, at);
        OK(fsync(fd));
        char c = 0;
        CHECK(syscall(SYS_pread64, raw, &c, 1, at) == 1 && c == 'B',
              "fsync_visible: round %d: after write + fsync another process reads '%c', not the written 'B'", round, c);
        CHECK(syscall(SYS_pwrite64, raw, "C", 1, at) == 1, "fsync_visible: the other writer");
    }
    OK(close(fd)); /* a publish point: nothing of ours may land over the other writer's bytes now */
    for (int round = 0; round < 8; round++) {
        char c = 0;
        CHECK(syscall(SYS_pread64, raw, &c, 1, (off_t)round * 4096) == 1 && c == 'C',
              "fsync_visible: round %d: the other process's later write was overwritten ('%c')", round, c);
    }
    syscall(SYS_close, raw);
    printf("ok: fsync_visible: written bytes visible to another process after fsync, its later writes kept\n");
}

static unsigned long long auto_keeps_now(void) { return st_json_counter(st_stats_cli_json(), "auto_keeps"); }

/* A log two programs append to with O_APPEND, each record fdatasync'ed (an audit log): auto must not keep
 * an extension there -- the other program's record lands at the kernel's end, and a kept extension would
 * sit as zeros before it (review 8, finding 1). Kernel path: 16 contiguous records, the other's at 1000. */
static void auto_keep_shared_log(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "auto_keep_shared.log");
    unsigned long long k0 = auto_keeps_now();
    int fd = OK(open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644));
    char rec[100];
    for (int i = 0; i < 15; i++) {
        if (i == 10) { /* the other program (raw system calls: not under daxkit) */
            int o = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_APPEND);
            CHECK(o >= 0, "auto_keep: raw open of the shared log: %s", strerror(errno));
            memset(rec, 'B', sizeof rec);
            CHECK(syscall(SYS_write, o, rec, sizeof rec) == (long)sizeof rec, "auto_keep: the other's append failed");
            syscall(SYS_close, o);
        }
        memset(rec, 'A', sizeof rec);
        st_write_all(fd, rec, sizeof rec);
        OK(fdatasync(fd));
    }
    OK(close(fd));
    int r = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
    static char all[1 << 16];
    long n = syscall(SYS_read, r, all, sizeof all);
    syscall(SYS_close, r);
    CHECK(n == 1600, "auto_keep: the shared log holds %ld bytes (kernel: 1600, 16 records of 100)", n);
    for (long i = 0; i < n; i++)
        CHECK(all[i] == (i >= 1000 && i < 1100 ? 'B' : 'A'),
              "auto_keep: byte %ld of the shared log is %d (kernel: the other's record at 1000, no zeros)", i, all[i]);
    CHECK(auto_keeps_now() == k0, "auto_keep: a log appended through O_APPEND moved to extend with keep");
}

static unsigned long long o_append_hints_now(void) {
    return st_json_counter(st_stats_cli_json(), "o_append_sync_logs");
}

/* `every`: records per fdatasync; `o_append`: the log's open flag. Another program sees exactly the synced
 * records after each fdatasync (the file stays on stage). */
static void synced_log(const char *name, int records, int every, bool o_append) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, name);
    int fd = OK(open(path, O_WRONLY | O_CREAT | O_TRUNC | (o_append ? O_APPEND : 0), 0644));
    uint64_t size = 0;
    for (int i = 0; i < records; i++) {
        size = append(fd, size, 100 + (size_t)i);
        if ((i + 1) % every) continue;
        OK(fdatasync(fd));
        seen_by_other(path, size, size, "fdatasync of the log");
    }
    OK(close(fd));
    seen_by_other(path, size, size, "close of the log");
}

static void case_o_append_hint(bool never) {
    unsigned long long h0 = o_append_hints_now();
    synced_log("hint_pairs.aof", 40, 2, true);
    CHECK(o_append_hints_now() == h0, "o_append_hint: a log synced every two records was counted");
    synced_log("hint_plain.log", 40, 1, false);
    CHECK(o_append_hints_now() == h0, "o_append_hint: a log without O_APPEND was counted (auto's case)");
    synced_log("hint_short.aof", 7, 1, true);
    CHECK(o_append_hints_now() == h0, "o_append_hint: a log synced per record 7 times was counted (the rule: 8)");
    synced_log("hint.aof", 40, 1, true);
    unsigned long long got = o_append_hints_now() - h0;
    CHECK(got == (never ? 0u : 1u), "o_append_hint: %llu logs synced per record through O_APPEND counted (expected %d)",
          got, never ? 0 : 1);
    printf("ok: o_append_hint: %llu O_APPEND log synced per record counted, each log exact after every fsync\n", got);
}

/* An fsync with nothing to publish on a memory medium takes no mutex and does nothing (session 27, upath.c
 * sync_changes_nothing) -- unless it has something to do: DAXKIT_APPEND=auto, 7 fsyncs of one append each, an
 * fdatasync with none (it ends the streak: publish.c note_sync_streak), 7 more: no move to extend with keep;
 * one more (8 in a row): the move. And appends made after an idle fdatasync are published by the next one. */
static void case_fsync_idle(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "fsync_idle.log");
    unsigned long long k0 = auto_keeps_now();
    int fd = OK(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    uint64_t size = 0;
    for (int i = 0; i < 7; i++) {
        size = append(fd, size, 100);
        OK(fsync(fd));
    }
    OK(fdatasync(fd)); /* nothing appended: the streak ends */
    for (int i = 0; i < 7; i++) {
        size = append(fd, size, 100);
        OK(fsync(fd));
    }
    CHECK(auto_keeps_now() == k0, "fsync_idle: the log moved to extend with keep after an fsync with no append "
          "between 7 and 7 fsyncs of one append each (the idle fsync did not end the streak)");
    size = append(fd, size, 100);
    OK(fsync(fd));
    CHECK(auto_keeps_now() == k0 + 1, "fsync_idle: 8 fsyncs of one append each did not move the log (%llu)",
          auto_keeps_now() - k0);
    OK(close(fd));
    st_path(path, sizeof path, dir, "fsync_idle.data");
    fd = OK(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    size = append(fd, 0, 5000);
    OK(fdatasync(fd));
    OK(fdatasync(fd)); /* idle */
    size = append(fd, size, 300);
    size = append(fd, size, 7);
    OK(fdatasync(fd));
    seen_by_other(path, size, size, "fdatasync after an idle one");
    OK(close(fd));
    printf("ok: fsync_idle: an idle fsync ends an append streak; a later one publishes\n");
}

static void case_auto_keep(bool never) {
    auto_keep_shared_log();
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "auto_keep.log");
    unsigned long long k0 = auto_keeps_now();
    /* The writer tracks its own offset (RocksDB's WAL): no O_APPEND. */
    int fd = OK(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    uint64_t size = 0;
    bool tail_seen = false;
    for (int i = 0; i < 40; i++) {
        size = append(fd, size, 100 + (size_t)i);
        OK(i % 2 ? fdatasync(fd) : fsync(fd));
        seen_bytes_by_other(path, size, "fsync of a single append");
        long long k = st_ksize(path);
        CHECK(k >= (long long)size, "auto_keep: round %d: another program sees size %lld, below the %llu fsynced bytes",
              i, k, (unsigned long long)size);
        CHECK(!never || k == (long long)size, "auto_keep: round %d: size %lld after fsync with DAXKIT_AUTO_KEEP_AFTER=0, "
              "expected %llu", i, k, (unsigned long long)size);
        tail_seen |= k > (long long)size;
    }
    unsigned long long moved = auto_keeps_now() - k0;
    CHECK(moved == (never ? 0u : 1u), "auto_keep: %llu files moved to extend with keep (expected %d)", moved, never ? 0 : 1);
    CHECK(tail_seen == !never, "auto_keep: the kernel size %s past the fsynced bytes", tail_seen ? "went" : "never went");
    for (int i = 0; i < 4; i++) { /* two appends per fsync: still served, still fsynced exactly */
        size = append(fd, size, 3000);
        size = append(fd, size, 5);
        OK(fsync(fd));
        seen_bytes_by_other(path, size, "fsync of two appends");
    }
    OK(close(fd));
    seen_by_other(path, size, size, "close of the auto-kept log");
    fd = OK(open(path, O_WRONLY | O_APPEND));
    OK(flock(fd, LOCK_EX));
    size = append(fd, size, 4096);
    OK(flock(fd, LOCK_UN));
    seen_by_other(path, size, size, "flock unlock of the reopened log");
    OK(close(fd));
    printf("ok: auto_keep: %s\n", never ? "never moved with DAXKIT_AUTO_KEEP_AFTER=0"
                                        : "a log fsynced per record moved to extend-keep; exact at close and unlock");
}

/* ---- a lock on another file (upath.c: up_publish_all, its walk skipped while nothing is pinned) ---- */

static void lock_round(int fd) {
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    OK(fcntl(fd, F_SETLKW, &l));
    l.l_type = F_UNLCK;
    OK(fcntl(fd, F_SETLK, &l));
}

static void case_lock_other(void) {
    char path[PATH_MAX], other[PATH_MAX];
    st_path(path, sizeof path, dir, "lock_other");
    st_path(other, sizeof other, dir, "lock_other.lock");
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    int lfd = OK(open(other, O_RDWR | O_CREAT | O_TRUNC, 0644));
    lock_round(lfd); /* nothing pinned: the walk finds so */
    uint64_t skips = st_counter(DK_C_publish_walk_skips);
    lock_round(lfd);
    CHECK(st_counter(DK_C_publish_walk_skips) > skips, "a lock release with nothing to publish walked the open files");
    const size_t sizes[] = {100, 5000, 70000, 3};
    uint64_t pub = 0, size = 0;
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size = append(fd, size, sizes[i]);
        seen_by_other(path, pub, size, "appends before a lock round on another file");
        lock_round(lfd);
        pub = size;
        seen_by_other(path, pub, size, "the release of a lock on another file (after a skipped walk)");
        skips = st_counter(DK_C_publish_walk_skips);
        lock_round(lfd); /* nothing pinned again */
        CHECK(st_counter(DK_C_publish_walk_skips) > skips, "no skip after the appends were published");
    }
    OK(close(lfd));
    OK(close(fd));
    printf("ok: lock_other: appends published by the release of a lock on another file, walks skipped in between\n");
}

/* A lock file the program maps (SQLite's -shm, session 25), made untracked by its first lock round: the
 * descriptor, its 4 KiB mapping in *map. `what` names the case in a failure. */
static int mapped_lock_file(const char *path, char **map, const char *what) {
    int lfd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    OK(ftruncate(lfd, 4096));
    *map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, lfd, 0);
    CHECK(*map != MAP_FAILED, "%s: mmap: %s", what, strerror(errno));
    unsigned long long m0 = st_json_counter(st_stats_cli_json(), "lock_set_untracked");
    lock_round(lfd); /* counted: finds the file mapped and leaves it untracked */
    lock_round(lfd);
    CHECK(st_json_counter(st_stats_cli_json(), "lock_set_untracked") == m0 + 1,
          "%s: the mapped lock file did not become untracked", what);
    return lfd;
}

/* Another process that cuts `path` to 8 bytes with the kernel's calls when told (shrinker_run). Forked before
 * this one opens anything: a descriptor shared with a fork relative is the kernel's to serve, and a fork is a
 * publish and refresh point of its own. It ends on its own when the parent ends without telling it (a failed
 * CHECK, the watchdog): it holds no write end of its own pipe, so its read sees the end of the file (session
 * 27: it waited for ever, and ctest with it, on the output it still held). */
struct shrinker {
    pid_t pid;
    int to_child[2], to_parent[2];
};

static void shrinker_fork(struct shrinker *k, const char *path) {
    OK(pipe2(k->to_child, O_CLOEXEC)); /* (no exec'd checker holds an end either) */
    OK(pipe2(k->to_parent, O_CLOEXEC));
    k->pid = OK(fork());
    if (k->pid == 0) {
        close(k->to_child[1]);
        close(k->to_parent[0]);
        char c = 0;
        if (syscall(SYS_read, k->to_child[0], &c, 1) != 1) _exit(7); /* the parent ended without telling */
        int cfd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR);
        if (cfd < 0 || syscall(SYS_ftruncate, cfd, 8) != 0) _exit(2);
        syscall(SYS_close, cfd);
        OK(write(k->to_parent[1], "d", 1));
        _exit(0);
    }
}

/* A parent that fails between shrinker_fork and shrinker_run leaves no shrinker behind: this process becomes
 * the subreaper of a middle child that forks one and fails (exit 1); the orphan must end by itself within
 * 10 s (before session 27 it waited for ever: the test hung until ctest's timeout). */
static void case_shrinker_orphan(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "shrinker_orphan");
    OK(prctl(PR_SET_CHILD_SUBREAPER, 1));
    int tell[2];
    OK(pipe(tell));
    pid_t mid = OK(fork());
    if (mid == 0) {
        struct shrinker k;
        shrinker_fork(&k, path);
        if (write(tell[1], &k.pid, sizeof k.pid) != (ssize_t)sizeof k.pid) _exit(2);
        exit(1); /* as a failed CHECK: the shrinker never told */
    }
    close(tell[1]);
    pid_t orphan = 0;
    CHECK(read(tell[0], &orphan, sizeof orphan) == (ssize_t)sizeof orphan, "shrinker_orphan: no shrinker pid");
    close(tell[0]);
    int st;
    OK(waitpid(mid, &st, 0));
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1, "shrinker_orphan: middle child status 0x%x", st);
    pid_t r = 0;
    for (int ms = 0; ms < 10000 && r == 0; ms += 10) { /* reparented here (the subreaper) */
        r = waitpid(orphan, &st, WNOHANG);
        CHECK(r >= 0, "shrinker_orphan: waitpid(%d): %s", (int)orphan, strerror(errno));
        if (r == 0) usleep(10000);
    }
    if (r == 0) {
        kill(orphan, SIGKILL);
        waitpid(orphan, NULL, 0);
        FAIL("shrinker_orphan: the shrinker of a parent that failed was still waiting after 10 s (killed)");
    }
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7, "shrinker_orphan: the orphaned shrinker's status 0x%x (expected "
          "exit 7)", st);
    OK(prctl(PR_SET_CHILD_SUBREAPER, 0));
    printf("ok: shrinker_orphan: the shrinker of a failed parent ended by itself (exit 7)\n");
}

static void shrinker_run(struct shrinker *k, const char *what) {
    OK(write(k->to_child[1], "g", 1));
    wait_byte(k->to_parent[0]);
    int status;
    OK(waitpid(k->pid, &status, 0));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: shrinking child status 0x%x", what, status);
}

/* A 12 KiB data file, fsynced and read 24 times (served from its mapping): the descriptor. */
static int data_file_12k(const char *path) {
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    static char big[3 * 4096];
    memset(big, '0', sizeof big);
    st_write_all(fd, big, sizeof big);
    OK(fsync(fd));
    for (int i = 0; i < 24; i++) OK(pread(fd, (char[16]){0}, 16, 0));
    return fd;
}

/* The same with the lock file mapped by the program (SQLite's -shm, session 25): its lock calls take the
 * untracked way (shim/fd.c served_lock, untracked, counter lock_set_untracked), whose release must still publish
 * the other file's appends before the kernel's unlock. */
static void case_lock_other_mapped(void) {
    char path[PATH_MAX], other[PATH_MAX];
    st_path(path, sizeof path, dir, "lock_other_mapped");
    st_path(other, sizeof other, dir, "lock_other_mapped.shm");
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    char *map;
    int lfd = mapped_lock_file(other, &map, "lock_other_mapped");
    const size_t sizes[] = {100, 5000, 70000, 3};
    uint64_t pub = 0, size = 0;
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size = append(fd, size, sizes[i]);
        seen_by_other(path, pub, size, "appends before a lock round on a mapped file");
        lock_round(lfd);
        pub = size;
        seen_by_other(path, pub, size, "the release of a lock on a mapped (untracked) file");
    }
    OK(munmap(map, 4096));
    OK(close(lfd));
    OK(close(fd));
    printf("ok: lock_other_mapped: appends published by the release of a lock on a mapped file\n");
}

/* An acquisition on a mapped (untracked) lock file is where another process's changes to the files it
 * guards become visible: it moves the refresh generation for every file (reclock.c up_lock_untracked_taken).
 * Another process appends 16 bytes to the data file and publishes them (fsync); after this process's lock on
 * the mapped file, fstat and a read of the data file see them. */
static void case_lock_refresh_mapped(void) {
    char path[PATH_MAX], other[PATH_MAX];
    st_path(path, sizeof path, dir, "lock_refresh_mapped");
    st_path(other, sizeof other, dir, "lock_refresh_mapped.shm");
    struct shrinker k;
    shrinker_fork(&k, path);
    int fd = data_file_12k(path);
    char *map;
    int lfd = mapped_lock_file(other, &map, "lock_refresh_mapped");
    char buf[16];
    CHECK(pread(fd, buf, 16, 0) == 16, "lock_refresh_mapped: read before the shrink");
    shrinker_run(&k, "lock_refresh_mapped");
    /* A shrink by another process (12 KiB -> 8 bytes) is seen by a read inside the old end only after a re-read
     * of the size: the lock on the mapped file must be one (reclock.c, up_lock_untracked_taken). */
    struct flock l = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
    OK(fcntl(lfd, F_SETLKW, &l));
    ssize_t r = pread(fd, buf, 16, 0);
    CHECK(r == 8, "lock_refresh_mapped: a read of 16 bytes at 0 returned %zd after a lock on the mapped file; another "
          "process cut the file to 8", r);
    l.l_type = F_UNLCK;
    OK(fcntl(lfd, F_SETLK, &l));
    OK(munmap(map, 4096));
    OK(close(lfd));
    OK(close(fd));
    printf("ok: lock_refresh_mapped: another process's shrink seen after a lock on a mapped file\n");
}

/* ---- a lock's size re-read put off (upath.c put_off, session 26) ---- */

/* Another process that changes `path` with the kernel's calls when told: 'a' appends 5,000 bytes of pattern
 * seed 7 (O_APPEND), 'c' cuts it to 8 bytes, 'p' to CUT_IN_PAGE (inside a page), 'q' ends. Forked before this one
 * opens anything (shrinker_fork). */
#define CUT_IN_PAGE (5 * 4096 + 50)
static void changer_fork(struct shrinker *k, const char *path) {
    OK(pipe(k->to_child));
    OK(pipe(k->to_parent));
    k->pid = OK(fork());
    if (k->pid != 0) return;
    close(k->to_child[1]); /* this one's end gone, the read below ends: a parent that failed leaves no child */
    close(k->to_parent[0]);
    for (;;) {
        char c = 0;
        if (read(k->to_child[0], &c, 1) != 1) _exit(7); /* the parent failed */
        if (c == 'q') _exit(0);
        int cfd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | (c == 'a' ? O_APPEND : 0));
        if (cfd < 0) _exit(2);
        if (c == 'a') {
            static uint8_t b[5000];
            struct stat st;
            if (syscall(SYS_fstat, cfd, &st) != 0) _exit(3);
            st_fill(b, 7, (uint64_t)st.st_size, sizeof b);
            if (syscall(SYS_write, cfd, b, sizeof b) != (long)sizeof b) _exit(4);
        } else if (syscall(SYS_ftruncate, cfd, c == 'p' ? CUT_IN_PAGE : 8) != 0) {
            _exit(5);
        }
        syscall(SYS_close, cfd);
        if (write(k->to_parent[1], "d", 1) != 1) _exit(6);
    }
}

static void changer_do(struct shrinker *k, char c) {
    OK(write(k->to_child[1], &c, 1));
    CHECK(wait_byte(k->to_parent[0]) == 'd', "lock_put_off: the other process failed at '%c'", c);
}

static void take(int lfd, short type) {
    struct flock l = {.l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    OK(fcntl(lfd, type == F_UNLCK ? F_SETLK : F_SETLKW, &l));
}

/* RTM as the library asks it (common/cpu.h: glibc's "active" -- no RTM_ALWAYS_ABORT, GLIBC_TUNABLES masks, TSX
 * errata models): the library's probe page needs it (upath.c probe_covers). */
static bool cpu_has_rtm(void) { return dk_cpu_has(DK_CPU_RTM); }

/* One WAL transaction in place: lock, a 24-byte frame header and a 4,096-byte page at `off` (pattern seed
 * `seed`), fdatasync, unlock. */
static void wal_round(int fd, int lfd, uint64_t off, uint32_t seed) {
    static uint8_t b[24 + 4096];
    take(lfd, F_WRLCK);
    st_fill(b, seed, off, sizeof b);
    st_pwrite_all(fd, b, 24, (off_t)off);
    st_pwrite_all(fd, b + 24, 4096, (off_t)off + 24);
    OK(fdatasync(fd));
    take(lfd, F_UNLCK);
}

/* A lock's re-read put off by writes inside the end (session 27, upath.c probe_covers): the WAL after SQLite
 * restarts it. What the probe protects first: another process cuts the file to 8 bytes and, after a lock, a
 * 100-byte pwrite at 12,293 (inside the old end, past the cut: a store there is a SIGBUS) lands as the kernel's
 * -- the file extended to its end, zeros between; the file grown again to 64 KiB and re-read, a round in place
 * over the page at 20,480, another process cuts the file inside that page (CUT_IN_PAGE), and a 100-byte pwrite
 * at its start -- whose entry such a cut may leave (4 KiB pages): a probe of the write's own last page would
 * store the bytes past the cut into the page the kernel zeroed past its end -- extends the file to its end.
 * Then, after two rounds that re-read (the first finds storage under the probe page: the first mapped access
 * after a cut probes for holes, holes.c; the second touches it), 10 rounds in place from offset 32 make no
 * re-read (RTM, stores through the mapping: refresh_put_off +30, size_rereads +0) and another program sees each. */
static void lock_put_off_in_place(struct shrinker *k, int fd, int lfd, const char *path, uint64_t size) {
    /* Stores through the mapping (not the page cache's pwrite: io.c overwrite_by_pwrite) need the probe page */
    struct statfs sf;
    OK(statfs(dir, &sf));
    bool rtm = cpu_has_rtm(), stores = sf.f_type == TMPFS_MAGIC;
    static uint8_t buf[8192], want[8192], grow[65536];
    wal_round(fd, lfd, 0, 11);
    wal_round(fd, lfd, 0, 11);

    /* A cut to 8 bytes before the lock: a pwrite inside the old end, past the cut */
    changer_do(k, 'c');
    uint64_t off = 3 * 4096 + 5;
    take(lfd, F_WRLCK);
    st_fill(buf, 13, off, 100);
    st_pwrite_all(fd, buf, 100, (off_t)off);
    OK(fdatasync(fd));
    take(lfd, F_UNLCK);
    CHECK(st_ksize(path) == (long long)(off + 100), "lock_put_off: another program sees size %lld after a cut to 8 and "
          "a 100-byte write at %llu", st_ksize(path), (unsigned long long)off);
    struct stat st;
    OK(fstat(fd, &st));
    CHECK(st.st_size == (off_t)(off + 100), "lock_put_off: fstat says %lld after a cut to 8 and a write at %llu",
          (long long)st.st_size, (unsigned long long)off);
    memset(want, 0, sizeof want);
    st_fill(want + off - 8192, 13, off, 100);
    ssize_t r = pread(fd, buf, 8192, 8192);
    CHECK(r == (ssize_t)(off + 100 - 8192) && !memcmp(buf, want, (size_t)r), "lock_put_off: after a cut to 8 and a write "
          "at %llu, bytes 8192.. read back wrong (%zd)", (unsigned long long)off, r);
    CHECK(st_check("pattern", (char *)path, st_fmt("%llu", (unsigned long long)off), "100", "13") == 0,
          "lock_put_off: another program does not see the write after the cut");

    /* Grown to 64 KiB again and re-read, a round over the page at 20,480, then a cut inside that page */
    size = off + 100;
    st_fill(grow, 17, size, 65536 - size);
    st_pwrite_all(fd, grow, 65536 - size, (off_t)size);
    OK(fdatasync(fd));
    size = 65536;
    wal_round(fd, lfd, 32, 11);
    wal_round(fd, lfd, 32, 11);
    off = CUT_IN_PAGE - 50;
    wal_round(fd, lfd, off - 24, 11);
    changer_do(k, 'p');
    take(lfd, F_WRLCK);
    st_fill(buf, 19, off, 100);
    st_pwrite_all(fd, buf, 100, (off_t)off);
    OK(fdatasync(fd));
    take(lfd, F_UNLCK);
    CHECK(st_ksize(path) == (long long)(off + 100), "lock_put_off: another program sees size %lld after a cut to %d and "
          "a 100-byte write at %llu", st_ksize(path), CUT_IN_PAGE, (unsigned long long)off);
    CHECK(st_check("pattern", (char *)path, st_fmt("%llu", (unsigned long long)off), "100", "19") == 0,
          "lock_put_off: another program does not see the write over the cut inside its page");

    /* Grown to 64 KiB again (a round over its last page: storage found there, holes.c); the WAL's rounds in place */
    size = off + 100;
    st_fill(grow, 17, size, 65536 - size);
    st_pwrite_all(fd, grow, 65536 - size, (off_t)size);
    OK(fdatasync(fd));
    size = 65536;
    wal_round(fd, lfd, size - 4120, 17);
    wal_round(fd, lfd, 0, 11);
    wal_round(fd, lfd, 0, 11);
    const char *j0 = st_stats_cli_json();
    unsigned long long put0 = st_json_counter(j0, "refresh_put_off"), re0 = st_json_counter(j0, "size_rereads"),
                       ab0 = st_json_counter(j0, "probe_page_aborts");
    for (int i = 0; i < 10; i++) {
        off = 32 + (uint64_t)i * (24 + 4096);
        wal_round(fd, lfd, off, 11);
        CHECK(st_check("pattern", (char *)path, st_fmt("%llu", (unsigned long long)off), "4120", "11") == 0,
              "lock_put_off: another program does not see in-place round %d's bytes", i);
        CHECK(st_ksize(path) == (long long)size, "lock_put_off: size %lld after in-place round %d; expected %llu",
              st_ksize(path), i, (unsigned long long)size);
    }
    const char *j1 = st_stats_cli_json();
    unsigned long long put1 = st_json_counter(j1, "refresh_put_off"), re1 = st_json_counter(j1, "size_rereads"),
                       ab1 = st_json_counter(j1, "probe_page_aborts");
    /* A transaction may abort for reasons of its own (an interrupt inside it): that round re-reads, and says so */
    unsigned long long re = re1 - re0, ab = ab1 - ab0;
    if (rtm && stores)
        CHECK(re <= ab && re <= 3 && put1 - put0 + 3 * re >= 30, "lock_put_off: 10 in-place rounds put off %llu "
              "re-reads and made %llu (%llu probe aborts); expected 30 and 0, a re-read only after an abort",
              put1 - put0, re, ab);
    else
        printf("note: lock_put_off: %s: in-place rounds re-read (put off %llu, re-reads %llu)\n",
               rtm ? "not tmpfs" : "no RTM here", put1 - put0, re1 - re0);
    printf("ok: lock_put_off: cuts below in-place writes are seen; in-place rounds%s make no size re-read\n",
           rtm && stores ? "" : " (not checked here)");
}

static void case_lock_put_off(void) {
    char path[PATH_MAX], other[PATH_MAX];
    st_path(path, sizeof path, dir, "lock_put_off");
    st_path(other, sizeof other, dir, "lock_put_off.shm");
    struct shrinker k;
    changer_fork(&k, path);
    int fd = data_file_12k(path);
    char *map;
    int lfd = mapped_lock_file(other, &map, "lock_put_off");
    static uint8_t buf[8192], want[8192];
    uint64_t size = 3 * 4096;

    /* Another process's growth, seen after a put-off pwrite over its head and the fdatasync */
    changer_do(&k, 'a');
    take(lfd, F_WRLCK);
    st_fill(buf, 5, size, 100);
    st_pwrite_all(fd, buf, 100, (off_t)size);
    OK(fdatasync(fd));
    struct stat st;
    OK(fstat(fd, &st));
    CHECK(st.st_size == (off_t)(size + 5000), "lock_put_off: fstat says %lld after another process appended 5,000 "
          "bytes at %llu; expected %llu", (long long)st.st_size, (unsigned long long)size,
          (unsigned long long)(size + 5000));
    ssize_t r = pread(fd, buf, 300, (off_t)size + 50);
    st_fill(want, 5, size + 50, 50);
    st_fill(want + 50, 7, size + 100, 250);
    CHECK(r == 300 && !memcmp(buf, want, 300), "lock_put_off: a read across this process's end and into the "
          "other's bytes returned %zd bytes%s", r, r == 300 ? " that differ" : "");
    CHECK(lseek(fd, 0, SEEK_END) == (off_t)(size + 5000), "lock_put_off: SEEK_END misses the other's growth");
    take(lfd, F_UNLCK);
    size += 5000;

    /* Another process's cut: the owed re-read (appends staged) before an overwrite inside the old end */
    changer_do(&k, 'c');
    take(lfd, F_WRLCK);
    st_fill(buf, 5, size, 100);
    st_pwrite_all(fd, buf, 100, (off_t)size); /* put off */
    st_fill(buf, 9, 4096, 16);
    st_pwrite_all(fd, buf, 16, 4096); /* inside the old end, past the cut: a store there would be a SIGBUS */
    OK(fdatasync(fd));
    take(lfd, F_UNLCK);
    OK(fstat(fd, &st));
    CHECK(st.st_size == (off_t)(size + 100), "lock_put_off: size %lld after the cut and an append at %llu",
          (long long)st.st_size, (unsigned long long)size);
    memset(want, '0', 8);
    memset(want + 8, 0, sizeof want - 8);
    st_fill(want + 4096, 9, 4096, 16);
    r = pread(fd, buf, 8192, 0);
    CHECK(r == 8192 && !memcmp(buf, want, 8192), "lock_put_off: the file's first 8 KiB after the cut differ (%zd)", r);
    r = pread(fd, buf, 100, (off_t)size);
    st_fill(want, 5, size, 100);
    CHECK(r == 100 && !memcmp(buf, want, 100), "lock_put_off: the append after the cut reads back wrong (%zd)", r);
    CHECK(st_ksize(path) == (long long)(size + 100), "lock_put_off: another program sees size %lld", st_ksize(path));
    size += 100;

    /* A cut, then a put-off pwrite at the old end published (fdatasync) before any other call: the hole the cut
     * left below it is not mapped -- a read there is the kernel's (counter hole_kernel_ios), allocating nothing */
    changer_do(&k, 'c');
    take(lfd, F_WRLCK);
    st_fill(buf, 5, size, 100);
    st_pwrite_all(fd, buf, 100, (off_t)size);
    OK(fdatasync(fd));
    take(lfd, F_UNLCK);
    unsigned long long h0 = st_json_counter(st_stats_cli_json(), "hole_kernel_ios");
    r = pread(fd, buf, 16, 4096);
    memset(want, 0, 16);
    CHECK(r == 16 && !memcmp(buf, want, 16), "lock_put_off: a read in the hole a cut left returned %zd", r);
    CHECK(st_json_counter(st_stats_cli_json(), "hole_kernel_ios") > h0, "lock_put_off: a read in the hole a cut "
          "left below a put-off append was served from the mapping (hole_kernel_ios +0)");
    CHECK(st_ksize(path) == (long long)(size + 100), "lock_put_off: another program sees size %lld", st_ksize(path));
    size += 100;

    /* A WAL's growth: lock round, frame header and page at the end, fdatasync -- no size re-read */
    uint64_t from = size;
    const char *j0 = st_stats_cli_json();
    unsigned long long put0 = st_json_counter(j0, "refresh_put_off"), re0 = st_json_counter(j0, "size_rereads");
    for (int i = 0; i < 10; i++) {
        take(lfd, F_WRLCK);
        st_fill(buf, 5, size, 24 + 4096);
        st_pwrite_all(fd, buf, 24, (off_t)size);
        st_pwrite_all(fd, buf + 24, 4096, (off_t)size + 24);
        OK(fdatasync(fd));
        take(lfd, F_UNLCK);
        size += 24 + 4096;
        CHECK(st_ksize(path) == (long long)size, "lock_put_off: another program sees size %lld after round %d; "
              "expected %llu", st_ksize(path), i, (unsigned long long)size);
    }
    const char *j1 = st_stats_cli_json();
    unsigned long long put1 = st_json_counter(j1, "refresh_put_off"), re1 = st_json_counter(j1, "size_rereads");
    CHECK(put1 == put0 + 30 && re1 == re0, "lock_put_off: 10 rounds put off %llu re-reads and made %llu; expected "
          "30 and 0", put1 - put0, re1 - re0);
    CHECK(st_check("pattern", path, st_fmt("%llu", (unsigned long long)from),
                   st_fmt("%llu", (unsigned long long)(size - from)), "5") == 0,
          "lock_put_off: another program does not see the rounds' bytes");

    lock_put_off_in_place(&k, fd, lfd, path, size);

    OK(write(k.to_child[1], "q", 1));
    int status;
    OK(waitpid(k.pid, &status, 0));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "lock_put_off: other process status 0x%x", status);
    OK(munmap(map, 4096));
    OK(close(lfd));
    OK(close(fd));
    printf("ok: lock_put_off: a WAL's growth makes no size re-read; another process's growth and cut are seen\n");
}

/* ---- reads below the probe page and the program's fstat as the re-read (upath.c read_put_off, session 28) ---- */

/* SQLite's rollback-mode transaction on its database, the lock on the data file itself: a read lock, the change
 * counter (16 bytes at 24), fstat, unlock. The bytes read must be the file's (pattern seed `seed` from 0). */
static void rollback_round(int fd, uint32_t seed, uint64_t size, const char *what) {
    uint8_t b[16], want[16];
    take(fd, F_RDLCK);
    ssize_t r = pread(fd, b, 16, 24);
    st_fill(want, seed, 24, 16);
    CHECK(r == 16 && !memcmp(b, want, 16), "lock_read_put_off: %s: the change counter read %zd bytes%s", what, r,
          r == 16 ? " that differ" : "");
    struct stat st;
    OK(fstat(fd, &st));
    CHECK(st.st_size == (off_t)size, "lock_read_put_off: %s: fstat says %lld, expected %llu", what,
          (long long)st.st_size, (unsigned long long)size);
    take(fd, F_UNLCK);
}

/* The file written afresh with pattern seed `seed`, 64 KiB, fsynced, then two rounds (the first re-reads and
 * touches the probe page). */
static void rollback_file(int fd, uint32_t seed) {
    static uint8_t b[65536];
    st_fill(b, seed, 0, sizeof b);
    st_pwrite_all(fd, b, sizeof b, 0);
    OK(fsync(fd));
    rollback_round(fd, seed, sizeof b, "warm-up");
    rollback_round(fd, seed, sizeof b, "warm-up");
}

/* What the read's put-off protects: another process cuts the file to 8 bytes before this one's lock -- the
 * change-counter read after the lock returns 0 (the kernel's), not the zeros of page 0 past the cut through the
 * mapping, and a read at 5,000 returns 0, no SIGBUS; then, the file written again, a cut followed by a lock and the
 * program's fstat first: it says 8 and is the re-read (refresh_by_fstat +1) -- a read at 5,000 after it returns 0;
 * another process's growth (5,000 bytes appended) is seen by the fstat after a put-off read and by a read across
 * the old end. Then 10 rounds make no size re-read of the library's (RTM, memory media: refresh_read_put_off +10,
 * refresh_by_fstat +10, size_rereads +0 -- a re-read only after a probe abort). */
static void case_lock_read_put_off(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "lock_read_put_off");
    struct shrinker k;
    changer_fork(&k, path);
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    uint8_t b[300], want[300];
    struct stat st;
    rollback_file(fd, 3);

    /* A cut before the lock: the reads after it are the kernel's */
    changer_do(&k, 'c');
    take(fd, F_RDLCK);
    ssize_t r = pread(fd, b, 16, 24);
    CHECK(r == 0, "lock_read_put_off: after another process cut the file to 8 bytes, a read at 24 returned %zd "
          "(expected 0)", r);
    r = pread(fd, b, 16, 5000);
    CHECK(r == 0, "lock_read_put_off: after a cut to 8, a read at 5000 returned %zd", r);
    OK(fstat(fd, &st));
    CHECK(st.st_size == 8, "lock_read_put_off: fstat says %lld after a cut to 8", (long long)st.st_size);
    take(fd, F_UNLCK);

    /* A cut before the lock, the program's fstat first: its answer differs from this process's size, so it is not
     * the re-read (review28 #1: decided under the file's mutex) -- the read after it makes the re-read */
    rollback_file(fd, 5);
    changer_do(&k, 'c');
    unsigned long long f0 = st_json_counter(st_stats_cli_json(), "refresh_by_fstat");
    take(fd, F_RDLCK);
    OK(fstat(fd, &st));
    CHECK(st.st_size == 8, "lock_read_put_off: fstat says %lld after a cut to 8 (fstat first)", (long long)st.st_size);
    r = pread(fd, b, 16, 5000);
    CHECK(r == 0, "lock_read_put_off: after a cut to 8 and the program's fstat, a read at 5000 returned %zd", r);
    take(fd, F_UNLCK);
    unsigned long long f1 = st_json_counter(st_stats_cli_json(), "refresh_by_fstat");
    CHECK(f1 == f0, "lock_read_put_off: an fstat that saw another process's cut was taken as the re-read "
          "(refresh_by_fstat +%llu)", f1 - f0);

    /* Another process's growth: seen by the fstat after a put-off read, and by a read across the old end */
    rollback_file(fd, 3);
    changer_do(&k, 'a');
    rollback_round(fd, 3, 65536 + 5000, "after another process appended 5,000 bytes");
    take(fd, F_RDLCK);
    r = pread(fd, b, 300, 65536 - 50);
    st_fill(want, 3, 65536 - 50, 50);
    st_fill(want + 50, 7, 65536, 250);
    CHECK(r == 300 && !memcmp(b, want, 300), "lock_read_put_off: a read across the old end into the other's bytes "
          "returned %zd bytes%s", r, r == 300 ? " that differ" : "");
    take(fd, F_UNLCK);

    /* Rounds with no size re-read of the library's */
    OK(ftruncate(fd, 65536));
    rollback_file(fd, 9);
    struct statfs sf;
    OK(statfs(dir, &sf));
    bool rtm = cpu_has_rtm(), mem = sf.f_type == TMPFS_MAGIC;
    const char *j0 = st_stats_cli_json();
    unsigned long long put0 = st_json_counter(j0, "refresh_read_put_off"), by0 = st_json_counter(j0, "refresh_by_fstat"),
                       re0 = st_json_counter(j0, "size_rereads"), ab0 = st_json_counter(j0, "probe_page_aborts");
    for (int i = 0; i < 10; i++) rollback_round(fd, 9, 65536, "counted round");
    const char *j1 = st_stats_cli_json();
    unsigned long long put = st_json_counter(j1, "refresh_read_put_off") - put0,
                       by = st_json_counter(j1, "refresh_by_fstat") - by0,
                       re = st_json_counter(j1, "size_rereads") - re0, ab = st_json_counter(j1, "probe_page_aborts") - ab0;
    CHECK(by + re >= 10, "lock_read_put_off: 10 rounds made %llu re-reads and %llu by fstat: some lock's re-read was "
          "never made", re, by);
    if (rtm && mem)
        CHECK(re <= ab && re <= 3 && put + re >= 10 && by + re >= 10, "lock_read_put_off: 10 rounds put off %llu reads' "
              "re-reads, took %llu from the program's fstat and made %llu (%llu probe aborts); expected 10, 10 and 0",
              put, by, re, ab);
    else
        printf("note: lock_read_put_off: %s: rounds put off %llu, by fstat %llu, re-reads %llu\n",
               rtm ? "not tmpfs" : "no RTM here", put, by, re);
    OK(write(k.to_child[1], "q", 1));
    int status;
    OK(waitpid(k.pid, &status, 0));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "lock_read_put_off: other process status 0x%x", status);
    OK(close(fd));
    printf("ok: lock_read_put_off: cuts and growth before a lock are seen by reads and fstat; rounds%s make no size "
           "re-read\n", rtm && mem ? "" : " (not checked here)");
}

/* The program's fstat as the re-read, decided under the file's mutex (review28 #1, its fstat_race2.c on cue): 64
 * bytes written at S = 12,388 (the end: S + 64), a lock, and a signal handler cuts the file back to S between the
 * kernel's fstat and the library's use of its answer (a test-build cue, DAXKIT_TEST_CRASH=raise:10:
 * upath.fstat_end:1) -- the fstat's answer (S + 64) must not be taken as the file's size: a read of 64 at S returns 0
 * (taken, it was "adopted growth" and returned the 64 zeros the page holds past the cut), fstat says S. */
#define RACE_S 12388
static int race_fd = -1;
static volatile sig_atomic_t race_cut;
static void race_handler(int sig) {
    (void)sig;
    race_cut = ftruncate(race_fd, RACE_S) == 0 ? 1 : 2;
}
static void case_fstat_race(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "fstat_race");
    struct sigaction sa = {.sa_handler = race_handler};
    OK(sigaction(SIGUSR1, &sa, NULL));
    race_fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    static uint8_t b[RACE_S + 64];
    st_fill(b, 3, 0, sizeof b);
    st_pwrite_all(race_fd, b, RACE_S, 0);
    OK(fsync(race_fd));
    st_pwrite_all(race_fd, b + RACE_S, 64, RACE_S);
    OK(fsync(race_fd));
    take(race_fd, F_RDLCK);
    struct stat st;
    OK(fstat(race_fd, &st)); /* the cue: the handler cuts the file back to S inside it */
    if (!race_cut) {
        printf("skip: fstat_race: the cue did not fire (not a test build?)\n");
        exit(77);
    }
    CHECK(race_cut == 1, "fstat_race: the handler's ftruncate failed");
    ssize_t r = pread(race_fd, b, 64, RACE_S);
    CHECK(r == 0, "fstat_race: a read of 64 at %d after the file was cut back to %d between the kernel's fstat and "
          "the library's use of its answer returned %zd (the fstat's old size taken as the file's)", RACE_S, RACE_S, r);
    OK(fstat(race_fd, &st));
    CHECK(st.st_size == RACE_S, "fstat_race: fstat says %lld after the cut to %d", (long long)st.st_size, RACE_S);
    take(race_fd, F_UNLCK);
    OK(close(race_fd));
    printf("ok: fstat_race: a cut between the kernel's fstat and the use of its answer is kept\n");
}

/* ---- the pin owner (upath.c up_pin_unpinned, session 26) ---- */

/* A WAL transaction pins one file (its appends) and unpins it at its fdatasync: that publish records the walk of
 * the open files the lock release after it would make (counter publish_walks_recorded), and the release skips
 * it (publish_walk_skips). With another file's appends pinned too, the publish records nothing, and the release
 * publishes the other file's appends (another program sees them). */
static void case_lock_pin_owner(void) {
    char a[PATH_MAX], b[PATH_MAX], other[PATH_MAX];
    st_path(a, sizeof a, dir, "pin_owner.a");
    st_path(b, sizeof b, dir, "pin_owner.b");
    st_path(other, sizeof other, dir, "pin_owner.lock");
    int fa = OK(open(a, O_RDWR | O_CREAT | O_TRUNC, 0644)), fb = OK(open(b, O_RDWR | O_CREAT | O_TRUNC, 0644));
    int lfd = OK(open(other, O_RDWR | O_CREAT | O_TRUNC, 0644));
    uint64_t sa = append(fa, 0, 100), sb = append(fb, 0, 100);
    OK(fsync(fa));
    OK(fsync(fb));
    lock_round(lfd); /* a walk that finds nothing pinned */
    const char *j0 = st_stats_cli_json();
    unsigned long long rec0 = st_json_counter(j0, "publish_walks_recorded");
    unsigned long long sk0 = st_json_counter(j0, "publish_walk_skips");
    for (int i = 0; i < 5; i++) {
        sb = append(fb, sb, 100 + (size_t)i);
        OK(fdatasync(fb));
        lock_round(lfd);
    }
    const char *j1 = st_stats_cli_json();
    unsigned long long rec1 = st_json_counter(j1, "publish_walks_recorded");
    unsigned long long sk1 = st_json_counter(j1, "publish_walk_skips");
    CHECK(rec1 == rec0 + 5 && sk1 == sk0 + 5, "lock_pin_owner: 5 rounds of one file's append + fdatasync + lock round "
          "recorded %llu walks and skipped %llu; expected 5 and 5", rec1 - rec0, sk1 - sk0);
    /* Two files pinned: b's fdatasync must not stand for a walk -- the release publishes a's appends */
    uint64_t pa = sa;
    sa = append(fa, sa, 300);
    sb = append(fb, sb, 200);
    OK(fdatasync(fb));
    seen_by_other(a, pa, sa, "appends to another file and an fdatasync of this one");
    lock_round(lfd);
    seen_by_other(a, sa, sa, "a lock release after another file's fdatasync (two files pinned)");
    CHECK(st_json_counter(st_stats_cli_json(), "publish_walks_recorded") == rec1, "lock_pin_owner: an fdatasync "
          "recorded a walk while another file was pinned");
    OK(close(lfd));
    OK(close(fa));
    OK(close(fb));
    printf("ok: lock_pin_owner: a publish that unpins the only pinned file records the walk; with two, none\n");
}

/* lock_rebind_mapped (DAXKIT_TEST_CRASH=raise:10:shim.untracked_lock.looked:4, a test build): the mapped lock
 * file's whole-file release looks at its number (untracked), and a signal handler inside that call, before its
 * count begins, dup2s another descriptor of data file X over the number: the release lands on X, whose set said
 * held [0,1) with the size read since. Another process cuts X to 8 bytes; after an escalation on X -- the
 * process holds no lock on X any more -- a 16-byte read at 0 must return 8 (review 25, #2 and #5). */
static int rebind_from = -1, rebind_onto = -1;
static volatile sig_atomic_t rebound;
static void rebind_handler(int sig) {
    (void)sig;
    int e = errno;
    rebound = dup2(rebind_from, rebind_onto) == rebind_onto ? 1 : -1;
    errno = e;
}
static void case_lock_rebind_mapped(void) {
    char path[PATH_MAX], other[PATH_MAX];
    st_path(path, sizeof path, dir, "lock_rebind_mapped");
    st_path(other, sizeof other, dir, "lock_rebind_mapped.shm");
    struct shrinker k;
    shrinker_fork(&k, path); /* before any open */
    char *map; /* its two lock rounds: the acquisition marks it untracked, then the cue's 1st to 3rd */
    int lfd = mapped_lock_file(other, &map, "lock_rebind_mapped");
    struct sigaction sa = {.sa_handler = rebind_handler};
    OK(sigaction(SIGUSR1, &sa, NULL));
    int fd = data_file_12k(path);
    char buf[16];
    rebind_from = OK(open(path, O_RDWR));
    rebind_onto = lfd;
    OK(st_setlk(fd, F_UNLCK, 0, 0)); /* X's set known and empty */
    OK(st_setlk(fd, F_RDLCK, 0, 1)); /* held [0,1) */
    CHECK(pread(fd, buf, 16, 0) == 16, "lock_rebind_mapped: read"); /* the size read while held */
    OK(st_setlk(lfd, F_UNLCK, 0, 0)); /* the cue's 4th: rebound to X inside */
    if (!rebound) {
        kill(k.pid, SIGKILL);
        waitpid(k.pid, NULL, 0);
        printf("skip: lock_rebind_mapped: the cue did not fire (not a test build?)\n");
        exit(77);
    }
    CHECK(rebound == 1, "lock_rebind_mapped: the handler's dup2 failed");
    char t[PATH_MAX];
    st_fd_target(lfd, t, sizeof t);
    CHECK(!strcmp(t, path), "lock_rebind_mapped: the number names %s after the rebind", t);
    shrinker_run(&k, "lock_rebind_mapped");
    OK(st_setlk(fd, F_RDLCK, 0, 2)); /* an escalation on a file the kernel holds no lock on now */
    ssize_t r = pread(fd, buf, 16, 0);
    CHECK(r == 8, "lock_rebind_mapped: a read of 16 bytes at 0 returned %zd; another process cut the file to 8 after "
          "the release that the rebind sent to it (its lock set still said held)", r);
    OK(munmap(map, 4096));
    OK(close(rebind_from));
    OK(close(fd));
    OK(close(lfd));
    printf("ok: lock_rebind_mapped: a release rebound to another file before its count began left that set unknown\n");
}

/* Strict mode: the walk is skipped at a release with nothing pinned, the checkpoint is not (upath.c). */
static void case_lock_other_strict(void) {
    char path[PATH_MAX], other[PATH_MAX];
    st_path(path, sizeof path, dir, "lock_other_strict");
    /* The lock file outside the managed directory: its release is a publish point through up_publish_all
     * alone (a managed one's would checkpoint its own root first: up_publish_fd). */
    snprintf(other, sizeof other, "/tmp/shim_publish_lock_other_strict.%d", (int)getpid());
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    int lfd = OK(open(other, O_RDWR | O_CREAT | O_TRUNC, 0644));
    enum { BLOCKS = 4, BLOCK = 4096 };
    uint64_t size = append(fd, 0, BLOCKS * BLOCK); /* strict: published by the write */
    seen_by_other(path, size, size, "strict appends");
    lock_round(lfd);
    for (unsigned i = 0; i < BLOCKS; i++) {
        static uint8_t buf[BLOCK];
        st_fill(buf, 6, (uint64_t)i * BLOCK, BLOCK);
        CHECK(pwrite(fd, buf, BLOCK, (off_t)i * BLOCK) == BLOCK, "overwrite of block %u", i);
        uint64_t skips = st_counter(DK_C_publish_walk_skips), cks = st_counter(DK_C_strict_checkpoints);
        lock_round(lfd);
        CHECK(st_counter(DK_C_publish_walk_skips) > skips, "strict: a lock release with nothing pinned walked the open files");
        CHECK(st_counter(DK_C_strict_checkpoints) > cks, "strict: no checkpoint at the release after overwrite %u", i);
        for (unsigned j = 0; j <= i; j++)
            CHECK(st_check("pattern", path, st_fmt("%u", j * BLOCK), st_fmt("%u", BLOCK), "6") == 0,
                  "after the lock round that followed overwrite %u, another program does not see block %u", i, j);
    }
    OK(close(lfd));
    OK(unlink(other));
    OK(close(fd));
    printf("ok: lock_other_strict: walks skipped at lock releases, each release a checkpoint; overwrites seen\n");
}

/* Strict mode, the lock on a managed file (shim/fd.c served_lock -> upath.c up_publish_release): a release with
 * nothing at all to do returns at once (session 27), but one after a logged overwrite still checkpoints --
 * the overwrites waiting for the checkpoint are in the file for another program after each lock round, on
 * another managed file or on the written file itself (SQLite's pattern). */
static void case_lock_release_strict(void) {
    char path[PATH_MAX], other[PATH_MAX];
    st_path(path, sizeof path, dir, "lock_release_strict");
    st_path(other, sizeof other, dir, "lock_release_strict.lock");
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    int lfd = OK(open(other, O_RDWR | O_CREAT | O_TRUNC, 0644));
    enum { BLOCKS = 6, BLOCK = 4096 };
    uint64_t size = append(fd, 0, BLOCKS * BLOCK); /* strict: published by the write */
    seen_by_other(path, size, size, "strict appends");
    lock_round(lfd);
    for (unsigned i = 0; i < BLOCKS; i++) {
        static uint8_t buf[BLOCK];
        st_fill(buf, 7, (uint64_t)i * BLOCK, BLOCK);
        CHECK(pwrite(fd, buf, BLOCK, (off_t)i * BLOCK) == BLOCK, "overwrite of block %u", i);
        uint64_t cks = st_counter(DK_C_strict_checkpoints);
        lock_round(i & 1 ? fd : lfd);
        CHECK(st_counter(DK_C_strict_checkpoints) > cks, "strict: no checkpoint at the release after overwrite %u", i);
        for (unsigned j = 0; j <= i; j++)
            CHECK(st_check("pattern", path, st_fmt("%u", j * BLOCK), st_fmt("%u", BLOCK), "7") == 0,
                  "after the lock round on the %s that followed overwrite %u, another program does not see block %u",
                  i & 1 ? "written file" : "other file", i, j);
        /* a round with nothing logged since: no checkpoint, the walk skipped */
        uint64_t skips = st_counter(DK_C_publish_walk_skips);
        cks = st_counter(DK_C_strict_checkpoints);
        lock_round(i & 1 ? lfd : fd);
        CHECK(st_counter(DK_C_strict_checkpoints) == cks, "strict: a checkpoint at a release with nothing logged");
        CHECK(st_counter(DK_C_publish_walk_skips) > skips, "strict: a lock release with nothing pinned walked the open files");
    }
    OK(close(lfd));
    OK(close(fd));
    printf("ok: lock_release_strict: each release after an overwrite a checkpoint, the overwrite seen; idle releases none\n");
}

int main(int argc, char **argv) {
    dir = st_dir(argc, argv);
    const char *which = argc > 2 ? argv[2] : "all";
    keep_mode = argc > 3 && !strcmp(argv[3], "extend-keep");
    extend_mode = keep_mode || (argc > 3 && !strcmp(argv[3], "extend"));
    st_require_library();
    st_watchdog(60);
    setvbuf(stdout, NULL, _IONBF, 0);
    bool all = !strcmp(which, "all"), any = false;
    if (all || !strcmp(which, "visibility")) case_visibility(), any = true;
    if (all || !strcmp(which, "append_relink")) case_append_relink(), any = true;
    if (all || !strcmp(which, "lock_append")) case_lock("lock_append", LK_FCNTL, false), any = true;
    if (all || !strcmp(which, "lock_flock")) case_lock("lock_flock", LK_FLOCK, false), any = true;
    if (all || !strcmp(which, "lock_lockf")) case_lockf(), any = true;
    if (all || !strcmp(which, "lock_overwrite")) case_lock("lock_overwrite", LK_FCNTL, true), any = true;
    if (all || !strcmp(which, "lock_escalate")) case_lock_escalate(), any = true;
    if (all || !strcmp(which, "lock_unknown")) case_lock_unknown(), any = true;
    if (all || !strcmp(which, "lock_mapped")) case_lock_mapped(), any = true;
    if (all || !strcmp(which, "fsync_visible")) case_fsync_visible(), any = true;
    if (all || !strcmp(which, "lock_other")) case_lock_other(), any = true;
    if (!strcmp(which, "lock_other_strict")) case_lock_other_strict(), any = true;
    if (!strcmp(which, "lock_release_strict")) case_lock_release_strict(), any = true;
    if (!strcmp(which, "lock_other_mapped")) case_lock_other_mapped(), any = true;
    if (!strcmp(which, "lock_refresh_mapped")) case_lock_refresh_mapped(), any = true;
    if (!strcmp(which, "lock_rebind_mapped")) case_lock_rebind_mapped(), any = true;
    if (!strcmp(which, "shrinker_orphan")) case_shrinker_orphan(), any = true;
    if (!strcmp(which, "lock_put_off")) case_lock_put_off(), any = true;
    if (!strcmp(which, "lock_read_put_off")) case_lock_read_put_off(), any = true;
    if (!strcmp(which, "fstat_race")) case_fstat_race(), any = true;
    if (!strcmp(which, "lock_pin_owner")) case_lock_pin_owner(), any = true;
    if (!strcmp(which, "fsync_idle")) case_fsync_idle(), any = true;
    if (!strcmp(which, "auto_keep")) case_auto_keep(argc > 3 && !strcmp(argv[3], "never")), any = true;
    if (!strcmp(which, "o_append_hint")) case_o_append_hint(argc > 3 && !strcmp(argv[3], "never")), any = true;
    CHECK(any, "unknown case '%s'", which);
    return 0;
}
