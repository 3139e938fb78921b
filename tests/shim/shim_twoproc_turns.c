/* Two processes taking turns on one file (never at the same time: a pipe passes the turn), each with its
 * own view of it, checked call by call against what the kernel answers (review 12, findings 1, 2, 4; found
 * by the two-process differential tester). Every write is followed by an fsync, so that in posix mode too
 * each process's appends are in the file before the other's turn.
 *
 *   seekend   A and B open the file (no O_APPEND); A appends a record by lseek(SEEK_END) + write, B two, A
 *             one more: A's SEEK_END came back as the end A last knew (100, not 300), and A's record went
 *             over B's second one -- an acknowledged (in sync and strict: durable) record lost.
 *   oappend   A and B append through O_APPEND descriptors, in turn: the offset after B's write (SEEK_CUR)
 *             was B's stale end, inside A's record, and B's reads of its own record at that offset gave A's.
 *   readcross B's read from below the end it knew to past it stopped at that end (1 byte of 400), and B's
 *             next write at its offset went over A's bytes (finding 5).
 *   fsyncreader  B appends through an O_APPEND descriptor, then fsyncs its read-only descriptor of the log:
 *             posix mode published the append through that one, at the end B last saw, over A's fsynced
 *             record (finding 8).
 *   forkoffset  a descriptor written while shared with a fork child, then a fork of a helper: the next
 *             write went to the offset from before the shared period, over the first record (finding 10).
 *   stagedview  posix mode's view with O_APPEND appends staged (not fsynced) after the other process's
 *             published growth (finding 2's posix addendum): fstat, the offset after the write (SEEK_CUR), a
 *             read and SEEK_END were this process's stale end plus its own appends -- fstat 200 where the
 *             kernel had 300, the process's own record read at the stale offset, and an ftruncate to the
 *             size fstat gave cut the other's published records. Each turn looks first by another call.
 *             In posix mode each process's view must be taken at its open (DAXKIT_ADOPT_AFTER_IOS=0): the
 *             chain of turns rests on every record being staged behind the other's growth, so that the
 *             first look publishes it; adopted lazily, at its first write, a process stages at the kernel's
 *             end, and its record waits for its close, as posix mode allows (the other then reads its own).
 *   twofds    A appends through two O_APPEND descriptors of the file, one record each, without an fsync;
 *             B appends one through its own and fsyncs; then A fsyncs the first descriptor. In posix mode
 *             A's records land after B's (publish time): each of A's descriptors must then be past its own
 *             record, as the kernel's O_APPEND write leaves it -- the publish moved only the publishing
 *             descriptor, and only when it had written last (session 14's open item: both stayed at
 *             the end A knew, inside B's record and A's first). In sync and strict modes A's records are in
 *             the file before B's (each write publishes): the same check, other places.
 *   sharedfd  a descriptor shared with a fork child (the kernel serves it) and a second, O_APPEND one of
 *             the same file: lseek(shared, 0, SEEK_END) after an append through the second missed it in posix
 *             mode (0, not 100): the kernel's lseek ran before the staged append was published.
 *
 * The final file is read without the library. argv: DIR CASE. */
#include "shim_test.h"

#define REC 100

static const char *cases_twofds_want;
static int turn_a[2], turn_b[2]; /* the turn passes A -> B through turn_b, B -> A through turn_a */

static void give(int w) {
    if (write(w, "t", 1) != 1) FAIL("pipe write: %s", strerror(errno));
}
static void await(int r) {
    char c;
    if (read(r, &c, 1) != 1) FAIL("the other process ended before passing the turn (it failed: see above)");
}

static void rec(char *b, char c) { memset(b, c, REC); }

static void append_rec(int fd, char c, bool by_seek_end, off_t want_at, const char *who) {
    char b[REC];
    rec(b, c);
    if (by_seek_end) {
        off_t e = lseek(fd, 0, SEEK_END);
        if (e != want_at) FAIL("%s: lseek(SEEK_END) = %lld before writing '%c', the kernel's end is %lld", who,
                               (long long)e, c, (long long)want_at);
    }
    if (write(fd, b, REC) != REC) FAIL("%s: write '%c': %s", who, c, strerror(errno));
    OK(fsync(fd));
    off_t cur = lseek(fd, 0, SEEK_CUR);
    if (cur != want_at + REC)
        FAIL("%s: offset after writing '%c' is %lld, the kernel's %lld (where the record went)", who, c, (long long)cur,
             (long long)(want_at + REC));
}

