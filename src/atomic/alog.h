/* The failure-atomic logging engine (Libnvmio design, issue 4): per-block undo/redo log entries with
 * sub-block deltas, a fixed-depth radix index in DRAM, O(1) epoch commit, background checkpointing, a
 * per-file hybrid policy, and parallel idempotent recovery. include/daxkit/atomic.h is its public face.
 *
 * Locks, outermost first:
 *   f->rw        read: copy, read; write: sync, unmap (epoch and policy change). The checkpoint thread
 *                does not take it (alog_checkpoint.c says why)
 *   leaf->mu     one 2 MiB region of the file: its entries and their log blocks
 *   f->alloc_mu  index slots and log space
 * The radix nodes above the leaves are installed with compare-and-swap; nothing locks the whole tree. */
#ifndef DK_ATOMIC_ALOG_H
#define DK_ATOMIC_ALOG_H

#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atomic/alog_layout.h"
#include "daxkit/atomic.h"
#include "persist/media.h"

#define ALOG_RADIX_FANOUT 512u
#define ALOG_RADIX_BITS 9u
#define ALOG_LEAF_SHIFT 21u        /* a leaf covers 2 MiB of the file: 512 slots of 4 KiB */
#define ALOG_FILE_BYTES_MAX (1ull << 48) /* 3 internal levels x 9 bits + 21 bits: 256 TiB */
#define ALOG_LOG_BYTES_MAX (64ull << 30) /* log data of one log (options.log_bytes) */
#define ALOG_NT_MIN_BYTES 256u
#define ALOG_BPACE_NT_MIN_BYTES (32u << 10) /* redo log data with pacing: plain stores below (alog_write.c) */
#define ALOG_CKPT_BATCH 64u
#define ALOG_POLICY_WINDOW_ACCESSES 256u /* hybrid: accesses that a policy decision needs at least */
#define ALOG_POLICY_HYSTERESIS_PCT 10u   /* hybrid: redo goes back to undo below threshold - this */

enum alog_policy { ALOG_UNDO = DAXKIT_ATOMIC_UNDO, ALOG_REDO = DAXKIT_ATOMIC_REDO };

struct alog_leaf;

/* DRAM mirror of one persistent index entry (same index as f->pents). */
struct alog_ent {
    struct alog_pent *p;
    char *log;               /* the log block (area + log_off) */
    struct alog_leaf *leaf;
    uint64_t dest_off;
    uint64_t log_off;
    uint64_t epoch;
    uint64_t gen;            /* bumped at each reuse of this slot (the checkpoint thread re-checks it) */
    uint32_t shift;
    uint32_t ext_start, ext_len;
    uint16_t leaf_slot;
    bool redo;
    bool live;
    /* Redo entries superseded, not retired (alog_write.c): a write into a block whose entry is committed but
     * not checkpointed makes a new entry holding the old delta + the new bytes; the old one stays valid
     * (committed bytes not in the file yet) off the radix slot, linked here, until the new one is committed
     * and checkpointed. Under the leaf's mutex. */
    struct alog_ent *older;  /* the entry this one superseded (which may supersede another) */
    struct alog_ent *newer;  /* the entry that superseded this one; NULL: this one is in the radix slot */
    uint32_t older_count;    /* length of the `older` chain */
    /* Redo with pacing (alog_redo_fifo.c): the live redo entries in creation order -- epoch order -- linked
     * under f->fifo_mu. in_file, under the leaf's mutex: the delta is in the file (a copy applied it, written
     * back; durable at the next commit's first fence) or overwritten there by a newer entry's (detached by a
     * pass or a retire): no copy applies it again. */
    struct alog_ent *fifo_prev, *fifo_next;
    bool in_fifo;
    bool in_file;
};
#define ALOG_SUPERSEDE_CHAIN_MAX 4u /* a longer chain: the writer retires the block synchronously instead */

/* One entry of a checkpoint batch (alog_checkpoint.c). */
struct alog_ckpt_item {
    struct alog_ent *e;
    struct alog_leaf *leaf;
    uint64_t gen;
    bool older; /* an entry its batch entry superseded: invalidated already (in the apply phase) */
};
#define ALOG_CKPT_ITEMS_MAX (ALOG_CKPT_BATCH * (1 + ALOG_SUPERSEDE_CHAIN_MAX))

struct alog_leaf {
    pthread_mutex_t mu;
    uint32_t granule_shift;  /* block size of the region's entries while live_count > 0 */
    uint32_t live_count;
    struct alog_ent *slot[ALOG_RADIX_FANOUT]; /* by 4 KiB index of a block's first byte */
};

struct alog_node {
    void *child[ALOG_RADIX_FANOUT]; /* alog_node, or alog_leaf at the last level; set by CAS */
};

