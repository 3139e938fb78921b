/* Description: DAXKIT_LOCK_CACHE (upath/lockcache.c) against the kernel's record-lock rules, seen from other
 * processes. The program (under daxkit, the cache on, DAXKIT_LOCK_CACHE_US long unless the case says otherwise)
 * takes and releases POSIX locks on a managed file; a "third process" is a fork child that asks the kernel with
 * raw fcntl system calls (no library on its path). Cases (argv[2]):
 *   cached   a released write lock is still held in the kernel (the cache works at all: F_GETLK from the third
 *            process finds it, held by us), and an acquisition it covers makes no system call (counter).
 *   outsider DAXKIT_LOCK_CACHE_US=2000: a process without daxkit blocking in F_SETLKW on a cached lock gets it
 *            within the bound (the age drop; 3 s allowed under load, ~2-4 ms expected).
 *   handoff  another daxkit process (a fork child, library on) whose F_SETLK conflicts with our cached lock gets
 *            it (the board, our thread's drop) within the age bound (10 s here): F_SETLKW done in < 3 s, and
 *            F_SETLK retried at most 200 times 5 ms apart.
 *   close    the close of another descriptor of the file drops every lock of the process in the kernel: a
 *            re-take after it must reach the kernel (third process sees it held), not be taken as cached.
 *   fork     a fork child holds none of its parent's locks: its lock on a range the parent caches must be taken
 *            in the kernel (after a handoff from the parent), and the third process sees the child's pid.
 *   exec     an exec keeps the kernel's record locks: only those the program holds. The image after exec (this
 *            program again, argv[2] = exec_after) finds the held one held and the released one free.
 *   getlk    F_GETLK by the program itself never reports its own locks, cached ones included.
 * Session 27 (review26b's reproducers; each fails on lockcache26 6ed69c2):
 *   leak     DAXKIT_LOCK_CACHE_US=2000: a thread locks and releases [0,1) of X 200 times a round while another
 *            thread locks and releases a second file (so X's acquisitions often overlap another lock call of
 *            the process and end with k unknown); after each round the kernel must let [0,1) go within 3 s
 *            (#3: the release was kept though the kernel was not known to hold it, and never dropped).
 *   rekeep   DAXKIT_LOCK_CACHE_US=2000: a kept write lock on [0,10); a write lock on [0,20) (the kernel's: nothing
 *            cached after it); 50 ms for the thread to find nothing cached and sleep; the release of [0,20) is
 *            kept again -- and must be dropped within 3 s (session 27: the board's flag was set only when the
 *            file's age began, and an acquisition's end had left that age set: the sleeping thread never woke).
 *   hold     DAXKIT_LOCK_CACHE_US=50000: the program holds [0,1) 150 ms, releases it, re-takes it 5 ms later, for
 *            up to 6 s; a process without daxkit blocked in F_SETLKW gets it within 2 s (review27b #2: the age
 *            check landed inside a hold every time and was simply cleared -- 5,703 ms; now the next release
 *            after such a look reaches the kernel).
 *   atfork   a pthread_atfork child handler's lock call on a range the parent keeps: the child must hold it in
 *            the kernel, and the parent's own acquisition then fail (review27b #6: the child's call was a hit
 *            on the parent's cache -- both held the write lock).
 *   busy     DAXKIT_LOCK_CACHE_US=50000: the program re-takes and releases [0,1) every ~200 us; a process without
 *            daxkit blocked in F_SETLKW on it gets it within 2 s (#1: the idle drop never came while the
 *            program kept calling -- the outsider waited for the loop's end, 6 s).
 *   waiter   DAXKIT_LOCK_CACHE_US=50000: the program holds [0,1) 50 ms; a daxkit fork child's F_SETLKW (asked,
 *            found it held, blocked in the kernel) gets it within 2 s although the program then re-takes and
 *            releases it every ~200 us (#1: a waiter blocked in the kernel was never asked for again).
 *   errno    a successful F_SETLK that needed a handoff leaves errno as it was (#2: EAGAIN).
 *   readwrite a released *read* lock does not serve a write acquisition: a third process's read lock on the
 *            range makes the program's F_SETLK of a write lock fail with EAGAIN (#12).
 *   overflow a release whose start + len overflows is the kernel's EOVERFLOW, not a kept release (#11).
 *   inflight DAXKIT_TEST_CRASH=raise:10:lockcache.acquired:2 -- our acquisition of [0,10) granted by the kernel
 *            and not yet recorded (the cue's handler holds it there) while another daxkit process asks for the
 *            file (we keep [20,30)): our thread's drop must leave [0,10) alone -- the other process's F_SETLK
 *            of it, retried for ~300 ms, is refused (review26b M7: a drop ignoring the ranges in flight).
 *   merged   the same cue: we keep a write lock on [0,10) and acquire [5,15); inside the window the handler takes
 *            15 read locks on single bytes (the map's 17th segment merges [0,5) and [5,10) back into one), then
 *            the other process asks and takes [0,5) (we do not hold it: the drop unlocks it) and closes; the
 *            handler releases its read locks (so the map fits again and the file stays followed). Our
 *            later write lock on [0,5) must reach the kernel -- a third process finds it held by us (review26b
 *            #5: the drop kept the merged segment's k over [0,5), and the acquisition was a hit with no lock).
 * Session 28 (review27b's open findings; each fails on main 0ab7732's library):
 *   many     6 threads of ours block in F_SETLKW on single bytes of [10,16), which another daxkit process (a fork
 *            child) holds; that process then wants [0,1), which we keep: it must get it (its ask, our thread's
 *            drop) -- F_SETLK retried for 3 s, then F_SETLKW, which must not fail with EDEADLK (review27b #3:
 *            with more than 4 acquisitions of the file in the kernel no drop of it ran, a cycle the kernel path
 *            does not have). many_raw: the same with a process without daxkit, DAXKIT_LOCK_CACHE_US=50000 (the
 *            age drop).
 *   ofd      the program's own OFD locks after it released a POSIX lock there (kept): F_OFD_GETLK finds nothing,
 *            F_OFD_SETLK of a write lock succeeds, and the program's POSIX write lock then conflicts with it
 *            (EAGAIN), as on the kernel path (review27b #8: EAGAIN, F_OFD_SETLKW waited for the age drop).
 *   ofd_other another daxkit process's F_OFD_SETLKW on a range we keep gets it within 3 s (10 s age: the ask).
 *   ofd_inflight  our thread holds a POSIX write lock on [0,1); another thread's F_OFD_SETLKW of it blocks (the
 *            process's own POSIX lock conflicts, as on the kernel path); the release must wake it (< 2 s with a 10 s
 *            age) -- review28 #3: kept while the OFD acquisition was in the kernel, it waited for the age drop.
 *   entries  70 files one after the other: opened, locked, released (kept), closed. The 70th's release must be
 *            kept too: a file's board entry goes at its last close (review27b #5: entries went only when the
 *            closed-file cache evicted the file, so after 60 files the process cached nothing new).
 *   noboard  the board cannot be made (a directory in its place): a downgrade (read lock over our own write lock)
 *            must reach the kernel -- a third process's read lock is then possible (the rule "a downgrade is
 *            served only where the board can have it dropped": served, the kernel kept the write lock for good).
 *   readfd   DAXKIT_LOCK_CACHE_US=200000: a write lock through an O_WRONLY descriptor, downgraded to a read lock
 *            through an O_RDONLY one (cached), the O_WRONLY one used last: the age drop's downgrade must go
 *            through the readable descriptor -- a third process's read lock is possible within 3 s (review26b #8).
 *   execrace DAXKIT_TEST_CRASH=raise:10:lockcache.release:2,raise:12:lockcache.before_exec:1 -- we hold a write
 *            lock on [0,10); another thread's release of it stops on the first cue (its 2nd occurrence) (after its publish, before
 *            the cache looks at it) and has us exec; the exec stops on the second cue (after the cache's drop
 *            before an exec) and lets the release go on. The new image (execrace_after) must find [0,10) free:
 *            a release between the exec's drop and the execve reaches the kernel (lc_exec) -- kept, the new
 *            image held a lock it never took.
 * Session 29 (the cache made safe to run in every process -- defaults29; still opt-in):
 *   thread   the library's thread starts at the process's first kept release, not at its first lock call: a
 *            program that takes a lock (and one that only asks F_GETLK) has no more threads than before; the first
 *            kept release starts one (counter lock_cache_threads 1); a fork child the same, at its own release
 *            (session 28: the first lock call started it -- glibc's single-thread paths, unshare(CLONE_NEWUSER)).
 *   slots    130 daxkit processes each take and release a lock on the file at once (the board has 128 slots):
 *            every lock call succeeds, the two without a slot count lock_cache_off and say nothing on stderr
 *            (session 28: "no lock board" on the program's stderr).
 *   dup2board the program dup2s a file of its own onto the board's descriptor: a fork child still finds the
 *            program's file at that number, and our F_SETLKW on a lock another daxkit process keeps (10 s age) is
 *            done in < 3 s (the board's descriptor moved first; before, the child's reset closed the program's
 *            number, and our ask's liveness check read the program's file: the keeper looked dead, not asked).
 * Exit 0 pass, 1 fail, 77 skip. */
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>

