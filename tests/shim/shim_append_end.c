/* Description: the end an fsync's O_APPEND publish puts off (session 28, upath/publish.c put_end_off): after
 * appends through an O_APPEND descriptor and fdatasync (redis's AOF with appendfsync always) the library writes
 * them at the kernel's end and does not fstat to learn where they landed -- until a call needs it. Another
 * process (here: raw system calls, the kernel's path) appends between this process's publishes; every call
 * that shows the end or an offset must answer as the kernel's path does.
 *   order   a, other's X, b (fdatasync), other's Y: the O_APPEND descriptor's SEEK_CUR is the end of b (the
 *           kernel's offset after its own record, not the file's end -- where the other's Y lies), fstat and
 *           SEEK_END the file's end, reads see a X b Y; then c and another's Z: SEEK_CUR the end of c. Three
 *           rounds where the other appends before each publish: SEEK_CUR the file's end each time.
 *   calls   for each call that needs the end -- fstat, lseek SEEK_END and SEEK_CUR, read at the offset, pread
 *           past the end this process knew, stat by name (also with an append staged since), a pwrite and
 *           an O_APPEND write through another descriptor, mmap, ftruncate, a lock: after two appends + fdatasync
 *           and another's append of 50 bytes, on a fresh file, the kernel's answer and the kernel's bytes. And
 *           (session 29) a write after F_SETFL took O_APPEND off, an append after a lock on another file under
 *           which another process cut the log.
 *   through an O_APPEND log fsynced after each of 9 appends is published at the write from then on (session 28,
 *           publish.c up_write_through_locked): another program sees the record when write returns and its own
 *           append lands after it (a900 r100 X30), SEEK_CUR the end of r; two appends before an fsync leave the
 *           state -- the first in the file at once, the second at the fsync after another's Y (s50 Y20 t50, the
 *           documented transition) -- and the next append is staged again.
 *   through_sync  the fsync of such a log takes no mutex (session 29) but still breaks the streak when nothing
 *           was appended, ends each record's append (five records synced one by one all published at the write),
 *           publishes a pwrite at the end through another descriptor and a second append staged before it, and on
 *           a flush medium (DAXKIT_PERSIST=flush) is the kernel's fdatasync.
 * Needs the put-off to have happened (counter append_end_put_off moved): else it proves nothing.
 * argv[1]: managed directory; argv[2]: case (or "all"). */
#include <sys/file.h>
#include <sys/mman.h>

#include "shim_test.h"

static const char *dir;

/* The other program's append of n bytes of c (raw system calls: the kernel's path). */
static void other_append(const char *path, char c, size_t n) {
    char buf[512];
    memset(buf, c, n);
    long fd = syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_APPEND);
    CHECK(fd >= 0, "other: open %s: %s", path, strerror(errno));
    CHECK(syscall(SYS_write, fd, buf, n) == (long)n, "other: write: %s", strerror(errno));
    syscall(SYS_close, fd);
}

static void put(int fd, char c, size_t n) {
    char buf[512];
    memset(buf, c, n);
    CHECK(write(fd, buf, n) == (ssize_t)n, "write of %zu: %s", n, strerror(errno));
}

/* The kernel's bytes of path equal `want` (a run-length list: "a100X30..."). */
static void kernel_bytes(const char *path, const char *want, const char *after) {
    char exp[8192], got[8192];
    size_t n = 0;
    for (const char *p = want; *p;) {
        char c = *p++;
        size_t k = strtoul(p, (char **)&p, 10);
        memset(exp + n, c, k);
        n += k;
    }
    long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
    CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    long r = syscall(SYS_read, fd, got, sizeof got);
    syscall(SYS_close, fd);
    CHECK(r == (long)n, "after %s: the kernel's file holds %ld bytes; expected %zu (%s)", after, r, n, want);
    for (size_t i = 0; i < n; i++)
        CHECK(got[i] == exp[i], "after %s: byte %zu is '%c'; expected '%c' (%s)", after, i, got[i], exp[i], want);
}