struct alog_chunk {
    uint32_t shift;          /* size class; 0 while the chunk is unassigned */
    uint32_t free_count;
    uint64_t used_bits[ALOG_SLOTS_PER_CHUNK / 64];
};

struct alog_counters {
    uint64_t copies, reads, syncs, log_data_bytes, log_meta_bytes, checkpointed_entries, sync_checkpoints,
        policy_switches, recovered_redo, recovered_undo, recovered_discarded, superseded,
        paced_entries, /* journal records applied by copies, entries applied by commits (pacing), not by passes */
        paced_partial, /* copies that applied part of a record (the rest by the next ones) */
        jwraps,        /* journal: pad records (the next record goes to the area's start) */
        jwraps_early,  /* journal: of those, window pads (a commit past the window, the head far enough on) */
        direct_bytes;  /* journal: bytes copied straight into the file, past the committed state (alog_jdirect.c) */
};

/* The journal (policy DAXKIT_ATOMIC_JOURNAL; alog_journal.c, alog_jindex.c). Under j.mu. */
struct alog_jpiece {
    uint64_t off;   /* file offset; the piece lies inside one 4 KiB block */
    uint64_t src;   /* its bytes: journal position (logical; the area offset is src % area_bytes) */
    uint32_t len;
    uint32_t next;  /* next (newer) piece of the block, or UINT32_MAX */
};
struct alog_jslot {
    uint64_t key;   /* 4 KiB block index + 1; 0: empty */
    uint32_t head, tail;
};
/* Positions are logical (they only grow; the area offset is pos % area_bytes): the journal is circular. */
struct alog_journal {
    pthread_mutex_t mu;
    pthread_mutex_t apply_mu; /* one applier at a time (checkpoint thread, a writer short of room, close) */
    uint64_t tail;      /* next record's position (also read without j.mu: atomic) */
    uint64_t flushed;   /* records below it were written back */
    uint64_t indexed;   /* records below it are in the DRAM index (reads index the rest first) */
    uint64_t index_base; /* the index holds records from here on (rebuilt once half a journal below the head) */
    uint64_t staged;    /* tail staged by the commit in progress (under f->rw for writing) */
    uint64_t committed; /* end of the committed records (atomic; == hdr->jend_slot[epoch & 1]) */
    uint64_t head;      /* records below it are applied to the file, durably, and hdr->jhead says so (atomic) */
    uint64_t pace_pos;  /* pacing: records below it applied by copies, durable at the next fence (under apply_mu) */
    uint64_t pace_at, pace_done; /* pacing: pace_done bytes of the record at pace_at applied (under apply_mu) */
    uint64_t wpad_end, wpad_bytes; /* the last window pad (alog_jrnl_stage_commit): its end and length (atomic) */
    uint64_t claimed;   /* journal lines below it were claimed for writing ahead of the tail (claim_ahead; under j.mu) */
    uint64_t direct_from; /* copies at and past this file offset go to the file, not the journal (alog_jdirect.c) */
    uint64_t dpend_lo, dpend_hi; /* small direct copies' bytes not written back yet: one contiguous range */
    /* Deferred write-back (session 20; alog_journal.c, "Owed lines"): journal lines below `flushed` that one
     * copy's thread still owes. Under j.mu (or the route's lock), except owe_busy (atomic). */
    uint64_t owe_lo, owe_hi; /* the owed lines: [owe_lo, owe_hi), empty when equal */
    const void *owe_owner;   /* the owing thread (its alog_jowed_top's address): it confirms them at its next copy */
    uint32_t owe_busy;       /* the owner has not issued their write-back yet (a close waits for it) */
    uint64_t owe_min;        /* a copy hands out lines once this many bytes are complete (ALOG_JOWED_MIN_BYTES) */
    uint64_t owe_from;       /* ... in an epoch of at least this many bytes of records (ALOG_JOWED_FROM_BYTES, at
                              * most the bound f->junflushed_max) */
    struct alog_jpiece *pieces;
    uint32_t pieces_used, pieces_cap, pieces_live; /* pieces_live: linked into a block list */
    struct alog_jslot *slots;
    uint32_t slot_mask, slots_used;
};

struct alog_file {
    pthread_rwlock_t rw;
    int data_fd, log_fd;
    bool data_fd_borrowed; /* alog_where.data_fd_plus1: not ours to close */
    int dir_fd;               /* tracked size: the data file's directory (the log is removed at clean close) */
    char log_name[512];       /* .daxkit/<name>.alog, relative to the data file's directory */
    char *data;
    uint64_t data_len;        /* mapped length of the data file (tracked size: the capacity, grows) */
    char *reserve_base;       /* tracked size: the reserved address range holding data (alog_size.c) */
    uint64_t reserve_bytes, data_mapped;
    bool track_size;          /* the file size is part of the committed state (alog_size.c) */
    uint64_t size_pending;    /* tracked size: the size the next commit records */
    uint64_t size_phys_at_open;
    char *logmap;
    uint64_t log_len;
    bool test_memory;         /* alog_test_open_memory: the log is caller memory of log_len bytes (growth within it) */
    struct alog_phdr *hdr;
    struct alog_pent *pents;
    char *area;
    uint64_t entry_count, area_bytes;
    bool pents_clear;         /* no valid entry in the log: set by a recovery that invalidated every entry, cleared
                               * by alog_entry_publish (atomic); alog_recover then skips its entry scans */
    enum dk_medium persist_as; /* DAX also under the flush emulation */
    bool emulated;