static void expect_bytes(int fd, off_t off, const char *want, const char *who) {
    size_t n = strlen(want) * REC;
    char got[8 * REC], exp[8 * REC];
    for (size_t i = 0; i < strlen(want); i++) rec(exp + i * REC, want[i]);
    ssize_t r = pread(fd, got, n, off);
    if (r != (ssize_t)n) FAIL("%s: pread(%zu at %lld) = %zd, want %zu", who, n, (long long)off, r, n);
    for (size_t i = 0; i < n; i++)
        if (got[i] != exp[i]) FAIL("%s: byte %lld is '%c', want '%c' (records \"%s\" from %lld)", who, (long long)off + (long long)i,
                                   got[i] ? got[i] : '0', exp[i], want, (long long)off);
}

static void expect_size(int fd, off_t want, const char *who) {
    struct stat st;
    OK(fstat(fd, &st));
    if (st.st_size != want) FAIL("%s: fstat size %lld, the kernel's %lld", who, (long long)st.st_size, (long long)want);
}

static void check_raw(const char *path, const char *want) {
    size_t n = strlen(want) * REC;
    if (st_ksize(path) != (long long)n) FAIL("file size %lld, want %zu (records \"%s\")", st_ksize(path), n, want);
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
    char got[8 * REC];
    if (fd < 0 || syscall(SYS_pread64, fd, got, n, 0) != (long)n) FAIL("read %s without the library", path);
    syscall(SYS_close, fd);
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i / REC]) FAIL("the file's byte %zu is '%c', want '%c' (records \"%s\": one lost?)", i,
                                          got[i] ? got[i] : '0', want[i / REC], want);
}

/* A: seekend, B's part */
static void seekend_b(const char *path) {
    int fd = open(path, O_RDWR);
    if (fd < 0) FAIL("B: open: %s", strerror(errno));
    give(turn_a[1]);
    await(turn_b[0]);
    append_rec(fd, 'B', true, 100, "B");
    append_rec(fd, 'b', true, 200, "B");
    give(turn_a[1]);
    await(turn_b[0]);
    if (lseek(fd, 0, SEEK_END) != 4 * REC) FAIL("B: lseek(SEEK_END) after A's last record is not 400");
    expect_bytes(fd, 0, "ABbC", "B");
    OK(close(fd));
}

static void seekend_a(const char *path) {
    int fd = open(path, O_RDWR);
    if (fd < 0) FAIL("A: open: %s", strerror(errno));
    await(turn_a[0]); /* B has it open too */
    append_rec(fd, 'A', true, 0, "A");
    give(turn_b[1]);
    await(turn_a[0]);
    append_rec(fd, 'C', true, 300, "A"); /* finding 1: SEEK_END said 100 */
    expect_bytes(fd, 0, "ABbC", "A");
    give(turn_b[1]);
    OK(close(fd));
}

static void oappend_b(const char *path) {
    int fd = open(path, O_RDWR | O_APPEND);
    if (fd < 0) FAIL("B: open: %s", strerror(errno));
    give(turn_a[1]);
    await(turn_b[0]);
    append_rec(fd, 'B', false, 100, "B"); /* finding 2: the offset after it was 100 */
    expect_bytes(fd, 100, "B", "B");
    expect_size(fd, 200, "B");
    give(turn_a[1]);
    await(turn_b[0]);
    append_rec(fd, 'D', false, 300, "B");
    expect_bytes(fd, 0, "ABCD", "B");
    OK(close(fd));
}

static void oappend_a(const char *path) {
    int fd = open(path, O_RDWR | O_APPEND);
    if (fd < 0) FAIL("A: open: %s", strerror(errno));
    await(turn_a[0]);
    append_rec(fd, 'A', false, 0, "A");
    give(turn_b[1]);
    await(turn_a[0]);
    append_rec(fd, 'C', false, 200, "A");
    expect_bytes(fd, 100, "BC", "A");
    give(turn_b[1]);
    OK(close(fd));
}

