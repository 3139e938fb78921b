/* Strict mode's operation log: a per-process file of 64-byte lines on the managed file system.
 * Design and proofs: docs/oplog.md. Tests: tests/oplog, tests/crash, tests/explorer.
 *
 * A record is one head line plus 0..DK_OPLOG_DATA_LINES_MAX data lines, written to consecutive slots:
 *
 *   line  = 16-byte line header + 48-byte payload
 *   head  : payload = the caller's fixed 48 bytes (struct dk_oplog_op, or anything opaque)
 *   data  : payload = the next 48 bytes of the caller's variable data (names, small-write bytes)
 *
 * The head's crc32c covers the head (minus the crc field) and every data line, so one fence after all the
 * record's lines are written makes it durable *and* valid: recovery accepts a record only when the crc
 * matches, so a torn record (some lines on media, some not) is never accepted. Every line also carries the
 * log's 32-bit generation; recovery accepts only lines of the generation in the header, so reset (after the
 * caller checkpointed) is one persisted header line, not a rewrite of the file.
 *
 * Concurrency: the tail (next free slot) lives in DRAM and is advanced by compare-and-swap; threads write
 * their records into disjoint slots at the same time. Records complete out of order, so recovery scans the
 * whole log and reports records after a hole (an unfinished record of a thread that was interrupted).
 * Slot order is reservation order: an operation acknowledged before another started has the lower seq.
 *
 * Functions return 0 or -errno and keep errno as they found it. */
#ifndef DK_OPLOG_OPLOG_H
#define DK_OPLOG_OPLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DK_OPLOG_LINE_BYTES 64u
#define DK_OPLOG_PAYLOAD_BYTES 48u /* fixed bytes of a head; data bytes of a data line */
#define DK_OPLOG_HEADER_LINES 2u   /* two alternating header slots (generation g lives in slot g % 2) */
#define DK_OPLOG_RECORD_LINES_MAX 256u
#define DK_OPLOG_DATA_LINES_MAX (DK_OPLOG_RECORD_LINES_MAX - 1u)
/* 255 x 48 = 12,240 bytes: two PATH_MAX names (rename) or one sub-block write of up to 12 KiB. */
#define DK_OPLOG_DATA_BYTES_MAX (DK_OPLOG_DATA_LINES_MAX * DK_OPLOG_PAYLOAD_BYTES)
#define DK_OPLOG_BYTES_MIN (64u * 1024u)
#define DK_OPLOG_BYTES_DEFAULT (128u << 20) /* SplitFS's size: 2M one-line records between checkpoints */

/* Record types. 1..63 are strict mode's; 64..255 are free for other users of the log. 0 is invalid. */
enum dk_oplog_type {
    DK_OPLOG_WRITE_STAGED = 1, /* data in a staging file: op.staging_id/staging_offset -> file_offset */
    DK_OPLOG_WRITE_INLINE = 2, /* sub-block write: the bytes are the record's data (length bytes) */
    DK_OPLOG_APPEND = 3,       /* staged append: as WRITE_STAGED, and the size grows to file_offset+length */
    DK_OPLOG_TRUNCATE = 4,     /* size becomes file_offset */
    DK_OPLOG_CREATE = 5,       /* data: the path (NUL-terminated) */
    DK_OPLOG_UNLINK = 6,       /* data: the path */
    DK_OPLOG_RENAME = 7,       /* data: old path NUL new path NUL */
    DK_OPLOG_RELINK_DONE = 8,  /* staged data of (dev, ino) up to seq `aux` is in the file */
    DK_OPLOG_CHECKPOINT = 9,   /* everything before this record is applied */
    DK_OPLOG_WRITE_STAGED_CRC = 10, /* as WRITE_STAGED, op.aux = crc32c of the staged bytes: they and the
                                       record are made durable by the record's one fence, in no order, so
                                       recovery replays it only when the staged bytes match (else: torn) */
    DK_OPLOG_WRITE_DELTA = 11, /* an overwrite logged by its changed bytes (session 29, docs/strict.md "Delta
                                  records"): data = segments {u32 offset in the write, u32 length, bytes};
                                  op.length = the whole write's length (0: a no-op record), op.aux bits 31..0
                                  = crc32c of the write's bytes: replayed only when the file's bytes with the
                                  segments laid over them have it */
    DK_OPLOG_TYPE_USER = 64,
};