#include "shim_test.h"

static const char *dir;
static char path[PATH_MAX];

static struct flock fl(short type, off_t start, off_t len) {
    return (struct flock){.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
}
static int lk(int fd, int cmd, short type, off_t start, off_t len) {
    struct flock l = fl(type, start, len);
    return fcntl(fd, cmd, &l);
}
static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The third process: a fork child asking the kernel (raw F_GETLK on its own descriptor of the file) about
 * [start, start+len) for a lock of `type`. Returns the holder's pid, 0 when free (-1: an OFD lock). */
static pid_t who_holds_t(short type, off_t start, off_t len) {
    int p[2];
    OK(pipe(p));
    pid_t c = fork();
    if (c == 0) {
        int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR);
        struct flock l = fl(type, start, len);
        int32_t out = -2;
        if (fd >= 0 && syscall(SYS_fcntl, fd, F_GETLK, &l) == 0) out = l.l_type == F_UNLCK ? 0 : l.l_pid;
        syscall(SYS_write, p[1], &out, sizeof out);
        syscall(SYS_exit_group, 0);
    }
    OK(c);
    close(p[1]);
    int32_t got = -2;
    CHECK(read(p[0], &got, sizeof got) == sizeof got, "third process: no answer");
    close(p[0]);
    waitpid(c, NULL, 0);
    CHECK(got >= -1, "third process: F_GETLK failed");
    return got;
}
static pid_t who_holds(off_t start, off_t len) { return who_holds_t(F_WRLCK, start, len); }

static uint64_t hits_now(void) {
    uint64_t c[DK_C_COUNT];
    CHECK(st_stats(getpid(), c), "no stats file (the library is not loaded?)");
    return c[DK_C_lock_cache_hits];
}

static int open_file(void) {
    int fd = OK(open(path, O_RDWR | O_CREAT, 0644));
    char b[64] = {1};
    OK(pwrite(fd, b, sizeof b, 0));
    return fd;
}

static void case_cached(void) {
    int fd = open_file();
    OK(lk(fd, F_SETLK, F_WRLCK, 10, 10));
    OK(lk(fd, F_SETLK, F_UNLCK, 10, 10));
    pid_t h = who_holds(10, 10);
    CHECK(h == getpid(), "a released write lock: the kernel says held by %d, expected kept by us (%d)", h, getpid());
    uint64_t hits = hits_now();
    OK(lk(fd, F_SETLK, F_RDLCK, 12, 4)); /* covered by the kept write lock */
    CHECK(hits_now() == hits + 1, "a covered acquisition was not served from the cache");
    OK(lk(fd, F_SETLK, F_UNLCK, 0, 0));
    close(fd);
    CHECK(who_holds(0, 0) == 0, "after the close the kernel still holds a lock of ours");
}

/* The outsider: a fork child without the library's calls (raw system calls only) that sleeps `delay_ms`, then
 * waits (F_SETLKW) for a write lock on [start, start+len) through a descriptor of its own, and writes how long
 * it waited to a pipe (ms; -1: F_SETLKW failed). Returns its pid; *rfd is the pipe's read end. (cleanup28) */
static pid_t outsider_start(off_t start, off_t len, long delay_ms, int *rfd) {
    int p[2];
    OK(pipe(p));
    pid_t c = fork();
    if (c == 0) {
        struct timespec d = {delay_ms / 1000, delay_ms % 1000 * 1000000};
        if (delay_ms) syscall(SYS_nanosleep, &d, NULL);
        int f2 = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR);
        struct flock l = fl(F_WRLCK, start, len);
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        long r = syscall(SYS_fcntl, f2, F_SETLKW, &l);
        clock_gettime(CLOCK_MONOTONIC, &b);
        int64_t ms = r == 0 ? (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 : -1;
        syscall(SYS_write, p[1], &ms, sizeof ms);
        syscall(SYS_exit_group, 0);
    }
    OK(c);
    close(p[1]);
    *rfd = p[0];
    return c;
}

/* The outsider's answer (ms it waited), the child reaped; fails the test when none came or its F_SETLKW failed. */
static int64_t outsider_ms(pid_t c, int rfd) {
    int64_t ms = -2;
    CHECK(read(rfd, &ms, sizeof ms) == sizeof ms, "outsider: no answer");
    close(rfd);
    waitpid(c, NULL, 0);
    CHECK(ms >= 0, "outsider: F_SETLKW failed");
    return ms;
}

static void case_outsider(void) {
    int fd = open_file();
    OK(lk(fd, F_SETLK, F_WRLCK, 0, 100));
    OK(lk(fd, F_SETLK, F_UNLCK, 0, 100));
    int rfd;
    pid_t c = outsider_start(0, 100, 0, &rfd);
    int64_t ms = outsider_ms(c, rfd);
    NOTE("outsider got the lock after %lld ms", (long long)ms);
    CHECK(ms < 3000, "outsider waited %lld ms for a lock the program had released (bound: the age drop)", (long long)ms);
    close(fd);
}

static void case_handoff(void) {
    int fd = open_file();
    OK(lk(fd, F_SETLK, F_WRLCK, 0, 100));
    OK(lk(fd, F_SETLK, F_UNLCK, 0, 100));
    CHECK(who_holds(0, 100) == getpid(), "the released lock is not kept (nothing to hand off)");
    /* another daxkit process: its own open, the library's fcntl */
    pid_t c = fork();
    if (c == 0) {
        int f2 = open(path, O_RDWR);
        if (f2 < 0) _exit(2);
        uint64_t t0 = now_ms();
        if (lk(f2, F_SETLKW, F_WRLCK, 0, 50) != 0) _exit(3);
        if (now_ms() - t0 > 3000) _exit(4);
        if (lk(f2, F_SETLK, F_UNLCK, 0, 0) != 0) _exit(5);
        close(f2); /* (its close drops whatever it keeps) */
        _exit(0);
    }
    int st;
    OK(waitpid(c, &st, 0));
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "handoff, F_SETLKW: child status %d", st);
    /* the parent caches again; a child's F_SETLK retried */
    OK(lk(fd, F_SETLK, F_WRLCK, 0, 100));
    OK(lk(fd, F_SETLK, F_UNLCK, 0, 100));
    c = fork();
    if (c == 0) {
        int f2 = open(path, O_RDWR);
        if (f2 < 0) _exit(2);
        int tries = 0;
        while (lk(f2, F_SETLK, F_RDLCK, 0, 50) != 0) {
            if (errno != EAGAIN && errno != EACCES) _exit(3);
            if (++tries > 200) _exit(4);
            struct timespec ts = {0, 5000000};
            nanosleep(&ts, NULL);
        }
        close(f2);
        _exit(0);
    }
    OK(waitpid(c, &st, 0));
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "handoff, F_SETLK retried: child status %d", st);
    close(fd);
}