    uint64_t epoch;           /* == hdr->epoch; changes only under rw held for writing */
    uint32_t policy;          /* enum alog_policy of the current epoch */
    uint32_t policy_mode;     /* enum daxkit_atomic_policy */
    uint32_t redo_write_pct;
    uint64_t reads_epoch, writes_epoch; /* accesses in the current epoch (atomic) */
    int broken;               /* sticky -errno after a failed medium sync */

    struct alog_node *root;   /* level 0 of the radix index */
    struct alog_ent *ents;    /* entry_count */
    uint64_t *live_bits;      /* entry_count bits: slot in use (atomic) */

    pthread_mutex_t alloc_mu;
    uint64_t *slot_used_bits;
    uint64_t slot_hint;
    struct alog_chunk *chunks;
    uint32_t chunk_count;
    uint64_t area_used_bytes;

    pthread_t ckpt_thread;
    bool ckpt_started;
    pthread_mutex_t ckpt_mu;
    pthread_cond_t ckpt_cond;
    bool ckpt_pending, ckpt_stop;
    uint32_t ckpt_interval_us;

    /* Pacing of the per-block engine: the copies release committed undo entries (alog_checkpoint.c) and apply
     * committed redo entries in creation order (alog_redo_fifo.c); the commit touches no entry. */
    bool bpace;               /* undo/redo/hybrid on fence media with DAXKIT_ATOMIC_PACE */
    uint64_t live_words_hi;   /* live_bits words ever used (atomic max; bounds the undo release's scan) */
    pthread_mutex_t brel_mu;  /* undo: one copy at a time releases committed entries (alog_bpace_release_undo) */
    uint64_t brel_word;       /* undo: live_bits word the next copy's release starts at (under brel_mu) */
    pthread_mutex_t fifo_mu;  /* redo: the FIFO of live redo entries (ent->fifo_*), taken inside a leaf's mutex */
    struct alog_ent *fifo_head, *fifo_tail; /* oldest, newest */
    struct alog_ent *fifo_apply; /* the first not applied by the copies (NULL: all are) */
    pthread_mutex_t rapply_mu; /* redo: one copy at a time applies and releases (alog_redo_pace_copy) */
    uint64_t redo_applied;    /* A, durable in hdr->redo_applied; changes under rw held for writing */

    char *retired_map[8];     /* journal: mappings of the log before it grew (alog_log_grow_map), kept until */
    uint64_t retired_len[8];  /* the close: a thread may still hold a pointer into one */
    uint32_t retired_count;
    bool journal;             /* policy DAXKIT_ATOMIC_JOURNAL: copies go to the journal, no entries */
    bool jpace;               /* journal: copies apply committed records (fence media; DAXKIT_ATOMIC_PACE) */
    uint64_t jwindow;         /* journal: a commit past this area offset goes back to the start (0: never) */
    uint64_t junflushed_max;  /* journal: records past this many bytes not written back are, by the next copy (0: never) */
    struct alog_journal j;

    struct alog_counters ctr;

    /* Every engine open in this process (alog_open.c), for the fork child handler; under its list lock. */
    struct alog_file *open_next, *open_prev;
    bool open_listed;
    /* In a fork's child: the parent's engine, let go of (alog_open.c, alog_drop_inherited): the log unmapped,
     * the child's copies of its descriptors closed. Every call but close fails with -EBADF. */
    bool inherited;
};

/* What the engine has done so far, read without locks or system calls (benchmarks: dk_bench_atomic's per-op
 * trace, DK_BENCH_TRACE; not exported). The journal's positions are logical (area offset: pos % area_bytes). */
struct alog_probe {
    uint64_t jtail, jhead, area_bytes, checkpointed, paced, sync_checkpoints, jwraps;
};
void alog_probe_of(const struct daxkit_atomic *a, struct alog_probe *p);

/* Options with defaults filled in and checked. Returns 0 or -EINVAL. */
int alog_options_resolve(const struct daxkit_atomic_options *in, struct daxkit_atomic_options *out);

/* ---- open / close (alog_open.c) ---- */
int alog_open(const char *path, const struct daxkit_atomic_options *o, struct alog_file **out);
/* The same with the file size tracked as part of the committed state (alog_size.c): the file may be
 * empty; its committed size is f->size_pending when this returns. */
