/* Description: a file not mapped yet (DAXKIT_MAP_AFTER_IOS, default 8): its first reads and overwrites go to
 * the kernel -- counted as pt_unmapped, the file absent from /proc/self/maps, the bytes right -- and the next
 * one maps the file and is served from the mapping (the counter stops). argv[1]: managed directory. */
#include "shim_test.h"

static bool mapped(const char *path) {
    FILE *m = fopen("/proc/self/maps", "r");
    CHECK(m != NULL, "open /proc/self/maps");
    char line[4608];
    bool found = false;
    while (!found && fgets(line, sizeof line, m)) found = strstr(line, path) != NULL;
    fclose(m);
    return found;
}

static uint64_t unmapped_count(void) {
    uint64_t v[DK_C_COUNT];
    CHECK(st_stats(getpid(), v), "stats");
    return v[DK_C_pt_unmapped];
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    st_require_library();
    st_watchdog(60);
    const char *env = getenv("DAXKIT_MAP_AFTER_IOS");
    unsigned turns = env ? (unsigned)atoi(env) : 8;
    CHECK(turns >= 2 && turns <= 64, "run with DAXKIT_MAP_AFTER_IOS between 2 and 64 (or unset)");
    char path[4200];
    snprintf(path, sizeof path, "%s/unmapped", dir);
    char block[4096], got[4096];
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0, "create %s: %s", path, strerror(errno));
    for (int i = 0; i < 16; i++) {
        memset(block, 'a' + i, sizeof block);
        CHECK(write(fd, block, sizeof block) == (ssize_t)sizeof block, "write block %d", i);
    }
    CHECK(close(fd) == 0, "close"); /* a publish point: every block is in the kernel file */

    fd = open(path, O_RDWR);
    CHECK(fd >= 0, "reopen: %s", strerror(errno));
    uint64_t base = unmapped_count();
    for (unsigned i = 0; i < turns; i++) { /* alternate overwrite and read-back of block i */
        off_t off = (off_t)i * 4096;
        if (i % 2 == 0) {
            memset(block, 'A' + (int)i, sizeof block);
            CHECK(pwrite(fd, block, sizeof block, off) == (ssize_t)sizeof block, "pwrite %u", i);
        } else {
            CHECK(pread(fd, got, sizeof got, off - 4096) == (ssize_t)sizeof got, "pread %u", i);
            CHECK(got[0] == 'A' + (int)i - 1 && got[4095] == 'A' + (int)i - 1, "block %u does not hold the overwrite", i - 1);
        }
        CHECK(unmapped_count() - base == i + 1, "call %u: %llu calls by the kernel, want %u", i,
              (unsigned long long)(unmapped_count() - base), i + 1);
        CHECK(!mapped(path), "the file was mapped after %u calls, before DAXKIT_MAP_AFTER_IOS=%u", i + 1, turns);
    }
    CHECK(pread(fd, got, sizeof got, 15 * 4096) == (ssize_t)sizeof got && got[0] == 'a' + 15, "pread of block 15");
    CHECK(unmapped_count() - base == turns, "the call after %u went to the kernel too", turns);
    CHECK(mapped(path), "the file is still not mapped after %u + 1 calls", turns);
    memset(block, 'Z', sizeof block);
    CHECK(pwrite(fd, block, sizeof block, 0) == (ssize_t)sizeof block, "pwrite through the mapping");
    CHECK(pread(fd, got, sizeof got, 0) == (ssize_t)sizeof got && got[100] == 'Z', "read back through the mapping");
    CHECK(unmapped_count() - base == turns, "mapped calls were counted as kernel calls");
    close(fd);
    printf("ok: %u calls by the kernel, then the mapping\n", turns);
    return 0;
}
