/* Description: remove(3) goes through the library's unlink (review 9, finding 19). glibc's remove calls its
 * internal unlink and rmdir, which the preload never saw: in strict mode the removal was neither logged nor
 * made durable (no fsync of the directory) when remove returned, and a closed, mapped file removed by it kept
 * its mapping (its space stayed allocated: the victim bookkeeping never heard of it).
 *   1. a file written, closed and removed: one strict metadata record (strict mode; DK_C_strict_meta + 1);
 *   2. a file read (mapped: DAXKIT_MAP_AFTER_IOS=0), closed, then removed: its mapping goes at once;
 *   3. errno and results as glibc's: an empty directory removed (0), a non-empty one -1/ENOTEMPTY, a missing
 *      name -1/ENOENT, a file's success leaves errno alone.
 * argv[1]: managed directory; argv[2] "strict" when run with DAXKIT_MODE=strict (part 1 counts records). */
#include "shim_test.h"

static void make(const char *path, size_t n) {
    static uint8_t buf[1 << 20];
    st_fill(buf, 7, 0, n);
    int fd = OK(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    st_write_all(fd, buf, n);
    OK(close(fd));
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    bool strict = argc > 2 && !strcmp(argv[2], "strict");
    st_require_library();
    st_watchdog(60);
    char a[PATH_MAX], b[PATH_MAX], d[PATH_MAX], inner[PATH_MAX];
    st_path(a, sizeof a, dir, "a");
    st_path(b, sizeof b, dir, "b");
    st_path(d, sizeof d, dir, "d");
    st_path(inner, sizeof inner, dir, "d/x");

    /* 1 */
    make(a, 1000);
    uint64_t meta = st_counter(DK_C_strict_meta);
    OK(remove(a));
    CHECK(access(a, F_OK) != 0 && errno == ENOENT, "1: the file is still there after remove");
    if (strict) {
        CHECK(st_counter(DK_C_strict_meta) == meta + 1, "1: remove logged %llu strict metadata records, want 1",
              (unsigned long long)(st_counter(DK_C_strict_meta) - meta));
        printf("ok: 1: remove of a file is a logged strict unlink\n");
    }

    /* 2 */
    make(b, 1 << 20);
    int fd = OK(open(b, O_RDONLY));
    static uint8_t buf[4096];
    CHECK(pread(fd, buf, sizeof buf, 0) == (ssize_t)sizeof buf, "2: pread");
    struct stat st;
    OK(fstat(fd, &st));
    OK(close(fd)); /* closed and mapped: cached */
    CHECK(st_maps_inode(st.st_ino), "2: the closed file is not kept mapped (the check below would prove nothing)");
    OK(remove(b));
    CHECK(!st_maps_inode(st.st_ino), "2: the file removed by remove() is still mapped (its space stays allocated)");
    printf("ok: 2: a closed, mapped file removed by remove() is unmapped at once\n");

    /* 3 */
    OK(mkdir(d, 0755));
    make(inner, 10);
    errno = 0;
    CHECK(remove(d) == -1 && errno == ENOTEMPTY, "3: remove of a non-empty directory: errno %d, want ENOTEMPTY", errno);
    OK(remove(inner));
    OK(remove(d));
    CHECK(access(d, F_OK) != 0, "3: the empty directory is still there after remove");
    errno = 0;
    CHECK(remove(a) == -1 && errno == ENOENT, "3: remove of a missing name: errno %d, want ENOENT", errno);
    make(a, 10);
    errno = 1234;
    OK(remove(a));
    CHECK(errno == 1234, "3: a successful remove of a file changed errno to %d", errno);
    printf("ok: 3: remove's results and errno as glibc's (directories, missing names)\n");
    return 0;
}
