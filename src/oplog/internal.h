/* The in-DRAM state of an open operation log (internal to src/oplog). */
#ifndef DK_OPLOG_INTERNAL_H
#define DK_OPLOG_INTERNAL_H

#include <limits.h>
#include <stdint.h>

#include "oplog/format.h"
#include "persist/media.h"

enum oplog_persist {
    OPLOG_PERSIST_FLUSH, /* dax, DAXKIT_PERSIST=flush, tmpfs: stores + flush + fence */
    OPLOG_PERSIST_MSYNC, /* page cache: the same, then msync(MS_SYNC) of the touched pages */
};

struct dk_oplog {
    uint64_t tail_lines;          /* next free record slot; advanced by CAS (the only shared hot word) */
    char pad_[56];                /* keep the tail alone in its cache line */
    struct oplog_line *records;   /* record slot 0 */
    struct oplog_header *headers; /* the two header slots (the start of the mapping) */
    uint64_t capacity_lines;
    size_t map_bytes;
    uint32_t generation;
    enum oplog_persist persist;
    int fd;
    int sticky_error;             /* a failed msync: every later append fails with it */
    char path[PATH_MAX];
};

/* msync of the pages holding [p, p+n) for a page-cache medium. Returns 0 or -errno. */
int oplog_msync_range(struct dk_oplog *log, const void *p, size_t n);
/* Writes header slot `generation % 2` (store + flush + fence, msync on page cache). */
int oplog_write_header(struct dk_oplog *log, uint32_t generation, const char *tag);

#endif