int alog_open_tracked(const char *path, const struct daxkit_atomic_options *o, struct alog_file **out);
/* The same with the log at w (a log named by its file, in its root's area: alog_named.c). */
struct alog_where {
    const char *root;     /* the managed directory: the log is <root>/.daxkit/atomic/<log_name> */
    const char *log_name; /* <key>.alog (alog_named_log_name) */
    int data_fd_plus1;    /* the data file's descriptor + 1 to use and never close (0: open it by path) -- the
                           * caller keeps it while the program may hold POSIX locks on the file */
};
int alog_open_tracked_at(const char *path, const struct alog_where *w, const struct daxkit_atomic_options *o,
                         struct alog_file **out);
/* A log of a format this library does not read (alog_layout.h, ALOG_VERSION: a newer daxkit's, or an unknown
 * one): says so, naming `what` and the version, and returns -EPROTONOSUPPORT -- the same refusal as a strict
 * operation log of a newer version (oplog/format.h), an errno no other cause of a failed open returns; the
 * log is never formatted anew nor written. 0 for a version it reads or no log (no magic). */
int alog_version_refuse(const struct alog_phdr *h, const char *what);
/* Closes; with a tracked size, the file is cut to the committed size (*size_out, may be NULL). In a fork's
 * child (f->inherited) it only frees the child's memory: the log and the file are the parent's. */
int alog_close(struct alog_file *f);
int alog_close_sized(struct alog_file *f, uint64_t *size_out);

/* ---- `daxkit recover DIR` (alog_recover_dir.c) ---- */
struct alog_dir_report {
    uint64_t logs, recovered, failed, files_gone;
    uint64_t refused; /* of the failed: logs of a format this library does not read, left untouched */
};
/* Recovers the files of free logs that still have work in dir and its subdirectories. 0 or -errno. */
int alog_recover_dir(const char *dir, struct alog_dir_report *rep);

/* ---- logs named by their file (alog_named.c): DAXKIT_ATOMIC files ----
 * <root>/.daxkit/atomic/<key>.alog, key = the file's handle (name_to_handle_at: inode + generation), so a
 * renamed file keeps its log and a new file under the old name gets its own. The header keeps the key and
 * the path the file was last opened by (a hint); recovery finds the file by the hint, or by walking the root
 * for its inode and key when the hint is stale (renamed since). */
#define ALOG_NAMED_AREA ".daxkit/atomic"
/* The key of the open file fd: its handle ("h<type>-<hex>": inode and generation), or "i<dev>-<ino>" where the
 * file system gives no handles. 0 or -errno. Also the identity a path-named log (the C API's) records of its
 * file (alog_open.c). */
int alog_file_key(int fd, char *key, size_t key_bytes);
/* The log name of the open file fd ("<key>.alog"). 0 or -errno. */
int alog_named_log_name(int fd, char *name, size_t name_bytes);
/* Opens (creating) <root>/.daxkit/atomic. 0 or -errno. */
int alog_named_area_open(const char *root, int *dirfd);
/* Stores the hint (path) and the key in the log header, durably. */
int alog_named_set_hint(struct alog_file *f, const char *path, const char *log_name);
/* Recovers the free logs with work left in <root>/.daxkit/atomic (start-up, `daxkit recover`). */
int alog_recover_named(const char *root, struct alog_dir_report *rep);
/* 1: the log needs recovery (a tracked size, a committed journal, or a valid entry); 0: no or in use; -errno;
 * -EPROTONOSUPPORT, said, for a log of a version this library does not read (alog_version_refuse; `area_path`
 * names the area). *tracked: it records a size (alog_recover_dir.c). */
int alog_log_needs_work(int area_fd, const char *area_path, const char *log_name, bool *tracked);
/* Opens the log area <dir>/<area> for a scan (alog_area_next); NULL with errno set. */
DIR *alog_area_open(const char *dir, const char *area);
/* The next "<key>.alog" in the area <area_path> that needs recovery (alog_log_needs_work), or NULL at the end;
 * every log seen is counted in rep->logs, one of a version this library does not read in rep->failed and
 * rep->refused (skipped: not opened, renamed or written). *key_len: the length of <key>; *tracked: it records
 * a size. */
struct dirent *alog_area_next(DIR *d, const char *area_path, struct alog_dir_report *rep, size_t *key_len,
                              bool *tracked);

