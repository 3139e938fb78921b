/* The kernel floor of one SQLite transaction (issue 3, target 3): the system calls sqlite3 itself makes per
 * single-insert transaction, replayed without SQLite, so their CPU cost can be set against the measured
 * transactions of bench/sqlite_strict.sh. Sequences copied from `strace sqlite3` (3.40, Debian 12):
 *   off   journal_mode=OFF, normal locking (what strict mode and DAXKIT_ATOMIC can serve): SHARED (3 fcntl),
 *         the hot-journal and WAL probes (2 failing stats), fstat, RESERVED + PENDING + EXCLUSIVE (3 fcntl),
 *         back to SHARED and unlock (3 fcntl) -- 9 fcntl + 3 stat; daxkit serves the page reads and writes and
 *         the fdatasync in user space, so they are not here
 *   off-io  the same plus what the kernel path adds: pread 16 B, 2 x pwrite 4 KiB, fdatasync (kernel OFF)
 *   wal   journal_mode=WAL, synchronous=FULL, normal locking: 6 fcntl (on the -shm file; here on the database),
 *         the frame as SQLite writes it (pwrite 24 B header + pwrite 4 KiB page), fdatasync of the -wal
 * Usage: sqlite_syscall_floor DIR off|off-io|wal [TXNS]. Prints the process's CPU time per transaction
 * (user + system, getrusage) and wall time. Run the variants interleaved, several times; quote medians. */

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_clock.h"

#define PENDING 1073741824L
#define RESERVED (PENDING + 1)
#define SHARED_FIRST (PENDING + 2)
#define SHARED_SIZE 510L

static void lk(int fd, short type, off_t start, off_t len) {
    struct flock l = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
    if (fcntl(fd, F_SETLK, &l) != 0) {
        perror("fcntl");
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: sqlite_syscall_floor DIR off|off-io|wal [TXNS]\n");
        return 2;
    }
    const char *dir = argv[1], *v = argv[2];
    long n = argc > 3 ? atol(argv[3]) : 20000;
    bool wal = !strcmp(v, "wal"), io = !strcmp(v, "off-io");
    if (!wal && !io && strcmp(v, "off")) {
        fprintf(stderr, "variant: off, off-io or wal\n");
        return 2;
    }
    char db[4096], jr[4200], wl[4200];
    snprintf(db, sizeof db, "%s/floor-%s.db", dir, v);
    snprintf(jr, sizeof jr, "%s-journal", db);
    snprintf(wl, sizeof wl, "%s-wal", db);
    int fd = open(db, O_RDWR | O_CREAT | O_TRUNC, 0644), wfd = -1;
    if (fd < 0) return perror(db), 1;
    static char page[4096 + 24];
    memset(page, 7, sizeof page);
    if (pwrite(fd, page, 4096, 0) != 4096) return perror("pwrite"), 1;
    if (wal && (wfd = open(wl, O_RDWR | O_CREAT | O_TRUNC, 0644)) < 0) return perror(wl), 1;
    unlink(jr);
    if (!wal) unlink(wl);
    if (wal) { /* as SQLite holds them between two transactions */
        lk(fd, F_WRLCK, 120, 1);
        lk(fd, F_RDLCK, 124, 1);
    }
    uint64_t c0 = cpu_ns(), t0 = now_ns();
    for (long i = 0; i < n; i++) {
        struct stat st;
        if (wal) { /* strace of sqlite3's WAL transaction, from the unlocks after one commit to the next's fdatasync */
            lk(fd, F_UNLCK, 120, 1);
            lk(fd, F_UNLCK, 124, 1);
            lk(fd, F_WRLCK, 124, 1);
            lk(fd, F_UNLCK, 124, 1);
            lk(fd, F_RDLCK, 124, 1);
            lk(fd, F_WRLCK, 120, 1);
            off_t at = 32 + (i % 1000) * (4096 + 24);
            if (pwrite(wfd, page, 24, at) != 24 || pwrite(wfd, page + 24, 4096, at + 24) != 4096) return perror("pwrite"), 1;
            if (fdatasync(wfd) != 0) return perror("fdatasync"), 1;
            continue;
        }
        lk(fd, F_RDLCK, PENDING, 1);
        lk(fd, F_RDLCK, SHARED_FIRST, SHARED_SIZE);
        lk(fd, F_UNLCK, PENDING, 1);
        if (stat(jr, &st) == 0 || errno != ENOENT) return fprintf(stderr, "%s exists\n", jr), 1;
        if (io && pread(fd, page, 16, 24) != 16) return perror("pread"), 1;
        if (stat(wl, &st) == 0 || errno != ENOENT) return fprintf(stderr, "%s exists\n", wl), 1;
        if (fstat(fd, &st) != 0) return perror("fstat"), 1;
        lk(fd, F_WRLCK, RESERVED, 1);
        lk(fd, F_WRLCK, PENDING, 1);
        lk(fd, F_WRLCK, SHARED_FIRST, SHARED_SIZE);
        if (io && (pwrite(fd, page, 4096, 0) != 4096 || pwrite(fd, page, 4096, 4096) != 4096 || fdatasync(fd) != 0))
            return perror("io"), 1;
        lk(fd, F_RDLCK, SHARED_FIRST, SHARED_SIZE);
        lk(fd, F_UNLCK, PENDING, 2);
        lk(fd, F_UNLCK, 0, 0);
    }
    uint64_t c1 = cpu_ns(), t1 = now_ns();
    printf("sqlite_syscall_floor %s: %ld transactions, cpu %.2f us, wall %.2f us per transaction\n", v, n,
           (double)(c1 - c0) / 1e3 / (double)n, (double)(t1 - t0) / 1e3 / (double)n);
    close(fd);
    if (wfd >= 0) close(wfd);
    unlink(db);
    unlink(wl);
    return 0;
}