/* The program dup2s a file of its own onto the board's descriptor (found in /proc/self/fd): a fork child finds
 * the program's file at that number (the child's reset closes the board's number), and our F_SETLKW on a lock
 * another daxkit process keeps is done in < 3 s with a 10 s age (our ask checks the slot's owner alive through
 * the board's descriptor: through the program's file the owner looked dead and was not asked). */
static void case_dup2board(void) {
    int fd = open_file();
    OK(lk(fd, F_SETLK, F_WRLCK, 0, 100));
    OK(lk(fd, F_SETLK, F_UNLCK, 0, 100));
    CHECK(who_holds(0, 100) == getpid(), "the released lock is not kept");
    int bfd = -1;
    DIR *d = opendir("/proc/self/fd");
    CHECK(d != NULL, "opendir /proc/self/fd");
    for (struct dirent *e; (e = readdir(d));) {
        char l[PATH_MAX], t[PATH_MAX];
        snprintf(l, sizeof l, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(l, t, sizeof t - 1);
        if (n > 0 && (t[n] = 0, strstr(t, "/.daxkit/lockboard2."))) bfd = atoi(e->d_name);
    }
    closedir(d);
    CHECK(bfd >= 0, "no lock board descriptor in /proc/self/fd");
    char other[PATH_MAX];
    st_path(other, sizeof other, dir, "../dup2board.other");
    int of = OK(open(other, O_RDWR | O_CREAT, 0644));
    CHECK(dup2(of, bfd) == bfd, "dup2 onto %d: %s", bfd, strerror(errno));
    close(of);
    pid_t c = OK(fork());
    if (c == 0) _exit(fcntl(bfd, F_GETFD) >= 0 ? 0 : 2);
    int st;
    CHECK(st_wait_child(c, &st, 20000), "a fork child hung");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a fork child found the program's descriptor %d closed (the "
          "library's reset closed the board's number)", bfd);
    int ready[2], done[2];
    OK(pipe(ready));
    OK(pipe(done));
    c = OK(fork());
    if (c == 0) { /* another daxkit process keeps [200,300) */
        close(ready[0]);
        close(done[1]);
        int f2 = open(path, O_RDWR);
        char r = f2 >= 0 && lk(f2, F_SETLK, F_WRLCK, 200, 100) == 0 && lk(f2, F_SETLK, F_UNLCK, 200, 100) == 0 ? 'k' : 'e';
        if (write(ready[1], &r, 1) != 1) _exit(3);
        char x;
        while (read(done[0], &x, 1) > 0) {}
        _exit(0);
    }
    close(ready[1]);
    close(done[0]);
    char r = 0;
    CHECK(read(ready[0], &r, 1) == 1 && r == 'k', "the other process could not lock");
    CHECK(who_holds(200, 100) == c, "the other process's release is not kept");
    uint64_t t0 = now_ms();
    OK(lk(fd, F_SETLKW, F_WRLCK, 200, 100));
    uint64_t ms = now_ms() - t0;
    close(done[1]);
    CHECK(st_wait_child(c, &st, 20000), "the other process hung");
    CHECK(ms < 3000, "after the program's dup2 onto the board's descriptor, our F_SETLKW on a lock another daxkit "
          "process keeps took %llu ms (10 s age: it was not asked)", (unsigned long long)ms);
    OK(lk(fd, F_SETLK, F_UNLCK, 0, 0));
    close(bfd);
    close(fd);
    printf("ok: dup2board: %llu ms\n", (unsigned long long)ms);
}

static void case_close(void) {
    int fd = open_file();
    OK(lk(fd, F_SETLK, F_WRLCK, 20, 10));
    OK(lk(fd, F_SETLK, F_UNLCK, 20, 10)); /* kept */
    int other = OK(open(path, O_RDONLY));
    OK(close(other)); /* the kernel drops every lock of the process on the file */
    CHECK(who_holds(20, 10) == 0, "after the close of another descriptor the kernel still holds our lock");
    OK(lk(fd, F_SETLK, F_WRLCK, 20, 10)); /* must reach the kernel */
    pid_t h = who_holds(20, 10);
    CHECK(h == getpid(), "a lock re-taken after a close is held by %d in the kernel, expected us (%d)", h, getpid());
    close(fd);
}

static void case_fork(void) {
    int fd = open_file();
    OK(lk(fd, F_SETLK, F_RDLCK, 0, 10)); /* held */
    OK(lk(fd, F_SETLK, F_WRLCK, 20, 10));
    OK(lk(fd, F_SETLK, F_UNLCK, 20, 10)); /* kept */
    int p[2], q[2];
    OK(pipe(p));
    OK(pipe(q));
    pid_t c = fork();
    if (c == 0) { /* holds none of the parent's locks: its lock must be its own, in the kernel */
        char x;
        close(q[1]); /* a parent that fails ends the child too (EOF) */
        close(p[0]);
        uint64_t t0 = now_ms();
        if (lk(fd, F_SETLKW, F_WRLCK, 20, 10) != 0) _exit(3);
        if (now_ms() - t0 > 3000) _exit(6); /* the parent's kept lock handed off, not dropped by age */
        if (write(p[1], "k", 1) != 1) _exit(4);
        if (read(q[0], &x, 1) != 1) _exit(5); /* hold it until the parent looked */
        _exit(0);
    }
    char x;
    close(q[0]);
    close(p[1]);
    CHECK(read(p[0], &x, 1) == 1, "fork child did not take its lock");
    pid_t h = who_holds(20, 10);
    CHECK(h == c, "the fork child's lock on [20, 30): the kernel says held by %d, expected the child %d", h, c);
    OK(write(q[1], "g", 1));
    int st;
    OK(waitpid(c, &st, 0));
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork child status %d", st);
    h = who_holds(0, 10);
    CHECK(h == getpid(), "the parent's held read lock: the kernel says %d", h);
    close(fd);
}

static void case_exec(const char *self) {
    int fd = open_file();
    OK(lk(fd, F_SETLK, F_RDLCK, 0, 10)); /* held across the exec */
    OK(lk(fd, F_SETLK, F_WRLCK, 20, 10));
    OK(lk(fd, F_SETLK, F_UNLCK, 20, 10)); /* kept: must not survive the exec */
    CHECK(who_holds(20, 10) == getpid(), "the released lock is not kept (nothing to test)");
    char fds[16];
    snprintf(fds, sizeof fds, "%d", fd);
    execl(self, self, dir, "exec_after", fds, (char *)NULL);
    FAIL("execl: %s", strerror(errno));
}

static void case_exec_after(int fd) {
    (void)fd;
    pid_t h = who_holds(20, 10);
    CHECK(h == 0, "after exec the range the old image released is held by %d", h);
    h = who_holds(0, 10);
    CHECK(h == getpid(), "after exec the lock the old image held is held by %d, expected %d", h, getpid());
}

/* leak: a second file locked and released by another thread all along */
static int leak_yfd;
static volatile int leak_stop;
static void *leak_other(void *arg) {
    (void)arg;
    while (!leak_stop) {
        lk(leak_yfd, F_SETLK, F_WRLCK, 0, 1);
        lk(leak_yfd, F_SETLK, F_UNLCK, 0, 1);
    }
    return NULL;
}

static void case_leak(void) {
    int fd = open_file();
    char yp[PATH_MAX];
    st_path(yp, sizeof yp, dir, "lc_other.db");
    leak_yfd = OK(open(yp, O_RDWR | O_CREAT, 0644));
    pthread_t t;
    CHECK(pthread_create(&t, NULL, leak_other, NULL) == 0, "pthread_create");
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 200; i++)
            if (lk(fd, F_SETLK, F_WRLCK, 0, 1) == 0) OK(lk(fd, F_SETLK, F_UNLCK, 0, 1));
        uint64_t t0 = now_ms();
        pid_t h;
        while ((h = who_holds(0, 1)) != 0 && now_ms() - t0 < 3000) {
            struct timespec ts = {0, 10000000};
            nanosleep(&ts, NULL);
        }
        CHECK(h == 0, "round %d: [0,1) released by the program is still held by %d in the kernel after 3 s", round, h);
    }
    leak_stop = 1;
    pthread_join(t, NULL);
    close(leak_yfd);
    close(fd);
}

