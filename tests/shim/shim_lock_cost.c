/* shim_lock_cost DIR ITERS [check] -- lock calls on a file the program maps (SQLite's -shm: six a WAL transaction),
 * for lock_cost.sh to count under callgrind. The file DIR/cost.shm (managed) is made 32 KiB and mapped shared;
 * three lock rounds let the library see the mapping (upath/reclock.c: its lock set leaves the bookkeeping,
 * counter lock_set_untracked); then each iteration takes a write lock on one of 8 bytes and releases it (two
 * fcntl F_SETLK calls, shim/fd.c: served_lock, untracked). "check": after the loop the counter must show the file
 * untracked (the script runs that once without callgrind: the calls counted are the ones meant). "sqlite"
 * (session 27): each iteration is instead the nine lock calls of a SQLite transaction without a WAL, on an
 * unmapped file (its lock set followed: upath/reclock.c up_lock_done; "sqlite check" checks that it is).
 * Exit 0, 1 on a failed call or check. */
#include "shim_test.h"

/* SQLite's lock calls of one transaction in rollback or OFF journal mode on its database (session 27, strace):
 * SHARED (PENDING read, SHARED read, PENDING unlock), RESERVED, PENDING, EXCLUSIVE, the downgrade to SHARED,
 * the unlock of PENDING + RESERVED, the unlock of everything -- six acquisitions, three releases. */
#define SQ_PENDING 1073741824LL
static void sqlite_txn(int fd) {
    static const struct { short type; long long start, len; } calls[] = {
        {F_RDLCK, SQ_PENDING, 1},     {F_RDLCK, SQ_PENDING + 2, 510}, {F_UNLCK, SQ_PENDING, 1},
        {F_WRLCK, SQ_PENDING + 1, 1}, {F_WRLCK, SQ_PENDING, 1},       {F_WRLCK, SQ_PENDING + 2, 510},
        {F_RDLCK, SQ_PENDING + 2, 510}, {F_UNLCK, SQ_PENDING, 2},     {F_UNLCK, 0, 0},
    };
    for (unsigned i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        struct flock l = {.l_type = calls[i].type, .l_whence = SEEK_SET, .l_start = calls[i].start, .l_len = calls[i].len};
        if (fcntl(fd, F_SETLK, &l) != 0) FAIL("sqlite call %u: %s", i, strerror(errno));
    }
}

int main(int argc, char **argv) {
    if (argc < 3) FAIL("usage: shim_lock_cost DIR ITERS [check | sqlite [check]]");
    if (argc > 3 && strcmp(argv[3], "sqlite") == 0) { /* a database file, not mapped: its lock set followed */
        char db[PATH_MAX];
        st_path(db, sizeof db, argv[1], "cost.db");
        int fd = OK(open(db, O_RDWR | O_CREAT, 0644));
        static char page[4096];
        CHECK(pwrite(fd, page, sizeof page, 0) == (ssize_t)sizeof page, "pwrite: %s", strerror(errno));
        for (long i = 0, n = atol(argv[2]); i < n; i++) sqlite_txn(fd);
        if (argc > 4 && strcmp(argv[4], "check") == 0)
            CHECK(st_counter(DK_C_lock_set_untracked) == 0, "the database's lock set is not followed: not the path meant");
        OK(close(fd));
        return 0;
    }
    char path[PATH_MAX];
    st_path(path, sizeof path, argv[1], "cost.shm");
    long n = atol(argv[2]);
    int fd = OK(open(path, O_RDWR | O_CREAT, 0644));
    OK(ftruncate(fd, 32768));
    char *m = mmap(NULL, 32768, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(m != MAP_FAILED, "mmap: %s", strerror(errno));
    struct flock l = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 120, .l_len = 1};
    for (int i = 0; i < 3; i++) {
        l.l_type = F_RDLCK;
        OK(fcntl(fd, F_SETLK, &l));
        l.l_type = F_UNLCK;
        OK(fcntl(fd, F_SETLK, &l));
    }
    for (long i = 0; i < n; i++) {
        l.l_start = 120 + (i & 7);
        l.l_type = F_WRLCK;
        if (fcntl(fd, F_SETLK, &l) != 0) FAIL("F_SETLK F_WRLCK at %lld: %s", (long long)l.l_start, strerror(errno));
        l.l_type = F_UNLCK;
        if (fcntl(fd, F_SETLK, &l) != 0) FAIL("F_SETLK F_UNLCK at %lld: %s", (long long)l.l_start, strerror(errno));
    }
    if (argc > 3 && strcmp(argv[3], "check") == 0)
        CHECK(st_counter(DK_C_lock_set_untracked) >= 1, "the mapped file's lock set was never untracked: not the path meant");
    OK(munmap(m, 32768));
    OK(close(fd));
    return 0;
}