static unsigned long long put_offs(void) { return st_json_counter(st_stats_cli_json(), "append_end_put_off"); }

static void case_order(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "order.aof");
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 0644));
    put(fd, 'a', 100);
    OK(fdatasync(fd));
    other_append(path, 'X', 30);
    put(fd, 'b', 100);
    OK(fdatasync(fd)); /* (the look put off) */
    other_append(path, 'Y', 40);
    CHECK(lseek(fd, 0, SEEK_CUR) == 230, "order: SEEK_CUR %ld after b; the kernel's: 230 (the end of b, not of Y)",
          (long)lseek(fd, 0, SEEK_CUR));
    struct stat st;
    OK(fstat(fd, &st));
    CHECK(st.st_size == 270, "order: fstat %lld; the kernel's 270", (long long)st.st_size);
    CHECK(lseek(fd, 0, SEEK_END) == 270, "order: SEEK_END; the kernel's 270");
    char buf[512];
    CHECK(pread(fd, buf, sizeof buf, 0) == 270, "order: pread of the file: not 270 bytes");
    CHECK(buf[99] == 'a' && buf[100] == 'X' && buf[130] == 'b' && buf[229] == 'b' && buf[230] == 'Y',
          "order: pread sees other bytes than a X b Y");
    kernel_bytes(path, "a100X30b100Y40", "order's b");
    put(fd, 'c', 100);
    OK(fdatasync(fd));
    other_append(path, 'Z', 20);
    CHECK(lseek(fd, 0, SEEK_CUR) == 370, "order: SEEK_CUR %ld after c; the kernel's: 370", (long)lseek(fd, 0, SEEK_CUR));
    kernel_bytes(path, "a100X30b100Y40c100Z20", "order's c");
    /* the other before each publish: each record after the other's */
    for (int i = 0; i < 3; i++) {
        put(fd, 'd', 10);
        OK(fdatasync(fd));
        other_append(path, 'W', 5);
    }
    put(fd, 'e', 10);
    OK(fdatasync(fd));
    CHECK(lseek(fd, 0, SEEK_CUR) == 390 + 45 + 10, "order: SEEK_CUR %ld after e; the kernel's: 445",
          (long)lseek(fd, 0, SEEK_CUR));
    kernel_bytes(path, "a100X30b100Y40c100Z20d10W5d10W5d10W5e10", "order's e");
    OK(close(fd));
    printf("ok: order\n");
}

enum call {
    C_FSTAT, C_SEEK_END, C_SEEK_CUR, C_READ, C_PREAD, C_STAT, C_STAT_STAGED, C_PWRITE_OTHER, C_APPEND_OTHER,
    C_MMAP, C_FTRUNCATE, C_LOCK, C_COUNT
};
static const char *const call_name[C_COUNT] = {"fstat", "seek_end", "seek_cur", "read", "pread", "stat", "stat_staged",
                                               "pwrite_other", "append_other", "mmap", "ftruncate", "lock"};

