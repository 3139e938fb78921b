/* shim_lock_cost DIR ITERS [check] -- lock calls on a file the program maps (SQLite's -shm: six a WAL transaction),
 * for lock_cost.sh to count under callgrind. The file DIR/cost.shm (managed) is made 32 KiB and mapped shared;
 * three lock rounds let the library see the mapping (upath/reclock.c: its lock set leaves the bookkeeping,
 * counter lock_set_untracked); then each iteration takes a write lock on one of 8 bytes and releases it (two
 * fcntl F_SETLK calls, shim/fd.c: served_lock, untracked). "check": after the loop the counter must show the file
 * untracked (the script runs that once without callgrind: the calls counted are the ones meant). Exit 0, 1 on
 * a failed call or check. */
#include "shim_test.h"

int main(int argc, char **argv) {
    if (argc < 3) FAIL("usage: shim_lock_cost DIR ITERS [check]");
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