static void case_rekeep(void) {
    int fd = open_file();
    for (int round = 0; round < 5; round++) {
        OK(lk(fd, F_SETLK, F_WRLCK, 0, 10));
        OK(lk(fd, F_SETLK, F_UNLCK, 0, 10)); /* kept */
        OK(lk(fd, F_SETLK, F_WRLCK, 0, 20)); /* not covered: the kernel's; nothing cached after it */
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL); /* the thread's walk finds nothing cached: it sleeps without a timeout */
        OK(lk(fd, F_SETLK, F_UNLCK, 0, 20)); /* kept again */
        uint64_t t0 = now_ms();
        pid_t h;
        while ((h = who_holds(0, 20)) != 0 && now_ms() - t0 < 3000) nanosleep(&(struct timespec){0, 10000000}, NULL);
        CHECK(h == 0, "round %d: [0,20), released and kept again, still held by %d after 3 s (no drop)", round, h);
    }
    close(fd);
}

static void case_hold(void) {
    int fd = open_file();
    int rfd;
    pid_t c = outsider_start(0, 1, 300, &rfd);
    uint64_t t0 = now_ms();
    struct pollfd pf = {.fd = rfd, .events = POLLIN};
    while (now_ms() - t0 < 6000 && poll(&pf, 1, 0) == 0) {
        if (lk(fd, F_SETLK, F_WRLCK, 0, 1) == 0) {
            nanosleep(&(struct timespec){0, 150000000}, NULL); /* a hold longer than the age */
            OK(lk(fd, F_SETLK, F_UNLCK, 0, 1));
        }
        nanosleep(&(struct timespec){0, 5000000}, NULL); /* a gap shorter than it */
    }
    int64_t ms = outsider_ms(c, rfd);
    NOTE("outsider got the lock after %lld ms", (long long)ms);
    CHECK(ms < 2000, "outsider waited %lld ms for a lock a program holding 150 ms at a time keeps releasing",
          (long long)ms);
    close(fd);
}

static int af_fd = -1, af_r = -2, af_two;
static void af_child(void) {
    if (af_fd < 0) return;
    if (!af_two) {
        af_r = lk(af_fd, F_SETLK, F_WRLCK, 0, 1);
        return;
    }
    af_r = lk(af_fd, F_SETLK, F_WRLCK, 5, 1); /* atfork2: taken and released inside the handler */
    if (af_r == 0) af_r = lk(af_fd, F_SETLK, F_UNLCK, 5, 1);
}

/* atfork2 (review27b): the child's handler takes and releases [5,6): the child lives on (no SIGSEGV: a board
 * made in the handler was unmapped under its thread) and the kernel holds nothing of it (no leak: a reset after
 * the call forgot what the kernel held). */