/* The documented 48-byte head payload strict mode fills. Opaque to the log: any 48 bytes may be logged. */
struct dk_oplog_op {
    uint64_t dev, ino;       /* the file */
    uint64_t file_offset;    /* byte offset in the file (TRUNCATE: the new size) */
    uint64_t staging_offset; /* byte offset in the staging file */
    uint32_t length;         /* bytes */
    uint32_t staging_id;     /* which staging file (the caller's numbering) */
    uint64_t aux;            /* type-specific (RELINK_DONE: seq; CREATE: mode; RENAME: flags;
                                WRITE_STAGED_CRC: crc32c of the staged bytes in bits 31..0). Strict mode's
                                write and truncate records: bits 63..32 the file's identity (0: none;
                                src/upath/ident.c), so recovery never takes a file that reused the inode
                                number for the record's file */
};
_Static_assert(sizeof(struct dk_oplog_op) == DK_OPLOG_PAYLOAD_BYTES, "head payload is 48 bytes");

struct dk_oplog;

/* Creates <dir>/<tag>.<pid>.<n>.log (n: the first free number), `bytes` long (rounded down to whole lines;
 * at least DK_OPLOG_BYTES_MIN), zero-filled and allocated (posix_fallocate; on a page-cache medium zeros are
 * written and made durable instead, so no unwritten extent is left to convert later; no SIGBUS), generation 1
 * persisted in its header, and holds flock(LOCK_EX) on it for the life of the log -- that lock is how
 * dk_oplog_find_orphans tells a live log from one whose owner died. The file is built under a .tmp name and
 * renamed when complete, so no one ever sees a half-initialised log. How records are made durable follows
 * the medium of `dir` (persist/media.h): dax (or DAXKIT_PERSIST=flush): stores + cache-line flush + one
 * fence; page cache: the record's lines by pwrite (never through the mapping) + fdatasync; tmpfs: the same as dax (flushes are cheap and keep
 * the explorer's trace complete). `tag`: letters, digits, '-' and '_' only (e.g. "strict"). */
int dk_oplog_open(const char *dir, const char *tag, size_t bytes, struct dk_oplog **log_out);

/* Appends one record: head line with `type` and the 48 bytes at `fixed48` (NULL: zeros), then `data_len`
 * bytes of `data` in ceil(data_len/48) data lines. Returns 0 when the record is durable (one fence), with
 * its sequence number (generation << 32 | slot) in *seq_out (may be NULL); -ENOSPC when the log is full
 * (checkpoint, dk_oplog_reset, retry); -EINVAL for a bad type or data_len > DK_OPLOG_DATA_BYTES_MAX;
 * -EIO (sticky) when pwrite/fdatasync failed on a page-cache medium. Thread-safe; never blocks on other appenders. */
int dk_oplog_append(struct dk_oplog *log, unsigned type, const void *fixed48, const void *data, size_t data_len,
                    uint64_t *seq_out);

/* dk_oplog_append in two halves, for a caller with work between them that no locked instruction may follow
 * before the record's fence: the reservation (a compare-and-swap on the tail, which on x86 waits for every
 * earlier non-temporal store to drain) comes first, then the caller's stores (strict mode's staged copy),
 * then dk_oplog_commit writes the record and fences once. A reservation never committed leaves its slots
 * empty (recovery skips them, as a record cut before its head was written). Return values as
 * dk_oplog_append's (reserve: -ENOSPC, -EINVAL for data_len, the sticky error; commit: -EINVAL for a bad
 * type, -EIO). The reservation is an acquire-release read-modify-write of the tail: what a thread stored
 * before its reservation is visible to every thread after a later one (strict mode's apply order relies on
 * it: strict.c). */
struct dk_oplog_reservation {
    uint64_t slot;
    uint32_t lines;
    size_t data_len;
    uint64_t seq; /* the record's seq (as dk_oplog_commit's seq_out), known from the reservation on */
    int signal_safe; /* dk_oplog_reserve_spare's: the commit allocates no memory (a page-cache record's buffer is mmap'ed) */
};
int dk_oplog_reserve(struct dk_oplog *log, size_t data_len, struct dk_oplog_reservation *res);

/* The spare: the last `lines` slots of every generation, held back from dk_oplog_reserve (which answers
 * -ENOSPC before them) for dk_oplog_reserve_spare -- strict mode's signal handler writes, which cannot wait for
 * the checkpoint a full log needs while their own thread's operation holds it off. Capped at a quarter of
 * the capacity; 0 (the default) holds nothing back. */