/* ---- tracked size (alog_size.c) ---- */
uint64_t alog_capacity_for(uint64_t size, uint64_t current);
int alog_map_reserved(struct alog_file *f);
/* Grows the file and its mapping to a capacity of at least `need` bytes. 0 or -errno (-EFBIG). */
int alog_grow(struct alog_file *f, uint64_t need);
bool alog_size_recorded(const struct alog_file *f, uint64_t *size);
int alog_size_prepare(struct alog_file *f);
int alog_size_settle(struct alog_file *f);
int alog_size_release(struct alog_file *f, uint64_t *size);
/* In a commit, before the epoch store: the size slot of the next epoch. */
void alog_size_stage_commit(struct alog_file *f);

#ifdef DAXKIT_TEST_BUILD
/* Test builds (the crash-state explorer): an engine over caller memory -- `data` as the file, `log` as its
 * log (formatted first when `format`) -- persisting as on dax, without files, probe, recovery or thread.
 * alog_test_log_bytes: the log bytes that o->log_bytes of log data need; log_len beyond them is room for the
 * journal to grow into (alog_jrnl_grow). */
uint64_t alog_test_log_bytes(uint64_t data_bytes);
int alog_test_open_memory(char *data, uint64_t data_len, char *log, uint64_t log_len, bool format,
                          const struct daxkit_atomic_options *o, struct alog_file **out);
void alog_test_close_memory(struct alog_file *f); /* frees the engine; the memory stays as it is */
#endif

/* ---- durability per medium (alog_durable.c) ---- */
void alog_store(struct alog_file *f, void *dst, const void *src, size_t n); /* written back, no fence */
void alog_store_word(uint64_t *dst, uint64_t v);                             /* 8-byte store + write-back */
int alog_durable_data_range(struct alog_file *f, uint64_t off, uint64_t n);  /* fence or msync */
int alog_durable_data_all(struct alog_file *f);                              /* fence or fdatasync */
int alog_durable_log_range(struct alog_file *f, const void *p, size_t n);    /* fence or msync */
int alog_durable_log_all(struct alog_file *f);                               /* fence or fdatasync */

/* ---- allocation (alog_alloc.c); all under f->alloc_mu ---- */
int alog_alloc_init(struct alog_file *f);
void alog_alloc_fini(struct alog_file *f);
/* An index slot and a log block of 1 << shift bytes. Returns the slot index or -ENOSPC. */
int64_t alog_alloc_entry(struct alog_file *f, uint32_t shift, uint64_t *log_off);
void alog_free_entry(struct alog_file *f, uint64_t idx, uint64_t log_off, uint32_t shift);

/* ---- radix index (alog_radix.c) ---- */
int alog_radix_init(struct alog_file *f);
void alog_radix_fini(struct alog_file *f);
/* The leaf of the 2 MiB region holding `off`; creates missing nodes when `create`. NULL: absent/ENOMEM. */
struct alog_leaf *alog_radix_leaf(struct alog_file *f, uint64_t off, bool create);
/* Creates the leaves of [0, bytes) now (first touches and allocations out of the copies). */
int alog_radix_prealloc(struct alog_file *f, uint64_t bytes);
/* Leaves made at map: a file's first 64 MiB (32 leaves, ~128 KiB of DRAM touched per open file, written or
 * not); past it the first copy into each 2 MiB region makes its leaf (one allocation + first touch). Was
 * 1 GiB (2 MiB of DRAM per open file: review 8, finding 7); the latency run that measured the benefit
 * (hybrid: 32 -> 0 page-faulting slow ops per 50,000) writes a 64 MiB file. */
#define ALOG_RADIX_PREALLOC_BYTES_MAX (64ull << 20)

/* ---- entries (alog_entry.c); caller holds the entry's leaf->mu ---- */
/* Publishes a new entry for the block [base, base + (1 << shift)) holding the delta [start, start+len) of
 * log data already stored. Returns 0 or -ENOSPC (no slot / log space; nothing changed). */
int alog_entry_create(struct alog_file *f, struct alog_leaf *leaf, uint64_t base, uint32_t shift,
                      struct alog_ent **out);
void alog_entry_publish(struct alog_file *f, struct alog_ent *e);
void alog_entry_set_extent(struct alog_file *f, struct alog_ent *e, uint32_t start, uint32_t len);
/* Copies the entry's delta from the log into the file (redo apply / undo rollback). No fence. */
void alog_entry_apply(struct alog_file *f, const struct alog_ent *e);
/* Invalidates the persistent entry (store + write-back, no fence). */
void alog_entry_invalidate(struct alog_file *f, struct alog_ent *e);
/* Unlinks the entry from its leaf and frees its slot and log block. */
void alog_entry_release(struct alog_file *f, struct alog_ent *e);
/* A committed entry met by a writer: checkpoint (redo) and release it, durably, with the entries it
 * superseded (their invalidation durable before its own). Returns 0 or -errno. */
int alog_entry_retire(struct alog_file *f, struct alog_ent *e);
/* Invalidates (store + write-back, no fence) the entries e superseded and detaches them from e; they are
 * obsolete once e is committed (e holds their bytes). Returns the first of the detached chain (linked by
 * `older`), or NULL. */
