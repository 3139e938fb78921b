/* Description: the kernel alone (no daxkit): after FICLONERANGE shares a block between two files, zeroing
 * one byte of the clone with fallocate(FALLOC_FL_ZERO_RANGE) must change exactly that byte -- the rest of
 * the block keeps the cloned data. This is what daxkit's relink does to a file (staged appends cloned in,
 * then the program zeroes a range), and the differential tester saw it lose data on XFS-DAX under Linux
 * 6.1 (docs/dax-guest.md). argv[1]: a directory on the file system to check; argv[2]: how the source
 * blocks were written: pwrite, or mmap (fallocate, then stores through a MAP_SYNC mapping, as daxkit's
 * staging files are written on DAX). Exit 0 the byte alone changed, 1 other bytes changed (prints how
 * many and where), 77 no block sharing here (FICLONERANGE refused) or MAP_SYNC refused (mmap). */
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
#include <sys/mman.h>
#include <unistd.h>

#include "common/mapflags.h"

#define CLONE_BYTES (2u << 20)
#define DST_OFF (2u << 20)
#define ZERO_AT 1000u /* inside the first cloned block, not block-aligned */

static uint8_t pattern_byte(uint64_t i) { return (uint8_t)(i * 131u + 7u) | 1u; /* never 0 */ }

static int fail(const char *what) {
    printf("FAIL: %s: %s\n", what, strerror(errno));
    return 1;
}

static int write_source(int fd, const char *how, uint8_t *buf) {
    if (!strcmp(how, "pwrite")) return pwrite(fd, buf, CLONE_BYTES, 0) == (ssize_t)CLONE_BYTES ? 0 : fail("pwrite");
    if (fallocate(fd, 0, 0, CLONE_BYTES) != 0) return fail("fallocate");
    void *p = mmap(NULL, CLONE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);
    if (p == MAP_FAILED) {
        printf("SKIP: MAP_SYNC refused (%s): not a DAX file system\n", strerror(errno));
        return 77;
    }
    memcpy(p, buf, CLONE_BYTES);
    munmap(p, CLONE_BYTES);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3 || (strcmp(argv[2], "pwrite") && strcmp(argv[2], "mmap"))) {
        fprintf(stderr, "usage: clone_zero DIR pwrite|mmap\n");
        return 1;
    }
    char src[4096], dst[4096];
    snprintf(src, sizeof src, "%s/clone_zero.src.%d", argv[1], (int)getpid());
    snprintf(dst, sizeof dst, "%s/clone_zero.dst.%d", argv[1], (int)getpid());
    uint8_t *buf = malloc(CLONE_BYTES), *back = malloc(CLONE_BYTES);
    if (!buf || !back) return fail("malloc");
    for (uint64_t i = 0; i < CLONE_BYTES; i++) buf[i] = pattern_byte(i);
    int s = open(src, O_RDWR | O_CREAT | O_TRUNC, 0644), d = open(dst, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (s < 0 || d < 0) return fail("open");
    unlink(src), unlink(dst);
    int rc = write_source(s, argv[2], buf);
    if (rc) return rc;
    struct file_clone_range r = {.src_fd = s, .src_offset = 0, .src_length = CLONE_BYTES, .dest_offset = DST_OFF};
    if (ioctl(d, FICLONERANGE, &r) != 0) {
        printf("SKIP: FICLONERANGE refused (%s): no block sharing here\n", strerror(errno));
        return 77;
    }
    if (fallocate(d, FALLOC_FL_ZERO_RANGE, DST_OFF + ZERO_AT, 1) != 0) return fail("fallocate ZERO_RANGE");
    if (pread(d, back, CLONE_BYTES, DST_OFF) != (ssize_t)CLONE_BYTES) return fail("pread");
    buf[ZERO_AT] = 0;
    uint64_t bad = 0, first = 0, last = 0;
    for (uint64_t i = 0; i < CLONE_BYTES; i++) {
        if (back[i] == buf[i]) continue;
        if (!bad++) first = i;
        last = i;
    }
    if (bad) {
        printf("FAIL: %s source, FICLONERANGE of %u bytes, ZERO_RANGE of 1 byte at +%u: %llu byte(s) differ"
               " from the expected content, first at +%llu (read 0x%02x, expected 0x%02x), last at +%llu\n",
               argv[2], CLONE_BYTES, ZERO_AT, (unsigned long long)bad, (unsigned long long)first, back[first],
               buf[first], (unsigned long long)last);
        return 1;
    }
    printf("ok: %s source: after FICLONERANGE, ZERO_RANGE of one byte changed that byte alone\n", argv[2]);
    return 0;
}