void dk_oplog_set_spare(struct dk_oplog *log, uint64_t lines);
/* dk_oplog_reserve for a caller that may have interrupted this thread inside the log (a signal handler): may
 * use the spare; never waits for a lock this thread may hold (-EAGAIN where the allocation lock is this
 * thread's); its commit allocates no memory. */
int dk_oplog_reserve_spare(struct dk_oplog *log, size_t data_len, struct dk_oplog_reservation *res);
int dk_oplog_commit(struct dk_oplog *log, const struct dk_oplog_reservation *res, unsigned type, const void *fixed48,
                    const void *data, uint64_t *seq_out);

/* Takes back a record (seq from dk_oplog_append or dk_oplog_commit; with data only in a mapped log) the
 * caller's operation did not do after all -- a truncate the kernel refused, a strict write that failed with
 * nothing applied -- so that recovery never replays it: its head line becomes an empty
 * slot, durable before the return. Only while no reset can run (the caller excludes it). A crash before
 * the retraction is durable replays the operation, as for any operation in flight. 0 or -errno. */
int dk_oplog_retract(struct dk_oplog *log, uint64_t seq);

/* Completion marks (docs/oplog.md "Completion marks"): the caller says that the operation of record `seq`
 * is applied -- in the file as the process's later operations and other processes see it -- by one plain
 * store into a mapped word of <log>.done (no flush, no fence: it serves a recoverer of the same boot and
 * mount, for which a process's death loses no store). Recovery of the same boot and mount then hands the
 * record over with done = true (dk_oplog_record), and strict mode replays only the records without: the
 * operations in flight at the death, not the completed ones, which would go over what other processes did
 * since. After a reboot (or a remount, where the log records its mount) no mark counts. A log without
 * marks (a file system that cannot tell its mount again, on the page cache; no room for the file) ignores
 * this. Thread-safe; async-signal-safe. */
void dk_oplog_mark_done(struct dk_oplog *log, uint64_t seq);
/* Gives the log completion marks: <log>.done is made next to it (after the log's name: marks never outlive
 * their log unreplayed; dk_oplog_find_orphans removes marks whose log is gone). A log's user that replays
 * and unlinks logs itself removes the marks with the log (dk_oplog_marks_path). Best effort: without them
 * dk_oplog_mark_done does nothing. Call before the log is shared, after dk_oplog_open. */
void dk_oplog_start_marks(struct dk_oplog *log);
/* Whether the log keeps completion marks (tests, diagnostics). */
bool dk_oplog_has_marks(const struct dk_oplog *log);
/* The marks file of the log at `log_path` (<name>.log -> <name>.done) into out; false when the path does
 * not end in ".log" or does not fit. */
bool dk_oplog_marks_path(const char *log_path, char *out, size_t cap);
/* Unlinks the log's file and its marks file (the caller holds the log: a live owner's removal). 0 or -errno
 * of the log's unlink. */
int dk_oplog_unlink(const struct dk_oplog *log);

/* After the caller has checkpointed (everything logged so far is applied and durable elsewhere): starts a
 * new generation, persisted in the header before this returns; the tail goes back to slot 0. Old records
 * become invisible to recovery at the instant the header line persists. The caller must make sure no
 * append runs concurrently (strict mode holds its checkpoint lock). -EOVERFLOW after 2^32-1 generations
 * (close with remove and open a new log). */
int dk_oplog_reset(struct dk_oplog *log);

/* Replaces the log's descriptors by move_fd(fd) (which returns the new descriptor, or fd itself), and
 * closes them with close_fd at dk_oplog_close: a library keeps them out of the program's way (high
 * numbers, hidden from the program's close/dup2). The flock stays held (it belongs to the open file, not
 * the number). Call before the log is shared. */
void dk_oplog_move_fds(struct dk_oplog *log, int (*move_fd)(int fd), void (*close_fd)(int fd));

/* Unmaps and closes (which releases the lock). remove != 0: unlink the file first (only when everything
 * logged is applied). Returns 0 or -errno of the unlink. */
int dk_oplog_close(struct dk_oplog *log, int remove);

/* In a fork child: lets go of the parent's log without touching it -- unmaps it and closes the child's
 * copies of its descriptors. The flock stays with the parent (its copy of the open file description still
 * holds it), and once the parent is gone no descriptor of the child keeps it: recovery then finds the log
 * an orphan and replays it (review 9, finding 11: a child that kept the copy made the log look alive, and
 * the start-up reclaim removed it unreplayed). Never unlocks, never unlinks, never writes. */