/* a100 b100 (each fdatasync'ed: the second's look put off), the other's O50, then the call. */
static void one_call(enum call k) {
    char path[PATH_MAX], buf[512];
    st_path(path, sizeof path, dir, st_fmt("call_%s.aof", call_name[k]));
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 0644));
    int fd2 = OK(open(path, O_RDWR)); /* (before: another descriptor of the process) */
    int fd3 = OK(open(path, O_WRONLY | O_APPEND));
    put(fd, 'a', 100);
    OK(fdatasync(fd));
    put(fd, 'b', 100);
    OK(fdatasync(fd));
    other_append(path, 'O', 50);
    const char *what = call_name[k];
    struct stat st;
    switch (k) {
    case C_FSTAT:
        OK(fstat(fd, &st));
        CHECK(st.st_size == 250, "%s: %lld; the kernel's 250", what, (long long)st.st_size);
        break;
    case C_SEEK_END: CHECK(lseek(fd, 0, SEEK_END) == 250, "%s: not the kernel's 250", what); break;
    case C_SEEK_CUR:
        CHECK(lseek(fd, 0, SEEK_CUR) == 200, "%s: %ld; the kernel's 200", what, (long)lseek(fd, 0, SEEK_CUR));
        CHECK(lseek(fd2, 0, SEEK_CUR) == 0, "%s: the other descriptor's offset moved", what);
        break;
    case C_READ: { /* at the descriptor's offset: the end of b, where the other's bytes follow */
        ssize_t r = read(fd, buf, sizeof buf);
        CHECK(r == 50 && buf[0] == 'O' && buf[49] == 'O', "%s: %zd bytes ('%c'); the kernel's 50 of O", what, r, buf[0]);
        break;
    }
    case C_PREAD: {
        ssize_t r = pread(fd2, buf, sizeof buf, 150);
        CHECK(r == 100 && buf[0] == 'b' && buf[50] == 'O', "%s: %zd bytes; the kernel's 100 (b50 O50)", what, r);
        break;
    }
    case C_STAT:
        OK(stat(path, &st));
        CHECK(st.st_size == 250, "%s: %lld; the kernel's 250", what, (long long)st.st_size);
        break;
    case C_STAT_STAGED:
        put(fd, 'c', 10); /* (staged: its look still put off) */
        OK(stat(path, &st));
        CHECK(st.st_size == 260, "%s: %lld; the kernel's 260", what, (long long)st.st_size);
        OK(fdatasync(fd));
        CHECK(lseek(fd, 0, SEEK_CUR) == 260, "%s: SEEK_CUR %ld; the kernel's 260", what, (long)lseek(fd, 0, SEEK_CUR));
        break;
    case C_PWRITE_OTHER: /* at the end this process knew: over the other's first bytes, as the kernel's pwrite */
        memset(buf, 'P', 10);
        CHECK(pwrite(fd2, buf, 10, 200) == 10, "%s: pwrite", what);
        OK(fstat(fd2, &st));
        CHECK(st.st_size == 250, "%s: fstat %lld; the kernel's 250", what, (long long)st.st_size);
        OK(close(fd2));
        fd2 = -1;
        kernel_bytes(path, "a100b100P10O40", what);
        break;
    case C_APPEND_OTHER: /* another O_APPEND descriptor's record: after the other's; fd's offset stays */
        put(fd3, 'Q', 10);
        OK(fdatasync(fd3));
        CHECK(lseek(fd3, 0, SEEK_CUR) == 260, "%s: its SEEK_CUR %ld; the kernel's 260", what, (long)lseek(fd3, 0, SEEK_CUR));
        CHECK(lseek(fd, 0, SEEK_CUR) == 200, "%s: the first's SEEK_CUR %ld; the kernel's 200", what,
              (long)lseek(fd, 0, SEEK_CUR));
        kernel_bytes(path, "a100b100O50Q10", what);
        break;
    case C_MMAP: {
        char *m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd2, 0);
        CHECK(m != MAP_FAILED, "%s: mmap: %s", what, strerror(errno));
        CHECK(m[199] == 'b' && m[200] == 'O' && m[249] == 'O', "%s: the mapping shows other bytes", what);
        munmap(m, 4096);
        OK(fstat(fd, &st));
        CHECK(st.st_size == 250, "%s: fstat %lld; the kernel's 250", what, (long long)st.st_size);
        break;
    }
    case C_FTRUNCATE:
        OK(ftruncate(fd2, 220));
        OK(fstat(fd, &st));
        CHECK(st.st_size == 220, "%s: fstat %lld; the kernel's 220", what, (long long)st.st_size);
        put(fd, 'c', 10);
        OK(fdatasync(fd));
        CHECK(lseek(fd, 0, SEEK_CUR) == 230, "%s: SEEK_CUR %ld; the kernel's 230", what, (long)lseek(fd, 0, SEEK_CUR));
        kernel_bytes(path, "a100b100O20c10", what);
        break;
    case C_LOCK: { /* a lock taken ends the put-off: the next append's offset is the kernel's */
        struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
        OK(fcntl(fd2, F_SETLK, &l));
        put(fd, 'c', 10);
        OK(fdatasync(fd));
        CHECK(lseek(fd, 0, SEEK_CUR) == 260, "%s: SEEK_CUR %ld; the kernel's 260", what, (long)lseek(fd, 0, SEEK_CUR));
        l.l_type = F_UNLCK;
        OK(fcntl(fd2, F_SETLK, &l));
        kernel_bytes(path, "a100b100O50c10", what);
        break;
    }
    case C_COUNT: break;
    }
    if (fd2 >= 0) OK(close(fd2));
    OK(close(fd3));
    OK(close(fd));
    printf("ok: calls: %s\n", what);
}

