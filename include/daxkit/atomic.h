/* daxkit failure-atomic file updates (issue 4; Libnvmio-style per-block undo/redo logging with epochs).
 *
 *     struct daxkit_atomic *a;
 *     int rc = daxkit_atomic_map("/data/table.bin", NULL, &a);     // recovers the file first if needed
 *     rc = daxkit_atomic_copy(a, off, buf, len);                     // the logged store
 *     rc = daxkit_atomic_read(a, off, out, len);                     // sees committed and own uncommitted data
 *     rc = daxkit_atomic_sync(a);                                    // commit: all copies since the last sync
 *     rc = daxkit_atomic_unmap(a);                                   // checkpoints; drops unsynced copies
 *
 * Guarantee: after a crash (process crash on any medium; power loss on dax and pagecache media) the file
 * holds exactly the state of the last completed daxkit_atomic_sync, never a mix. The log lives next to the
 * file in <dir>/.daxkit/<name>.alog; daxkit_atomic_map replays or rolls it back before returning.
 *
 * Every function returns 0 (or a count) on success and a negative errno value on failure; errno itself is
 * left unchanged. No function exits, changes signals, umask or the environment. The mapped length is fixed
 * at map time (the file size, or options.file_bytes_min if larger): copies and reads outside it fail with
 * -EFBIG / -EINVAL. One process at a time may map a file this way (-EBUSY otherwise). Threads may call
 * copy/read concurrently on one handle; sync and unmap wait for calls in progress. */
#ifndef DAXKIT_ATOMIC_H
#define DAXKIT_ATOMIC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct daxkit_atomic;

enum daxkit_atomic_policy {
    DAXKIT_ATOMIC_HYBRID = 0, /* per file: redo while writes >= redo_write_pct of accesses, else undo */
    DAXKIT_ATOMIC_UNDO = 1,   /* always undo logging (old data logged, file updated in place) */
    DAXKIT_ATOMIC_REDO = 2,   /* always redo logging (new data logged, file updated at checkpoint) */
    DAXKIT_ATOMIC_JOURNAL = 3, /* an append-only redo journal of (offset, length, bytes) records: a copy is
                                  a copy into DRAM-mapped log pages, written back at sync (small writes) */
};

enum daxkit_atomic_persist {
    DAXKIT_ATOMIC_PERSIST_ENV = 0,    /* follow DAXKIT_PERSIST (flush = emulation), else the medium */
    DAXKIT_ATOMIC_PERSIST_MEDIUM = 1, /* what the probed medium needs (flush+fence on dax, msync/fdatasync on
                                         pagecache, ordered stores on tmpfs) */
    DAXKIT_ATOMIC_PERSIST_FLUSH = 2,  /* treat the medium as dax: EMULATION for benchmarks */
};

#define DAXKIT_ATOMIC_OPTIONS_VERSION 1
/* redo_write_pct: no share of writes makes the hybrid run redo (the default since session 20: undo costs no
 * more than redo at any read:write mix here, docs/atomic.md "Hybrid policy"). On pagecache media the engine
 * runs redo whatever the policy. */
#define DAXKIT_ATOMIC_REDO_NEVER 101u

struct daxkit_atomic_options {
    uint32_t version;                /* DAXKIT_ATOMIC_OPTIONS_VERSION (set by daxkit_atomic_options_init) */
    uint32_t policy;                 /* enum daxkit_atomic_policy [HYBRID] */
    uint32_t redo_write_pct;         /* hybrid threshold, percent of accesses that are writes, 0..100; or
                                      * DAXKIT_ATOMIC_REDO_NEVER: the hybrid never runs redo [NEVER] */
    uint32_t persist;                /* enum daxkit_atomic_persist [ENV] */
    uint64_t file_bytes_min;         /* extend the file to at least this size at map time [0] */
    uint64_t log_bytes;              /* log data capacity for a new log, multiple of 2 MiB [64 MiB]; an existing
                                      * log with nothing to recover that is smaller is made anew at this size */
    uint32_t checkpoint_interval_us; /* background checkpoint period; 0: no thread, checkpoint on demand [1000] */
    uint32_t recovery_threads;       /* threads replaying the log at map time; 0: one per 4096 entries, <= 4 */
};