static void case_atfork2(void) {
    int fd = open_file();
    OK(lk(fd, F_SETLK, F_WRLCK, 0, 1));
    OK(lk(fd, F_SETLK, F_UNLCK, 0, 1)); /* kept */
    af_fd = fd, af_two = 1;
    CHECK(pthread_atfork(NULL, NULL, af_child) == 0, "pthread_atfork");
    int p[2], q[2];
    OK(pipe(p));
    OK(pipe(q));
    pid_t c = fork();
    if (c == 0) {
        char x = af_r == 0 ? 'k' : 'f';
        close(q[1]);
        if (write(p[1], &x, 1) != 1) _exit(2);
        if (read(q[0], &x, 1) < 0) _exit(3);
        _exit(0);
    }
    af_fd = -1;
    close(p[1]);
    close(q[0]);
    char x = 0;
    CHECK(read(p[0], &x, 1) == 1, "fork child: no answer (died?)");
    CHECK(x == 'k', "the child's handler could not take and release [5,6)");
    nanosleep(&(struct timespec){0, 50000000}, NULL);
    pid_t h = who_holds(5, 1);
    OK(write(q[1], "g", 1));
    int st;
    waitpid(c, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork child status %d (signal %d)", st, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    CHECK(h == 0, "[5,6), taken and released by the child's atfork handler, is held by %d in the kernel", h);
    close(fd);
}

static void case_atfork(void) {
    int fd = open_file();
    OK(lk(fd, F_SETLK, F_WRLCK, 0, 1));
    OK(lk(fd, F_SETLK, F_UNLCK, 0, 1)); /* kept */
    CHECK(who_holds(0, 1) == getpid(), "the released lock is not kept (nothing to test)");
    af_fd = fd;
    CHECK(pthread_atfork(NULL, NULL, af_child) == 0, "pthread_atfork");
    int p[2], q[2];
    OK(pipe(p));
    OK(pipe(q));
    pid_t c = fork();
    if (c == 0) { /* its handler took [0,1) (or not); it holds it until the parent looked */
        char x = af_r == 0 ? 'k' : 'f';
        close(q[1]);
        if (write(p[1], &x, 1) != 1) _exit(2);
        if (read(q[0], &x, 1) < 0) _exit(3);
        _exit(0);
    }
    af_fd = -1;
    close(p[1]);
    close(q[0]);
    char x = 0;
    CHECK(read(p[0], &x, 1) == 1, "fork child: no answer");
    errno = 0;
    int r = lk(fd, F_SETLK, F_WRLCK, 0, 1);
    int e = errno;
    pid_t h = who_holds(0, 1);
    OK(write(q[1], "g", 1));
    int st;
    waitpid(c, &st, 0);
    NOTE("child's atfork handler: %s; parent's F_SETLK: %d (errno %d); held by %d (parent %d, child %d)",
         x == 'k' ? "got [0,1)" : "refused", r, e, h, getpid(), c);
    CHECK(!(x == 'k' && r == 0), "parent and fork child both hold the write lock on [0,1) (the child's atfork "
                                 "handler was served from the parent's cache)");
    CHECK(x != 'k' || h == c, "the child's lock on [0,1): the kernel says held by %d, expected the child %d", h, c);
    close(fd);
}

static void case_busy(void) {
    int fd = open_file();
    int rfd;
    pid_t c = outsider_start(0, 1, 100, &rfd);
    uint64_t t0 = now_ms();
    unsigned rounds = 0;
    struct pollfd pf = {.fd = rfd, .events = POLLIN};
    while (now_ms() - t0 < 6000 && poll(&pf, 1, 0) == 0) {
        if (lk(fd, F_SETLK, F_WRLCK, 0, 1) == 0) {
            rounds++;
            OK(lk(fd, F_SETLK, F_UNLCK, 0, 1));
        }
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    int64_t ms = outsider_ms(c, rfd);
    NOTE("outsider got the lock after %lld ms (the program: %u lock rounds meanwhile)", (long long)ms, rounds);
    CHECK(ms < 2000, "outsider waited %lld ms for a lock a busy program keeps releasing (bound: the age drop)",
          (long long)ms);
    close(fd);
}

static void case_waiter(void) {
    int fd = open_file();
    OK(lk(fd, F_SETLK, F_WRLCK, 0, 1));
    int p[2];
    OK(pipe(p));
    pid_t c = fork();
    if (c == 0) { /* another daxkit process: the library's fcntl */
        close(p[0]);
        int f2 = open(path, O_RDWR);
        struct timespec d = {0, 10000000};
        nanosleep(&d, NULL);
        uint64_t a = now_ms();
        int64_t ms = lk(f2, F_SETLKW, F_WRLCK, 0, 1) == 0 ? (int64_t)(now_ms() - a) : -1;
        if (write(p[1], &ms, sizeof ms) != sizeof ms) _exit(2);
        _exit(0);
    }
    close(p[1]);
    struct timespec h = {0, 50000000};
    nanosleep(&h, NULL);
    OK(lk(fd, F_SETLK, F_UNLCK, 0, 1)); /* held 50 ms, then released and re-taken again and again */
    uint64_t t0 = now_ms();
    struct pollfd pf = {.fd = p[0], .events = POLLIN};
    while (now_ms() - t0 < 6000 && poll(&pf, 1, 0) == 0) {
        if (lk(fd, F_SETLK, F_WRLCK, 0, 1) == 0) OK(lk(fd, F_SETLK, F_UNLCK, 0, 1));
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    int64_t ms = -2;
    CHECK(read(p[0], &ms, sizeof ms) == sizeof ms, "waiter: no answer");
    int st;
    waitpid(c, &st, 0);
    NOTE("daxkit waiter got the lock after %lld ms (released at ~40 ms)", (long long)ms);
    CHECK(ms >= 0, "waiter: F_SETLKW failed");
    CHECK(ms < 2000, "a daxkit F_SETLKW waiter waited %lld ms while the program kept re-taking the lock", (long long)ms);
    close(fd);
}

static void case_errno(void) {
    int fd = open_file();
    OK(lk(fd, F_SETLK, F_WRLCK, 0, 10));
    OK(lk(fd, F_SETLK, F_UNLCK, 0, 10)); /* kept */
    CHECK(who_holds(0, 10) == getpid(), "the released lock is not kept (no handoff to test)");
    pid_t c = fork();
    if (c == 0) {
        int f2 = open(path, O_RDWR);
        if (f2 < 0) _exit(2);
        /* conflicts with the kept lock: the handoff, then success -- retried when the keeper's thread was not
         * scheduled within the handoff's 200 us (load) */
        int r, e, tries = 0;
        do {
            errno = 4242;
            r = lk(f2, F_SETLK, F_WRLCK, 0, 10);
            e = errno;
            if (r != 0) nanosleep(&(struct timespec){0, 5000000}, NULL);
        } while (r != 0 && (e == EAGAIN || e == EACCES) && ++tries < 200);
        if (r != 0) _exit(3);
        if (e != 4242) {
            fprintf(stderr, "child: F_SETLK succeeded, errno %d (%s), expected it unchanged\n", e, strerror(e));
            _exit(4);
        }
        _exit(0);
    }
    int st;
    OK(waitpid(c, &st, 0));
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "errno after a handed-off F_SETLK: child status %d", st);
    close(fd);
}

static void case_readwrite(void) {
    int fd = open_file();
    OK(lk(fd, F_SETLK, F_RDLCK, 0, 10));
    OK(lk(fd, F_SETLK, F_UNLCK, 0, 10)); /* a read lock kept */
    CHECK(who_holds(0, 10) == getpid(), "the released read lock is not kept (nothing to test)");
    int p[2], q[2];
    OK(pipe(p));
    OK(pipe(q));
    pid_t c = fork();
    if (c == 0) { /* the third process holds a read lock of its own (raw system calls) until told */
        int f2 = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
        struct flock l = fl(F_RDLCK, 0, 10);
        char x = syscall(SYS_fcntl, f2, F_SETLK, &l) == 0 ? 'k' : 'f';
        syscall(SYS_write, p[1], &x, 1);
        syscall(SYS_read, q[0], &x, 1);
        syscall(SYS_exit_group, 0);
    }
    close(p[1]);
    close(q[0]);
    char x = 0;
    CHECK(read(p[0], &x, 1) == 1 && x == 'k', "third process: no read lock");
    errno = 0;
    int r = lk(fd, F_SETLK, F_WRLCK, 0, 10);
    int e = errno;
    OK(write(q[1], "g", 1));
    waitpid(c, NULL, 0);
    CHECK(r == -1 && (e == EAGAIN || e == EACCES),
          "a write lock over another process's read lock: F_SETLK returned %d (errno %d), expected EAGAIN -- served "
          "from a kept read lock?", r, e);
    close(fd);
}

static void case_overflow(void) {
    int fd = open_file();
    OK(lk(fd, F_SETLK, F_WRLCK, 0, 10));
    OK(lk(fd, F_SETLK, F_UNLCK, 0, 10)); /* the board made, releases kept */
    errno = 0;
    int r = lk(fd, F_SETLK, F_UNLCK, INT64_MAX - 5, 100);
    CHECK(r == -1 && errno == EOVERFLOW, "a release past the largest offset: %d (errno %d), expected EOVERFLOW", r,
          errno);
    errno = 0;
    r = lk(fd, F_SETLK, F_UNLCK, 5, -10);
    CHECK(r == -1 && errno == EINVAL, "a release before offset 0: %d (errno %d), expected EINVAL", r, errno);
    OK(lk(fd, F_SETLK, F_WRLCK, INT64_MAX - 5, 6)); /* the last bytes: fine */
    OK(lk(fd, F_SETLK, F_UNLCK, INT64_MAX - 5, 6));
    OK(lk(fd, F_SETLK, F_WRLCK, 0, 10)); /* still followed (a hit) */
    close(fd);
}

/* inflight: the cue's handler lets the other process try, inside our acquisition's window */
static int if_go[2], if_res[2], if_fd = -1;
static volatile char if_answer;
static void if_handler(int sig) {
    (void)sig;
    char g = 'g', x = 0;
    for (int i = 0; if_fd >= 0 && i < 15; i++) lk(if_fd, F_SETLK, F_RDLCK, 100 + 2 * i, 1); /* (merged) */
    if (write(if_go[1], &g, 1) == 1 && read(if_res[0], &x, 1) == 1) if_answer = x;
    if (if_fd >= 0) lk(if_fd, F_SETLK, F_UNLCK, 100, 30); /* (merged: the map small again, nothing turns off) */
}

/* The other daxkit process of inflight/merged: at the handler's word, F_SETLK of a write lock on [start,
 * start+len) tried up to `tries` times 5 ms apart; answers 'g' (got it: then closes, which drops it) or 'r'. */
static pid_t if_other(off_t start, off_t len, int tries) {
    OK(pipe(if_go));
    OK(pipe(if_res));
    pid_t c = fork();
    if (c == 0) { /* its own copy of the cue's count: the signal ignored */
        signal(SIGUSR1, SIG_IGN);
        close(if_go[1]); /* (a parent that ends without asking: EOF) */
        close(if_res[0]);
        int f2 = open(path, O_RDWR);
        char g, ans = 'r';
        if (f2 < 0 || read(if_go[0], &g, 1) != 1) _exit(2);
        for (int i = 0; i < tries; i++) {
            if (lk(f2, F_SETLK, F_WRLCK, start, len) == 0) {
                ans = 'g';
                close(f2);
                break;
            }
            struct timespec ts = {0, 5000000};
            nanosleep(&ts, NULL);
        }
        if (write(if_res[1], &ans, 1) != 1) _exit(3);
        _exit(0);
    }
    OK(c);
    close(if_go[0]);
    close(if_res[1]);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = if_handler;
    OK(sigaction(SIGUSR1, &sa, NULL));
    return c;
}

static void case_inflight(void) {
    const char *cue = getenv("DAXKIT_TEST_CRASH");
    if (!cue || !strstr(cue, "lockcache.acquired")) SKIP("needs DAXKIT_TEST_CRASH=raise:10:lockcache.acquired:2");
    int fd = open_file();
    pid_t c = if_other(0, 10, 60); /* (refused all along: ~300 ms) */
    OK(lk(fd, F_SETLK, F_WRLCK, 20, 10)); /* the cue's first occurrence */
    OK(lk(fd, F_SETLK, F_UNLCK, 20, 10)); /* kept: the file is cached, the other process asks us */
    CHECK(who_holds(20, 10) == getpid(), "the released lock is not kept (nobody would ask)");
    OK(lk(fd, F_SETLK, F_WRLCK, 0, 10)); /* the second: the handler runs between the grant and its record */
    if (!if_answer) SKIP("the cue did not fire (not a test build?)");
    CHECK(if_answer == 'r', "another process got [0,10) while our acquisition of it was granted and not yet "
                            "recorded: the drop unlocked a range in flight");
    pid_t h = who_holds(0, 10);
    CHECK(h == getpid(), "after the acquisition [0,10) is held by %d, expected us (%d)", h, getpid());
    int st;
    waitpid(c, &st, 0);
    close(fd);
}

static void case_merged(void) {
    const char *cue = getenv("DAXKIT_TEST_CRASH");
    if (!cue || !strstr(cue, "lockcache.acquired")) SKIP("needs DAXKIT_TEST_CRASH=raise:10:lockcache.acquired:2");
    int fd = open_file();
    pid_t c = if_other(0, 5, 600); /* (got once our thread dropped: up to 3 s under load) */
    OK(lk(fd, F_SETLK, F_WRLCK, 0, 10)); /* the cue's first occurrence */
    OK(lk(fd, F_SETLK, F_UNLCK, 0, 10)); /* kept */
    CHECK(who_holds(0, 10) == getpid(), "the released lock is not kept (nothing to test)");
    if_fd = fd;
    OK(lk(fd, F_SETLK, F_WRLCK, 5, 10)); /* the second: the handler's read locks and the other's ask inside */
    if_fd = -1;
    if (!if_answer) SKIP("the cue did not fire (not a test build?)");
    CHECK(if_answer == 'g', "the other process did not get [0,5), which we released (answer %c)", if_answer);
    int st;
    waitpid(c, &st, 0);
    OK(lk(fd, F_SETLK, F_WRLCK, 0, 5)); /* must reach the kernel: the drop unlocked [0,5) */
    pid_t h = who_holds(0, 5);
    CHECK(h == getpid(), "our write lock on [0,5) is held by %d in the kernel, expected us (%d): a cache hit over "
                         "bytes the drop had unlocked", h, getpid());
    h = who_holds(5, 10);
    CHECK(h == getpid(), "our write lock on [5,15) is held by %d, expected us", h);
    close(fd);
}

/* many: our threads blocked on [10,16) held by the other process */
static int many_fd;
static void *many_thread(void *arg) {
    long i = (long)arg;
    if (lk(many_fd, F_SETLKW, F_WRLCK, 10 + i, 1) != 0) return (void *)1;
    return NULL;
}

static void case_many(bool raw) {
    enum { THREADS = 6 };
    int fd = open_file();
    OK(lk(fd, F_SETLK, F_WRLCK, 0, 1));
    OK(lk(fd, F_SETLK, F_UNLCK, 0, 1)); /* kept */
    pid_t kept = who_holds(0, 1);
    if (raw && kept != getpid()) SKIP("the age drop came before the look (load): nothing to test");
    CHECK(kept == getpid(), "the released lock is not kept (nothing to test)");
    int p[2], q[2], res[2];
    OK(pipe(p));
    OK(pipe(q));
    OK(pipe(res));
    pid_t c = fork(); /* before our threads: the other process holds [10,16), then wants [0,1) */
    if (c == 0) {
        close(q[1]);
        int f2 = raw ? (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR) : open(path, O_RDWR);
        struct flock l = fl(F_WRLCK, 10, THREADS);
        char x = (raw ? syscall(SYS_fcntl, f2, F_SETLK, &l) : fcntl(f2, F_SETLK, &l)) == 0 ? 'k' : 'f';
        if (write(p[1], &x, 1) != 1 || read(q[0], &x, 1) != 1) _exit(2);
        int64_t out[3] = {-1, 0, 0}; /* ms, F_SETLKW's result, its errno */
        uint64_t t0 = now_ms();
        for (;;) {
            l = fl(F_WRLCK, 0, 1);
            if ((raw ? syscall(SYS_fcntl, f2, F_SETLK, &l) : fcntl(f2, F_SETLK, &l)) == 0) {
                out[0] = (int64_t)(now_ms() - t0);
                break;
            }
            if (now_ms() - t0 > 3000) {
                l = fl(F_WRLCK, 0, 1);
                errno = 0;
                out[1] = raw ? syscall(SYS_fcntl, f2, F_SETLKW, &l) : fcntl(f2, F_SETLKW, &l);
                out[2] = errno;
                break;
            }
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        if (write(res[1], out, sizeof out) != sizeof out) _exit(3);
        _exit(0); /* (its locks go: our threads get theirs) */
    }
    close(p[1]);
    close(q[0]);
    close(res[1]);
    char x = 0;
    CHECK(read(p[0], &x, 1) == 1 && x == 'k', "the other process could not lock [10,16)");
    many_fd = fd;
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) CHECK(pthread_create(&t[i], NULL, many_thread, (void *)i) == 0, "pthread_create");
    nanosleep(&(struct timespec){0, 200000000}, NULL); /* (they are blocked in the kernel) */
    OK(write(q[1], "g", 1));
    int64_t out[3] = {-2, 0, 0};
    CHECK(read(res[0], out, sizeof out) == sizeof out, "the other process: no answer");
    int st;
    waitpid(c, &st, 0);
    for (int i = 0; i < THREADS; i++) {
        void *rv = NULL;
        pthread_join(t[i], &rv);
        CHECK(rv == NULL, "thread %d: F_SETLKW on [%d,%d) failed", i, 10 + i, 11 + i);
    }
    NOTE("the other process (%s) got [0,1) after %lld ms; F_SETLKW after 3 s: %lld (errno %lld)",
         raw ? "no daxkit" : "daxkit", (long long)out[0], (long long)out[1], (long long)out[2]);
    CHECK(out[0] >= 0 || out[1] == 0, "the other process did not get [0,1), which we released, while %d of our "
          "threads waited in the kernel for its locks: F_SETLKW %lld, errno %lld (%s)", THREADS, (long long)out[1],
          (long long)out[2], strerror((int)out[2]));
    CHECK(out[0] >= 0, "the other process got [0,1) only by blocking (%s); polled 3 s in vain", "F_SETLKW");
    close(fd);
}

static void case_ofd(void) {
    int fd = open_file();
    OK(lk(fd, F_SETLK, F_WRLCK, 0, 1));
    OK(lk(fd, F_SETLK, F_UNLCK, 0, 1)); /* kept */
    CHECK(who_holds(0, 1) == getpid(), "the released lock is not kept (nothing to test)");
    struct flock o = fl(F_WRLCK, 0, 1);
    OK(fcntl(fd, F_OFD_GETLK, &o));
    CHECK(o.l_type == F_UNLCK, "F_OFD_GETLK by the program finds a lock on [0,1) (type %d, pid %d) that it released",
          o.l_type, o.l_pid);
    o = fl(F_WRLCK, 0, 1);
    errno = 0;
    int r = fcntl(fd, F_OFD_SETLK, &o);
    CHECK(r == 0, "the program's own OFD write lock on [0,1), which it released as a POSIX lock: %d (errno %d %s)", r,
          errno, strerror(errno));
    pid_t h = who_holds(0, 1);
    CHECK(h == -1, "after F_OFD_SETLK the kernel says [0,1) is held by %d, expected an OFD lock (-1)", h);
    errno = 0;
    r = lk(fd, F_SETLK, F_WRLCK, 0, 1); /* conflicts with the OFD lock, as on the kernel path */
    CHECK(r == -1 && (errno == EAGAIN || errno == EACCES),
          "a POSIX write lock over the program's own OFD lock: %d (errno %d), expected EAGAIN", r, errno);
    o = fl(F_UNLCK, 0, 1);
    OK(fcntl(fd, F_OFD_SETLK, &o));
    OK(lk(fd, F_SETLK, F_WRLCK, 0, 1));
    CHECK(who_holds(0, 1) == getpid(), "the POSIX lock after the OFD lock's release is not ours");
    close(fd);
}

static int oi_fd;
static void *oi_thread(void *arg) {
    int64_t *ms = arg;
    struct flock o = fl(F_WRLCK, 0, 1);
    uint64_t t0 = now_ms();
    *ms = fcntl(oi_fd, F_OFD_SETLKW, &o) == 0 ? (int64_t)(now_ms() - t0) : -1;
    return NULL;
}

static void case_ofd_inflight(void) {
    int fd = open_file();
    OK(lk(fd, F_SETLK, F_WRLCK, 10, 1));
    OK(lk(fd, F_SETLK, F_UNLCK, 10, 1)); /* the board made */
    OK(lk(fd, F_SETLK, F_WRLCK, 0, 1));  /* held */
    oi_fd = fd;
    int64_t ms = -2;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, oi_thread, &ms) == 0, "pthread_create");
    nanosleep(&(struct timespec){0, 200000000}, NULL); /* (it blocks in the kernel on our POSIX lock) */
    OK(lk(fd, F_SETLK, F_UNLCK, 0, 1));
    pthread_join(t, NULL);
    NOTE("the OFD waiter got [0,1) %lld ms after it began (released at ~200 ms)", (long long)ms);
    CHECK(ms >= 0, "F_OFD_SETLKW failed");
    CHECK(ms < 2000, "the program's F_OFD_SETLKW waited %lld ms: its own POSIX release was kept (the age drop)",
          (long long)ms);
    close(fd);
}