/* The calls the put-off lets through without the look (upath.c end_put_off: an fsync, an O_APPEND write through the
 * descriptor whose records were put off) -- not once they are no longer that. A lock taken since, on another file
 * (a lock file: the put-off follows every lock's generation), under which another process cut the log: the next
 * append's offset is the kernel's end after the cut (lock_cut). The descriptor's O_APPEND taken off by F_SETFL: the
 * kernel left its offset after the record, wherever the record landed -- past another process's bytes that came
 * before it -- and a write at the offset goes there (setfl; setfl_staged: F_SETFL between the append and the fsync
 * that publishes it; main 6810852 wrote S inside b in both: the offset did not follow the record once the
 * descriptor was no longer O_APPEND, fdtab.c up_slots_follow_appends). Before any other case takes a lock (a
 * put-off needs the file's own descriptor, opened only while no POSIX lock was ever asked for: publish.c
 * put_off_fd); lock_cut in a child of its own, so that the cases after it still put their looks off. */
static void late_call(const char *what) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, st_fmt("late_%s.aof", what));
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 0644));
    put(fd, 'a', 100);
    OK(fdatasync(fd));
    unsigned long long p0 = put_offs();
    if (strcmp(what, "lock_cut") == 0) {
        char lpath[PATH_MAX];
        st_path(lpath, sizeof lpath, dir, "late_lock_cut.lock");
        int lfd = OK(open(lpath, O_RDWR | O_CREAT, 0644));
        put(fd, 'b', 100);
        OK(fdatasync(fd)); /* (the look put off) */
        CHECK(syscall(SYS_truncate, path, 100) == 0, "other: truncate: %s", strerror(errno));
        struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
        OK(fcntl(lfd, F_SETLK, &l));
        put(fd, 'c', 10);
        OK(fdatasync(fd));
        CHECK(lseek(fd, 0, SEEK_CUR) == 110, "%s: SEEK_CUR %ld; the kernel's 110 (after the cut)", what,
              (long)lseek(fd, 0, SEEK_CUR));
        l.l_type = F_UNLCK;
        OK(fcntl(lfd, F_SETLK, &l));
        OK(close(lfd));
        kernel_bytes(path, "a100c10", what);
    } else { /* setfl, setfl_staged */
        bool staged = strcmp(what, "setfl_staged") == 0;
        other_append(path, 'O', 50);
        put(fd, 'b', 100);
        if (!staged) OK(fdatasync(fd)); /* (at the kernel's end, after O: the look put off) */
        OK(fcntl(fd, F_SETFL, 0));
        if (staged) OK(fdatasync(fd)); /* (b at the kernel's end, after O) */
        put(fd, 'S', 10);
        CHECK(lseek(fd, 0, SEEK_CUR) == 260, "%s: SEEK_CUR %ld; the kernel's 260", what, (long)lseek(fd, 0, SEEK_CUR));
        OK(fdatasync(fd));
        kernel_bytes(path, "a100O50b100S10", what);
    }
    CHECK(put_offs() > p0 || strcmp(what, "setfl_staged") == 0, "%s: no look put off (append_end_put_off +0): the "
          "case proves nothing", what);
    OK(close(fd));
    printf("ok: calls: %s\n", what);
}