struct alog_ent *alog_entry_detach_older(struct alog_file *f, struct alog_ent *e);

/* ---- data path (alog_write.c, alog_read.c) ---- */
int alog_copy(struct alog_file *f, uint64_t off, const void *src, size_t n);
/* alog_copy into a journal the caller has to itself (alog_jrnl_copy_owned). */
int alog_copy_owned(struct alog_file *f, uint64_t off, const void *src, size_t n);
int alog_read(struct alog_file *f, uint64_t off, void *dst, size_t n);
/* Undo policy only: logs the current bytes of [off, off+n) (those not saved yet this epoch) so the caller
 * may then store into the file mapping in place (the userfaultfd write-protect mode, uwp.c). */
int alog_save_old(struct alog_file *f, uint64_t off, size_t n);

/* ---- commit (alog_commit.c) ---- */
int alog_sync(struct alog_file *f);
int alog_sync_locked(struct alog_file *f); /* caller holds f->rw for writing */
/* Policy of the next epoch from this epoch's counters (pure; exposed for tests). */
uint32_t alog_policy_next(uint32_t current, uint32_t mode, uint32_t redo_write_pct, uint64_t reads,
                          uint64_t writes);

/* ---- checkpoint (alog_checkpoint.c) ---- */
/* Applies every entry committed when it starts (epoch < f->epoch) to the file and frees it. Safe with or
 * without f->rw and concurrently with itself. Returns entries checkpointed, or -errno. */
int64_t alog_checkpoint_committed(struct alog_file *f);
int alog_ckpt_thread_start(struct alog_file *f);
void alog_ckpt_thread_stop(struct alog_file *f);
void alog_ckpt_kick(struct alog_file *f);
/* Locks the leaf of e if e is still the committed entry `gen` (or any committed entry when gen == 0). */
struct alog_leaf *alog_lock_if_committed(struct alog_file *f, struct alog_ent *e, uint64_t gen, uint64_t epoch);
/* Redo with pacing (alog_redo_fifo.c). The FIFO, from alog_entry_create / alog_entry_release (leaf's mutex held): */
void alog_fifo_push(struct alog_file *f, struct alog_ent *e);
void alog_fifo_remove(struct alog_file *f, struct alog_ent *e);
/* A copy (f->rw for reading, no region lock) releases the entries below the durable A and applies committed
 * entries in FIFO order, about twice the `logged` bytes (at least one entry). */
void alog_redo_pace_copy(struct alog_file *f, uint64_t logged);
/* The commit (f->rw for writing): the A it may store (0: unchanged), computed before its first fence; stored
 * after that fence into the epoch word's line (durable with it; applied_store); in DRAM after the commit. */
uint64_t alog_redo_applied_next(struct alog_file *f);
void alog_redo_applied_store(struct alog_file *f, uint64_t a);
/* Undo with pacing (session 18): a copy releases a few committed entries, none of which the commit touches.
 * Caller holds f->rw for reading and no region lock. */
void alog_bpace_release_undo(struct alog_file *f);
/* With pacing the thread is the fallback: kicked once the log is a quarter full. */
bool alog_bpace_due(const struct alog_file *f);
/* Starts a thread running fn(arg) with every signal blocked (the caller's mask is unchanged). */
int alog_thread_start(pthread_t *t, void *(*fn)(void *), void *arg);

/* ---- the journal (alog_journal.c) ---- */
int alog_jrnl_init(struct alog_file *f);
void alog_jrnl_fini(struct alog_file *f);
/* Appends [off, off+n) as records (under j.mu). 0, -ENOSPC (journal full; earlier records of a copy
 * larger than 1 MiB stay), or the sticky error. */
int alog_jrnl_copy(struct alog_file *f, uint64_t off, const void *src, size_t n);
/* The same, and it may hand this thread the journal lines it completed (struct alog_jowed, below). */
int alog_jrnl_copy_owing(struct alog_file *f, uint64_t off, const void *src, size_t n);
/* alog_jrnl_copy_owing without j.mu, for a caller that keeps every other user of the journal out (copies, reads,
 * commits, growth: the DAXKIT_ATOMIC route's lock held for writing); the checkpoint thread takes only j.apply_mu. */
int alog_jrnl_copy_owned(struct alog_file *f, uint64_t off, const void *src, size_t n);
int alog_jrnl_read(struct alog_file *f, uint64_t off, void *dst, size_t n);
/* In a commit, before its fence: journal written back, its end staged for the next epoch. */
void alog_jrnl_stage_commit(struct alog_file *f);
/* After the commit's epoch store: the staged end is committed. */
void alog_jrnl_committed(struct alog_file *f);
/* Committed journal bytes not yet applied to the file (header: jend_slot[H & 1] - jhead); 0: nothing to replay. */
uint64_t alog_jrnl_unapplied(const struct alog_phdr *h);
/* Replays the committed journal into the file and marks it applied, durably (recovery; needs no DRAM state). */
int64_t alog_jrnl_apply_committed(struct alog_file *f);
/* The same on a live journal, in steps, from any thread and without f->rw (the checkpoint thread, a
 * writer short of room, close). Returns records applied or -errno. */
