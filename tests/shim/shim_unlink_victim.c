/* Description: unlink and rename-over without looking the victim up while no closed file of the process
 * keeps a mapping (upath.c: up_victim_matters), and what must still happen to the removed inode:
 *   1. a closed, never mapped file is unlinked: counted as victim_skips, no lstat;
 *   2. a file unlinked while open (victim not looked up), then read until it is mapped, then closed: its
 *      entry and mapping go at that close -- no mapping of the inode is left (/proc/self/maps), so the file
 *      system gets its space back as with the kernel -- instead of lingering in the closed-file cache
 *      (last_close_of_mapped); the same for a file
 *      mapped before its unlink (an open, mapped file does not make unlinks look victims up);
 *   3. while a closed file keeps a mapping, an unlink looks its victim up: no skip counted, and that
 *      file unlinked is unmapped at once;
 *   4. names come and go after parts 1-3 (each round's read maps `a`, so most removals DO look their victim
 *      up: only the unlink of `a` after rename(b, a) -- b never read -- skips, and every reuse comes
 *      through open(O_TRUNC), which forgets the old contents anyway): each new file reads back exactly what
 *      was written to it, with its own size (fstat, stat, SEEK_END). The skipped-lookup reuse without
 *      O_TRUNC is the "reuse" mode below (review 7, finding 6).
 * argv[1]: managed directory. Runs with DAXKIT_MAP_AFTER_IOS=0 (files are mapped at their first read).
 * argv[2] = "reuse" (run with DAXKIT_APPEND='stage,*.aof=extend', XFS): instead, a file written and
 * unlinked without ever being read (closed, unmapped: its entry stays, the unlink skips the lookup), then a
 * new file appendonly.aof given the same inode number: it gets the strategy its own name selects (extend),
 * not the one the old entry chose from the old name (review 7, finding 7). Skips when the file system
 * hands out another inode number. Then a second reuse, with nothing mapped: y.dat written through the
 * library (5000 bytes, never read), unlinked (lookup skipped), and a new file given its inode number made by
 * raw system calls (3000 other bytes, not through the library); opened through the library WITHOUT O_TRUNC
 * it must show its own size and bytes (fstat, SEEK_END, pread), not the removed file's. */
#include <sys/statvfs.h>

#include "shim_test.h"

static const char *dir;

static ino_t ino_of(int fd) {
    struct stat st;
    OK(fstat(fd, &st));
    return st.st_ino;
}

static void make(const char *path, size_t n, uint8_t seed) {
    static uint8_t buf[8 << 20];
    st_fill(buf, seed, 0, n);
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    st_write_all(fd, buf, n);
    OK(fsync(fd));
    OK(close(fd));
}