void dk_oplog_drop_inherited(struct dk_oplog *log);

/* ---- parked logs (docs/oplog.md "Parked logs") ----
 * A log whose owner finished cleanly can be kept for a later process of the same user instead of removed: its
 * file's blocks and pages are reused (a new log's first 2 MiB are a huge page the kernel clears, on a huge-page
 * tmpfs). Names start with DK_OPLOG_PARKED_PREFIX; dk_oplog_find_orphans passes them over (they hold no valid
 * record). Flush media only (DAX, tmpfs, DAXKIT_PERSIST=flush): -EOPNOTSUPP on the page cache. */
#define DK_OPLOG_PARKED_PREFIX "parked-"
bool dk_oplog_parked_name(const char *name);
/* After the caller checkpointed (everything logged is applied and durable): starts a new generation if the one
 * in force holds records (dk_oplog_reset: no record is valid from then on), renames the log to `parked_name`
 * in its directory (RENAME_NOREPLACE: -EEXIST when taken) and removes its completion marks. The log stays open
 * and locked (close it, or the process's end lets it go); nothing may be appended any more. 0 or -errno (the log
 * then keeps its name). */
int dk_oplog_park(struct dk_oplog *log, const char *parked_name);
/* Takes the parked log <dir>/<parked_name> for this process, as dk_oplog_open would make one: locks it
 * (-EBUSY when another process holds it), checks it is this user's and `bytes` long (else it is removed:
 * -ESTALE), calls before_rename(new name, ctx) (NULL: none; a nonzero return aborts), renames it to
 * <tag>.<pid>.<n>.log and fsyncs the directory (a parked name is never recovered: no record may be written
 * under it), and persists generation + 1 of the one in force before returning -- so no line written before
 * is ever valid again. -ENOENT when there is none; -EOPNOTSUPP on a page-cache medium. */
int dk_oplog_adopt(const char *dir, const char *parked_name, const char *tag, size_t bytes,
                   int (*before_rename)(const char *log_name, void *ctx), void *ctx, struct dk_oplog **log_out);

/* Accessors: the file path, the mapping (for the crash-state explorer), capacity and the current state. */
const char *dk_oplog_path(const struct dk_oplog *log);
void *dk_oplog_mapping(const struct dk_oplog *log, size_t *bytes_out);
uint64_t dk_oplog_generation(const struct dk_oplog *log);
uint64_t dk_oplog_lines_used(const struct dk_oplog *log);
uint64_t dk_oplog_lines_capacity(const struct dk_oplog *log);
/* Slots a record with data_len data bytes takes in this log (a direct log pads records to whole sectors),
 * and the slot where the first record of a generation goes (a direct log: the first sector after the
 * header lines; otherwise 0). For tests that compute where a record lies. */
uint32_t dk_oplog_record_lines(const struct dk_oplog *log, size_t data_len);
uint64_t dk_oplog_first_slot(const struct dk_oplog *log);
/* How this log's records reach the medium (tests and diagnostics): stores + cache-line flush + fence (DAX,
 * tmpfs), pwrite through the page cache, or pwrite through its O_DIRECT descriptor. */
enum dk_oplog_records_by { DK_OPLOG_RECORDS_FLUSHED, DK_OPLOG_RECORDS_BUFFERED, DK_OPLOG_RECORDS_DIRECT };
enum dk_oplog_records_by dk_oplog_records_by(const struct dk_oplog *log);

/* ---- recovery ---- */

struct dk_oplog_record {
    uint64_t seq;          /* generation << 32 | slot of the head line */
    unsigned type;
    const void *fixed48;   /* the head payload (48 bytes; points into the image) */
    const void *data;      /* NULL when data_len == 0; gathered into a buffer when the record has data */
    size_t data_len;
    uint64_t area_dev;     /* the log header's: st_dev of the log's directory when the log was created (0:
                              unknown, a log from before this was recorded) */
    bool done;             /* completion-marked (dk_oplog_mark_done), and the marks are this boot's and mount's
                              (dk_oplog_scan only; an image has no marks) */
    bool marks;            /* the log's marks are in force (this boot's and mount's): the records not done are the
                              operations in flight at the death, every earlier one is in the file -- false after a
                              power loss or remount, or without marks: every record since the checkpoint replays */
};