static void case_ofd_other(void) {
    int fd = open_file();
    OK(lk(fd, F_SETLK, F_WRLCK, 0, 10));
    OK(lk(fd, F_SETLK, F_UNLCK, 0, 10)); /* kept */
    CHECK(who_holds(0, 10) == getpid(), "the released lock is not kept (nothing to test)");
    pid_t c = fork();
    if (c == 0) {
        int f2 = open(path, O_RDWR);
        if (f2 < 0) _exit(2);
        uint64_t t0 = now_ms();
        struct flock o = fl(F_WRLCK, 0, 5);
        if (fcntl(f2, F_OFD_SETLKW, &o) != 0) _exit(3);
        uint64_t ms = now_ms() - t0;
        if (ms > 3000) {
            fprintf(stderr, "child: F_OFD_SETLKW got [0,5) after %llu ms\n", (unsigned long long)ms);
            _exit(4);
        }
        _exit(0);
    }
    int st;
    OK(waitpid(c, &st, 0));
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "another daxkit process's F_OFD_SETLKW on a range we keep: child "
          "status %d (4: more than 3 s)", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    close(fd);
}

static void case_noboard(void) {
    char d[PATH_MAX], b[PATH_MAX + 32];
    st_path(d, sizeof d, dir, ".daxkit");
    (void)mkdir(d, 0755);
    snprintf(b, sizeof b, "%s/lockboard2.%u", d, (unsigned)geteuid());
    CHECK(mkdir(b, 0755) == 0, "mkdir %s: %s", b, strerror(errno));
    int fd = open_file();
    OK(lk(fd, F_SETLK, F_WRLCK, 0, 10));
    OK(lk(fd, F_SETLK, F_RDLCK, 0, 10)); /* a downgrade: the kernel's (no board to have a kept write lock dropped) */
    pid_t h = who_holds_t(F_RDLCK, 0, 10);
    CHECK(h == 0, "a read lock over the range the program downgraded to a read lock: the kernel says held by %d "
          "(a write lock kept without a board to drop it)", h);
    CHECK(who_holds(0, 10) == getpid(), "the program's read lock is not in the kernel");
    OK(lk(fd, F_SETLK, F_UNLCK, 0, 10));
    h = who_holds(0, 10);
    CHECK(h == 0, "a release without a board is held by %d in the kernel", h);
    close(fd);
}