/* Fills *o with the defaults above. */
void daxkit_atomic_options_init(struct daxkit_atomic_options *o);

/* Maps the existing regular file `path` for atomic updates; `o` may be NULL (defaults). Creates or opens
 * the log, recovers the file from it (redo committed, undo uncommitted), starts the checkpoint thread.
 * Errors: the open/mmap/ftruncate errno; -EBUSY another process has it mapped; -ESTALE the log holds live
 * entries written for another file (inode differs: remove <dir>/.daxkit/<name>.alog if that file is gone;
 * a log written for a removed file whose inode number this file reuses -- same inode, another generation --
 * is discarded, never applied);
 * -EINVAL bad options or not a regular file; -ENOMEM. */
int daxkit_atomic_map(const char *path, const struct daxkit_atomic_options *o, struct daxkit_atomic **out);
/* fork: the child's copy of a handle is the parent's -- copy, read and sync fail with -EBADF in the child,
 * unmap frees the child's memory and touches neither the log nor the file. The log's lock stays with the
 * parent (the child closes its copies of the log's descriptor and mapping at fork). */

/* The logged store: copies n bytes from buf to file offset off. Atomic and durable at the next sync.
 * -EFBIG beyond the mapped length; -ENOSPC the log is full of uncommitted data (sync more often, or map
 * with a larger log_bytes); -EIO a medium sync failed (the handle then refuses further copies). */
int daxkit_atomic_copy(struct daxkit_atomic *a, uint64_t off, const void *buf, size_t n);

/* Reads n bytes at off into buf: committed data and this process's uncommitted copies. -EINVAL beyond
 * the mapped length. */
int daxkit_atomic_read(struct daxkit_atomic *a, uint64_t off, void *buf, size_t n);

/* Commits every copy made since the previous sync, atomically (O(1) epoch advance on dax media; one
 * fdatasync of the log on pagecache media). Chooses the logging policy of the next epoch (hybrid).
 * -EIO a medium sync failed: the previous sync's state is what a crash would leave. */
int daxkit_atomic_sync(struct daxkit_atomic *a);

/* Rolls back copies not synced, checkpoints committed ones into the file, makes the file durable, removes
 * nothing (the log stays for the next map), unmaps and frees the handle (also on error). */
int daxkit_atomic_unmap(struct daxkit_atomic *a);

/* The mapped length in bytes. */
uint64_t daxkit_atomic_length(const struct daxkit_atomic *a);

struct daxkit_atomic_stats {
    uint64_t epoch;                /* current (uncommitted) epoch */
    uint32_t policy;               /* current policy: DAXKIT_ATOMIC_UNDO, _REDO or _JOURNAL */
    uint32_t persist_medium;       /* 0 dax (or emulated), 1 pagecache, 2 volatile (enum dk_medium) */
    uint64_t copies, reads, syncs;
    uint64_t log_data_bytes;       /* bytes stored into the log data area (delta + merge fill) */
    uint64_t log_meta_bytes;       /* bytes of index entries and epoch stored */
    uint64_t entries_live;         /* index entries in use now */
    uint64_t log_bytes_used;       /* log data area allocated now */
    uint64_t checkpointed_entries; /* entries applied to the file by checkpoints (any thread) */
    uint64_t sync_checkpoints;     /* writes that had to checkpoint a committed block first */
    uint64_t policy_switches;      /* undo->redo plus redo->undo */
    uint64_t recovered_redo;       /* at map time: committed redo entries replayed */
    uint64_t recovered_undo;       /* at map time: uncommitted undo entries rolled back */
    uint64_t recovered_discarded;  /* at map time: uncommitted redo / committed undo entries dropped */
};
int daxkit_atomic_get_stats(const struct daxkit_atomic *a, struct daxkit_atomic_stats *s);

#ifdef __cplusplus
}
#endif
#endif
