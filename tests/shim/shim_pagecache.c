/* Description: overwrites on a page-cache medium (XFS, ext4) go to the kernel by pwrite once the file is
 * mapped (a store through the mapping would take a write fault per page that write-back cleaned), reads
 * stay on the mapping; and an fsync after appends relinked by clone asks the file system to drop the
 * file's reflink mark (XFS). Bytes are checked through the library and through raw system calls. Last, a
 * file overwritten, closed without fsync and dropped from the library's closed-file cache (more closed
 * files than DAXKIT_CACHE_FILES since) is reopened: its fsync must reach the kernel (the page cache still
 * holds the overwrites; a fresh entry knew nothing dirty and skipped it).
 * argv[1]: managed directory on xfs or ext4 (registered there only). Exit 0 pass, 1 fail. */
#include "shim_test.h"

static uint64_t counter(enum dk_counter c) {
    uint64_t v[DK_C_COUNT];
    CHECK(st_stats(getpid(), v), "stats");
    return v[c];
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    st_require_library();
    st_watchdog(60);
    char path[4200];
    snprintf(path, sizeof path, "%s/pagecache", dir);
    static char block[4096], got[4096];
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    for (int i = 0; i < 64; i++) {
        memset(block, 'a' + i % 26, sizeof block);
        st_write_all(fd, block, sizeof block);
    }
    OK(fsync(fd));
    for (int i = 0; i < 16; i++) CHECK(pread(fd, got, sizeof got, (off_t)i * 4096) == (ssize_t)sizeof got, "pread");
    uint64_t before = counter(DK_C_pagecache_pwrites);
    for (int i = 0; i < 32; i++) {
        memset(block, 'A' + i % 26, sizeof block);
        CHECK(pwrite(fd, block, sizeof block, (off_t)i * 4096) == (ssize_t)sizeof block, "pwrite %d", i);
    }
    uint64_t by_kernel = counter(DK_C_pagecache_pwrites) - before;
    CHECK(by_kernel == 32, "%llu of 32 overwrites went by pwrite", (unsigned long long)by_kernel);
    for (int i = 0; i < 64; i++) {
        char want = (char)(i < 32 ? 'A' + i % 26 : 'a' + i % 26);
        CHECK(pread(fd, got, sizeof got, (off_t)i * 4096) == (ssize_t)sizeof got, "pread %d", i);
        CHECK(got[0] == want && got[4095] == want, "block %d through the library: '%c', want '%c'", i, got[0], want);
        CHECK(syscall(SYS_pread64, fd, got, sizeof got, (off_t)i * 4096) == (long)sizeof got, "raw pread %d", i);
        CHECK(got[0] == want && got[4095] == want, "block %d in the kernel file: '%c', want '%c'", i, got[0], want);
    }
    /* Appends large enough to be relinked by clone where the file system shares blocks. */
    uint64_t clones = counter(DK_C_relink_clones), unshares = counter(DK_C_reflink_unshares);
    static char big[1 << 20];
    memset(big, 'z', sizeof big);
    for (int i = 0; i < 4; i++) st_write_all(fd, big, sizeof big);
    OK(close(fd)); /* publishes (by clone where the file system shares blocks); no fsync yet */
    fd = OK(open(path, O_RDWR));
    CHECK(syscall(SYS_pread64, fd, got, sizeof got, (off_t)(64 * 4096 + 3 * (1 << 20))) == (long)sizeof got &&
              got[0] == 'z', "appended bytes in the kernel file");
    /* The first fsync after the clone drops the mark -- and must not change the size of a file shorter
     * than the block it unshares (an unshare without KEEP_SIZE extended it to 4096 bytes). */
    OK(ftruncate(fd, 100));
    OK(fsync(fd));
    if (counter(DK_C_relink_clones) > clones)
        CHECK(counter(DK_C_reflink_unshares) > unshares, "an fsync after a clone did not drop the reflink mark");
    struct stat st;
    OK(fstat(fd, &st));
    CHECK(st.st_size == 100, "size %lld after ftruncate(100) + fsync, want 100", (long long)st.st_size);
    CHECK(st_ksize(path) == 100, "kernel size %lld after ftruncate(100) + fsync, want 100", st_ksize(path));
    OK(close(fd));
    OK(unlink(path));
    printf("ok: 32 overwrites by pwrite, reads from the mapping; %llu clone(s), %llu reflink mark(s) dropped\n",
           (unsigned long long)(counter(DK_C_relink_clones) - clones),
           (unsigned long long)(counter(DK_C_reflink_unshares) - unshares));

    fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    st_write_all(fd, block, sizeof block);
    OK(fsync(fd));
    st_pwrite_all(fd, big, 4096, 0); /* in the page cache only */
    OK(close(fd));
    const char *cache = getenv("DAXKIT_CACHE_FILES");
    int others = (cache ? atoi(cache) : 128) + 2;
    for (int i = 0; i < others; i++) {
        char other[4300];
        snprintf(other, sizeof other, "%s/other.%d", dir, i);
        int ofd = OK(open(other, O_RDWR | O_CREAT, 0644));
        OK(close(ofd));
    }
    fd = OK(open(path, O_RDWR));
    uint64_t kfs = counter(DK_C_fsyncs_kernel);
    OK(fsync(fd));
    CHECK(counter(DK_C_fsyncs_kernel) == kfs + 1,
          "the fsync of a file reopened after its entry left the cache did not reach the kernel (its overwrite "
          "is in the page cache only)");
    OK(close(fd));
    printf("ok: an fsync after a reopen reaches the kernel although the cache forgot the file\n");

    /* fsync makes durable what *any* process wrote: another one's write (raw system calls, no fsync of its
     * own) while this process has nothing dirty must still reach the kernel's fsync (review 7, finding 17). */
    fd = OK(open(path, O_RDWR));
    st_pwrite_all(fd, big, 4096, 0);
    OK(fsync(fd));
    int raw = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY);
    CHECK(raw >= 0 && syscall(SYS_pwrite64, raw, "OTHER", 5, 0) == 5, "the other writer's pwrite");
    syscall(SYS_close, raw);
    kfs = counter(DK_C_fsyncs_kernel);
    OK(fsync(fd));
    OK(fdatasync(fd));
    CHECK(counter(DK_C_fsyncs_kernel) == kfs + 2,
          "fsync/fdatasync with nothing of this process dirty skipped the kernel: another writer's bytes stay "
          "in the page cache only (%llu kernel syncs of 2)", (unsigned long long)(counter(DK_C_fsyncs_kernel) - kfs));
    OK(close(fd));
    printf("ok: fsync and fdatasync reach the kernel when only another process wrote\n");
    return 0;
}