static int tasks_now(void) {
    DIR *d = opendir("/proc/self/task");
    CHECK(d != NULL, "opendir /proc/self/task");
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* (also run in a fork child: the child's first kept release starts its own) */
static void thread_round(const char *who) {
    int t0 = tasks_now();
    uint64_t th0 = st_counter(DK_C_lock_cache_threads);
    int fd = open_file();
    struct flock q = fl(F_WRLCK, 0, 1);
    OK(fcntl(fd, F_GETLK, &q));
    OK(lk(fd, F_SETLK, F_WRLCK, 0, 1));
    OK(lk(fd, F_SETLK, F_RDLCK, 0, 1)); /* (a downgrade: the kernel's while there is no thread) */
    CHECK(tasks_now() == t0, "%s: a lock call started a thread (%d -> %d tasks)", who, t0, tasks_now());
    CHECK(who_holds_t(F_RDLCK, 0, 1) == 0, "%s: the downgrade was not the kernel's (no thread to drop it)", who);
    OK(lk(fd, F_SETLK, F_UNLCK, 0, 1)); /* kept: the thread starts */
    CHECK(tasks_now() == t0 + 1, "%s: the first kept release did not start the thread (%d -> %d tasks)", who, t0,
          tasks_now());
    CHECK(st_counter(DK_C_lock_cache_threads) == th0 + 1, "%s: lock_cache_threads +%llu, not +1", who,
          (unsigned long long)(st_counter(DK_C_lock_cache_threads) - th0));
    CHECK(who_holds(0, 1) == getpid(), "%s: the release was not kept", who);
    OK(lk(fd, F_SETLK, F_WRLCK, 0, 1));
    OK(lk(fd, F_SETLK, F_UNLCK, 0, 1));
    CHECK(tasks_now() == t0 + 1, "%s: a second thread (%d tasks)", who, tasks_now());
    close(fd);
}
static void case_thread(void) {
    thread_round("parent");
    pid_t c = OK(fork());
    if (c == 0) {
        thread_round("fork child");
        _exit(0);
    }
    int st;
    CHECK(st_wait_child(c, &st, 20000), "the fork child hung");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the fork child failed (status 0x%x)", st);
}

/* 130 daxkit processes (fork children) each lock and release byte i of the file, then wait until all have: the
 * board holds 128. Their stderr goes to a file, which must stay empty. */
static void case_slots(void) {
    close(open_file());
    char errp[PATH_MAX];
    st_path(errp, sizeof errp, dir, "slots.err");
    int err = OK(open(errp, O_RDWR | O_CREAT | O_TRUNC, 0644));
    int ready[2], go[2];
    OK(pipe(ready));
    OK(pipe(go));
    enum { N = 130 };
    pid_t kids[N];
    for (int i = 0; i < N; i++) {
        kids[i] = OK(fork());
        if (kids[i] == 0) {
            dup2(err, 2);
            close(ready[0]);
            close(go[1]);
            int fd = open(path, O_RDWR);
            char r = 'e';
            if (fd >= 0 && lk(fd, F_SETLK, F_WRLCK, i, 1) == 0 && lk(fd, F_SETLK, F_UNLCK, i, 1) == 0) r = 'd';
            uint64_t c[DK_C_COUNT];
            if (r == 'd' && st_stats(getpid(), c)) r = c[DK_C_lock_cache_kept] ? 'k' : c[DK_C_lock_cache_off] ? 'o' : 'n';
            if (write(ready[1], &r, 1) != 1) _exit(3);
            char x;
            while (read(go[0], &x, 1) > 0) {} /* (all hold their slots until the parent closes go) */
            _exit(r == 'e' ? 2 : 0);
        }
    }
    close(ready[1]);
    close(go[0]);
    int kept = 0, off = 0, other = 0;
    for (int i = 0; i < N; i++) {
        char r = 0;
        CHECK(read(ready[0], &r, 1) == 1, "child %d: no answer", i);
        CHECK(r != 'e', "a child's lock call failed");
        kept += r == 'k', off += r == 'o', other += r == 'n';
    }
    close(go[1]);
    for (int i = 0; i < N; i++) {
        int st;
        CHECK(st_wait_child(kids[i], &st, 20000), "child %d hung", i);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d: status 0x%x", i, st);
    }
    struct stat sb;
    OK(fstat(err, &sb));
    char text[256] = "";
    if (sb.st_size) CHECK(pread(err, text, sizeof text - 1, 0) >= 0, "read the children's stderr");
    CHECK(sb.st_size == 0, "the children wrote %lld bytes on stderr: %s", (long long)sb.st_size, text);
    CHECK(kept <= 128 && kept + off + other == N && off >= N - 128 - other, "kept %d, off %d, neither %d of %d", kept,
          off, other, N);
    printf("ok: slots: %d processes kept their release, %d without a slot (counted, nothing on stderr), %d neither\n",
           kept, off, other);
    close(err);
}

static void case_readfd(void) {
    close(open_file());
    int fdw = OK(open(path, O_WRONLY));
    int fdr = OK(open(path, O_RDONLY));
    OK(lk(fdw, F_SETLK, F_WRLCK, 0, 10));
    OK(lk(fdr, F_SETLK, F_RDLCK, 0, 10)); /* a downgrade: the kernel keeps the write lock (cached) */
    if (who_holds_t(F_RDLCK, 0, 10) != getpid()) SKIP("the age drop came before the look (load): nothing to test");
    OK(lk(fdw, F_SETLK, F_WRLCK, 20, 10));
    OK(lk(fdw, F_SETLK, F_UNLCK, 20, 10)); /* the write-only descriptor used last */
    uint64_t t0 = now_ms();
    pid_t h, h2 = 0;
    /* (both: an age drop that came before [20,30) was kept leaves that one to the next) */
    while (((h = who_holds_t(F_RDLCK, 0, 10)) != 0 || (h2 = who_holds(20, 10)) != 0) && now_ms() - t0 < 3000)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    NOTE("a reader could lock [0,10) after %llu ms", (unsigned long long)(now_ms() - t0));
    CHECK(h == 0, "3 s after the age drop was due, a read lock on [0,10) (which the program holds for reading) "
          "conflicts with %d: the drop's downgrade did not reach the kernel", h);
    CHECK(who_holds(0, 10) == getpid(), "the program's read lock on [0,10) is not in the kernel after the drop");
    CHECK(h2 == 0, "[20,30), released, still held by %d 3 s after the age drop was due", h2);
    close(fdr);
    close(fdw);
}

/* execrace: the releasing thread's cue (SIGUSR1) lets the main thread exec and waits for the exec's cue (SIGUSR2) */
static int er_toexec[2], er_go[2], er_fd = -1;
static volatile int er_cued;
static void er_release_cue(int sig) {
    (void)sig;
    char x = 'a';
    er_cued = 1;
    if (write(er_toexec[1], &x, 1) == 1) (void)!read(er_go[0], &x, 1); /* until the exec stops on its cue */
}
static void er_exec_cue(int sig) {
    (void)sig;
    char x = 'g';
    (void)!write(er_go[1], &x, 1);
    nanosleep(&(struct timespec){0, 300000000}, NULL); /* the release goes on meanwhile */
}
static void *er_thread(void *arg) {
    (void)arg;
    lk(er_fd, F_SETLK, F_UNLCK, 0, 10);
    if (!er_cued) {
        char x = 'n';
        (void)!write(er_toexec[1], &x, 1);
    }
    return NULL;
}

static void case_execrace(const char *self) {
    const char *cue = getenv("DAXKIT_TEST_CRASH");
    if (!cue || !strstr(cue, "lockcache.before_exec")) SKIP("needs DAXKIT_TEST_CRASH=raise:10:lockcache.release:2,raise:12:lockcache.before_exec:1");
    int fd = open_file();
    OK(lk(fd, F_SETLK, F_WRLCK, 100, 10)); /* the board made; [100,110) kept */
    OK(lk(fd, F_SETLK, F_UNLCK, 100, 10)); /* (the release cue's first occurrence) */
    OK(lk(fd, F_SETLK, F_WRLCK, 0, 10));   /* held (the kernel's) */
    OK(pipe(er_toexec));
    OK(pipe(er_go));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = er_release_cue;
    OK(sigaction(SIGUSR1, &sa, NULL));
    sa.sa_handler = er_exec_cue;
    OK(sigaction(SIGUSR2, &sa, NULL));
    er_fd = fd;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, er_thread, NULL) == 0, "pthread_create");
    char x = 0;
    CHECK(read(er_toexec[0], &x, 1) == 1, "the releasing thread: no word");
    if (x != 'a') SKIP("the release's cue did not fire (not a test build?)");
    char fds[16];
    snprintf(fds, sizeof fds, "%d", fd);
    execl(self, self, dir, "execrace_after", fds, (char *)NULL);
    FAIL("execl: %s", strerror(errno));
}