/* readcross (finding 5): B's read from below the end it knows to past it must not stop there. */
static void readcross_b(const char *path) {
    int fd = open(path, O_RDWR);
    if (fd < 0) FAIL("B: open: %s", strerror(errno));
    give(turn_a[1]);
    await(turn_b[0]);
    char one;
    if (pread(fd, &one, 1, 0) != 1) FAIL("B: pread of A's first byte"); /* B's end: 1 */
    give(turn_a[1]);
    await(turn_b[0]);
    static char big[4 * REC + 1];
    ssize_t r = read(fd, big, sizeof big); /* from 0: the whole file, 4 records */
    if (r != 4 * REC) FAIL("B: read from 0 returned %zd of the file's %d bytes (stopped at the end B knew?)", r, 4 * REC);
    append_rec(fd, 'B', false, 4 * REC, "B"); /* at B's offset, 400: the kernel's end */
    OK(close(fd));
}

static void readcross_a(const char *path) {
    int fd = open(path, O_RDWR);
    if (fd < 0) FAIL("A: open: %s", strerror(errno));
    await(turn_a[0]);
    if (write(fd, "A", 1) != 1) FAIL("A: write");
    OK(fsync(fd));
    give(turn_b[1]);
    await(turn_a[0]);
    char b[4 * REC];
    memset(b, 'A', sizeof b);
    if (pwrite(fd, b, sizeof b, 0) != (ssize_t)sizeof b) FAIL("A: pwrite");
    OK(fsync(fd));
    give(turn_b[1]);
    OK(close(fd));
}

/* fsyncreader (finding 8): B appends through its O_APPEND descriptor, then fsyncs its read-only one. */
static void fsyncreader_b(const char *path) {
    int ap = open(path, O_RDWR | O_APPEND), rd = open(path, O_RDONLY);
    if (ap < 0 || rd < 0) FAIL("B: open: %s", strerror(errno));
    give(turn_a[1]);
    await(turn_b[0]);
    char b[REC];
    rec(b, 'B');
    if (write(ap, b, REC) != REC) FAIL("B: write: %s", strerror(errno));
    OK(fsync(rd)); /* a publish point of the file, through the read-only descriptor */
    give(turn_a[1]);
    await(turn_b[0]);
    OK(close(rd));
    OK(close(ap));
}

static void fsyncreader_a(const char *path) {
    int fd = open(path, O_WRONLY | O_APPEND);
    if (fd < 0) FAIL("A: open: %s", strerror(errno));
    await(turn_a[0]);
    append_rec(fd, 'A', false, 0, "A");
    give(turn_b[1]);
    await(turn_a[0]);
    append_rec(fd, 'C', false, 2 * REC, "A");
    give(turn_b[1]);
    OK(close(fd));
}

/* stagedview: each turn appends one record through an O_APPEND descriptor without an fsync (posix mode keeps
 * it staged) after the other process's record is in the file, and looks at the file first by one call. */
static void write_rec(int fd, char c, const char *who) {
    char b[REC];
    rec(b, c);
    if (write(fd, b, REC) != REC) FAIL("%s: write '%c': %s", who, c, strerror(errno));
}

static void expect_pos(int fd, off_t want, const char *who) {
    off_t cur = lseek(fd, 0, SEEK_CUR);
    if (cur != want) FAIL("%s: offset after its O_APPEND write %lld, the kernel's %lld", who, (long long)cur, (long long)want);
}

static void stagedview_b(const char *path) {
    int fd = open(path, O_RDWR | O_APPEND);
    if (fd < 0) FAIL("B: open: %s", strerror(errno));
    give(turn_a[1]);
    await(turn_b[0]);
    write_rec(fd, 'B', "B");
    expect_size(fd, 2 * REC, "B"); /* fstat first */
    expect_pos(fd, 2 * REC, "B");
    expect_bytes(fd, 0, "AB", "B");
    give(turn_a[1]);
    await(turn_b[0]);
    write_rec(fd, 'D', "B");
    expect_pos(fd, 4 * REC, "B"); /* SEEK_CUR first */
    expect_bytes(fd, 3 * REC, "D", "B");
    give(turn_a[1]);
    await(turn_b[0]);
    write_rec(fd, 'F', "B");
    off_t e = lseek(fd, 0, SEEK_END); /* SEEK_END first */
    if (e != 6 * REC) FAIL("B: lseek(SEEK_END) = %lld after its O_APPEND write, the kernel's end %d", (long long)e, 6 * REC);
    expect_bytes(fd, 0, "ABCDEF", "B");
    OK(close(fd));
}