struct dk_oplog_scan_stats {
    uint64_t generation;       /* the generation recovery used (0: no valid header) */
    uint64_t records_valid;    /* handed to the callback */
    uint64_t records_torn;     /* heads of the current generation whose crc or shape is wrong */
    uint64_t lines_orphaned;   /* data lines of the current generation that belong to no valid head */
    uint64_t lines_scanned;    /* record slots examined */
    uint64_t holes;            /* runs of empty/torn slots followed by a valid record (interrupted appends);
                                  empty slots before the first valid record do not count */
    uint64_t records_done;     /* of records_valid, completion-marked (dk_oplog_record.done) */
    uint64_t last_slot_used;   /* 1 + the last slot of the last valid record (where a tail would resume) */
    uint64_t scan_ns;
};

/* Called once per valid record, in slot order. Return 0 to continue, anything else to stop the scan (the
 * value is returned by the scan). */
typedef int (*dk_oplog_record_fn)(const struct dk_oplog_record *rec, void *ctx);

/* Reads the log file at `path` (read-only; no lock taken) and calls `cb` for every valid record of the
 * current generation. Returns 0, the callback's nonzero value, -EINVAL when neither header slot is valid
 * (stats->generation == 0), or -errno. `stats` may be NULL. */
int dk_oplog_scan(const char *path, dk_oplog_record_fn cb, void *ctx, struct dk_oplog_scan_stats *stats);
/* The same over an in-memory image of a log file (what the explorer materialises). */
int dk_oplog_scan_image(const void *image, size_t bytes, dk_oplog_record_fn cb, void *ctx,
                        struct dk_oplog_scan_stats *stats);

/* Calls `cb(path, ctx)` for every <dir>/<tag>.*.log whose flock is free (its owner is gone), while holding
 * that lock, so two recoverers never handle the same log at once and a live owner is never disturbed; a
 * log unlinked or replaced by another recoverer between the directory read and the lock is skipped. The
 * callback typically scans, replays, and unlinks the path. Unpublished <tag>.*.tmp files whose lock is
 * free (the creator died while building them; they never held a record) are unlinked, and so are
 * <tag>.*.done completion marks whose log is gone. `tag` NULL: any tag.
 * Returns the number of orphans handed to cb, or -errno (a callback's negative value stops the walk and is
 * returned). */
typedef int (*dk_oplog_orphan_fn)(const char *path, void *ctx);
int dk_oplog_find_orphans(const char *dir, const char *tag, dk_oplog_orphan_fn cb, void *ctx);

#ifdef DAXKIT_TEST_BUILD
/* Test builds only: deliberately broken protocol variants the explorer must catch (tests/explorer). */
enum dk_oplog_broken {
    DK_OPLOG_BROKEN_NONE = 0,
    DK_OPLOG_BROKEN_CRC_HEAD_ONLY, /* the crc covers the head line only, not the data lines */
    DK_OPLOG_BROKEN_NO_FENCE,      /* append returns after the flushes, before the fence */
    DK_OPLOG_BROKEN_RESET_NO_FENCE, /* reset writes the new header without flush + fence */
    DK_OPLOG_BROKEN_SCAN_STOPS_AT_HOLE, /* recovery stops at the first empty or torn slot */
};
extern int dk_oplog_test_broken;
/* Test builds: nonzero plays a kernel that refuses RWF_DSYNC (EOPNOTSUPP); the count of RWF_DSYNC writes
 * tried (a log asks once, then uses pwrite + fdatasync: tests/oplog/oplog_basic.c). */
extern int dk_oplog_test_refuse_rwf_dsync;
extern unsigned long dk_oplog_test_rwf_dsync_tries;
/* Test builds: nonzero plays an O_DIRECT descriptor that refuses every write with EINVAL (the log must go on
 * through its buffered descriptor). */
extern int dk_oplog_test_direct_einval;
/* Test builds: allocation steps zero-written through the direct descriptor (oplog_zero_direct). */
extern unsigned long dk_oplog_test_zero_direct_steps;
/* Test builds: nonzero (or DAXKIT_TEST_ADOPT_RESTART=1) makes dk_oplog_adopt start at generation 1 as a new file
 * would, instead of the next after the one in force (the bug the explorer and the adoption tests must catch). */
extern int dk_oplog_test_adopt_restart;
#endif

#endif