static void case_calls(void) {
    late_call("setfl");
    late_call("setfl_staged");
    pid_t c = fork();
    CHECK(c >= 0, "fork: %s", strerror(errno));
    if (c == 0) {
        late_call("lock_cut");
        fflush(stdout);
        _exit(0);
    }
    int st;
    CHECK(st_wait_child(c, &st, 60000), "lock_cut: the child did not end within 60 s");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "lock_cut: child status 0x%x", st);
    for (int k = 0; k < C_COUNT; k++) one_call((enum call)k);
}

static unsigned long long write_throughs(void) { return st_json_counter(st_stats_cli_json(), "append_write_through"); }

/* An O_APPEND log synced per record, published at the write once it is one (publish.c up_write_through_locked):
 * another program sees each record when the write returns and its own land after it, as with the kernel; a
 * group of two appends before an fsync leaves the state -- its first record in the file at once, the second at
 * the fsync (after what another appended meanwhile: the documented transition) -- and staging goes on. */
static void case_through(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "through.aof");
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 0644));
    for (int i = 0; i < 9; i++) { /* (DAXKIT_AUTO_KEEP_AFTER: 8) */
        put(fd, 'a', 100);
        OK(fdatasync(fd));
    }
    unsigned long long w0 = write_throughs();
    put(fd, 'r', 100);
    CHECK(st_ksize(path) == 1000, "through: another program sees %lld bytes after the write; the kernel's path 1000",
          st_ksize(path));
    other_append(path, 'X', 30);
    OK(fdatasync(fd));
    CHECK(lseek(fd, 0, SEEK_CUR) == 1000, "through: SEEK_CUR %ld; the kernel's 1000 (the end of r)", (long)lseek(fd, 0, SEEK_CUR));
    kernel_bytes(path, "a900r100X30", "through's r");
    CHECK(write_throughs() == w0 + 1, "through: append_write_through +%llu (expected +1)", write_throughs() - w0);
    /* the transition: s1 published at its write, s2 staged (the state left), Y between */
    put(fd, 's', 50);
    put(fd, 't', 50);
    CHECK(st_ksize(path) == 1080, "through: another program sees %lld bytes after s1 and t; expected 1080 (s1 at once)",
          st_ksize(path));
    other_append(path, 'Y', 20);
    OK(fdatasync(fd));
    kernel_bytes(path, "a900r100X30s50Y20t50", "the transition (t at the fsync, after Y)");
    CHECK(lseek(fd, 0, SEEK_CUR) == 1150, "through: SEEK_CUR %ld; 1150 (the end of t)", (long)lseek(fd, 0, SEEK_CUR));
    unsigned long long w1 = write_throughs();
    put(fd, 'u', 10); /* staged again: the streak starts over */
    CHECK(st_ksize(path) == 1150, "through: another program sees %lld bytes before the fsync; staged: 1150", st_ksize(path));
    OK(fdatasync(fd));
    CHECK(write_throughs() == w1, "through: a write after the transition was published at the write");
    kernel_bytes(path, "a900r100X30s50Y20t50u10", "after the transition");
    OK(close(fd));
    printf("ok: through\n");
}

/* The fsync of a log published at its write (session 29: upath.c sync_changes_nothing's written_through_synced,
 * no mutex): what it must still do. An fsync with nothing appended since the last one breaks the streak that makes
 * such a log (a skip that left the streak made the log one a record early: the next append seen at once). Each of
 * five records synced one by one is published at its write -- the fsync ended its "one append" (a skip that left
 * it counted staged the next: write_throughs short). With DAXKIT_PERSIST=flush (a flush medium: the record's size
 * is file-system metadata) every such fsync is the kernel's fdatasync (a skip there made none: fsyncs_kernel
 * short). A pwrite at the end through another descriptor is staged, and its fsync publishes it (a skip that read
 * only the log's state left it staged); so are the second of two appends before an fsync. */