static void stagedview_a(const char *path) {
    int fd = open(path, O_RDWR | O_APPEND);
    if (fd < 0) FAIL("A: open: %s", strerror(errno));
    await(turn_a[0]);
    write_rec(fd, 'A', "A");
    OK(fsync(fd));
    give(turn_b[1]);
    await(turn_a[0]);
    write_rec(fd, 'C', "A");
    expect_bytes(fd, REC, "B", "A"); /* a read first, inside the end A knows: A's own record in posix mode */
    expect_pos(fd, 3 * REC, "A");
    expect_bytes(fd, 0, "ABC", "A");
    give(turn_b[1]);
    await(turn_a[0]);
    write_rec(fd, 'E', "A");
    struct stat st;
    OK(fstat(fd, &st)); /* fstat first, then a truncate to what it said (the addendum's cut) */
    if (st.st_size != 5 * REC) FAIL("A: fstat size %lld, the kernel's %d", (long long)st.st_size, 5 * REC);
    OK(ftruncate(fd, st.st_size));
    expect_bytes(fd, 0, "ABCDE", "A");
    give(turn_b[1]);
    OK(close(fd));
}

/* twofds: B's part -- one record through its own O_APPEND descriptor, fsynced, between A's appends and A's
 * publish. */
static void twofds_b(const char *path) {
    int fd = open(path, O_WRONLY | O_APPEND);
    if (fd < 0) FAIL("B: open: %s", strerror(errno));
    give(turn_a[1]);
    await(turn_b[0]);
    write_rec(fd, 'K', "B");
    OK(fsync(fd));
    give(turn_a[1]);
    OK(close(fd));
}

/* Where the record `c` is in the file (its first byte), or -1. */
static off_t record_at(int fd, char c, off_t size) {
    char b[REC];
    for (off_t o = 0; o + REC <= size; o += REC)
        if (pread(fd, b, REC, o) == REC && b[0] == c) return o;
    return -1;
}

static void twofds_a(const char *path) {
    int a1 = open(path, O_RDWR | O_APPEND), a2 = open(path, O_RDWR | O_APPEND);
    if (a1 < 0 || a2 < 0) FAIL("A: open: %s", strerror(errno));
    await(turn_a[0]);
    write_rec(a1, 'A', "A");
    write_rec(a2, 'B', "A");
    give(turn_b[1]);
    await(turn_a[0]);
    OK(fsync(a1)); /* posix: publishes both records, after B's */
    expect_size(a1, 3 * REC, "A");
    struct {
        int fd;
        char c;
    } mine[2] = {{a1, 'A'}, {a2, 'B'}};
    for (int i = 0; i < 2; i++) {
        off_t at = record_at(a1, mine[i].c, 3 * REC);
        if (at < 0) FAIL("A: record '%c' is not in the file", mine[i].c);
        off_t cur = lseek(mine[i].fd, 0, SEEK_CUR);
        if (cur != at + REC)
            FAIL("A: descriptor %d's offset after its O_APPEND write of '%c' is %lld; its record ends at %lld "
                 "(where the kernel's write leaves it)", i + 1, mine[i].c, (long long)cur, (long long)(at + REC));
    }
    OK(close(a1));
    OK(close(a2));
}

/* sharedfd: one process; the fork child only keeps the shared descriptor open until told. */
static void sharedfd(const char *path) {
    int shared = open(path, O_RDWR);
    if (shared < 0) FAIL("open: %s", strerror(errno));
    pid_t c = fork();
    if (c < 0) FAIL("fork: %s", strerror(errno));
    if (c == 0) {
        close(turn_b[1]); /* (the parent's end: its exit ends the wait) */
        await(turn_b[0]);
        _exit(0);
    }
    close(turn_b[0]);
    int ap = open(path, O_WRONLY | O_APPEND);
    if (ap < 0) FAIL("open O_APPEND: %s", strerror(errno));
    char b[REC];
    rec(b, 'A');
    if (write(ap, b, REC) != REC) FAIL("write: %s", strerror(errno));
    off_t e = lseek(shared, 0, SEEK_END); /* finding 4: 0 in posix mode */
    if (e != REC) FAIL("lseek(shared descriptor, 0, SEEK_END) = %lld after a 100-byte append, want 100", (long long)e);
    expect_bytes(shared, 0, "A", "shared descriptor");
    give(turn_b[1]);
    int status;
    if (waitpid(c, &status, 0) != c || !WIFEXITED(status) || WEXITSTATUS(status)) FAIL("the child failed");
    OK(close(ap));
    OK(close(shared));
}

/* forkoffset (finding 10): a descriptor written while shared with a fork child (the kernel served it), then
 * this process's only one again, then a fork of a helper: the next write went to the offset from before the
 * shared period, over the first record. */