static bool reuse_untruncated(void) {
    char old_path[PATH_MAX], new_path[PATH_MAX];
    st_path(old_path, sizeof old_path, dir, "y.dat");
    st_path(new_path, sizeof new_path, dir, "z.dat");
    static uint8_t buf[8192];
    const size_t old_n = 5000, new_n = 3000;
    for (int attempt = 0; attempt < 20; attempt++) {
        st_fill(buf, 30, 0, old_n);
        int fd = OK(open(old_path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
        st_write_all(fd, buf, old_n);
        OK(fsync(fd));
        ino_t old = ino_of(fd);
        OK(close(fd));
        uint64_t skips = st_counter(DK_C_victim_skips);
        OK(unlink(old_path));
        CHECK(st_counter(DK_C_victim_skips) == skips + 1, "reuse 2: the unlink looked its victim up (a file is mapped)");
        struct statvfs sv;
        OK(statvfs(dir, &sv));
        /* the new file by raw system calls: the library never sees it being made */
        int kfd = (int)syscall(SYS_openat, AT_FDCWD, new_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        CHECK(kfd >= 0, "reuse 2: raw create: %s", strerror(errno));
        struct stat kst;
        CHECK(syscall(SYS_fstat, kfd, &kst) == 0, "reuse 2: raw fstat");
        if (kst.st_ino != old) {
            syscall(SYS_close, kfd);
            CHECK(syscall(SYS_unlinkat, AT_FDCWD, new_path, 0) == 0, "reuse 2: raw unlink");
            usleep(10 * 1000);
            continue;
        }
        st_fill(buf, 31, 0, new_n);
        CHECK(syscall(SYS_write, kfd, buf, new_n) == (long)new_n, "reuse 2: raw write");
        syscall(SYS_close, kfd);
        fd = OK(open(new_path, O_RDWR)); /* no O_TRUNC */
        CHECK(st_fsize(fd) == (off_t)new_n, "reuse 2: fstat size %lld of a file given the number of a removed "
              "%zu-byte file, expected %zu", (long long)st_fsize(fd), old_n, new_n);
        CHECK(lseek(fd, 0, SEEK_END) == (off_t)new_n, "reuse 2: SEEK_END");
        memset(buf, 0, sizeof buf);
        ssize_t got = pread(fd, buf, old_n, 0);
        CHECK(got == (ssize_t)new_n && st_mismatch(buf, 31, 0, new_n) < 0,
              "reuse 2: pread of %zu returned %zd bytes (want %zu of the new file's own)", old_n, got, new_n);
        OK(close(fd));
        printf("ok: reuse 2: a file made by the kernel with a removed file's inode number (attempt %d), opened "
               "without O_TRUNC, shows its own size and bytes\n", attempt);
        return true;
    }
    printf("note: reuse 2 not reached: the file system never handed the unlinked file's inode number to the "
           "next new file (20 tries)\n");
    return false;
}

static int reuse(void) {
    bool reached = reuse_untruncated(); /* first: nothing of this process is mapped yet */
    char tmp[PATH_MAX], aof[PATH_MAX];
    st_path(tmp, sizeof tmp, dir, "x.tmp");
    st_path(aof, sizeof aof, dir, "appendonly.aof");
    static uint8_t buf[64 << 10];
    for (int attempt = 0; attempt < 20; attempt++) {
        st_fill(buf, 7, 0, sizeof buf);
        int fd = OK(open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644));
        st_write_all(fd, buf, sizeof buf);
        OK(fsync(fd));
        ino_t old = ino_of(fd);
        OK(close(fd));
        uint64_t skips = st_counter(DK_C_victim_skips);
        OK(unlink(tmp));
        CHECK(st_counter(DK_C_victim_skips) == skips + 1, "reuse: the unlink looked its victim up (the case is not reached)");
        struct statvfs sv;
        OK(statvfs(dir, &sv)); /* XFS frees unlinked inodes in the background; statfs waits for that */
        fd = OK(open(aof, O_WRONLY | O_CREAT | O_EXCL | O_APPEND, 0644));
        if (ino_of(fd) != old) {
            OK(close(fd));
            OK(unlink(aof));
            usleep(10 * 1000); /* XFS may free the inode in the background (inodegc) */
            continue;
        }
        uint64_t extends = st_counter(DK_C_extends);
        for (int i = 0; i < 64; i++) st_write_all(fd, buf, 4096);
        CHECK(st_counter(DK_C_extends) > extends,
              "reuse: appendonly.aof (inode %llu, reused from x.tmp) was not served by the extend strategy its "
              "name selects: the old entry's strategy was kept", (unsigned long long)old);
        OK(fsync(fd));
        OK(close(fd));
        CHECK(st_check("size", aof, "262144") == 0, "reuse: appendonly.aof is not 256 KiB after fsync");
        printf("ok: reuse: a file given a removed file's inode number (attempt %d) gets its own append strategy\n",
               attempt);
        return 0;
    }
    if (reached) {
        printf("note: reuse 1 not reached: no new file got an unlinked file's inode number (20 tries)\n");
        return 0;
    }
    SKIP("reuse: the file system never handed an unlinked file's inode number to the next new file (20 tries)");
}

int main(int argc, char **argv) {
    dir = st_dir(argc, argv);
    st_require_library();
    st_watchdog(60);
    if (argc > 2 && !strcmp(argv[2], "reuse")) return reuse();
    char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX];
    st_path(a, sizeof a, dir, "a");
    st_path(b, sizeof b, dir, "b");
    st_path(c, sizeof c, dir, "c");
    const size_t big = 8 << 20;
    static uint8_t buf[8 << 20];

    /* 1 */
    make(a, 1000, 1);
    uint64_t skips = st_counter(DK_C_victim_skips);
    OK(unlink(a));
    CHECK(st_counter(DK_C_victim_skips) == skips + 1, "1: an unlink with nothing mapped looked its victim up");
    printf("ok: 1: unlink with no file mapped: victim not looked up\n");

    /* 2 */
    make(b, big, 2);
    int fd = OK(open(b, O_RDONLY));
    OK(unlink(b));
    CHECK(st_counter(DK_C_victim_skips) == skips + 2, "2: the unlink of an open, unmapped file looked its victim up");
    uint64_t maps = st_counter(DK_C_maps);
    CHECK(pread(fd, buf, big, 0) == (ssize_t)big && st_mismatch(buf, 2, 0, big) < 0, "2: read back wrong");
    CHECK(st_counter(DK_C_maps) > maps, "2: the file was not mapped by its read (DAXKIT_MAP_AFTER_IOS=0 expected)");
    ino_t ino = ino_of(fd);
    CHECK(st_maps_inode(ino), "2: the file read through the library is not mapped (the check below would prove nothing)");
    OK(close(fd));
    CHECK(!st_maps_inode(ino), "2: closing the unlinked, mapped file left its mapping cached (its space stays allocated)");
    printf("ok: 2: an unlinked file mapped while open is unmapped at close\n");
    make(b, big, 4);
    fd = OK(open(b, O_RDONLY));
    CHECK(pread(fd, buf, 4096, 0) == 4096, "2: pread");
    skips = st_counter(DK_C_victim_skips);
    OK(unlink(b));
    CHECK(st_counter(DK_C_victim_skips) == skips + 1, "2: an open, mapped file made the unlink look its victim up");
    ino = ino_of(fd);
    CHECK(st_maps_inode(ino), "2: the file read through the library is not mapped");
    OK(close(fd));
    CHECK(!st_maps_inode(ino), "2: closing the unlinked file mapped before its unlink left its mapping cached");
    printf("ok: 2: the same for a file mapped before its unlink\n");

    /* 3 */
    make(c, big, 3);
    fd = OK(open(c, O_RDONLY));
    CHECK(pread(fd, buf, 4096, 0) == 4096, "3: pread");
    ino = ino_of(fd);
    OK(close(fd)); /* closed and mapped: cached */
    CHECK(st_maps_inode(ino), "3: the closed file is not kept mapped (the check below would prove nothing)");
    skips = st_counter(DK_C_victim_skips);
    OK(unlink(c));
    CHECK(st_counter(DK_C_victim_skips) == skips, "3: an unlink while a closed file is mapped did not look its victim up");
    CHECK(!st_maps_inode(ino), "3: unlinking a mapped, closed file left its mapping cached (its space stays allocated)");
    printf("ok: 3: with a closed file mapped, unlink looks the victim up and drops it at once\n");

    /* 4: nothing mapped any more; names come and go, inode numbers are reused */
    for (int i = 0; i < 50; i++) {
        size_t n = 100 + (size_t)i * 37;
        make(a, n, (uint8_t)(10 + i));
        fd = OK(open(a, O_RDWR));
        CHECK(st_fsize(fd) == (off_t)n, "4: round %d: fstat size %lld, expected %zu", i, (long long)st_fsize(fd), n);
        CHECK(lseek(fd, 0, SEEK_END) == (off_t)n, "4: round %d: SEEK_END", i);
        CHECK(pread(fd, buf, n + 10, 0) == (ssize_t)n && st_mismatch(buf, (uint8_t)(10 + i), 0, n) < 0,
              "4: round %d: read back wrong", i);
        OK(close(fd));
        struct stat st;
        OK(stat(a, &st));
        CHECK(st.st_size == (off_t)n, "4: round %d: stat size %lld", i, (long long)st.st_size);
        if (i % 2) OK(unlink(a));
        else {
            make(b, 10, 9);
            OK(rename(b, a)); /* over a: a victim too */
            OK(unlink(a));
        }
    }
    printf("ok: 4: 50 files made, reopened and removed by unlink or rename-over read back exactly\n");
    return 0;
}