int64_t alog_jrnl_checkpoint(struct alog_file *f);
/* The uncommitted records alone fill the journal (more written between two syncs than it holds): the area
 * doubled, so that the next sync still commits the whole group. The caller excludes every copy, read and
 * sync (the route's lock for writing). 0, or -errno (-ENOSPC: at the limit, or the medium is full) with
 * nothing changed: the caller then commits early. */
int alog_jrnl_grow(struct alog_file *f);
/* The log file grown to new_len bytes (allocated, its size durable) and mapped anew; the old mapping is
 * retired (unmapped at close). 0 or -errno (nothing changed). */
int alog_log_grow_map(struct alog_file *f, uint64_t new_len);
/* Pacing (alog_journal.c says how): copies apply committed records; a commit makes them durable with its
 * first fence. pace_begin (before that fence): the head the commit may store, with j.apply_mu held, or 0;
 * after the fence, pace_head stores it in the epoch word's line; after the commit, pace_done (ok: the DRAM
 * head moves). */
uint64_t alog_jrnl_pace_begin(struct alog_file *f);
void alog_jrnl_pace_head(struct alog_file *f, uint64_t to);
void alog_jrnl_pace_done(struct alog_file *f, uint64_t to, bool ok);
/* A quarter full with the checkpoint thread (it applies), half without (the sync applies). */
bool alog_jrnl_due(const struct alog_file *f);
/* The journal's window (f->jwindow) for its area: ALOG_JWINDOW_BYTES, at most a quarter of the area
 * (test builds: DAXKIT_TEST_ATOMIC_JWINDOW bytes, 0 = off). */
uint64_t alog_jrnl_window(const struct alog_file *f);
/* The journal's bound on the bytes a sync writes back (f->junflushed_max): ALOG_JUNFLUSHED_MAX_BYTES (test
 * builds: DAXKIT_TEST_ATOMIC_JUNFLUSHED bytes, 0 = no bound, the behaviour before session 17). */
uint64_t alog_jrnl_unflushed_max(void);
/* Owed lines (session 20, alog_journal.c): a caller that copies under a lock registers a record on its stack
 * with owed_begin before the copy and calls owed_end after its last lock release; a journal copy in between
 * may hand it the journal lines it completed, which owed_end writes back then -- outside every lock, so that
 * the wait for them falls at the thread's next locked instruction, not at this copy's unlock. Nested calls
 * (a signal handler's copy) register their own record. */
struct alog_jowed {
    struct alog_file *f; /* the journal whose lines this thread owes, or NULL */
    struct {             /* the lines, as addresses in the mapping of the hand-out (a growth may map the log anew
                          * meanwhile; the old mapping stays until the close, which waits): up to the area's end,
                          * then from its start */
        const char *p;
        uint64_t n;
    } piece[2];
    struct alog_jowed *outer;
};
extern __thread struct alog_jowed *alog_jowed_top __attribute__((tls_model("initial-exec"))); /* innermost */
void alog_jrnl_owed_write_back(struct alog_jowed *o);
static inline void alog_jrnl_owed_begin(struct alog_jowed *o) {
    o->f = NULL, o->outer = alog_jowed_top;
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* a handler's copy sees the record whole */
    alog_jowed_top = o;
}
static inline void alog_jrnl_owed_end(struct alog_jowed *o) {
    alog_jowed_top = o->outer;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (o->f) alog_jrnl_owed_write_back(o);
}
/* Before the journal's mappings go (close; the caller holds the lock copies take): waits until no other
 * thread is between handing and writing back (a few instructions, unless preempted). */
void alog_jrnl_owed_quiesce(struct alog_file *f);
/* This thread is between a copy that handed it lines of f's journal and their write-back (a signal handler
 * that interrupted it, and forked). */
bool alog_jrnl_owed_mine(const struct alog_file *f);
/* A fork child's: the lines this thread owes of f are the parent's to write back -- its records of them emptied,
 * so the write-back after the handler returns touches nothing of the log the child lets go of. */