static unsigned long long kernel_syncs(void) { return st_json_counter(st_stats_cli_json(), "fsyncs_kernel"); }

static void case_through_sync(void) {
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "through_sync.aof");
    const char *persist = getenv("DAXKIT_PERSIST");
    bool flush = persist && strcmp(persist, "flush") == 0;
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 0644));
    int fd2 = OK(open(path, O_RDWR));
    /* (DAXKIT_AUTO_KEEP_AFTER: 8 fsyncs in a row that each published one append) */
    for (int i = 0; i < 7; i++) {
        put(fd, 'a', 100);
        OK(fdatasync(fd));
    }
    OK(fdatasync(fd)); /* nothing appended: the streak starts over */
    put(fd, 'a', 100);
    OK(fdatasync(fd));
    put(fd, 'x', 10);
    CHECK(st_ksize(path) == 800, "through_sync: another program sees %lld bytes after an append; staged: 800 (an "
          "fsync with nothing appended broke the streak)", st_ksize(path));
    OK(fdatasync(fd));
    for (int i = 0; i < 8; i++) {
        put(fd, 'a', 90);
        OK(fdatasync(fd));
    }
    unsigned long long w0 = write_throughs(), k0 = kernel_syncs();
    for (int i = 0; i < 5; i++) {
        put(fd, (char)('b' + i), 100);
        CHECK(st_ksize(path) == 1630 + 100 * i, "through_sync: record %d: another program sees %lld bytes after the "
              "write; the kernel's path %d", i, st_ksize(path), 1630 + 100 * i);
        OK(fdatasync(fd));
    }
    unsigned long long w = write_throughs() - w0, k = kernel_syncs() - k0;
    CHECK(w == 5, "through_sync: %llu of 5 records synced one by one published at the write (a skipped fsync left "
          "the record's append counted?)", w);
    if (flush)
        CHECK(k == 5, "through_sync: DAXKIT_PERSIST=flush: %llu kernel fdatasyncs for 5 records; the size each moved "
              "needs one (a skipped fsync on a flush medium?)", k);
    else
        CHECK(k == 0, "through_sync: %llu kernel fdatasyncs on a memory medium; expected none", k);
    kernel_bytes(path, "a800x10a720b100c100d100e100f100", "five records synced one by one");
    /* a pwrite at the end through another descriptor: staged, published by its fsync */
    char buf[16];
    memset(buf, 'p', sizeof buf);
    CHECK(pwrite(fd2, buf, 16, 2030) == 16, "through_sync: pwrite: %s", strerror(errno));
    OK(fdatasync(fd2));
    kernel_bytes(path, "a800x10a720b100c100d100e100f100p16", "a pwrite at the end and its fsync");
    /* two appends, then the fsync: the second was staged, and goes in there */
    put(fd, 'g', 10);
    put(fd, 'h', 20);
    OK(fdatasync(fd));
    kernel_bytes(path, "a800x10a720b100c100d100e100f100p16g10h20", "two appends and an fsync");
    OK(close(fd2));
    OK(close(fd));
    printf("ok: through_sync%s\n", flush ? " (flush)" : "");
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s DIR CASE\n", argv[0]);
        return 2;
    }
    dir = argv[1];
    const char *c = argv[2];
    bool all = strcmp(c, "all") == 0;
    st_watchdog(100);
    st_require_library();
    unsigned long long p0 = put_offs();
    if (all || strcmp(c, "order") == 0) case_order();
    if (all || strcmp(c, "calls") == 0) case_calls();
    if (all || strcmp(c, "through") == 0) case_through();
    if (all || strcmp(c, "through_sync") == 0) case_through_sync();
    unsigned long long got = put_offs() - p0;
    CHECK(got > 0, "no fdatasync put its look off (append_end_put_off +0): the test proves nothing");
    printf("ok: %s (append_end_put_off +%llu)\n", c, got);
    return 0;
}
