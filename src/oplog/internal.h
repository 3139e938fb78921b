/* The in-DRAM state of an open operation log (internal to src/oplog). */
#ifndef DK_OPLOG_INTERNAL_H
#define DK_OPLOG_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>

#include "common/dk.h"
#include "oplog/format.h"
#include "persist/media.h"

/* Record slots are allocated (posix_fallocate + populate) in steps of this many lines, ahead of the tail:
 * 32,768 lines = 2 MiB. Opening a 128 MiB log therefore costs ~1 ms and 2 MiB, not ~100-250 ms and 128 MiB
 * (measured on tmpfs); a process that logs little never pays for the rest. */
#define OPLOG_ALLOCATE_LINES 32768u
_Static_assert(OPLOG_ALLOCATE_LINES * DK_OPLOG_LINE_BYTES == DK_HUGE_BYTES, "allocation steps are huge pages");
_Static_assert(OPLOG_ALLOCATE_LINES >= DK_OPLOG_RECORD_LINES_MAX, "one step holds the longest record");

enum oplog_persist {
    OPLOG_PERSIST_FLUSH, /* dax, DAXKIT_PERSIST=flush, tmpfs: stores + flush + fence */
    OPLOG_PERSIST_PWRITE, /* page cache: lines written by pwritev2(RWF_DSYNC) (never stored through the
                             mapping); pwrite + fdatasync where the kernel refuses RWF_DSYNC */
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
    int sticky_error;             /* a failed pwrite/fdatasync: every later append fails with it */
    int no_rwf_dsync;             /* the kernel refused RWF_DSYNC once (EOPNOTSUPP/EINVAL): pwrite + fdatasync */
    int direct_fd;                /* page cache: the log opened again with O_DIRECT for records; -1: none */
    int direct_refused;           /* direct_fd refused a record write (EINVAL): records go by fd from then on */
    uint32_t direct_align_lines;  /* direct_fd: records start and end on this many lines (the sector); else 1 */
    void (*close_fd)(int fd);     /* dk_oplog_move_fds's; NULL: close */
    uint64_t first_slot;          /* where the tail starts after open and reset (direct: the first sector
                                     after the header lines; else 0) */
    uint64_t area_dev;            /* st_dev of the log's directory at creation (in every header) */
    int creator_pid;              /* diagnostics in the header (a forked child never uses its parent's log) */
    uint64_t created_ns;          /* the header's creation time, and its tag: kept here for the resets, which
                                     rewrite the header -- read back from the other header line, they were a
                                     memory round trip per checkpoint (written by a non-temporal store, the line
                                     is never cached): ~1.5 % of a strict SQLite transaction's CPU samples */
    char tag[20];
    uint64_t allocated_lines;     /* record slots [0, this) have blocks and pages; grows under grow_mu */
    uint64_t spare_lines;         /* the last slots, only for dk_oplog_reserve_spare (dk_oplog_set_spare) */
    uint64_t usable_lines;        /* capacity_lines - spare_lines: dk_oplog_reserve's end */
    pthread_mutex_t grow_mu;
    /* Completion marks (marks.c): NULL when the log has none (then recovery replays every record). */
    uint32_t *marks;              /* the mapped marks, one word per record slot */
    uint64_t marks_lines;         /* slots [0, this) have allocated marks (atomic; grows under grow_mu) */
    size_t marks_map_bytes;
    int marks_fd;                 /* -1: none */
    char path[PATH_MAX];
};

int oplog_allocate(struct dk_oplog *log, uint64_t end_lines);
/* A zeroed log state of `capacity` record slots (no file yet), or NULL. */
struct dk_oplog *oplog_new(uint64_t capacity);
/* dk_oplog_open's checks of its arguments. */
bool oplog_args_ok(const char *dir, const char *tag, size_t bytes);
/* How the log in dirfd makes records durable (the medium's probe); *map_sync_out: map it MAP_SYNC. */
enum oplog_persist oplog_persist_for(int dirfd, int *map_sync_out);
/* The first <tag>.<pid>.<n>.log not in dirfd into name: 0, or -EEXIST after 1,000 tries. */
int oplog_free_name(int dirfd, const char *tag, int pid, char *name, size_t cap);
/* Page cache: n bytes at file_offset of fd (the log's fd or its direct_fd) made durable (pwritev2
 * RWF_DSYNC, or pwrite + fdatasync). 0 or -errno. */
int oplog_write_durable(struct dk_oplog *log, int fd, const void *src, size_t n, uint64_t file_offset);
/* Page cache: opens the log's direct descriptor when the file system allows it and DAXKIT_OPLOG_DIRECT is
 * auto (sets direct_fd, direct_align_lines, first_slot and the tail); otherwise leaves records buffered. */
void oplog_open_direct(struct dk_oplog *log, int dirfd, const char *name);
/* Page cache: writes zeros over [lo, hi) of the log through its direct descriptor and makes them durable
 * (RWF_DSYNC): an allocation step without the page cache -- no 2 MiB copied into cached pages, written back,
 * then invalidated page by page by the direct records. 0 done; 1 not taken (no direct descriptor, an
 * unaligned range, a refused or failed write): the caller writes the zeros buffered. */
int oplog_zero_direct(struct dk_oplog *log, uint64_t lo, uint64_t hi);
/* Completion marks (marks.c, dk_oplog_start_marks). For the log published as `name` in dirfd: makes <name
 * minus .log>.done, bound to the log, when this boot and mount can be told again (otherwise the log has no
 * marks). Under grow_mu. */
void oplog_marks_open(struct dk_oplog *log, int dirfd, const char *name);
/* Allocates the marks of record slots [marks_lines, end_lines) (under grow_mu, or before the log is shared);
 * on failure the marks stop growing: records past them are never marked (replayed as without marks). */
void oplog_marks_allocate(struct dk_oplog *log, uint64_t end_lines);
void oplog_marks_close(struct dk_oplog *log);
/* The marks of the log at `path` (open as log_fd) that a recoverer now may trust: a malloc'ed copy of
 * `capacity` words (*out; NULL: none -- no file, another boot or mount, another log). 0 or -ENOMEM. */
int oplog_marks_load(const char *path, int log_fd, uint64_t capacity, uint32_t **out);

/* Writes header slot `generation % 2` (store + flush + fence; page cache: pwrite + fdatasync, oplog_write_durable). */
int oplog_write_header(struct dk_oplog *log, uint32_t generation, const char *tag);

#endif