static void forkoffset(const char *path) {
    int fd = open(path, O_WRONLY);
    if (fd < 0) FAIL("open: %s", strerror(errno));
    pid_t c = fork();
    if (c < 0) FAIL("fork: %s", strerror(errno));
    if (c == 0) {
        close(turn_b[1]);
        await(turn_b[0]); /* holds the descriptor until told */
        _exit(0);
    }
    close(turn_b[0]);
    char b[REC];
    rec(b, 'A');
    if (write(fd, b, REC) != REC) FAIL("write while shared: %s", strerror(errno));
    give(turn_b[1]);
    int status;
    if (waitpid(c, &status, 0) != c || !WIFEXITED(status) || WEXITSTATUS(status)) FAIL("the first child failed");
    pid_t h = fork(); /* a helper that exits at once: the fork is what matters */
    if (h < 0) FAIL("fork: %s", strerror(errno));
    if (h == 0) _exit(0);
    if (waitpid(h, &status, 0) != h) FAIL("waitpid: %s", strerror(errno));
    rec(b, 'B');
    if (write(fd, b, REC) != REC) FAIL("write after the forks: %s", strerror(errno));
    off_t cur = lseek(fd, 0, SEEK_CUR);
    if (cur != 2 * REC) FAIL("offset after the second record is %lld, want 200 (written over the first?)", (long long)cur);
    OK(close(fd));
}

int main(int argc, char **argv) {
    st_require_library();
    st_watchdog(60);
    const char *dir = st_dir(argc, argv);
    const char *which = argc > 2 ? argv[2] : "seekend";
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "turns.dat");
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) FAIL("create %s: %s", path, strerror(errno));
    OK(close(fd));
    if (pipe(turn_a) || pipe(turn_b)) FAIL("pipe: %s", strerror(errno));
    if (!strcmp(which, "forkoffset")) {
        forkoffset(path);
        check_raw(path, "AB");
        printf("ok: forkoffset\n");
        return 0;
    }
    if (!strcmp(which, "twofds")) {
        const char *mode = getenv("DAXKIT_MODE"); /* posix (unset): A's records published after B's */
        cases_twofds_want = mode && (!strcmp(mode, "sync") || !strcmp(mode, "strict")) ? "ABK" : "KAB";
    }
    if (!strcmp(which, "sharedfd")) {
        sharedfd(path);
        check_raw(path, "A");
        printf("ok: sharedfd\n");
        return 0;
    }
    static const struct {
        const char *name, *want;
        void (*a)(const char *), (*b)(const char *);
    } cases[] = {{"seekend", "ABbC", seekend_a, seekend_b},
                 {"oappend", "ABCD", oappend_a, oappend_b},
                 {"readcross", "AAAAB", readcross_a, readcross_b},
                 {"fsyncreader", "ABC", fsyncreader_a, fsyncreader_b},
                 {"stagedview", "ABCDEF", stagedview_a, stagedview_b},
                 {"twofds", NULL, twofds_a, twofds_b}};
    int k = -1;
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++)
        if (!strcmp(which, cases[i].name)) k = i;
    if (k < 0) FAIL("unknown case '%s' (seekend, oappend, readcross, fsyncreader, stagedview, twofds, sharedfd, forkoffset)", which);
    const char *mode = getenv("DAXKIT_MODE"), *after = getenv("DAXKIT_ADOPT_AFTER_IOS");
    if (!strcmp(which, "stagedview") && (!mode || !strcmp(mode, "posix")) && (!after || strcmp(after, "0")))
        SKIP("stagedview in posix mode needs DAXKIT_ADOPT_AFTER_IOS=0 (each view taken at the open: see the top)");
    pid_t b = fork();
    if (b < 0) FAIL("fork: %s", strerror(errno));
    if (b == 0) {
        close(turn_a[0]), close(turn_b[1]); /* each keeps only its own ends: the other's exit ends a wait */
        cases[k].b(path);
        _exit(0);
    }
    close(turn_a[1]), close(turn_b[0]);
    cases[k].a(path);
    int status;
    if (waitpid(b, &status, 0) != b) FAIL("waitpid: %s", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        FAIL("B: %s %d", WIFEXITED(status) ? "exit" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    check_raw(path, cases[k].want ? cases[k].want : cases_twofds_want);
    printf("ok: %s\n", which);
    return 0;
}
