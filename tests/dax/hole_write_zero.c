/* Description: the kernel alone (no daxkit): in a file that shares blocks with another (FICLONERANGE, as
 * copy_file_range does on XFS), a write into a hole allocates a block, and the parts of that block the
 * write does not cover must read as zeros. Linux 6.1's XFS on fsdax does not zero them: they show whatever
 * the block held before (another file's freed data) -- found by the FS-DAX guest's differential tester
 * (XFS seed 694869994005: a pwritev past the end after copy_file_range from the file; the kernel path's
 * own result differed from run to run, docs/dax-guest.md). The test first fills free blocks with a
 * pattern (a file written and removed), so that stale bytes cannot pass for zeros.
 * argv[1]: a directory on the file system to check; argv[2]: gap (a pwrite past the end, leaving a hole
 * before it) or hole (ftruncate up, then a pwrite inside). Exit 0 only zeros outside what was written,
 * 1 stale bytes (prints how many and where), 77 no block sharing here (FICLONERANGE refused). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define GARBAGE_BYTES (64u << 20)
#define SRC_BYTES 195909u  /* the seed's sizes: the source ends inside a block */
#define WRITE_AT 236953u   /* in a later block, not block-aligned */
#define WRITE_BYTES 513u
#define HOLE_SIZE 300000u  /* ftruncate for 'hole': the write lands inside the file */

static int fail(const char *what) {
    printf("FAIL: %s: %s\n", what, strerror(errno));
    return 1;
}

static int fill_free_blocks(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/hole_write_zero.garbage.%d", dir, (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return fail("open garbage");
    static uint8_t chunk[1 << 20];
    memset(chunk, 0xaa, sizeof chunk);
    for (uint32_t off = 0; off < GARBAGE_BYTES; off += sizeof chunk)
        if (pwrite(fd, chunk, sizeof chunk, off) != (ssize_t)sizeof chunk) return fail("pwrite garbage");
    if (fsync(fd) != 0) return fail("fsync garbage");
    close(fd);
    unlink(path);
    sync();
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[2], "gap") && strcmp(argv[2], "hole"))) {
        fprintf(stderr, "usage: hole_write_zero DIR gap|hole\n");
        return 2;
    }
    if (fill_free_blocks(argv[1])) return 1;
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s/hole_write_zero.a.%d", argv[1], (int)getpid());
    snprintf(b, sizeof b, "%s/hole_write_zero.b.%d", argv[1], (int)getpid());
    int fa = open(a, O_RDWR | O_CREAT | O_TRUNC, 0644), fb = open(b, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fa < 0 || fb < 0) return fail("open");
    unlink(a), unlink(b);
    static uint8_t buf[HOLE_SIZE];
    memset(buf, 0x5a, sizeof buf);
    if (pwrite(fa, buf, SRC_BYTES, 0) != (ssize_t)SRC_BYTES) return fail("pwrite source");
    struct file_clone_range r = {.src_fd = fa, .src_offset = 0, .src_length = 0, .dest_offset = 0}; /* 0: to the end */
    if (ioctl(fb, FICLONERANGE, &r) != 0) {
        if (errno == EOPNOTSUPP || errno == EXDEV || errno == EINVAL || errno == ENOTTY) {
            printf("SKIP: FICLONERANGE refused (%s): no block sharing here\n", strerror(errno));
            return 77;
        }
        return fail("FICLONERANGE");
    }
    if (!strcmp(argv[2], "hole") && ftruncate(fa, HOLE_SIZE) != 0) return fail("ftruncate");
    if (pwrite(fa, buf, WRITE_BYTES, WRITE_AT) != (ssize_t)WRITE_BYTES) return fail("pwrite into the hole");
    off_t size = lseek(fa, 0, SEEK_END);
    memset(buf, 0, sizeof buf);
    ssize_t got = pread(fa, buf, (size_t)(size - SRC_BYTES), SRC_BYTES);
    if (got != size - (off_t)SRC_BYTES) return fail("pread");
    uint64_t stale = 0, first = 0, last = 0;
    for (uint64_t i = 0; i < (uint64_t)got; i++) {
        uint64_t off = SRC_BYTES + i;
        if (off >= WRITE_AT && off < WRITE_AT + WRITE_BYTES) continue;
        if (buf[i] && !stale++) first = off;
        if (buf[i]) last = off;
    }
    if (stale) {
        printf("FAIL: %s: %llu stale bytes in [%u, %lld) outside the %u written at %u: offsets %llu..%llu (first "
               "0x%02x)\n", argv[2], (unsigned long long)stale, SRC_BYTES, (long long)size, WRITE_BYTES, WRITE_AT,
               (unsigned long long)first, (unsigned long long)last, buf[first - SRC_BYTES]);
        return 1;
    }
    printf("ok: %s: [%u, %lld) reads as zeros outside the %u bytes written at %u\n", argv[2], SRC_BYTES,
           (long long)size, WRITE_BYTES, WRITE_AT);
    return 0;
}
