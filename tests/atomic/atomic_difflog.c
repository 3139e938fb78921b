/* Description: differential (sub-block) logging. A 100-byte copy logs 100 bytes of data plus one 64-byte
 * index entry, not a 4 KiB block; a second copy into the same block merges into the same entry and logs
 * only what is new (redo: the new bytes and any gap to the old delta; undo: the old bytes not saved yet
 * this epoch). Block size follows the write size (4 KiB .. 2 MiB) and is
 * fixed per 2 MiB region while the region has entries. Usage: atomic_difflog [DIR] */
#include "atomic_test.h"

#define FILE_BYTES (8u << 20)

static struct daxkit_atomic_stats before;

static void expect_logged(struct daxkit_atomic *a, uint64_t data, uint64_t entries, uint64_t used, const char *what) {
    struct daxkit_atomic_stats s = at_stats(a);
    AT_CHECK(s.log_data_bytes - before.log_data_bytes == data, "%s: logged %llu data bytes, want %llu", what,
             (unsigned long long)(s.log_data_bytes - before.log_data_bytes), (unsigned long long)data);
    AT_CHECK(s.entries_live == entries, "%s: %llu entries live, want %llu", what, (unsigned long long)s.entries_live,
             (unsigned long long)entries);
    AT_CHECK(s.log_bytes_used == used, "%s: %llu log bytes allocated, want %llu", what,
             (unsigned long long)s.log_bytes_used, (unsigned long long)used);
    printf("%-44s data %6llu B  meta %4llu B  entries %llu  allocated %llu B\n", what,
           (unsigned long long)(s.log_data_bytes - before.log_data_bytes),
           (unsigned long long)(s.log_meta_bytes - before.log_meta_bytes), (unsigned long long)s.entries_live,
           (unsigned long long)s.log_bytes_used);
    before = s;
}

static void copy_fill(struct daxkit_atomic *a, uint64_t off, size_t n, char c) {
    static char buf[2u << 20];
    memset(buf, c, n);
    AT_OK(daxkit_atomic_copy(a, off, buf, n));
}

static void run(const char *path, uint32_t policy) {
    printf("-- %s\n", policy == DAXKIT_ATOMIC_REDO ? "redo" : "undo");
    at_make_file(path, FILE_BYTES, 5);
    struct daxkit_atomic_options o = at_opts(policy, 0);
    struct daxkit_atomic *a;
    AT_OK(daxkit_atomic_map(path, &o, &a));
    before = at_stats(a);
    bool redo = policy == DAXKIT_ATOMIC_REDO;
    copy_fill(a, 1000, 100, 'a');
    expect_logged(a, 100, 1, 4096, "100 B copy");
    uint64_t meta = before.log_meta_bytes;
    copy_fill(a, 1100, 100, 'b');
    expect_logged(a, 100, 1, 4096, "adjacent 100 B copy, same block (merged)");
    copy_fill(a, 1050, 100, 'c');
    expect_logged(a, redo ? 100 : 0, 1, 4096, "overlapping 100 B copy (inside the delta)");
    copy_fill(a, 1150, 100, 'd');
    expect_logged(a, redo ? 100 : 50, 1, 4096, "100 B copy sticking out by 50 B");
    copy_fill(a, 2000, 100, 'e');
    expect_logged(a, redo ? 100 + 750 : 100 + 750, 1, 4096, "disjoint 100 B copy (gap of 750 B filled)");
    copy_fill(a, 4096 * 10 + 5, 100, 'f');
    expect_logged(a, 100, 2, 8192, "100 B copy into another block");
    copy_fill(a, (2u << 20) + (64u << 10), 64u << 10, 'g');
    expect_logged(a, 64u << 10, 3, 8192 + (64u << 10), "64 KiB copy, fresh 2 MiB region: one 64 KiB block");
    copy_fill(a, 1u << 20, 64u << 10, 'g');
    expect_logged(a, 64u << 10, 19, 8192 + (64u << 10) * 2, "64 KiB copy, region of 4 KiB blocks: 16 blocks");
    copy_fill(a, 4u << 20, 2u << 20, 'h');
    expect_logged(a, 2u << 20, 20, 8192 + (64u << 10) * 2 + (2u << 20), "2 MiB aligned copy: one 2 MiB block");
    AT_CHECK(before.log_meta_bytes - meta == 19 * 64 + 3 * 8, "index metadata: %llu B for 19 new entries",
             (unsigned long long)(before.log_meta_bytes - meta));
    char got[300];
    AT_OK(daxkit_atomic_read(a, 1000, got, 250));
    for (int i = 0; i < 250; i++) {
        char want = i < 50 ? 'a' : i < 150 ? 'c' : 'd';
        AT_CHECK(got[i] == want, "read-back byte %d: %c, want %c", i, got[i], want);
    }
    AT_OK(daxkit_atomic_sync(a));
    AT_OK(daxkit_atomic_unmap(a));
    char file[300];
    int fd = open(path, O_RDONLY);
    AT_CHECK(pread(fd, file, 250, 1000) == 250, "pread");
    close(fd);
    AT_CHECK(memcmp(file, got, 250) == 0, "file after sync + unmap differs from what was read");
}

int main(int argc, char **argv) {
    at_setup_dir(argc, argv);
    char path[700];
    at_path(path, sizeof path, "diff.bin");
    run(path, DAXKIT_ATOMIC_REDO);
    run(path, DAXKIT_ATOMIC_UNDO);
    printf("PASS\n");
    return 0;
}
