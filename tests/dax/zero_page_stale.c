/* Description: the kernel alone (no daxkit): a write(2) into a block that a shared mapping of the file has
 * read must show through that mapping. On fsdax a read fault on an unwritten (fallocated) block maps the
 * shared zero page; a store into a neighbouring block then converts the extent -- ext4 zeroes the rest of a
 * short unwritten extent and marks it written too ("zeroout") -- and a write(2) into the block of the old
 * end afterwards must still replace what the mapping shows. Linux 6.1's ext4 on fsdax leaves the zero page
 * mapped there: the mapping keeps reading zeros where read(2) returns the written bytes. This is what the
 * differential tester saw through daxkit (ext4 seed 697150161003: fallocate, an overwrite, an append
 * published by copy, a read served from the library's mapping; docs/dax-guest.md), and why the library
 * drops its DAX pages after each write it has the kernel make (src/upath/map.c: up_map_kernel_wrote).
 * argv[1]: a directory on the file system to check; argv[2]: how the neighbouring block is written: store
 * (through the mapping, as daxkit's overwrites) or pwrite. Exit 0 the mapping shows the bytes, 1 it shows
 * stale zeros (prints where), 77 the file system cannot fallocate. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/mapflags.h"

#define FILE_BYTES 12648u  /* 3 blocks and part of a fourth, as in the seed */
#define NEIGHBOUR_OFF 8192u /* the third block: written first */
#define NEIGHBOUR_BYTES 511u
#define APPEND_BYTES 512u  /* at FILE_BYTES: into the fourth block, past the end */
#define MAP_BYTES (2u << 20)

static int fail(const char *what) {
    printf("FAIL: %s: %s\n", what, strerror(errno));
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[2], "store") && strcmp(argv[2], "pwrite"))) {
        fprintf(stderr, "usage: zero_page_stale DIR store|pwrite\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/zero_page_stale.%d", argv[1], (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return fail("open");
    unlink(path);
    if (fallocate(fd, 0, 0, FILE_BYTES) != 0) {
        if (errno == EOPNOTSUPP) {
            printf("SKIP: fallocate refused (%s): no unwritten extents here\n", strerror(errno));
            return 77;
        }
        return fail("fallocate");
    }
    int sync = 1;
    char *p = mmap(NULL, MAP_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);
    if (p == MAP_FAILED) { /* not DAX: a page-cache mapping (always coherent with write(2)) */
        sync = 0;
        p = mmap(NULL, MAP_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) return fail("mmap");
    }
    volatile uint8_t sink = 0;
    for (uint32_t off = 0; off < FILE_BYTES; off += 4096) sink = (uint8_t)(sink + p[off]); /* read faults */
    uint8_t neighbour[NEIGHBOUR_BYTES], append[APPEND_BYTES], got[APPEND_BYTES];
    memset(neighbour, 0x41, sizeof neighbour);
    for (uint32_t i = 0; i < APPEND_BYTES; i++) append[i] = (uint8_t)(i * 7u + 1u) | 1u; /* never 0 */
    if (!strcmp(argv[2], "store")) memcpy(p + NEIGHBOUR_OFF, neighbour, sizeof neighbour);
    else if (pwrite(fd, neighbour, sizeof neighbour, NEIGHBOUR_OFF) != (ssize_t)sizeof neighbour) return fail("pwrite");
    if (pwrite(fd, append, sizeof append, FILE_BYTES) != (ssize_t)sizeof append) return fail("pwrite at the end");
    if (pread(fd, got, sizeof got, FILE_BYTES) != (ssize_t)sizeof got || memcmp(got, append, sizeof got) != 0) {
        printf("FAIL: read(2) does not return the appended bytes\n");
        return 1;
    }
    memcpy(got, p + FILE_BYTES, sizeof got);
    uint32_t stale = 0, first = 0;
    for (uint32_t i = 0; i < APPEND_BYTES; i++)
        if (got[i] != append[i] && !stale++) first = i;
    printf("%s mapping (%s), neighbour by %s: ", sync ? "MAP_SYNC" : "page-cache", argv[1], argv[2]);
    if (stale) {
        printf("FAIL: %u of %u bytes written by pwrite at %u read back stale through the mapping (first at %u: "
               "0x%02x, read(2) 0x%02x)\n", stale, APPEND_BYTES, FILE_BYTES, FILE_BYTES + first, got[first],
               append[first]);
        return 1;
    }
    printf("ok: the mapping shows the %u bytes written by pwrite at %u\n", APPEND_BYTES, FILE_BYTES);
    munmap(p, MAP_BYTES);
    close(fd);
    return 0;
}