void alog_jrnl_owed_cancel_mine(const struct alog_file *f);
#ifdef DAXKIT_TEST_BUILD
/* Test hook: a deliberately broken protocol step, for the explorer to catch (atomic_explore). */
enum alog_broken {
    ALOG_BROKEN_NONE = 0,
    ALOG_BROKEN_PACE_HEAD_BEFORE_FENCE, /* pacing stores jhead before the fence that makes the applied bytes durable */
    ALOG_BROKEN_SIZE_SAME_SLOT,         /* a commit stores the new size into the committed epoch's slot */
    ALOG_BROKEN_WINDOW_PAD_NOT_WRITTEN_BACK, /* a window pad's header left in the cache at the commit */
    ALOG_BROKEN_REDO_APPLIED_EARLY,     /* redo pacing: the commit stores A before the fence that makes the applied bytes durable */
    ALOG_BROKEN_UNDO_RELEASE_UNCOMMITTED, /* copies release undo entries of the current (uncommitted) epoch too */
    ALOG_BROKEN_RECOVER_INVALIDATE_FIRST, /* recovery empties the log before the recovered bytes are durable */
    ALOG_BROKEN_JGROW_HEADER_NOT_DURABLE, /* journal growth stores the larger area size without write-back */
    ALOG_BROKEN_UWP_COMMIT_BEFORE_PAGES, /* uwp's msync commits, then writes the epoch's dirty pages back */
    ALOG_BROKEN_UWP_SAVE_UNFENCED, /* uwp's write fault lets the store go with the undo entry written back, unfenced */
    ALOG_BROKEN_JDIRECT_NOT_WRITTEN_BACK, /* the commit leaves small direct copies' bytes in the cache */
    ALOG_BROKEN_COMMIT_LINE_NOT_WRITTEN_BACK, /* the commit line's slots not written back before the fence */
    ALOG_BROKEN_JDIRECT_UNDER_RECORD, /* a record does not raise j.direct_from: direct copies land under it */
    ALOG_BROKEN_PENTS_CLEAR_STICKY, /* a publish leaves pents_clear set: a close skips the entry scans it needs */
    ALOG_BROKEN_VERSION_NOT_STORED, /* the first commit that stores A leaves the log at version 1 */
    ALOG_BROKEN_JOWED_UNTRACKED, /* a copy hands its lines to its thread but records no owner: `flushed` moves past
                                  * lines the sync then never writes back (the unsafe "moved at the next copy") */
};
extern int alog_test_broken;
/* Under ALOG_BROKEN_UWP_SAVE_UNFENCED: this thread's alog_durable_log_* skip their fence (dax). */
extern __thread bool alog_test_unfenced;
/* Test hook: a pad record from the tail to the end of the area, so the next records reuse the area's start. */
int alog_jrnl_test_pad_to_lap_end(struct alog_file *f);
#endif
/* Maps the log data area's pages now (the first lap's page faults out of the writes; any policy). */
void alog_jrnl_prefault(struct alog_file *f);
/* The DRAM state of an empty (fully applied) journal at hdr->jhead, after recovery. */
void alog_jrnl_reset_dram(struct alog_file *f);

/* Copies past the committed state (alog_jdirect.c): a tracked-size journal on fence or volatile media copies
 * bytes at and past j.direct_from -- the committed size, and the end of every record in the journal --
 * straight into the file; recovery cuts the file to the committed size, so they vanish with a crashed epoch,
 * and the commit makes them durable with its fence. */
void alog_jdirect_init(struct alog_file *f);
static inline bool alog_jdirect_takes(const struct alog_file *f, uint64_t off) { return off >= f->j.direct_from; }
void alog_jdirect_copy(struct alog_file *f, uint64_t off, const char *src, size_t n);
void alog_jdirect_stage_commit(struct alog_file *f);
/* DRAM index (alog_jindex.c), under j.mu */
int alog_jindex_init(struct alog_file *f);
void alog_jindex_fini(struct alog_file *f);
void alog_jindex_clear(struct alog_file *f);
int alog_jindex_add(struct alog_file *f, uint64_t off, uint32_t len, uint64_t src);
/* Copies the pieces over [off, off+n) of dst, oldest first, skipping those below journal position `from`
 * (applied to the file already; their space may be reused). */
void alog_jindex_overlay(struct alog_file *f, uint64_t off, char *dst, uint64_t n, uint64_t from);

/* ---- recovery (alog_recover.c) ---- */
/* Applies the persistent entries by the recovery rule with `threads` threads (0: by size), makes the
 * file durable, then (unless keep_entries) invalidates every entry. Idempotent. Returns 0 or -errno. */
int alog_recover(struct alog_file *f, uint32_t threads, bool keep_entries);
#ifdef DAXKIT_TEST_BUILD
/* Test hook: when nonzero, each recovery thread applies at most this many entries, then recovery stops
 * as a crash would (nothing made durable or invalidated) and returns -EINTR. */
extern uint64_t alog_test_recover_apply_max;
#endif

#define ALOG_CTR_ADD(f, field, n) __atomic_add_fetch(&(f)->ctr.field, (n), __ATOMIC_RELAXED)

#endif