static void case_execrace_after(void) {
    pid_t h = who_holds(0, 10);
    CHECK(h == 0, "after exec [0,10), which another thread of the old image released between the exec's drop and "
                  "the execve, is held by %d (the new image never took it)", h);
    h = who_holds(100, 10);
    CHECK(h == 0, "after exec [100,110), released and kept by the old image, is held by %d", h);
}

static void case_entries(void) {
    for (int i = 0; i < 70; i++) {
        char name[32];
        snprintf(name, sizeof name, "lc_entries.%d", i);
        st_path(path, sizeof path, dir, name);
        int fd = open_file();
        OK(lk(fd, F_SETLK, F_WRLCK, 0, 1));
        OK(lk(fd, F_SETLK, F_UNLCK, 0, 1));
        pid_t h = who_holds(0, 1);
        CHECK(h == getpid(), "file %d of 70 (each closed before the next): its release is not kept (held by %d) -- "
                             "the board's entries not freed at the last close", i + 1, h);
        OK(close(fd));
    }
}

static void case_getlk(void) {
    int fd = open_file();
    OK(lk(fd, F_SETLK, F_WRLCK, 0, 10));
    OK(lk(fd, F_SETLK, F_UNLCK, 0, 10));
    struct flock l = fl(F_WRLCK, 0, 10);
    OK(fcntl(fd, F_GETLK, &l));
    CHECK(l.l_type == F_UNLCK, "F_GETLK by the program reports a lock (type %d, pid %d)", l.l_type, l.l_pid);
    close(fd);
}

int main(int argc, char **argv) {
    if (argc < 3) SKIP("usage: shim_lock_cache DIR CASE");
    dir = argv[1];
    st_path(path, sizeof path, dir, "lc.db");
    st_watchdog(60);
    const char *c = argv[2];
    if (!strcmp(c, "execrace_after")) {
        case_execrace_after();
        printf("PASS\n");
        return 0;
    }
    if (!strcmp(c, "exec_after")) {
        case_exec_after(argc > 3 ? atoi(argv[3]) : -1);
        printf("PASS\n");
        return 0;
    }
    const char *on = getenv("DAXKIT_LOCK_CACHE");
    if (!on || !strcmp(on, "0")) SKIP("DAXKIT_LOCK_CACHE is not on (opt-in)");
    if (!strcmp(c, "cached")) case_cached();
    else if (!strcmp(c, "outsider")) case_outsider();
    else if (!strcmp(c, "handoff")) case_handoff();
    else if (!strcmp(c, "close")) case_close();
    else if (!strcmp(c, "fork")) case_fork();
    else if (!strcmp(c, "exec")) case_exec(argv[0]);
    else if (!strcmp(c, "getlk")) case_getlk();
    else if (!strcmp(c, "leak")) case_leak();
    else if (!strcmp(c, "busy")) case_busy();
    else if (!strcmp(c, "rekeep")) case_rekeep();
    else if (!strcmp(c, "hold")) case_hold();
    else if (!strcmp(c, "atfork")) case_atfork();
    else if (!strcmp(c, "atfork2")) case_atfork2();
    else if (!strcmp(c, "waiter")) case_waiter();
    else if (!strcmp(c, "errno")) case_errno();
    else if (!strcmp(c, "readwrite")) case_readwrite();
    else if (!strcmp(c, "overflow")) case_overflow();
    else if (!strcmp(c, "inflight")) case_inflight();
    else if (!strcmp(c, "merged")) case_merged();
    else if (!strcmp(c, "many")) case_many(false);
    else if (!strcmp(c, "many_raw")) case_many(true);
    else if (!strcmp(c, "ofd")) case_ofd();
    else if (!strcmp(c, "ofd_other")) case_ofd_other();
    else if (!strcmp(c, "ofd_inflight")) case_ofd_inflight();
    else if (!strcmp(c, "noboard")) case_noboard();
    else if (!strcmp(c, "readfd")) case_readfd();
    else if (!strcmp(c, "entries")) case_entries();
    else if (!strcmp(c, "execrace")) case_execrace(argv[0]);
    else if (!strcmp(c, "thread")) case_thread();
    else if (!strcmp(c, "slots")) case_slots();
    else if (!strcmp(c, "dup2board")) case_dup2board();
    else SKIP("unknown case %s", c);
    printf("PASS\n");
    return 0;
}
