/* Description: helper for config.sh: writes, appends, fsyncs and reads back a file in the managed
 * directory and reports whether libdaxkit.so served it. Prints "active 1" (the library published a stats
 * file for this process) or "active 0", and "open errno N" when the managed open failed. Exit 0 when the
 * data read back is exact, 3 when the open failed, 1 on wrong data. argv[1]: managed directory. */
#include "shim_test.h"

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    uint64_t v[DK_C_COUNT];
    bool active = st_stats(getpid(), v);
    printf("active %d\n", active ? 1 : 0);
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "probe");
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        printf("open errno %d\n", errno);
        return 3;
    }
    static uint8_t buf[300000], got[300000];
    st_fill(buf, 9, 0, sizeof buf);
    st_write_all(fd, buf, 100000);
    OK(fsync(fd));
    st_write_all(fd, buf + 100000, sizeof buf - 100000);
    st_pwrite_all(fd, buf + 10, 1000, 10);
    CHECK(pread(fd, got, sizeof got, 0) == (ssize_t)sizeof got, "short read");
    CHECK(memcmp(got, buf, sizeof got) == 0, "data read back differs");
    OK(close(fd));
    CHECK(st_check("pattern", path, "0", "300000", "9") == 0, "the file differs when read without the library");
    if (active && st_stats(getpid(), v))
        printf("served reads %llu appends %llu writes %llu\n", (unsigned long long)v[DK_C_reads],
               (unsigned long long)v[DK_C_appends], (unsigned long long)v[DK_C_writes]);
    return 0;
}
