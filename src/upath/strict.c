/* Strict mode (SplitFS strict, redo flavour): every write and truncate is recorded in the process's
 * operation log (src/oplog) before it touches the file, then applied through the sync-mode path, which
 * makes it durable before the call returns. A crash between the record and the end of the apply is
 * repaired by recovery, which replays the records of a log whose owner is gone, in order; a crash before
 * the record is durable leaves the file untouched. So each operation is all-or-nothing and, once
 * acknowledged, durable.
 *
 * Per write, one of two record shapes (one 64-byte head line and one fence either way):
 *   inline  the bytes travel in the record's data lines (writes up to DAXKIT_STRICT_INLINE_BYTES): a
 *           100-byte write logs 192 bytes instead of paying for a block-sized staging copy;
 *   staged  the bytes are copied (non-temporal) into the process's strict staging file at a 64-byte
 *           aligned bump offset, and the record points there (logical pointer, not the data).
 * Completion marks (session 13; review 13, finding 1): once its operation is applied, a record is marked in
 * the log's marks (dk_oplog_mark_done: one plain store), and recovery in the same boot and mount replays only
 * the unmarked ones -- the operations in flight at the death -- never a completed one over what another
 * process wrote after it (a survivor that took the dead process's lock, or appended without locks). After a
 * power loss or remount the marks do not count, and the rest of this comment is what bounds the replay.
 *
 * Checkpoint: every record before it is applied and durable (each operation completes synchronously), so
 * a checkpoint waits for operations in flight, resets the log (one persisted header line) and the staging
 * bump pointer. It runs when the log or the staging file is full and at every publish point of a file
 * except fsync and fdatasync (close, lock release, fork, exec, a call passed to the kernel, ...), so an old
 * record is never replayed over what another process wrote to the file after such a point. fsync is not
 * a checkpoint (up_strict_fsync: it applies the waiting overwrites, nothing more), nor is any ordering the
 * program makes by other means (a pipe, a socket, shared memory, a marker file): another process that
 * writes the same bytes after this one's fsync or message, with no close or lock release of this process
 * in between, can see its bytes replaced by this process's record after this process crashes -- the
 * limitation docs/strict.md states (review 9, finding 5: this comment claimed fsync was a checkpoint).
 *
 * Metadata operations (create, unlink, rename) are logged before the kernel does them and made durable
 * with an fsync of the directory (and the file, for create); the kernel file system makes each of them
 * atomic, so recovery reports them and replays none. */
#include <fcntl.h>
#include <sched.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/area.h"
#include "common/config.h"
#include "common/crashpoint.h"
#include "common/crc32c.h"
#include "common/internal_fd.h"
#include "common/log.h"
#include "common/pwrite_all.h"
#include "common/stats.h"
#include "common/userptr.h"
#include "oplog/oplog.h"
#include "persist/persist.h"
#include "shim/libc.h"
#include "upath/delta.h"
#include "upath/guard.h"
#include "upath/inflight.h"
#include "upath/fsize.h"
#include "upath/internal.h"
#include "upath/io.h"
#include "upath/upath.h"

#define STRICT_STAGING_ID 1u /* the strict staging file of a tag: <tag>.strict.stg */
#define STRICT_STG_CHUNK_BYTES DK_HUGE_BYTES /* staging space is allocated as the bump pointer reaches it */
#define STRICT_DIRTY_FILES_MAX 32u /* files with applied, not yet durable bytes (page cache); full: checkpoint */
/* DAXKIT_STRICT_APPLY=write (the default): every staged write is applied before it returns, so a checkpoint
 * costs two fences (and an fdatasync per file that grew) and nothing else. One is taken when a staged write
 * would carry the staging bump pointer past this mark, instead of at the staging file's end: the process
 * then allocates and zero-fills 8 MiB of staging, not 64 (a huge-tmpfs page zeroed per 512 4 KiB writes
 * cost more CPU than the write itself: 100,000 writes, CPU per write 922 -> 650 ns with 4 MiB). */
#define STRICT_STG_REUSE_BYTES (8ull << 20)
#define STRICT_LAZY_MAX 16384u /* staged overwrites waiting for the checkpoint (64 MiB of 4 KiB ones); full: checkpoint */
#define STRICT_LAZY_HASH (2u * STRICT_LAZY_MAX) /* the apply's (file, offset) -> newest entry table */
/* An apply that coalesced away less than this share of its entries (percent) turns the staged-overwrite
 * wait off for the next STRICT_EAGER_CHECKPOINTS checkpoints: reading the staged bytes back from memory
 * costs more than the second copy at the write saves unless repeated overwrites are skipped. */
#define STRICT_LAZY_MIN_COALESCED_PCT 25u
#define STRICT_EAGER_CHECKPOINTS 8u
/* Delta records (docs/strict.md "Delta records"): overwrites up to this size are compared with the file; the
 * segments may take a quarter of the write, at most STRICT_DELTA_CAP bytes (a buffer on the writer's stack); the
 * k-th compare in a row that finds more (k <= STRICT_DELTA_MISSES_MAX) turns comparing off for the file's next
 * 2^k - 1 writes: a file rewritten wholly pays a compare a 32 writes, one with a few such writes nearly none. */
#define STRICT_DELTA_MAX_BYTES (64u << 10)
#define STRICT_DELTA_CAP 2048u
#define STRICT_DELTA_MISSES_MAX 5u
/* The log's last slots, for signal handlers' records while it is full (strict_nested: no checkpoint there) */
#define STRICT_NESTED_SPARE_LINES (4u * DK_OPLOG_RECORD_LINES_MAX) /* four largest records (64 KiB) */

/* A staged overwrite whose record is durable and whose bytes are not in the file yet: the checkpoint
 * stores them there (flush and volatile media; see log_write). */
struct strict_lazy {
    struct up_file *f;  /* alive until the checkpoint, like strict_dirty's */
    uint64_t off;       /* file offset */
    uint64_t stg_off;   /* where the bytes are in the staging file */
    uint64_t seq;       /* the record's place in the log (generation << 32 | slot): the apply order */
    uint32_t len;       /* 0: reserved, but its record was not written (skipped) */
};

/* A file with applied bytes or a size change not yet durable, covered by its records until the checkpoint
 * makes them durable with an fdatasync of `fd`. Page cache: every written file (the applied bytes are in
 * the page cache); flush medium: files whose size grew (a published append is file-system metadata: the
 * applied bytes themselves were written back as they were made, and one fence covers them all). */
struct strict_dirty {
    struct up_file *f; /* alive until the checkpoint: closing a file is a checkpoint before it is dropped */
    int fd;            /* the descriptor the program last wrote the file through (note_applied) */
};

struct up_strict {
    struct dk_oplog *log;
    pthread_rwlock_t ck;     /* read: an operation between its record and the end of its apply; write: checkpoint */
    uint32_t ck_closed;      /* a writer of ck is in: the write path's fast read side takes ck instead (below) */
    uint32_t ck_epoch;       /* holds of ck's write side so far + 1 (never 0): the apply order's epoch (below) */
    int stg_fd;
    char *stg_addr;
    uint64_t stg_bytes;
    uint64_t stg_used;       /* bump offset (atomic) */
    uint64_t stg_alloc;      /* [0, stg_alloc) is allocated (fallocate): stores there cannot SIGBUS */
    pthread_mutex_t stg_mu;  /* growing stg_alloc */
    pthread_mutex_t dirty_mu;
    unsigned dirty_count;
    struct strict_dirty dirty[STRICT_DIRTY_FILES_MAX];
    struct strict_lazy *lazy; /* STRICT_LAZY_MAX entries (NULL on the page cache: no lazy apply there) */
    uint32_t *lazy_hash;      /* STRICT_LAZY_HASH slots: entry index + 1, 0 empty (the apply's, under ck) */
    uint32_t lazy_used;       /* entries handed out since the checkpoint (atomic; may run past the end) */
    uint32_t eager_left;      /* checkpoints until staged overwrites wait again (changed under ck's write side) */
};

/* st->ck through these: a thread-local count of the holds this thread has, so that a read made by a
 * signal handler that interrupted a strict operation of its own thread never waits for the write side it
 * can never get (up_strict_drain).
 *
 * The write path's read side is asymmetric, as the file guard's (guard.h): the thread names st in its
 * reader record with a plain store, and a writer (a checkpoint, a drain of the waiting overwrites, a
 * truncate) pays instead -- it takes ck for writing (which excludes the slow readers), closes the fast path,
 * runs membarrier and waits until no record names st. The rwlock's read lock and unlock after a staged
 * write's copies were two locked instructions, the unlock right after the apply's non-temporal stores:
 * 544 -> 497 ns per 4 KiB write (huge tmpfs, flush, fsync every 10; sync 257; session 9). The fast exit
 * fences first: a checkpoint's fence covers its own thread's stores only, so another thread's applied
 * stores must be drained before its record lets the checkpoint in (the guard's exit, inside, has already
 * drained the apply's; this fence then finds nothing to wait for). A reader that finds the fast path closed,
 * or is nested in a fast section of another root (a signal handler), or runs without membarrier, takes ck
 * for reading; one nested in a fast section of the same root is covered by it. Other read sides (a
 * truncate's record) take ck as before. */
static __thread int ck_held; /* counted from before the lock call to after the unlock: no window */
/* Of those, the write side (a checkpoint, a drain, a lazy truncate): a signal handler of this thread must not
 * take the read side then -- glibc's rdlock answers EDEADLK to the writer's own thread without taking it,
 * and the read side's unlock would then release the write lock (a later unlock underflowed the lock's
 * reader count: every later checkpoint hung). */
static __thread int ck_wr_held;
/* Writes of signal handlers nested in this thread's strict operations so far (strict_write_nested): a delta
 * record's apply (apply_delta) stores its segments only when none came between its compare and its apply --
 * else the whole write, as before delta records (the handler's bytes there are not what it compared). */
static __thread unsigned nested_writes;
/* Other locks of the strict state -- the checkpoint list's (st->dirty_mu), the staging allocation's
 * (st->stg_mu), and the file whose appends this thread serialises (f->strict_mu) -- are marked from before
 * the lock call to after the unlock (common/lockmark.h; per-site marks until session 15), so that a signal
 * handler's write (a nested one: strict_nested) waits for no lock its own thread holds (dk_mu_mine). */
/* The cancellation state ck_wrlock found, handed back by ck_wrunlock: a thread holding the write side runs
 * with cancellation off, so that the checkpoint's fdatasyncs (and a drain's or truncate's calls) cannot
 * unwind it with the lock held (review 11, finding 2). Saved by the outermost hold of this thread. */
static __thread int ck_wr_cancel_was;
/* guard.h's asymmetric read side, on st->ck, counted in ck_held. */
static inline enum up_guard_entry ck_read_enter(struct up_strict *st) {
    ck_held++;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    return up_asym_read_enter(UP_ASYM_STRICT, st, &st->ck_closed, &st->ck);
}
static inline void ck_read_exit(struct up_strict *st, enum up_guard_entry how) {
    up_asym_read_exit(UP_ASYM_STRICT, &st->ck, how);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    ck_held--;
}
/* ck_read_enter for a signal handler whose thread holds the file table's lock (review 28, #6): the exit's shutdown
 * takes the write side for good and then the table's lock, so the read side is only tried, in a loop that gives up
 * once the shutdown began (a checkpoint holds the write side a short while and takes no table lock: it ends).
 * UP_GUARD_NONE: not entered -- ck_held stays counted, as ck_read_exit takes it back (and leaves nothing else). */
static bool strict_down;
static __attribute__((noinline, cold)) enum up_guard_entry ck_read_enter_table(struct up_strict *st) {
    ck_held++;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    for (;;) {
        enum up_guard_entry how = up_asym_read_try(UP_ASYM_STRICT, st, &st->ck_closed, &st->ck);
        if (how != UP_GUARD_NONE || __atomic_load_n(&strict_down, __ATOMIC_ACQUIRE)) return how;
        syscall(SYS_nanosleep, &(struct timespec){0, 20000}, NULL); /* (no cancellation point) */
    }
}
/* No read side entered, as ck_read_enter_table's UP_GUARD_NONE: counted in ck_held, which ck_read_exit takes back. */
static inline enum up_guard_entry ck_read_none(void) {
    ck_held++;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    return UP_GUARD_NONE;
}
/* The read side as a plain rwlock (a truncate's record: held across calls, until up_strict_done). */
static inline void ck_rdlock(struct up_strict *st) {
    ck_held++;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    pthread_rwlock_rdlock(&st->ck);
}
static inline void ck_rdunlock(struct up_strict *st) {
    pthread_rwlock_unlock(&st->ck);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    ck_held--;
}
/* Under ck's write side: no strict write is in flight now, the files' first writers and marks start afresh
 * (inflight_publish), and an append that chose its offset before sees the change (strict_write_one). */
static inline void epoch_next(struct up_strict *st) {
    uint32_t e = st->ck_epoch + 1;
    __atomic_store_n(&st->ck_epoch, e ? e : 1, __ATOMIC_RELAXED); /* read by the read sides after ck_wrunlock */
}
/* The write side: pthread_rwlock_wrlock, or (try) its trylock -- false: not taken, nothing left held. */
static inline bool ck_wrlock_how(struct up_strict *st, bool try) {
    int cancel_was = dk_cancel_off();
    ck_held++;
    ck_wr_held++;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (!try) pthread_rwlock_wrlock(&st->ck);
    else if (pthread_rwlock_trywrlock(&st->ck) != 0) {
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        ck_wr_held--;
        ck_held--;
        dk_cancel_restore(cancel_was);
        return false;
    }
    if (ck_wr_held == 1) ck_wr_cancel_was = cancel_was; /* the outermost hold's (a nested one finds it off) */
#ifdef DAXKIT_TEST_BUILD
    if (up_strict_test_broken == UP_STRICT_BROKEN_CK_NO_DRAIN) return true; /* broken on purpose */
#endif
    up_guard_close_and_drain(UP_ASYM_STRICT, &st->ck_closed, st);
    epoch_next(st);
    return true;
}
static inline void ck_wrlock(struct up_strict *st) { (void)ck_wrlock_how(st, false); }
static inline void ck_wrunlock(struct up_strict *st) {
    int cancel_was = ck_wr_cancel_was;
    bool outermost = ck_wr_held == 1;
    __atomic_store_n(&st->ck_closed, 0, __ATOMIC_RELEASE);
    pthread_rwlock_unlock(&st->ck);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    ck_wr_held--;
    ck_held--;
    if (outermost) dk_cancel_restore(cancel_was);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Writes zeros over [from, to) of fd and makes them durable: the blocks are allocated *and written*. On a
 * page-cache medium (XFS, ext4) this keeps later msyncs of the range cheap: posix_fallocate leaves
 * unwritten extents, and the first write-back of each then converts it (a log transaction that every
 * msync/fdatasync must then force). 0 or -errno. */
static int zero_fill_durable(int fd, uint64_t from, uint64_t to) {
    static const char zeros[64 << 10];
    for (uint64_t off = from; off < to;) {
        ssize_t w = DK_REAL(pwrite)(fd, zeros, (size_t)DK_MIN(to - off, (uint64_t)sizeof zeros), (off_t)off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return w < 0 ? -errno : -EIO;
        off += (uint64_t)w;
    }
    return DK_REAL(fdatasync)(fd) == 0 ? 0 : -errno;
}

/* Writes up to this many bytes travel inside the record. On a page-cache medium every record costs an
 * msync of the log's pages and a staged write one more of the staging file's, so there the default is
 * the largest inline record (DAXKIT_STRICT_INLINE_BYTES, when set, decides everywhere). */
static size_t inline_max_for(const struct up_root *r) {
    static int set = -1; /* the option given explicitly (read once) */
    if (set < 0) set = getenv("DAXKIT_STRICT_INLINE_BYTES") != NULL;
    if (set || r->persist_as != DK_MEDIUM_PAGECACHE) return dk_cfg.strict_inline_bytes;
    return DK_OPLOG_DATA_BYTES_MAX;
}

/* Page cache: ranges applied in place are msync'ed at the checkpoint (the root's medium is probed when
 * its first file is used, which may be after the log was set up for a create). */
static bool track_dirty(const struct up_root *r) { return r->persist_as == DK_MEDIUM_PAGECACHE; }

/* Why the last strict_create failed (an errno value): a write or truncate that finds no log fails with
 * ENOSPC when it was space (the log's first 2 MiB, its staging file), EIO otherwise. */
static int strict_create_errno;

static bool errno_no_space(int e) { return e == ENOSPC || e == EDQUOT || e == ENOMEM || e == EFBIG; }

/* Exit's shutdown has run (up_strict_shutdown): no log is made after it (strict_for). strict_down_here: on the
 * thread that ran it. (strict_down: declared above, ck_read_enter_table) */
static __thread bool strict_down_here;

/* strict_for_how's last NULL on this thread was a signal handler's inside its thread's hold of the root's mutex
 * (the log's set-up, the medium's probe): set and cleared by each call, read by no_log_errno right after it. */
static __thread bool strict_mu_refused;

/* The errno of a data operation that has no log (strict_for returned NULL). */
static int no_log_errno(void) {
    if (DK_UNLIKELY(strict_down_here || strict_mu_refused)) { /* a signal handler's on the exiting thread, after
                                                               * the shutdown; or inside its thread's log set-up */
        dk_count(DK_C_strict_nested_refused, 1);
        return EDEADLK;
    }
    return errno_no_space(__atomic_load_n(&strict_create_errno, __ATOMIC_RELAXED)) ? ENOSPC : EIO;
}

/* A root's first strict operation after the exit's shutdown (session 27, exit26's note): a log made now would be
 * one the shutdown never saw -- not held, not reset, not removed: its records left to the next start, replayed
 * (after a power loss, or the marks off) over what the exiting thread writes through the kernel once the library
 * is off, synced. As on a root whose log the shutdown holds: another thread's operation waits for the end of the
 * process (never returned, as a kernel write cut by the end of the image), the exiting thread's own (a signal
 * handler's) is refused (NULL: EDEADLK, no_log_errno). */
static __attribute__((noinline, cold)) struct up_strict *strict_after_shutdown(void) {
    if (strict_down_here) return NULL;
    DK_CRASH_POINT("strict.after_shutdown.held"); /* tests: this thread's operation waits from here */
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL); /* (a write held at the exit is none either) */
    for (;;) pause();
}

/* ---- parked logs (docs/oplog.md "Parked logs") ----
 * A process that ends cleanly renames its log to parked-<euid>-<k>.log and its staging file to
 * parked-<euid>-<k>.strict.stg (the log first: its name claims k; a staging file left alone under a parked name
 * is the start-up reclaim's, as any staging file without a log); the next strict process of the user takes
 * them (the staging file first, the log last: while the parked log has its name no parker can claim k). */
#define STRICT_PARKED_MAX 4

static void parked_name(char *out, size_t cap, int k, const char *suffix) {
    snprintf(out, cap, DK_OPLOG_PARKED_PREFIX "%u-%d%s", (unsigned)geteuid(), k, suffix);
}

struct adopt_ctx {
    int area_fd, k;
    const char *stg_name; /* <tag>.strict.stg */
};

/* dk_oplog_adopt's step before the log's rename: the parked staging file becomes this process's (none: the
 * usual creation below makes one). */
static int adopt_staging(const char *log_name, void *p) {
    (void)log_name;
    struct adopt_ctx *a = p;
    char from[64];
    parked_name(from, sizeof from, a->k, ".strict.stg");
    if (DK_REAL(renameat)(a->area_fd, from, a->area_fd, a->stg_name) != 0 && errno != ENOENT) return -errno;
    DK_CRASH_POINT("strict.adopt.staging_moved");
    return 0;
}

/* A parked log of this user in the area, taken (0), or nonzero: none (the caller makes a new one). */
static int strict_adopt(const char *area, int area_fd, const char *tag, const char *stg_name, struct dk_oplog **log) {
    if (!dk_cfg.strict_park) return -ENOENT;
    for (int k = 0; k < STRICT_PARKED_MAX; k++) {
        char name[64];
        parked_name(name, sizeof name, k, ".log");
        struct adopt_ctx a = {.area_fd = area_fd, .k = k, .stg_name = stg_name};
        int rc = dk_oplog_adopt(area, name, tag, dk_cfg.strict_log_bytes, adopt_staging, &a, log);
        if (rc == 0) {
            dk_count(DK_C_strict_logs_adopted, 1);
            return 0;
        }
        if (rc == -EOPNOTSUPP) break;
    }
    return -ENOENT;
}

/* At a clean exit, after the log's last checkpoint: parks the log and its staging file (true), or false (the
 * caller removes them). */
static bool strict_park(struct up_strict *st, const char *stg_path) {
    if (!dk_cfg.strict_park || dk_oplog_records_by(st->log) != DK_OPLOG_RECORDS_FLUSHED) return false;
    for (int k = 0; k < STRICT_PARKED_MAX; k++) {
        char name[64];
        parked_name(name, sizeof name, k, ".log");
        int rc = dk_oplog_park(st->log, name);
        if (rc == -EEXIST) continue;
        if (rc != 0) return false;
        DK_CRASH_POINT("strict.park.log_parked");
        /* The staging file keeps its first chunk (a short process's staging), the rest of its memory goes back: a
         * parked pair holds at most 4 MiB. */
        if (st->stg_bytes > STRICT_STG_CHUNK_BYTES)
            (void)DK_REAL(fallocate)(st->stg_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, STRICT_STG_CHUNK_BYTES,
                                     (off_t)(st->stg_bytes - STRICT_STG_CHUNK_BYTES));
        char to[4400];
        const char *slash = strrchr(stg_path, '/');
        if (slash) {
            parked_name(name, sizeof name, k, ".strict.stg");
            snprintf(to, sizeof to, "%.*s/%s", (int)(slash - stg_path), stg_path, name);
            /* RENAME_NOREPLACE: a staging file left under that name by a parker cut short is the adopter's all
             * the same (its bytes are never trusted: a record names only bytes staged after it was adopted) --
             * ours is removed then. */
            if (DK_REAL(renameat2)(AT_FDCWD, stg_path, AT_FDCWD, to, RENAME_NOREPLACE) != 0) DK_REAL(unlink)(stg_path);
        }
        dk_count(DK_C_strict_logs_parked, 1);
        return true;
    }
    return false;
}

static struct up_strict *strict_create(struct up_root *r) {
    int area_fd;
    const char *tag;
    int owner = up_stage_owner(r, &area_fd, &tag);
    if (owner != 0) {
        __atomic_store_n(&strict_create_errno, -owner, __ATOMIC_RELAXED);
        return NULL;
    }
    char area[4200], name[96];
    snprintf(area, sizeof area, "%s/.daxkit", r->path);
    struct up_strict *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    pthread_rwlock_init(&st->ck, NULL);
    st->ck_epoch = 1;
    pthread_mutex_init(&st->stg_mu, NULL);
    pthread_mutex_init(&st->dirty_mu, NULL);
    snprintf(name, sizeof name, "%s.strict.stg", tag);
    int rc = strict_adopt(area, area_fd, tag, name, &st->log) == 0 ? 0
             : dk_oplog_open(area, tag, dk_cfg.strict_log_bytes, &st->log); /* 16 MiB: a checkpoint is cheap */
    int fd = rc == 0 ? dk_ifd_openat(area_fd, name, O_RDWR | O_CREAT | O_CLOEXEC, 0600) : -1;
    st->stg_bytes = dk_cfg.staging_bytes;
    void *a = MAP_FAILED;
    /* Sparse now, allocated chunk by chunk as it is used (zeroing 64 MiB up front would cost every
     * short-lived program tens of milliseconds). */
    if (fd >= 0 && DK_REAL(ftruncate)(fd, (off_t)st->stg_bytes) == 0)
        a = DK_REAL(mmap)(NULL, st->stg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (rc != 0 || a == MAP_FAILED) {
        int e = rc ? -rc : errno;
        __atomic_store_n(&strict_create_errno, e, __ATOMIC_RELAXED);
        dk_log_once("strict mode cannot set up its log in %s (%s): writes and truncates there fail with %s until it can",
                    area, dk_strerror(e), errno_no_space(e) ? "ENOSPC" : "EIO");
        if (fd >= 0) DK_REAL(close)(fd);
        if (st->log) dk_oplog_close(st->log, 1);
        free(st);
        return NULL;
    }
    if (r->persist_as != DK_MEDIUM_PAGECACHE) {
        st->lazy = calloc(STRICT_LAZY_MAX, sizeof *st->lazy);
        st->lazy_hash = st->lazy ? calloc(STRICT_LAZY_HASH, sizeof *st->lazy_hash) : NULL;
        if (!st->lazy_hash) free(st->lazy), st->lazy = NULL; /* then every write is applied at once */
    }
    st->stg_fd = up_internal_fd(fd);
    if (dk_cfg.strict_marks) dk_oplog_start_marks(st->log); /* recovery in this boot replays no completed record */
    dk_oplog_move_fds(st->log, up_internal_fd, up_internal_close); /* out of the program's way */
    dk_oplog_set_spare(st->log, STRICT_NESTED_SPARE_LINES); /* signal handlers' records while the log is full */
    st->stg_addr = a;
    return st;
}

static struct up_strict *strict_for_how(struct up_root *r, bool park);
static inline struct up_strict *strict_for(struct up_root *r) { return strict_for_how(r, true); }

/* `park`: after the exit's shutdown another thread's call waits for the end of the process (data operations);
 * false: NULL instead (a name's record: never replayed, the kernel's call goes on unlogged). */
static struct up_strict *strict_for_how(struct up_root *r, bool park) {
    struct up_strict *st = __atomic_load_n(&r->strict, __ATOMIC_ACQUIRE);
    if (st) return st;
    /* A signal handler that interrupted its thread inside r->mu -- the log's set-up below, or the medium's probe
     * (managed.c up_root_probe) -- waited for its own thread for ever (session 28): no log for it. A name's record
     * goes unlogged (counted by the caller: no log exists yet, so no record of this process can be replayed over
     * it), as does a truncate by name; a data operation fails with EDEADLK (no_log_errno). */
    strict_mu_refused = false;
    if (DK_UNLIKELY(dk_mu_mine(&r->mu))) {
        dk_count(DK_C_mu_mine_skips, 1);
        strict_mu_refused = true;
        return NULL;
    }
    /* Cancellation off while r->mu is held: the set-up's system calls (openat, the log's zero fill, fsyncs)
     * are cancellation points, and a thread cancelled inside left r->mu held -- every later strict operation
     * of the process then waited for it for ever (review 11, finding 2). */
    int cancel_was = dk_cancel_off();
    dk_mu_lock(&r->mu);
    if (DK_UNLIKELY(!r->strict && __atomic_load_n(&strict_down, __ATOMIC_ACQUIRE))) {
        dk_mu_unlock(&r->mu);
        dk_cancel_restore(cancel_was);
        /* not parked inside its thread's hold of the file table's lock: the exit takes that lock next (review 28,
         * #6) -- EDEADLK (no_log_errno) */
        if (park && DK_UNLIKELY(dk_mu_mine(&up_table_mu))) {
            strict_mu_refused = true;
            return NULL;
        }
        return park ? strict_after_shutdown() : NULL;
    }
    if (!r->strict) {
        DK_CRASH_POINT("strict.log_create.root_locked"); /* shim_fork_held_locks' cue */
        /* Made at a create or the first write: the area's probes and a failed set-up (the caller's error is
         * EIO) must not show in the program's errno (review 9, finding 9). */
        DK_ERRNO_SAVE;
        __atomic_store_n(&r->strict, strict_create(r), __ATOMIC_RELEASE);
        DK_ERRNO_RESTORE;
    }
    dk_mu_unlock(&r->mu);
    dk_cancel_restore(cancel_was);
    return r->strict;
}

/* Makes every write applied since the last checkpoint durable (the records stop covering them at the
 * reset that follows). Flush medium: the applies wrote back their lines without a fence; the appliers'
 * releases of st->ck (a locked instruction on x86, which orders earlier write-backs and non-temporal
 * stores like a fence) happened before the checkpoint took the write side, and this fence covers this
 * thread's own. Then an fdatasync of each listed file (page cache: its data; any medium: a size it
 * gained). Under st->ck (write side). 0 or -errno (the failed entries stay listed). */
#ifdef DAXKIT_TEST_BUILD
int up_strict_test_broken; /* enum up_strict_broken (upath/internal.h): for tests/strict/explore_apply.c */
#define CHECKPOINT_FENCES (up_strict_test_broken != UP_STRICT_BROKEN_CHECKPOINT_NO_FENCE)
#else
#define CHECKPOINT_FENCES 1
#endif

static int applied_make_durable(const struct up_root *r, struct up_strict *st) {
    if (r->persist_as == DK_MEDIUM_DAX && CHECKPOINT_FENCES) {
        dk_fence();
        dk_count(DK_C_persist_flushes, 1);
    }
    int rc = 0;
    unsigned kept = 0;
    DK_ERRNO_SAVE;
    for (unsigned i = 0; i < st->dirty_count; i++) {
        struct strict_dirty *d = &st->dirty[i];
        if (DK_REAL(fdatasync)(d->fd) != 0) {
            rc = -errno;
            st->dirty[kept++] = *d;
            continue;
        }
        dk_count(DK_C_fsyncs_kernel, 1); /* its descriptor stays: closing one drops the program's locks */
        up_drop_reflink_mark(d->f, d->fd); /* as after a kernel fsync (publish.c) */
    }
    st->dirty_count = kept;
    DK_ERRNO_RESTORE;
    return rc;
}

/* Lists f for the next checkpoint's fdatasync when the medium needs it for a write that grows the file
 * to `end` or lies past its first hole (or any write, on the page cache), through the descriptor the program wrote through -- no
 * duplicate of its own: closing one would drop the program's POSIX locks on the file (review 7, findings
 * 21, 26, 29). That descriptor stays open while the file is listed: every close of a descriptor of the
 * file (close, dup2 over it, close_range, exec) is a checkpoint first, which empties the list; a later
 * write lists its own descriptor. 0, or -ENOSPC when the table is full (the caller checkpoints and retries). */
/* `nested` (a signal handler's write, strict_nested): 1 instead of listing the file when the list's lock is
 * its own thread's or the list is full (a checkpoint would wait for that thread) -- the caller then makes its
 * apply durable itself (durable_now). */
static inline __attribute__((always_inline)) int note_applied(struct up_strict *st, struct up_file *f, int fd,
                                                              uint64_t end, bool append, bool nested) {
    /* An overwrite past the file's first hole is applied by the kernel's pwrite (holes.c), which allocates:
     * listed too, on every medium (review 9, finding 8). */
    if (up_persist_as(f) != DK_MEDIUM_PAGECACHE && !append && end <= up_file_size(f) &&
        end <= __atomic_load_n(&f->backed_end, __ATOMIC_ACQUIRE))
        return 0; /* per file: a DAX root's file may not be DAX (review 11, finding 3) */
    if (up_persist_as(f) == DK_MEDIUM_VOLATILE) return 0; /* nothing survives power loss anyway */
    if (nested && dk_mu_mine(&st->dirty_mu)) return 1;
    int rc = 0;
    dk_mu_lock(&st->dirty_mu); /* another thread holds it for a few loads and stores at most */
    unsigned i = 0;
    while (i < st->dirty_count && st->dirty[i].f != f) i++;
    if (i < st->dirty_count) st->dirty[i].fd = fd; /* the newest writer's descriptor: surely open now */
    else if (i == STRICT_DIRTY_FILES_MAX) rc = nested ? 1 : -ENOSPC;
    else st->dirty[st->dirty_count++] = (struct strict_dirty){f, fd};
    dk_mu_unlock(&st->dirty_mu);
    return rc;
}

/* A nested write's apply made durable at once, as the checkpoint would have (note_applied returned 1). */
static int durable_now(const struct up_file *f, int fd) {
    if (up_persist_as(f) == DK_MEDIUM_DAX) dk_fence();
    DK_ERRNO_SAVE;
    int rc = DK_REAL(fdatasync)(fd) == 0 ? 0 : -errno;
    DK_ERRNO_RESTORE;
    if (rc == 0) dk_count(DK_C_fsyncs_kernel, 1);
    return rc;
}

/* Record `seq`'s operation is applied: recovery in this boot and mount never replays it (oplog.h). */
static inline void mark_applied(struct up_strict *st, uint64_t seq) {
    dk_oplog_mark_done(st->log, seq); /* nothing without marks (DAXKIT_STRICT_MARKS=0, strict_create) */
}

static int lazy_by_seq(const void *a, const void *b) {
    uint64_t x = ((const struct strict_lazy *)a)->seq, y = ((const struct strict_lazy *)b)->seq;
    return x < y ? -1 : x > y;
}

static uint32_t lazy_hash_of(const struct strict_lazy *e, uint32_t mask) {
    uint64_t h = ((uint64_t)(uintptr_t)e->f ^ e->off * 0x9e3779b97f4a7c15ull) * 0xff51afd7ed558ccdull;
    return (uint32_t)(h >> 40) & mask;
}

/* Marks every entry that a later entry of the same file and offset overwrites entirely (len = 0): its
 * bytes would never be the file's (the later one is applied after it, over all of them). Overwriting one
 * block many times between two checkpoints -- a database's hot pages -- then costs one apply. */
static uint32_t lazy_coalesce(struct up_strict *st, uint32_t n) {
    uint32_t skipped = 0;
    if (n < 2) return 0;
    uint32_t slots = 4; /* a power of two >= 2n: clearing it costs what the entries do (one per transaction: SQLite) */
    while (slots < 2 * n) slots *= 2;
    uint32_t mask = slots - 1;
    memset(st->lazy_hash, 0, slots * sizeof *st->lazy_hash);
    for (uint32_t i = 0; i < n; i++) { /* in log order: a slot ends with the newest entry of its key */
        struct strict_lazy *e = &st->lazy[i];
        if (e->len == 0) continue;
        uint32_t h = lazy_hash_of(e, mask);
        while (st->lazy_hash[h]) {
            struct strict_lazy *o = &st->lazy[st->lazy_hash[h] - 1];
            if (o->f == e->f && o->off == e->off) break;
            h = (h + 1) & mask;
        }
        if (st->lazy_hash[h]) {
            struct strict_lazy *o = &st->lazy[st->lazy_hash[h] - 1];
            if (o->len <= e->len) o->len = 0, skipped++; /* covered by e, which comes later */
        }
        st->lazy_hash[h] = i + 1;
    }
    return skipped;
}

/* Stores the waiting staged overwrites into their files, in log order (written back on a flush medium; the
 * checkpoint's fence follows), and forgets them. Under st->ck (write side: every entry is complete). An
 * entry whose range is no longer published and mapped (a truncate by name raced with the write) is
 * skipped and counted: the file's size cut it, as it would have cut the applied bytes. */
static void lazy_apply(struct up_strict *st) {
    uint32_t n = DK_MIN(__atomic_load_n(&st->lazy_used, __ATOMIC_ACQUIRE), STRICT_LAZY_MAX);
    if (!st->lazy || n == 0) return;
    bool sorted = true;
    for (uint32_t i = 1; i < n && sorted; i++) sorted = st->lazy[i - 1].seq <= st->lazy[i].seq;
    if (!sorted) qsort(st->lazy, n, sizeof *st->lazy, lazy_by_seq);
    uint32_t skipped = lazy_coalesce(st, n);
    if (skipped * 100u < n * STRICT_LAZY_MIN_COALESCED_PCT) {
        st->eager_left = STRICT_EAGER_CHECKPOINTS; /* under ck's write side: no entry waits after this apply */
        dk_count(DK_C_strict_lazy_off, 1);
    }
    for (uint32_t i = 0; i < n; i++) {
        struct strict_lazy *e = &st->lazy[i];
        /* Each entry is marked applied in log order once its bytes are in (a coalesced one, whose bytes a later
         * entry covers, before that one is applied): recovery in this boot then replays the rest, in order. */
        if (e->len == 0) {
            if (e->seq) mark_applied(st, e->seq);
            continue;
        }
#ifdef DAXKIT_TEST_BUILD
        if (i == n / 2) DK_CRASH_POINT("strict.checkpoint.half_applied");
#endif
        if (!up_io_overwrite_mapped(e->f, st->stg_addr + e->stg_off, e->len, e->off)) dk_count(DK_C_fallbacks, 1);
        mark_applied(st, e->seq);
    }
    for (uint32_t i = 0; i < n; i++)
        if (st->lazy[i].f) __atomic_store_n(&st->lazy[i].f->strict_lazy, 0, __ATOMIC_RELEASE);
    memset(st->lazy, 0, (size_t)n * sizeof *st->lazy);
    __atomic_store_n(&st->lazy_used, 0, __ATOMIC_RELEASE);
}

/* Waits for operations in flight, applies the staged overwrites that wait for it, makes what was applied
 * durable, then starts a new log generation and reuses the staging file. */
static void checkpoint_locked(struct up_root *r, struct up_strict *st) {
    if (dk_oplog_lines_used(st->log) == 0) return;
#ifdef DAXKIT_TEST_BUILD
    bool after_reset = up_strict_test_broken == UP_STRICT_BROKEN_APPLY_AFTER_RESET;
#else
    const bool after_reset = false;
#endif
    if (!after_reset) lazy_apply(st);
    if (st->eager_left) st->eager_left--;
    DK_CRASH_POINT("strict.checkpoint.before_durable");
    if (applied_make_durable(r, st) != 0) return; /* the records stay: a later checkpoint tries again */
    DK_CRASH_POINT("strict.checkpoint.before_reset");
    if (dk_oplog_reset(st->log) == 0) {
        if (after_reset) lazy_apply(st); /* broken on purpose: the records are gone before the bytes are in */
        __atomic_store_n(&st->stg_used, 0, __ATOMIC_RELEASE);
        dk_count(DK_C_strict_checkpoints, 1);
    }
}


void up_strict_program_maps(int fd) {
    if (dk_cfg.mode != DK_MODE_STRICT) return;
    struct up_slot *s = up_fd_slot(fd);
    if (!s || !s->file) return;
    __atomic_store_n(&s->file->strict_eager, true, __ATOMIC_RELEASE);
    (void)up_strict_drain(s->file); /* also before a DAXKIT_ATOMIC_MMAP view, which is no publish point (refused: a
                                     * handler inside its thread's table lock at exit -- the shutdown applies them) */
}

/* Not from a signal handler inside a strict operation, checkpoint, drain or truncate of its own thread (ck_held):
 * the write side would wait for that thread for ever (its read side), or -- the thread's own write side --
 * glibc's wrlock answered EDEADLK without taking it, the inner checkpoint ran unlocked inside the interrupted one
 * and its unlock released the thread's hold: the interrupted checkpoint's own unlock then underflowed the lock's
 * reader count and every later checkpoint hung (exit26's note: a handler's O_TRUNC open, fallocate or kernel
 * takeover; shim_strict_ck_nested_*). false then (counted, strict_ck_nested): callers that must not go on
 * without it refuse (EDEADLK); publish points skip it, as their walks do (up_thread_in_call). */
bool up_strict_checkpoint(struct up_root *r) {
    struct up_strict *st = __atomic_load_n(&r->strict, __ATOMIC_ACQUIRE);
    if (!st || dk_oplog_lines_used(st->log) == 0 || DK_UNLIKELY(up_fork_orphan)) return true; /* the parent's log */
    if (DK_UNLIKELY(ck_held)) {
        dk_count(DK_C_strict_ck_nested, 1);
        return false;
    }
    /* Never under the file table's lock (review 26, #3): exit's shutdown takes this lock's write side for good,
     * then the table's; and the write side waits for other threads' strict operations, which may wait for the
     * table's lock. Only a signal handler whose thread holds it gets here (a lock release's publish point, whose
     * walk is refused; a name's record with the log full): false, counted -- as for a nested checkpoint, the
     * publish point leaves it to the next, a name's record is made unlogged (session 28: lockpath27's release
     * path checkpointed the file's root there). */
    if (DK_UNLIKELY(dk_mu_mine(&up_table_mu))) {
        dk_count(DK_C_strict_ck_table_refused, 1);
        return false;
    }
    ck_wrlock(st);
    checkpoint_locked(r, st);
    ck_wrunlock(st);
    return true;
}

void up_strict_checkpoint_all(void) {
    for (int i = 0; i < up_roots_count(); i++) up_strict_checkpoint(up_root_at(i));
}

bool up_strict_logs_empty(void) {
    if (DK_UNLIKELY(up_fork_orphan)) return true; /* (the parent's logs: up_strict_checkpoint does nothing) */
    for (int i = 0, n = up_roots_count(); i < n; i++) {
        struct up_strict *st = __atomic_load_n(&up_root_at(i)->strict, __ATOMIC_ACQUIRE);
        if (st && dk_oplog_lines_used(st->log) != 0) return false;
    }
    return true;
}

/* Makes staged bytes durable as the medium requires (dax: the record's fence covers the NT stores). */
static void staging_persist(const struct up_root *r, const struct up_strict *st, uint64_t off, uint64_t n) {
    if (r->persist_as != DK_MEDIUM_PAGECACHE) return;
    uint64_t a = dk_round_down(off, DK_PAGE_BYTES);
    int cancel_was = dk_cancel_off(); /* under st->ck's read side: msync is a cancellation point */
    DK_REAL(msync)(st->stg_addr + a, off + n - a, MS_SYNC);
    dk_cancel_restore(cancel_was);
}

/* Allocates staging space up to `end` (so stores there cannot fault with SIGBUS on a full file system).
 * `nested` (a signal handler's write): -EDEADLK rather than wait for its own thread's allocation. */
static int staging_reserve(const struct up_root *r, struct up_strict *st, uint64_t end, bool nested) {
    if (end <= __atomic_load_n(&st->stg_alloc, __ATOMIC_ACQUIRE)) return 0;
    if (nested && dk_mu_mine(&st->stg_mu)) return -EDEADLK;
    int cancel_was = dk_cancel_off(); /* stg_mu (and st->ck) held across fallocate or pwrite + fdatasync */
    dk_mu_lock(&st->stg_mu);
    int rc = 0;
    if (end > st->stg_alloc) {
        uint64_t to = DK_MIN(dk_round_up(end, STRICT_STG_CHUNK_BYTES), st->stg_bytes);
        int e = track_dirty(r) ? zero_fill_durable(st->stg_fd, st->stg_alloc, to)
                : DK_REAL(fallocate)(st->stg_fd, 0, (off_t)st->stg_alloc, (off_t)(to - st->stg_alloc)) == 0 ? 0
                                                                                                          : -errno;
        if (e == 0) {
            DK_REAL(madvise)(st->stg_addr + st->stg_alloc, to - st->stg_alloc, MADV_POPULATE_WRITE);
            __atomic_store_n(&st->stg_alloc, to, __ATOMIC_RELEASE);
        } else {
            rc = e;
        }
    }
    dk_mu_unlock(&st->stg_mu);
    dk_cancel_restore(cancel_was);
    return rc;
}

/* ---- the apply order of overlapping writes (review 9, finding 3) ----
 * Recovery replays records in log order; two threads' overlapping writes of one file must therefore be
 * applied in log order too, or after both returned the file shows one write and a crash before the next
 * checkpoint recovers it to the other. Each write applied at once publishes its file, range and seq in its
 * thread's reader record (guard.h: struct up_reader_write) before its record's slot is reserved, and
 * withdraws them after its apply; before applying, a write waits for every overlapping write of the same
 * file whose record comes first (lower seq) -- but looks for them only when the file has been written
 * through two records in the current epoch (f->strict_shared; an epoch ends at each hold of the checkpoint
 * lock's write side -- a checkpoint, a drain, a truncate -- when no strict write is in flight, so a file
 * that one thread made and another then writes is looked at only until the next checkpoint). So a file one
 * thread writes costs plain stores and loads: no locked instruction beyond the log's own reservation and a
 * compare-and-swap per file and epoch (session 9's per-file table took a slot by compare-and-swap and left
 * it by an atomic and: two locked instructions per write).
 *
 * Why nothing is missed: the reservation is an acquire-release read-modify-write of the log's tail
 * (oplog.h), and seqs follow reservation order. If write A's seq is lower than write B's, A's reservation
 * came first, so everything A's thread stored before it -- A's published range and, were A's record not the
 * file's first writer's, its store of f->strict_shared -- is visible to B after B's reservation. Two writes
 * in flight at once are in one epoch (each holds the read side). Of two writes of one file through
 * different records at most one is the epoch's first writer's; the other marks the file shared in that
 * epoch before its reservation, and whichever of the two comes later sees the mark and looks. A record is
 * held by one thread at a time (a thread that has none borrows one for the write), so the first writer's
 * record is one thread at any moment. The entry's seq: UINT64_MAX from the publication until the
 * slot is reserved (a looker yields: the writer takes nothing in between that could wait for it), then the
 * record's (generation << 32 | slot: never 0, never all ones), then 0 after the apply (whose stores are
 * drained by then: the file guard's exit fences, or the lock it took is released). A looker that finds
 * another file in a record skips it: a write to this file published there after the looker's reservation
 * comes after it. No cycle: a write waits only for lower seqs, and for a seq to become known. Not for a
 * signal handler's write that interrupted a strict operation of its own thread (that one could never
 * finish, and the record's entry is the interrupted write's): it publishes nothing. A truncate to `len`
 * on the page cache publishes [len, UINT64_MAX) the same way (up_strict_log_truncate) and withdraws it
 * after the kernel's truncate (up_strict_done). */
#define INFLIGHT_SEQ_UNKNOWN UINT64_MAX

/* Publishes a write of [off, end) of f in this thread's record (borrowed when it has none: *borrowed), in
 * epoch `epoch` (st->ck_epoch, read under the read side). */
static struct up_reader *inflight_publish(struct up_file *f, uint32_t epoch, uint64_t off, uint64_t end,
                                          bool *borrowed) {
    struct up_reader *r = up_reader_self; /* claimed by ck_read_enter when it could be */
    *borrowed = r == NULL;
    if (*borrowed) r = up_reader_borrow();
    __atomic_store_n(&r->w.seq, INFLIGHT_SEQ_UNKNOWN, __ATOMIC_RELAXED);
    __atomic_store_n(&r->w.off, off, __ATOMIC_RELAXED);
    __atomic_store_n(&r->w.end, end, __ATOMIC_RELAXED);
    __atomic_store_n(&r->w.file, f, __ATOMIC_RELEASE);
    uint64_t mine = (uint64_t)epoch << 32 | r->id;
    uint64_t first = __atomic_load_n(&f->strict_writer, __ATOMIC_RELAXED);
    if (DK_UNLIKELY(first != mine)) {
        /* The epoch's first write of f takes it (once per file and epoch); a write through another record
         * marks f. */
        if (((uint32_t)(first >> 32) == epoch || !__atomic_compare_exchange_n(&f->strict_writer, &first, mine, false,
                                                                               __ATOMIC_RELAXED, __ATOMIC_RELAXED)) &&
            __atomic_load_n(&f->strict_shared, __ATOMIC_RELAXED) != epoch)
            __atomic_store_n(&f->strict_shared, epoch, __ATOMIC_RELAXED); /* ordered by the reservation that follows */
    }
    return r;
}

/* The write's record slot is reserved: its seq is known (log_write). */
static inline void inflight_seq(struct up_reader *r, uint64_t seq) { __atomic_store_n(&r->w.seq, seq, __ATOMIC_RELEASE); }

/* The write is applied (or gave up before its record): nothing waits for it any more. */
static inline void inflight_withdraw(struct up_reader *r, bool borrowed) {
    __atomic_store_n(&r->w.seq, 0, __ATOMIC_RELEASE);
    if (borrowed) up_reader_give_back(r);
}

struct inflight_look {
    const struct up_file *f;
    const struct up_reader *self;
    uint64_t seq, off, end;
    bool waited;
};

/* Waits, when r holds a write of the same file logged before this one and overlapping it, until it is applied. */
static bool inflight_wait_one(const struct up_reader *r, void *ctx) {
    struct inflight_look *l = ctx;
    if (r == l->self) return false;
    for (;;) {
        if (__atomic_load_n(&r->w.file, __ATOMIC_ACQUIRE) != l->f) return false;
        uint64_t s = __atomic_load_n(&r->w.seq, __ATOMIC_ACQUIRE);
        if (s == 0) return false; /* none in flight */
        if (s == INFLIGHT_SEQ_UNKNOWN) { /* its slot is not reserved yet */
            sched_yield();
            continue;
        }
        const void *file = __atomic_load_n(&r->w.file, __ATOMIC_ACQUIRE);
        uint64_t o = __atomic_load_n(&r->w.off, __ATOMIC_ACQUIRE), e = __atomic_load_n(&r->w.end, __ATOMIC_ACQUIRE);
        if (__atomic_load_n(&r->w.seq, __ATOMIC_ACQUIRE) != s) continue; /* its thread moved on meanwhile */
        if (file != l->f || s > l->seq || o >= l->end || e <= l->off) return false; /* later, or no overlap */
        while (__atomic_load_n(&r->w.seq, __ATOMIC_ACQUIRE) == s) sched_yield(); /* until it is applied */
        l->waited = true;
        return false;
    }
}

/* Before the apply of the write published in `self` with record `seq` (in `epoch`): waits until no write of
 * f logged before it that overlaps [off, end) is still being applied. A file one record writes: one load. */
static inline void inflight_wait(struct up_file *f, uint32_t epoch, const struct up_reader *self, uint64_t seq,
                                 uint64_t off, uint64_t end) {
    if (DK_LIKELY(__atomic_load_n(&f->strict_shared, __ATOMIC_ACQUIRE) != epoch)) return;
    struct inflight_look l = {f, self, seq, off, end, false};
    up_readers_each(inflight_wait_one, &l);
    if (l.waited) dk_count(DK_C_strict_overlap_waits, 1);
}

/* A staged write's record carries the crc32c of its staged bytes (DK_OPLOG_WRITE_STAGED_CRC, computed from
 * the registers the copy stored), so the record's one fence makes both durable, in no particular order:
 * after a power failure that left the record line on media and some staged lines not, recovery finds the
 * crc wrong and ignores the record as torn -- the write had not returned (its fence had not completed) and
 * had not been applied (the apply follows the fence). Session 7 fenced the staged bytes first instead
 * (a staged write paid two fences; the second, for one 64-byte line, costs a memory round trip: ~100 ns of
 * a ~500 ns 4 KiB write in a micro-benchmark of the primitives). (Page cache: staging_persist's msync
 * makes the staged bytes durable before the record is written.) Test builds: the broken variant logs the
 * old record type, without a crc, and no fence before it -- the explorer must catch it. */
static bool staged_unordered_without_crc(void) {
#ifdef DAXKIT_TEST_BUILD
    return up_strict_test_broken == UP_STRICT_BROKEN_STAGED_NO_FENCE;
#else
    return false;
#endif
}

/* A write or truncate record carries its file's identity (ident.c) in op.aux bits 63..32 (0: not recorded
 * -- logs of earlier versions, or a file system without handles); a staged record's crc stays in bits
 * 31..0. Readers before session 9 ignore those bits (a staged record's crc is compared as 32 bits), so the
 * log's version is unchanged: such a reader replays as it always did. */
static inline uint64_t op_ident_bits(uint32_t ident) { return (uint64_t)ident << 32; }
static inline uint32_t op_ident(const struct dk_oplog_op *op) { return (uint32_t)(op->aux >> 32); }

bool up_strict_staged_intact(unsigned type, const struct dk_oplog_op *op, const void *staged) {
    return type != DK_OPLOG_WRITE_STAGED_CRC || dk_crc32c_wide(0, staged, op->length) == (uint32_t)op->aux;
}

/* An inline record of the write, its seq published in `wr` (when given) between its reservation and its
 * commit. */
static inline __attribute__((always_inline)) int log_inline(struct up_strict *st, const struct dk_oplog_op *op,
                                                            const char *buf, size_t n, struct up_reader *wr,
                                                            uint64_t *seq_out, bool nested) {
    struct dk_oplog_reservation res;
    int rc = nested ? dk_oplog_reserve_spare(st->log, n, &res) : dk_oplog_reserve(st->log, n, &res);
    if (rc == 0 && wr) inflight_seq(wr, res.seq);
    if (rc == 0) rc = dk_oplog_commit(st->log, &res, DK_OPLOG_WRITE_INLINE, op, buf, seq_out);
    if (rc == 0) dk_count(DK_C_strict_inline, 1);
    return rc;
}

/* Appends the record of a write of [off, off+n) under st->ck (read side). `lz`: a waiting-overwrite entry
 * (lazy_reserve) -- the write is staged and its entry filled in once its record is durable. `wr`: the
 * write's published entry (inflight_publish), given its seq as soon as the record's slot is reserved: one
 * reservation per write, whose seq its record carries (the inline fallback is decided before any
 * reservation) -- a write whose seq stayed unknown would keep every later overlapping write waiting while
 * it waited for them. 0 or -errno (-ENOSPC: the log or the staging file is full; the caller checkpoints and
 * tries again). */
/* (always inlined, as note_applied, strict_write_one and log_inline: out of line they cost the ordinary write
 * ~70 instructions more than before the nested paths, by callgrind; inlined, nothing) */
static inline __attribute__((always_inline)) int log_write(struct up_root *r, struct up_strict *st,
                                                           const struct up_file *f, uint32_t ident, uint64_t off,
                                                           const char *buf, size_t n, struct strict_lazy *lz,
                                                           struct up_reader *wr, uint64_t *seq_out, bool nested) {
    struct dk_oplog_op op = {.dev = (uint64_t)f->dev, .ino = (uint64_t)f->ino, .file_offset = off,
                             .length = (uint32_t)n, .aux = op_ident_bits(ident)};
    struct dk_oplog_reservation res;
    int rc = -ENOSPC;
    /* A nested write (a signal handler's) goes inline up to the largest record: no staging lock */
    if (!lz && (n <= inline_max_for(r) || (nested && n <= DK_OPLOG_DATA_BYTES_MAX)))
        return log_inline(st, &op, buf, n, wr, seq_out, nested);
    /* Staging space first: the medium may have no room for it, and then a write small enough to travel
     * inside its record is logged inline instead -- an overwrite of allocated blocks needs no new block, as
     * with the kernel (review 9, finding 27's update: it failed with EIO). Decided before the record's slot
     * is reserved, so the record's seq is the reservation's (review 10, finding 21: an inline append after
     * a reservation made a second, later seq). Then the slot is reserved before the staged copy: the
     * reservation's compare-and-swap (a locked instruction) after the copy would wait for its non-temporal
     * stores to drain -- a fence in all but name -- and then the record's own fence would drain the record
     * line alone (measured: no gain from the crc until the reservation moved). Now nothing locked runs
     * between the copy and the one fence. */
    uint64_t at = __atomic_fetch_add(&st->stg_used, dk_round_up(n, 64), __ATOMIC_ACQ_REL);
    if (at + n > st->stg_bytes) return -ENOSPC; /* the staging file is full: the caller checkpoints */
    rc = staging_reserve(r, st, at + n, nested);
    if (rc && !lz && n <= DK_OPLOG_DATA_BYTES_MAX && errno_no_space(-rc)) return log_inline(st, &op, buf, n, wr, seq_out, nested);
    if (rc) return rc;
    rc = nested ? dk_oplog_reserve_spare(st->log, 0, &res) : dk_oplog_reserve(st->log, 0, &res);
    if (rc == 0 && wr) inflight_seq(wr, res.seq);
    if (rc == 0) {
        op.aux |= dk_copy_nt_crc32c(st->stg_addr + at, buf, n, 0);
        staging_persist(r, st, at, n);
        op.staging_id = STRICT_STAGING_ID;
        op.staging_offset = at;
        unsigned type = DK_OPLOG_WRITE_STAGED_CRC; /* no fence between the staged bytes and the record */
        if (staged_unordered_without_crc()) type = DK_OPLOG_WRITE_STAGED, op.aux = op_ident_bits(ident);
        uint64_t seq = 0;
        rc = dk_oplog_commit(st->log, &res, type, &op, NULL, &seq);
        *seq_out = seq;
        if (rc == 0) dk_count(DK_C_strict_staged, 1);
        if (rc == 0 && lz) {
            lz->off = off, lz->stg_off = at, lz->seq = seq;
            __atomic_store_n(&lz->len, (uint32_t)n, __ATOMIC_RELEASE);
        }
    }
    return rc;
}

/* Test builds: DAXKIT_TEST_STRICT_DELTA_MUTANT=1 takes a delta whatever other writer of the file the epoch has
 * (no apply-order look; tests/strict/overlap_order.c `delta` must catch it), 2 replays a delta without its crc
 * check (tests/strict/delta.sh `hazard` must catch the mix). Read once. */
static int delta_mutant(void) {
#ifdef DAXKIT_TEST_BUILD
    static int m = -1;
    if (DK_UNLIKELY(m < 0)) {
        const char *e = getenv("DAXKIT_TEST_STRICT_DELTA_MUTANT");
        m = e ? atoi(e) : 0;
    }
    return m;
#else
    return 0;
#endif
}

/* The program holds a POSIX record lock on the file (reclock.c's set of the program's own locks -- not one the lock
 * cache keeps after the program released it): a delta record only then (review29 #9, lead's decision): a program
 * that shares a file without locks gets whole writes, as before. Test builds: DAXKIT_TEST_STRICT_DELTA_UNLOCKED=1
 * lifts it for tests that call the library's write path without its lock calls (the explorer, overlap_order). */
static bool delta_locked(const struct up_file *f) {
    if (!__atomic_load_n(&f->locks.unknown, __ATOMIC_ACQUIRE) && __atomic_load_n(&f->locks.n, __ATOMIC_RELAXED) > 0)
        return true;
#ifdef DAXKIT_TEST_BUILD
    static int any = -1;
    if (DK_UNLIKELY(any < 0)) any = getenv("DAXKIT_TEST_STRICT_DELTA_UNLOCKED") != NULL;
    return any;
#else
    return false;
#endif
}

/* Whether a write applied at once may be logged as a delta record (docs/strict.md "Delta records"): an
 * ordinary (not nested) in-place overwrite that would be staged, on a flush or volatile medium, of a file
 * written through this thread's record alone in this epoch with no overwrite of it waiting. Hints: log_delta
 * checks the last two again after its reservation. */
static inline bool delta_candidate(struct up_file *f, uint64_t off, size_t n, bool append, uint32_t epoch) {
    /* (strict_eager: the program maps the file -- its own stores there are in the compared bytes but durable only
     * at its msync; a delta would leave them out of the write's record) */
    if (!dk_cfg.strict_delta || append || n <= inline_max_for(f->root) || n > STRICT_DELTA_MAX_BYTES || f->atomic ||
        up_persist_as(f) == DK_MEDIUM_PAGECACHE || !__atomic_load_n(&f->map.writable, __ATOMIC_RELAXED) ||
        __atomic_load_n(&f->strict_eager, __ATOMIC_ACQUIRE) || !delta_locked(f))
        return false;
    uint32_t skip = __atomic_load_n(&f->strict_delta_skip, __ATOMIC_RELAXED);
    if (DK_UNLIKELY(skip)) {
        __atomic_store_n(&f->strict_delta_skip, skip - 1, __ATOMIC_RELAXED);
        return false;
    }
    return __atomic_load_n(&f->strict_lazy, __ATOMIC_ACQUIRE) == 0 &&
           (__atomic_load_n(&f->strict_shared, __ATOMIC_ACQUIRE) != epoch || delta_mutant() == 1) &&
           up_io_in_place(f, off, n);
}

/* A write as a delta record: compared with the file (its segments into d, their length into *dlen), then
 * logged with the crc32c of the write's bytes. 1: not taken (too many changed bytes, or another writer of
 * the file or a waiting overwrite of it appeared before the reservation: then the reservation holds a no-op
 * record and the write is staged, with a later seq -- published as unknown meanwhile, so an overlapping write
 * logged after the new seq waits for it and one logged before goes first, both in log order); 0 logged; or
 * -errno (as log_write's). Under st->ck's read side, published in `wr` (inflight_publish). */
static int log_delta(struct up_strict *st, struct up_file *f, uint32_t ident, uint64_t off, const char *buf, size_t n,
                     struct up_reader *wr, uint32_t epoch, unsigned nested_before, uint64_t *seq_out, unsigned char *d,
                     size_t *dlen) {
    ssize_t len = up_io_delta_compare(f, buf, n, off, d, DK_MIN(n / 4, (size_t)STRICT_DELTA_CAP));
    if (len < 0) {
        uint32_t k = DK_MIN(__atomic_load_n(&f->strict_delta_misses, __ATOMIC_RELAXED) + 1, STRICT_DELTA_MISSES_MAX);
        __atomic_store_n(&f->strict_delta_misses, k, __ATOMIC_RELAXED);
        __atomic_store_n(&f->strict_delta_skip, (1u << k) - 1, __ATOMIC_RELAXED);
        dk_count(DK_C_strict_delta_miss, 1);
        return 1;
    }
    if (DK_UNLIKELY(__atomic_load_n(&f->strict_delta_misses, __ATOMIC_RELAXED)))
        __atomic_store_n(&f->strict_delta_misses, 0, __ATOMIC_RELAXED);
    struct dk_oplog_op op = {.dev = (uint64_t)f->dev, .ino = (uint64_t)f->ino, .file_offset = off,
                             .length = (uint32_t)n, .aux = op_ident_bits(ident) | dk_crc32c_wide(0, buf, n)};
    struct dk_oplog_reservation res;
    int rc = dk_oplog_reserve(st->log, (size_t)len, &res);
    if (rc) return rc;
    inflight_seq(wr, res.seq);
    /* Another write of f through another record in this epoch, or a waiting overwrite of f, logged before this
     * reservation is seen now (both are stored before their reservations; the reservation is acquire-release):
     * the compared bytes may not be what the records before this one leave. So may a signal handler's write of
     * this thread since the compare (its record then comes first: review29 #6). */
    if (DK_UNLIKELY((__atomic_load_n(&f->strict_shared, __ATOMIC_ACQUIRE) == epoch && delta_mutant() != 1) ||
                    __atomic_load_n(&f->strict_lazy, __ATOMIC_ACQUIRE) ||
                    __atomic_load_n(&nested_writes, __ATOMIC_RELAXED) != nested_before)) {
        static const unsigned char zero[STRICT_DELTA_CAP];
        op.length = 0, op.aux = op_ident_bits(ident); /* a no-op: replayed as nothing */
        rc = dk_oplog_commit(st->log, &res, DK_OPLOG_WRITE_DELTA, &op, len ? zero : NULL, NULL);
        __atomic_store_n(&wr->w.seq, INFLIGHT_SEQ_UNKNOWN, __ATOMIC_RELEASE);
        dk_count(DK_C_strict_delta_fallback, 1);
        return rc ? rc : 1;
    }
    rc = dk_oplog_commit(st->log, &res, DK_OPLOG_WRITE_DELTA, &op, len ? d : NULL, seq_out);
    if (rc == 0) {
        *dlen = (size_t)len;
        dk_count(DK_C_strict_delta, 1);
        DK_CRASH_POINT("strict.write.delta_logged"); /* (crash tests: a delta record, nothing applied) */
    }
    return rc;
}

/* Flush and volatile media: a staged overwrite of bytes the file holds (published, mapped) is not applied
 * at the write but by the next checkpoint (or the next read of the file, or a write that is applied at
 * once), from the staging file: the write copies its bytes once (into the staging file) instead of twice,
 * and stores nothing into the file. Its record is durable before the write returns, as ever, so a crash
 * before the checkpoint is repaired by recovery's replay; reads of this process see the bytes (they apply
 * first); other processes see them at the writer's next publish point (close, lock release, ...), not at
 * fsync (docs/strict.md). Not for a file the program maps (the mapping must show every write), nor with
 * DAXKIT_STRICT_APPLY=write, nor (auto) for a few checkpoints after an apply that coalesced little. Reserves an entry under st->ck (read side) and counts the file's waiting
 * overwrites. NULL: apply now; *full: the table is full (drain it, then try again). */
static struct strict_lazy *lazy_reserve(struct up_strict *st, struct up_file *f, uint64_t off, size_t n,
                                        bool append, bool *full) {
    *full = false;
    if (!st->lazy || append || n <= inline_max_for(f->root) || f->atomic || dk_cfg.strict_apply == 1 /* write */ ||
        (dk_cfg.strict_apply == 0 /* auto */ && st->eager_left) ||
        __atomic_load_n(&f->strict_eager, __ATOMIC_ACQUIRE) || !up_io_in_place(f, off, n))
        return NULL;
    uint32_t i = __atomic_fetch_add(&st->lazy_used, 1, __ATOMIC_ACQ_REL);
    if (i >= STRICT_LAZY_MAX) {
        *full = true;
        return NULL;
    }
    st->lazy[i].f = f; /* len stays 0 until the record is durable */
    __atomic_add_fetch(&f->strict_lazy, 1, __ATOMIC_ACQ_REL);
    return &st->lazy[i];
}

/* Applies every waiting overwrite now (write side of st->ck; no checkpoint: their records stay valid). */
static void lazy_drain(struct up_strict *st) {
    ck_wrlock(st);
    lazy_apply(st);
    ck_wrunlock(st);
}

/* lazy_drain for a signal handler whose thread holds the file table's lock (review 28, #6's other half): the exit's
 * shutdown takes the write side for good and then the table's lock, so the write side is only tried, in a loop --
 * as ck_read_enter_table's read side. 0: drained, or f has no waiting overwrite any more (a checkpoint's or the
 * shutdown's apply took them meanwhile: the caller reads the file as it is); -EDEADLK: the shutdown began and
 * holds the lock with f's overwrites still waiting (a checkpoint holds it a short while and takes no table lock:
 * the loop ends). */
static __attribute__((noinline, cold)) int lazy_drain_table(struct up_strict *st, struct up_file *f) {
    DK_CRASH_POINT("strict.drain_table.before_lock"); /* tests: the shutdown takes the lock from here */
    for (;;) {
        if (ck_wrlock_how(st, true)) {
            lazy_apply(st);
            ck_wrunlock(st);
            return 0;
        }
        if (!__atomic_load_n(&f->strict_lazy, __ATOMIC_ACQUIRE)) return 0;
        if (__atomic_load_n(&strict_down, __ATOMIC_ACQUIRE)) return -EDEADLK;
        syscall(SYS_nanosleep, &(struct timespec){0, 20000}, NULL); /* (no cancellation point) */
    }
}

bool up_strict_ck_held(void) { return ck_held != 0; }

int up_strict_drain(struct up_file *f) {
    struct up_strict *st = __atomic_load_n(&f->root->strict, __ATOMIC_ACQUIRE);
    if (!st || !__atomic_load_n(&f->strict_lazy, __ATOMIC_ACQUIRE)) return 0;
    if (ck_held) return 1; /* a signal handler inside a strict operation of this thread: see overlay */
    if (DK_UNLIKELY(dk_mu_mine(&up_table_mu))) {
        int rc = lazy_drain_table(st, f);
        if (rc) dk_count(DK_C_strict_nested_refused, 1);
        return rc;
    }
    lazy_drain(st);
    return 0;
}

void up_strict_overlay(struct up_file *f, char *buf, size_t n, uint64_t off) {
    struct up_strict *st = __atomic_load_n(&f->root->strict, __ATOMIC_ACQUIRE);
    if (!st || !st->lazy) return;
    /* Called only while this thread holds a checkpoint lock (a signal handler inside a strict operation),
     * normally this root's: no other thread can reset the table now, and taking the lock again could wait
     * for ever (this thread may hold the write side). Entries other threads are adding have len 0 until
     * their record is durable. (Held on another root's lock only, a checkpoint of this root could race the
     * copy: the handler may then read the file without a waiting overwrite -- two roots and a handler.) */
    uint32_t used = DK_MIN(__atomic_load_n(&st->lazy_used, __ATOMIC_ACQUIRE), STRICT_LAZY_MAX);
    for (uint32_t i = 0; i < used; i++) { /* reservation order: the log's for one thread's writes */
        const struct strict_lazy *e = &st->lazy[i];
        uint32_t len = __atomic_load_n(&e->len, __ATOMIC_ACQUIRE);
        if (e->f != f || len == 0 || e->off >= off + n || e->off + len <= off) continue;
        uint64_t a = DK_MAX(e->off, off), b = DK_MIN(e->off + len, off + n);
        memcpy(buf + (a - off), st->stg_addr + e->stg_off + (a - e->off), b - a);
    }
    dk_count(DK_C_strict_overlays, 1);
}

/* The largest write one record carries: the staging file's size (bigger writes are atomic per chunk). */
static size_t chunk_max(const struct up_strict *st) {
    return (size_t)DK_MIN(st->stg_bytes, (uint64_t)UINT32_MAX & ~(uint64_t)63);
}

/* Page cache: an overwrite of bytes the kernel file already holds is applied by pwrite into the page cache
 * the mapping shows (made durable by the checkpoint's fdatasync, like a store). A store through the mapping
 * takes a write fault on every page the last write-back left clean, and the checkpoint's write-back must
 * then write-protect the mapped pages again (TLB shootdowns): measured 23-35 us of CPU per 4 KiB strict
 * write by pwrite against 33-43 us by stores (XFS on a RAM loop, 6 interleaved runs). Not through an
 * O_APPEND descriptor (the kernel would append) nor an O_SYNC/O_DSYNC one (the kernel would sync it).
 * 1 applied, 0 not taken (the caller stores through the mapping), -errno. */
static int apply_by_pwrite(struct up_file *f, int fd, const char *buf, size_t n, uint64_t off) {
    int rc = up_io_overwrite_by_pwrite(f, fd, buf, n, off);
    if (rc == 1) {
        dk_count(DK_C_writes, 1);
        dk_count(DK_C_write_bytes, n);
    }
    return rc;
}

/* One part of an apply: stored straight into the mapping (flush and volatile media: an overwrite of
 * published, mapped bytes -- what up_io_write would do after its checks for the cases it also serves:
 * appends, the page cache, a read-only mapping), by pwrite (above), or through up_io_write. An append
 * published through an O_APPEND descriptor past another process's growth went in further on: *moved is set
 * to that distance (up_io_write's offset past off), and left alone otherwise. */
/* An O_APPEND append (`append`) goes to up_io_write as an append: at the file's end as it is now, under
 * f->mu -- never in place at `off`. The end it was logged at may have moved since: this process's
 * pass-through write of the file (a kernel write through a descriptor number bound between the call's looks
 * and dk_pt_begin's, one shared with a fork child, O_DIRECT) lands at the kernel's end and
 * up_kernel_changed_fd takes that end as the published size, under f->mu but not f->strict_mu; an apply at
 * `off` then lay below the published size and was stored in place, over the kernel's bytes -- an
 * acknowledged write lost (shim_fd_lifetime_replace_strict_xfs; strict_append_end_moved): *moved says how
 * far on it went instead. */
static ssize_t apply_part(struct up_file *f, int fd, const char *buf, size_t n, uint64_t off, bool append,
                          uint64_t *moved) {
    if (DK_UNLIKELY(append)) {
        int cancel_was = dk_cancel_off(); /* as below */
        ssize_t w = up_io_write(f, fd, buf, n, off, true, UP_IO_LOGGED);
        dk_cancel_restore(cancel_was);
        if (w >= 0 && up_io_last_offset > off) *moved = up_io_last_offset - off;
        return w;
    }
    if (up_persist_as(f) != DK_MEDIUM_PAGECACHE && __atomic_load_n(&f->map.writable, __ATOMIC_RELAXED) &&
        up_io_overwrite_mapped(f, buf, n, off)) {
        dk_count(DK_C_writes, 1);
        dk_count(DK_C_write_bytes, n);
        return (ssize_t)n;
    }
    if (DK_UNLIKELY(up_io_mu_held(f))) { /* a signal handler whose thread holds f->mu: published bytes only */
        int rc = dk_pwrite_all(fd, buf, n, off, 0, NULL); /* the kernel's page cache, which the mapping shows */
        up_map_kernel_wrote(f, off, off + n, off + n);   /* ... and on DAX, once its stale zero pages go (map.c) */
        if (rc) {
            errno = -rc;
            return -1;
        }
        dk_count(DK_C_strict_nested_by_kernel, 1);
        return (ssize_t)n;
    }
    int k = apply_by_pwrite(f, fd, buf, n, off);
    if (k == 0) {
        /* Cancellation off: up_io_write may make system calls (an append's staging slot: openat, fallocate)
         * under the file's locks, and this write's record is durable already (review 11, finding 2: a thread
         * cancelled in an append's apply left the file's mutex held). */
        int cancel_was = dk_cancel_off();
        ssize_t w = up_io_write(f, fd, buf, n, off, false, UP_IO_LOGGED);
        dk_cancel_restore(cancel_was);
        if (w >= 0 && up_io_last_offset > off) *moved = up_io_last_offset - off;
        return w;
    }
    if (k < 0) {
        errno = -k;
        return -1;
    }
    return (ssize_t)n;
}

/* Applies a logged write: stored in place (written back on a flush medium; by pwrite on the page cache),
 * appends published, without a fence, msync or fsync -- the record is durable, and the checkpoint makes
 * the applied bytes and sizes durable before the record goes. While crash testing, in two halves with a crash point
 * between, so that tests see recovery complete a write cut in the middle. */
static ssize_t apply_write(struct up_file *f, int fd, const char *buf, size_t n, uint64_t off, bool append,
                           uint64_t *moved) {
    *moved = 0;
#ifdef DAXKIT_TEST_BUILD
    if (__atomic_load_n(&dk_crashpoint_active, __ATOMIC_RELAXED) && n > 1) {
        size_t h = n / 2;
        ssize_t a = apply_part(f, fd, buf, h, off, append, moved);
        if (a != (ssize_t)h) return a;
        DK_CRASH_POINT("strict.write.half_applied");
        ssize_t b = apply_part(f, fd, buf + h, n - h, off + h, append, moved);
        return b < 0 ? b : a + b;
    }
#endif
    return apply_part(f, fd, buf, n, off, append, moved);
}

/* Applies a delta record's write: its segments stored in place (no fence, as apply_write); the whole write by
 * apply_write when the range is no longer in place (the program's bytes either way). While crash testing, in
 * two parts with the crash point between (at a segment's boundary, or inside the only segment). */
static ssize_t apply_delta(struct up_file *f, int fd, const char *buf, size_t n, uint64_t off, const unsigned char *d,
                           size_t len, unsigned nested_before, uint64_t *moved) {
    *moved = 0;
    /* a signal handler's write came in between (it may have written these bytes): the whole write, as the record's
     * replay -- its segments, then the handler's later record -- ends with the handler's bytes where it wrote */
    if (DK_UNLIKELY(__atomic_load_n(&nested_writes, __ATOMIC_RELAXED) != nested_before))
        return apply_write(f, fd, buf, n, off, false, moved);
#ifdef DAXKIT_TEST_BUILD
    if (__atomic_load_n(&dk_crashpoint_active, __ATOMIC_RELAXED) && len > DK_DELTA_SEG_HDR) {
        /* the first segment (or the first half of the only one), then the crash point, then the rest */
        uint32_t h[2];
        memcpy(h, d, sizeof h);
        size_t first = DK_DELTA_SEG_HDR + h[1];
        unsigned char part[DK_DELTA_SEG_HDR + STRICT_DELTA_CAP];
        if (first == len && h[1] > 1) { /* one segment: its first half alone */
            uint32_t g[2] = {h[0], h[1] / 2};
            memcpy(part, g, sizeof g);
            memcpy(part + DK_DELTA_SEG_HDR, d + DK_DELTA_SEG_HDR, g[1]);
            if (!up_io_delta_apply(f, off, n, part, DK_DELTA_SEG_HDR + g[1])) return apply_write(f, fd, buf, n, off, false, moved);
        } else if (first < len) {
            if (!up_io_delta_apply(f, off, n, d, first)) return apply_write(f, fd, buf, n, off, false, moved);
            d += first, len -= first;
        }
        DK_CRASH_POINT("strict.write.half_applied");
    }
#endif
    if (!up_io_delta_apply(f, off, n, d, len)) return apply_write(f, fd, buf, n, off, false, moved);
    return (ssize_t)n;
}

/* ---- a signal handler's write (review 8, finding 18; review 10, finding 22) ----
 * A write is nested when this thread is inside a strict operation (it holds the checkpoint lock: ck_held) or
 * holds the file's mutex (io.c's mu_file): a signal handler interrupted it. It must wait for nothing its own
 * thread holds -- that thread runs again only once the handler returns (it hung on the staging mutex, on a
 * checkpoint, on the file's mutex of the apply). It is logged inline (the log's spare, dk_oplog_set_spare,
 * when the log is full: no checkpoint), larger writes in records of DK_OPLOG_DATA_BYTES_MAX bytes each
 * (up_strict_write), publishes nothing in the apply order (the interrupted write's entry is its thread's),
 * and is applied: stored as ever, or by the kernel's pwrite while the thread holds the file's mutex (counter
 * strict_nested_by_kernel), made durable at once when the checkpoint list cannot take the file
 * (note_applied). While overwrites of the file wait for the checkpoint, one overlapping it waits too (a staged
 * entry of its own, in log order: nested_lazy). Where none of that can complete it -- its thread inside a
 * checkpoint, a drain or a truncate (the write side), an append of the same file by its thread, the thread
 * holding the file's mutex with the write past the published bytes, the spare used up -- it fails with
 * EDEADLK before anything is logged (counter strict_nested_refused): not EAGAIN, which write-all loops retry
 * (for sockets and pipes) and which would never clear inside the handler (review 10, finding 22: such a loop
 * spun at 100% CPU). docs/guarantees.md lists which calls take which path. */
#define STRICT_NESTED_APPEND_WAIT_NS 20000000ull /* another thread's append: tried this long (it may wait for us) */

static inline bool strict_nested(const struct up_file *f) { return ck_held > 0 || up_io_mu_held(f); }

/* The thread holds f->mu: the kernel's pwrite applies it, so published bytes only (not an append). */
static bool nested_unsafe(struct up_file *f, uint64_t off, size_t n, bool append) {
    if (!up_io_mu_held(f)) return false;
    return append || off + n > __atomic_load_n(&f->pub_size, __ATOMIC_ACQUIRE) ||
           off + n > __atomic_load_n(&f->ksize, __ATOMIC_ACQUIRE);
}

static ssize_t nested_refused(void) {
    dk_count(DK_C_strict_nested_refused, 1);
    errno = EDEADLK;
    return -1;
}

/* f->strict_mu for a nested append: never when this thread holds it; another thread's is tried for
 * STRICT_NESTED_APPEND_WAIT_NS (it may be waiting for a checkpoint this thread holds off). 0 or -EDEADLK. */
static int nested_append_lock(struct up_file *f) {
    if (dk_mu_mine(&f->strict_mu)) return -EDEADLK;
    uint64_t until = 0;
    while (dk_mu_trylock(&f->strict_mu) != 0) {
        uint64_t t = now_ns();
        if (!until) until = t + STRICT_NESTED_APPEND_WAIT_NS;
        else if (t > until) return -EDEADLK;
        sched_yield();
    }
    return 0;
}

/* Whether a waiting overwrite of f may overlap [off, off+n): one whose record is not durable yet (its range
 * is not filled in), or whose entry is being made, counts. Under st->ck's read side (no reset meanwhile). */
static bool lazy_overlaps(const struct up_strict *st, const struct up_file *f, uint64_t off, size_t n) {
    uint32_t used = DK_MIN(__atomic_load_n(&st->lazy_used, __ATOMIC_ACQUIRE), STRICT_LAZY_MAX);
    for (uint32_t i = 0; i < used; i++) {
        const struct strict_lazy *e = &st->lazy[i];
        const struct up_file *ef = __atomic_load_n(&e->f, __ATOMIC_ACQUIRE);
        uint32_t len = __atomic_load_n(&e->len, __ATOMIC_ACQUIRE);
        if (ef == NULL || (ef == f && (len == 0 || (e->off < off + n && e->off + len > off)))) return true;
    }
    return false;
}

/* A nested overwrite that overlaps waiting overwrites of its file waits for the checkpoint too, after them in
 * log order (a drain would wait for the thread's own operation): an entry of its own. NULL: it cannot (an
 * append, not in place, the table full). */
static struct strict_lazy *nested_lazy(struct up_strict *st, struct up_file *f, uint64_t off, size_t n, bool append) {
    if (!st->lazy || append || f->atomic || __atomic_load_n(&f->strict_eager, __ATOMIC_ACQUIRE) ||
        !up_io_in_place(f, off, n))
        return NULL;
    uint32_t i = __atomic_fetch_add(&st->lazy_used, 1, __ATOMIC_ACQ_REL);
    if (i >= STRICT_LAZY_MAX) return NULL;
    st->lazy[i].f = f; /* len stays 0 until the record is durable */
    __atomic_add_fetch(&f->strict_lazy, 1, __ATOMIC_ACQ_REL);
    return &st->lazy[i];
}

/* A write's record whose write failed with nothing applied: taken back (errno kept). */
static void retract_failed(struct up_strict *st, uint64_t seq) {
    DK_ERRNO_SAVE;
    int rc = dk_oplog_retract(st->log, seq);
    if (rc) {
        dk_count(DK_C_strict_retract_failed, 1);
        dk_log("strict: a failed write's record could not be taken back (%s): recovery after a crash would apply it",
               dk_strerror(-rc));
    } else {
        dk_count(DK_C_strict_retracts, 1);
    }
    DK_ERRNO_RESTORE;
}

/* One write of at most chunk_max bytes (a nested one: DK_OPLOG_DATA_BYTES_MAX, or a waiting entry's). Inlined
 * twice: an ordinary write's copy is compiled with `nested` false (none of the above in its path). */
static inline __attribute__((always_inline)) ssize_t strict_write_one(struct up_file *f, int fd, const char *buf, size_t n, uint64_t off, bool append,
                                bool nested) {
    struct up_strict *st = strict_for(f->root);
    if (!st) {
        errno = no_log_errno(); /* ENOSPC on a medium too full for the log (review 9, finding 27) */
        return -1;
    }
    n = DK_MIN(n, chunk_max(st));
    if (DK_UNLIKELY(nested) && (ck_wr_held || nested_unsafe(f, off, n, append))) return nested_refused();
    /* this thread's in-flight registry slot (inflight.h), held from its first operation on: a load */
    if (!nested) up_inflight_hold(f->root, st->log);
    /* An append's offset is decided here, so that the record and the apply agree: appends to one file
     * are serialised (overwrites are not). */
    uint32_t chosen = 0; /* st->ck_epoch when an append's offset was chosen */
    if (append) {
        if (DK_UNLIKELY(nested) && nested_append_lock(f) != 0) return nested_refused();
        if (!nested) dk_mu_lock(&f->strict_mu);
        chosen = __atomic_load_n(&st->ck_epoch, __ATOMIC_ACQUIRE);
        /* An O_APPEND descriptor: the record must name where the kernel's end is, which another process may
         * have moved (a shared log; review 12, finding 2) -- re-read when nothing here is unpublished. */
        if (!nested) up_size_verify_slow(f, fd);
        off = up_file_size(f);
    }
    /* Reuse the staging file early (a failed checkpoint changes nothing) -- not from a signal handler that
     * interrupted a strict operation of this thread, which holds st->ck: it would wait for itself. */
    if (dk_cfg.strict_apply == 1 /* write */ && !nested && n > inline_max_for(f->root) &&
        n <= STRICT_STG_REUSE_BYTES && __atomic_load_n(&st->stg_used, __ATOMIC_RELAXED) + n > STRICT_STG_REUSE_BYTES)
        up_strict_checkpoint(f->root);
    int rc;
    struct strict_lazy *lz = NULL;
    uint32_t ident = up_file_ident(f, fd); /* a load: computed at the file's first logged operation */
    struct up_reader *wr = NULL; /* where this write is published (inflight_publish) */
    bool borrowed = false, self_durable = false;
    uint32_t epoch = 0;
    uint64_t seq = 0;
    unsigned char delta[STRICT_DELTA_CAP]; /* a delta record's segments (log_delta) */
    size_t delta_len = 0;
    bool by_delta = false;
    unsigned nested_before = 0;
    enum up_guard_entry ck;
    /* a signal handler inside its thread's hold of the file table's lock: the read side only tried (review 28, #6) */
    bool table = DK_UNLIKELY(dk_mu_mine(&up_table_mu));
    for (int attempt = 0;; attempt++) {
        ck = DK_UNLIKELY(table) ? ck_read_enter_table(st) : ck_read_enter(st);
        /* A hold of the write side since the append chose its offset (a checkpoint, or a truncate by name, which
         * the kernel did meanwhile: up_strict_truncate_name_begin): chosen again, or the record would name the
         * end before the truncate, the bytes replayed behind a hole (session 26). */
        while (DK_UNLIKELY(append && !nested && ck != UP_GUARD_NONE &&
                           __atomic_load_n(&st->ck_epoch, __ATOMIC_RELAXED) != chosen)) {
            ck_read_exit(st, ck);
            chosen = __atomic_load_n(&st->ck_epoch, __ATOMIC_ACQUIRE);
            up_size_verify_slow(f, fd);
            off = up_file_size(f);
            ck = DK_UNLIKELY(table) ? ck_read_enter_table(st) : ck_read_enter(st);
        }
        if (DK_UNLIKELY(ck == UP_GUARD_NONE)) { /* the exit's shutdown holds the write side for good */
            rc = -EDEADLK;
            break;
        }
        if (DK_UNLIKELY(nested)) {
            /* After the file's waiting overwrites in log order, as a drain would make it, when it may overlap one */
            if (__atomic_load_n(&f->strict_lazy, __ATOMIC_ACQUIRE) && lazy_overlaps(st, f, off, n) &&
                !(lz = nested_lazy(st, f, off, n, append))) {
                rc = -EDEADLK;
                break;
            }
        } else {
            bool full;
            lz = lazy_reserve(st, f, off, n, append, &full);
            /* A write applied now goes in after the file's waiting overwrites (the apply order is the log's). */
            if (attempt < 2 && (full || (!lz && __atomic_load_n(&f->strict_lazy, __ATOMIC_ACQUIRE)))) {
                ck_read_exit(st, ck);
                if (full) up_strict_checkpoint(f->root); /* and the staging file is reused from its start */
                else if (DK_UNLIKELY(table) && lazy_drain_table(st, f) != 0) {
                    ck = ck_read_none(); /* the exit's shutdown holds the write side for good */
                    rc = -EDEADLK;
                    break;
                } else if (!table) lazy_drain(st);
                continue;
            }
        }
        rc = lz ? 0 : note_applied(st, f, fd, off + n, append, nested); /* -ENOSPC: every slot holds another file */
        if (rc >= 0) {
            self_durable = rc == 1;
            if (!lz && !nested) {
                epoch = __atomic_load_n(&st->ck_epoch, __ATOMIC_RELAXED);
                wr = inflight_publish(f, epoch, off, off + n, &borrowed);
            }
            rc = 1;
            if (!nested && wr && delta_candidate(f, off, n, append, epoch)) {
                nested_before = __atomic_load_n(&nested_writes, __ATOMIC_RELAXED);
                __atomic_signal_fence(__ATOMIC_SEQ_CST); /* before the compare */
                rc = log_delta(st, f, ident, off, buf, n, wr, epoch, nested_before, &seq, delta, &delta_len);
            }
            by_delta = rc == 0;
            if (rc == 1) rc = log_write(f->root, st, f, ident, off, buf, n, lz, wr, &seq, nested);
            if (rc && wr) inflight_withdraw(wr, borrowed), wr = NULL; /* before a checkpoint waits for us */
        }
        /* Full (the spare too, for a nested write), or a lock of its own thread's: a checkpoint would wait for that thread */
        if (nested && (rc == -ENOSPC || rc == -EAGAIN)) rc = -EDEADLK;
        /* ... and a signal handler inside its thread's hold of the file table's lock: no checkpoint is made there
         * (up_strict_checkpoint, review 26 #3) -- EDEADLK, not a full disk's ENOSPC (review 28, #5) */
        if (rc == -ENOSPC && DK_UNLIKELY(dk_mu_mine(&up_table_mu))) rc = -EDEADLK;
        if (rc != -ENOSPC || attempt >= 2) break;
        /* Full: checkpoint (needs the write side), then try again. */
        ck_read_exit(st, ck);
        up_strict_checkpoint(f->root);
    }
    if (rc) {
        ck_read_exit(st, ck);
        if (append) dk_mu_unlock(&f->strict_mu);
        if (rc == -EDEADLK) return nested_refused();
        errno = -rc == ENOSPC ? ENOSPC : EIO;
        return -1;
    }
    DK_CRASH_POINT("strict.write.logged");
    ssize_t w = (ssize_t)n;
    uint64_t moved = 0; /* the append went in past the logged end (apply_part) */
    if (lz) {
        dk_count(DK_C_strict_lazy, 1);
        dk_count(DK_C_writes, 1);
        dk_count(DK_C_write_bytes, n);
    } else {
        if (wr) inflight_wait(f, epoch, wr, seq, off, off + n);
        up_io_left_trace = false;
        w = by_delta ? apply_delta(f, fd, buf, n, off, delta, delta_len, nested_before, &moved)
                     : apply_write(f, fd, buf, n, off, append, &moved);
        /* Failed with nothing applied (the medium full: the kernel's pwrite refused, or an append's publish
         * undone, io.c): the record goes too, or recovery after a crash would make the write the program was
         * told failed (shim_full_medium_strict_grow_*). Under st->ck's read side: no reset meanwhile. */
        if (w < 0 && !up_io_left_trace) retract_failed(st, seq);
        /* Applied: recovery in this boot never replays it (dk_oplog_mark_done) -- marked before the withdrawal,
         * so that no overlapping write logged after it is applied (and marked) while it is not. */
        if (w == (ssize_t)n) mark_applied(st, seq);
        DK_CRASH_POINT("strict.write.marked");
        if (wr) inflight_withdraw(wr, borrowed);
        if (DK_UNLIKELY(self_durable) && w > 0) {
            int e = durable_now(f, fd);
            if (e) errno = -e, w = -1;
        }
    }
    /* Where the write began (the caller moves the offset past it) -- an append's, past another process's
     * growth if one appended between the re-read above and the publish, or past this process's pass-through
     * write (apply_part; its record names off: docs/guarantees.md). */
    if (w >= 0) up_io_last_offset = off + moved;
    DK_CRASH_POINT("strict.write.applied");
    ck_read_exit(st, ck);
    if (append) dk_mu_unlock(&f->strict_mu);
    return w;
}

/* A signal handler's write (strict_nested); one larger than an inline record in records of
 * DK_OPLOG_DATA_BYTES_MAX bytes (each all or nothing, as writes larger than the staging file are per chunk): a
 * short count if a later one fails. */
static __attribute__((noinline, cold)) ssize_t strict_write_nested(struct up_file *f, int fd, const char *buf, size_t n,
                                                                   uint64_t off, bool append) {
    __atomic_store_n(&nested_writes, nested_writes + 1, __ATOMIC_RELAXED); /* (apply_delta of the interrupted write) */
    size_t done = 0;
    uint64_t first = 0;
    while (done < n) {
        ssize_t w = strict_write_one(f, fd, buf + done, DK_MIN(n - done, (size_t)DK_OPLOG_DATA_BYTES_MAX), off + done,
                                     append, true);
        if (w <= 0) {
            if (done == 0) return w;
            break;
        }
        if (done == 0) first = up_io_last_offset;
        done += (size_t)w;
    }
    up_io_last_offset = first;
    return (ssize_t)done;
}

ssize_t up_strict_write(struct up_file *f, int fd, const char *buf, size_t n, uint64_t off, bool append) {
    if (DK_UNLIKELY(strict_nested(f))) {
        /* the interrupted write's results in this thread's io.c words stay its own (review 15, finding 7) */
        bool trace = up_io_left_trace;
        uint64_t size0 = up_io_append_size0;
        ssize_t w = strict_write_nested(f, fd, buf, n, off, append);
        up_io_left_trace = trace, up_io_append_size0 = size0;
        return w;
    }
    return strict_write_one(f, fd, buf, n, off, append, false);
}

/* A truncate's record (reservation, published seq, commit), as log_write's inline path. */
static int log_truncate(struct up_strict *st, const struct dk_oplog_op *op, struct up_reader *wr, uint64_t *seq) {
    struct dk_oplog_reservation res;
    int rc = dk_oplog_reserve(st->log, 0, &res);
    if (rc == 0 && wr) inflight_seq(wr, res.seq);
    return rc ? rc : dk_oplog_commit(st->log, &res, DK_OPLOG_TRUNCATE, op, NULL, seq);
}

int up_strict_log_truncate(struct up_file *f, int fd, uint64_t len, uint64_t *seq, struct up_strict_pub *pub) {
    *pub = (struct up_strict_pub){NULL, false};
    struct up_strict *st = strict_for(f->root);
    if (!st) return -no_log_errno();
    if (!ck_held) up_inflight_hold(f->root, st->log); /* inflight.h */
    struct dk_oplog_op op = {.dev = (uint64_t)f->dev, .ino = (uint64_t)f->ino, .file_offset = len,
                             .aux = op_ident_bits(up_file_ident(f, fd))};
    /* Waiting overwrites are applied first, and none is staged while the truncate runs (the write side,
     * held until up_strict_done): one logged before the truncate and applied after it would land beyond
     * the new size, or be cut where recovery's replay, in log order, would not cut it. Without waiting
     * overwrites (the page cache) the read side is taken, and the truncate is ordered against the file's
     * writes as a write of [len, end of file space) published in the thread's reader record (review 9,
     * finding 3's truncate half: a write logged before a shrinking truncate and applied after it left the
     * file longer than recovery's replay would; a write logged after one and applied before it was cut).
     * Not a signal handler's truncate inside a strict operation of its own thread (nothing published, as
     * for writes). */
    bool nested = ck_held > 0;
    uint32_t epoch = 0;
    if (st->lazy) {
        ck_wrlock(st);
        lazy_apply(st);
    } else {
        ck_rdlock(st);
        epoch = __atomic_load_n(&st->ck_epoch, __ATOMIC_RELAXED);
        if (!nested) pub->r = inflight_publish(f, epoch, len, UINT64_MAX, &pub->borrowed);
    }
    int rc = log_truncate(st, &op, pub->r, seq);
    if (rc == -ENOSPC) {
        if (st->lazy) {
            checkpoint_locked(f->root, st); /* the write side is ours already */
        } else {
            if (pub->r) inflight_withdraw(pub->r, pub->borrowed), pub->r = NULL; /* before the checkpoint waits */
            ck_rdunlock(st);
            up_strict_checkpoint(f->root);
            ck_rdlock(st);
            epoch = __atomic_load_n(&st->ck_epoch, __ATOMIC_RELAXED);
            if (!nested) pub->r = inflight_publish(f, epoch, len, UINT64_MAX, &pub->borrowed);
        }
        rc = log_truncate(st, &op, pub->r, seq);
    }
    if (rc && pub->r) inflight_withdraw(pub->r, pub->borrowed), pub->r = NULL;
    if (pub->r) inflight_wait(f, epoch, pub->r, *seq, len, UINT64_MAX); /* writes logged before it are applied */
    return rc; /* the caller truncates, then calls up_strict_done */
}

void up_strict_retract(struct up_file *f, uint64_t seq) {
    struct up_strict *st = __atomic_load_n(&f->root->strict, __ATOMIC_ACQUIRE);
    int rc = st ? dk_oplog_retract(st->log, seq) : 0;
    if (rc) dk_log("strict: a refused truncate's record could not be taken back (%s): recovery after a crash would "
                   "apply it", dk_strerror(-rc));
    else dk_count(DK_C_strict_retracts, 1);
}

int up_strict_fsync(struct up_file *f, int fd, bool datasync) {
    /* Every acknowledged write and truncate is durable in the log (its record) and appends were published
     * and made durable when they were written: only metadata the sync path left dirty needs the kernel.
     * Overwrites waiting for a checkpoint are applied: after fsync another process reads them in the file
     * (a SQLite WAL checkpointer fsyncs the database, then tells readers through shared memory), and no
     * later apply can land over what another process writes after it (review 7, findings 8 and 8b). */
    int drained = up_strict_drain(f); /* 1: a signal handler inside its thread's strict operation, none made */
    if (DK_UNLIKELY(drained < 0)) return drained; /* EDEADLK: a handler inside its thread's table lock, at exit */
    up_file_lock(f);
    bool meta = f->meta_dirty || up_file_size(f) != f->pub_size || f->staged_count;
    dk_mu_unlock(&f->mu);
    if (meta) return up_sync_file(f, fd, datasync);
    /* Appends published by relink leave the file marked reflinked (XFS then looks every write's blocks up
     * in its refcount tree: xfs_reflink_find_shared, ~4 % of a strict 4 KiB write's CPU samples on XFS);
     * their staging slots were punched when given back, so nothing is shared any more. Sync mode drops the
     * mark after its fsync (publish.c); strict's fsync makes no kernel call: here, once after such appends. */
    up_drop_reflink_mark(f, fd);
    return 0;
}

void up_strict_truncated(struct up_file *f, uint64_t seq) {
    struct up_strict *st = __atomic_load_n(&f->root->strict, __ATOMIC_ACQUIRE);
    if (st) mark_applied(st, seq); /* before up_strict_done lets overlapping writes in */
}

void up_strict_done(struct up_file *f, struct up_strict_pub *pub) {
    if (pub->r) inflight_withdraw(pub->r, pub->borrowed), pub->r = NULL; /* the kernel's truncate is done */
    struct up_strict *st = __atomic_load_n(&f->root->strict, __ATOMIC_ACQUIRE);
    if (!st) return;
    if (st->lazy) ck_wrunlock(st); /* as up_strict_log_truncate took it */
    else ck_rdunlock(st);
}

/* ---- metadata ---- */

/* The directory holding `path` (relative to dirfd), opened -- only when it is on a managed file system: -1
 * otherwise, or when it cannot be. Looked up by fstatat first, outside any window: the open is a window
 * (common/internal_fd.h), which every other thread's pass-through read/write waits for, and a lookup on a
 * slow or stuck file system (NFS, FUSE, automount) outside the roots stalled the whole process's I/O -- an
 * in-process FUSE server deadlocked (review 15, finding 5). Managed roots are local media. */
static int open_parent(int dirfd, const char *path) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir) slash[1] = 0;
    else if (slash) *slash = 0;
    else snprintf(dir, sizeof dir, ".");
    struct stat st;
    if (DK_REAL(fstatat)(dirfd, dir, &st, 0) != 0 || !S_ISDIR(st.st_mode) || !up_dev_is_managed(st.st_dev)) return -1;
    return dk_ifd_openat(dirfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
}

/* The managed root holding the directory of `path` (relative to dirfd), or NULL. */
static struct up_root *root_of_path(int dirfd, const char *path) {
    int dfd = open_parent(dirfd, path);
    if (dfd < 0) return NULL;
    struct stat st;
    struct up_root *r = NULL;
    if (DK_REAL(fstat)(dfd, &st) == 0 && up_dev_is_managed(st.st_dev)) r = up_root_for_fd(dfd, &st, AT_FDCWD, NULL);
    DK_REAL(close)(dfd);
    return r;
}

/* The managed root holding the file `path` (relative to dirfd) names -- following a final symlink, as truncate(2)
 * and open(2) without O_NOFOLLOW do -- or NULL; *st: the file's stat. Found from the file itself (an O_PATH
 * descriptor of it, whose path the kernel reports), not from the directory holding the name: a symlink's target
 * may be under another root or under none (review 26, #1's other half: a truncate through a symlink from outside
 * the managed tree logged nothing, one from another root logged into that root's log, unordered against the
 * file's writes). Looked up by fstatat first, outside any window, as open_parent: a regular file of a managed
 * device only. The O_PATH descriptor's close drops none of the program's POSIX locks (the kernel's filp_flush
 * skips locks_remove_posix for FMODE_PATH). */
static struct up_root *root_of_file(int dirfd, const char *path, struct stat *st) {
    if (DK_REAL(fstatat)(dirfd, path, st, 0) != 0 || !S_ISREG(st->st_mode) || !up_dev_is_managed(st->st_dev)) return NULL;
    int cancel_was = dk_cancel_off(); /* (the callers' calls are no cancellation points: neither is this) */
    int fd = dk_ifd_openat(dirfd, path, O_PATH | O_CLOEXEC, 0);
    struct up_root *r = NULL;
    struct stat fs;
    if (fd >= 0 && DK_REAL(fstat)(fd, &fs) == 0 && S_ISREG(fs.st_mode) && up_dev_is_managed(fs.st_dev)) {
        *st = fs; /* (the name may have moved since the fstatat: the file the descriptor holds counts) */
        r = up_root_for_fd(fd, &fs, AT_FDCWD, NULL);
    }
    if (fd >= 0) DK_REAL(close)(fd);
    dk_cancel_restore(cancel_was);
    return r;
}

/* truncate(path, len) by name (shim/meta.c), logged as an ftruncate is (issue 3: a truncate is a logged metadata
 * operation). Before session 26 it was no record: the checkpoint of up_publish_inode, then the kernel's truncate
 * -- and another thread's strict write of the file in between was logged after the checkpoint and applied before
 * the truncate, which cut it; recovery then replayed it over the truncated file (after a power loss, or with the
 * marks off: the write's bytes back, the old size back), and an append logged in between but applied after was
 * replayed at the old end, behind a hole (a process crash, marks on). Now the record comes first, in log order,
 * and the checkpoint lock's write side is held from before it to after the kernel's truncate (any medium: the
 * process may have no entry of the file -- it was opened by another thread meanwhile -- so the file's in-flight
 * table cannot order it as ftruncate's on the page cache): every write of the root logged before the record is
 * applied before it, none is logged until the kernel has cut the file, and an append that chose its offset
 * before the hold chooses it again (strict_write_one: the epoch moved). The file is named by (dev, ino) from a stat under
 * the hold (session 27: the caller's, before) and its identity by the path's handle (up_path_ident); its log is
 * its root's, found from the file, not from the directory of the name (a symlink: root_of_file). A rename of
 * another file onto the name between that stat and the kernel's call gives a record whose identity recovery
 * finds wrong -- never applied to either file (on tmpfs, without identities: to the file stat named). Not from a
 * signal handler inside a strict operation of its own thread (the write side would wait for that thread): the
 * kernel's truncate unlogged then, as before, counted. 0 (the caller truncates, then up_strict_truncate_name_end)
 * or -errno: the call fails (no record, nothing held). */
static int truncate_record_begin(struct up_root *r, int dirfd, const char *path, dev_t dev, ino_t ino, uint64_t len,
                                 struct up_strict_name *t);

int up_strict_truncate_name_begin(int dirfd, const char *path, dev_t dev, ino_t ino, uint64_t len,
                                  struct up_strict_name *t) {
    *t = (struct up_strict_name){0};
    if (dk_cfg.mode != DK_MODE_STRICT || !up_enabled) return 0;
    DK_ERRNO_SAVE;
    struct stat sb;
    struct up_root *r = root_of_file(dirfd, path, &sb); /* the file's root, through a symlink too */
    DK_ERRNO_RESTORE;
    if (!r) return 0;
    /* A growth the file-size limit refuses (the kernel's EFBIG and SIGXFSZ, whose default action ends the
     * process before the record could be taken back) is refused before anything is logged, as up_ftruncate
     * does: recovery would apply it (review 26, #2: 100 bytes recovered as 2 MiB). */
    if (DK_UNLIKELY(up_fsize_limited())) {
        int frc = up_fsize_refuse_growth(len, (uint64_t)sb.st_size);
        if (frc) return frc; /* (errno: the caller sets it) */
    }
    (void)dev, (void)ino; /* the caller's stat: the file root_of_file found is the one (it looked later) */
    return truncate_record_begin(r, dirfd, path, sb.st_dev, sb.st_ino, len, t);
}

/* The record and the hold, for the file (dev, ino) at `path` under root r. The name is looked at again under
 * the hold (review 26, #9): the caller's stat came before a checkpoint (an O_TRUNC open's, the publish of a
 * truncate by name) and the wait for the write side, and a rename onto the name in that time -- by another
 * process, or this one's unlogged -- gave a record of the file the name no longer named: on tmpfs (no
 * identity) recovery then cut that file, which the program never truncated, and never the one the kernel cut.
 * Now the record names the file the name names under the hold, which the kernel's call acts on (a rename after
 * that is the race every truncate by name has, docs/strict.md); a name that moved to another root's file is
 * held and looked at again under that root's lock; one that names no regular file of a root now gets no
 * record (the kernel's call makes a new file, or fails). *t's dev and ino: the file the record names. */
static int truncate_record_begin(struct up_root *r, int dirfd, const char *path, dev_t dev, ino_t ino, uint64_t len,
                                 struct up_strict_name *t) {
    *t = (struct up_strict_name){0};
    if (ck_held) { /* a signal handler inside a strict operation of its thread: the write side would wait for it */
        dk_count(DK_C_strict_meta_unlogged, 1);
        return 0;
    }
    /* A signal handler inside its thread's hold of the file table's lock: the write side is never taken under it
     * (review 26, #3). A truncate by name is refused before it gets here (shim/meta.c); an O_TRUNC open of a name
     * outside the roots by its text -- a symlink to a file of a root -- got here, took the write side under that
     * lock, had the kernel cut the file and was refused only after the open (session 28): refused now, nothing
     * cut. */
    if (DK_UNLIKELY(dk_mu_mine(&up_table_mu))) {
        dk_count(DK_C_truncate_nested_refused, 1);
        return -EDEADLK;
    }
    DK_ERRNO_SAVE;
    int rc = 0;
    for (int attempt = 0; r; attempt++) {
        /* No log under a finite file-size limit, none that can be made (a full medium): as up_strict_meta_begin --
         * without a log there is no record of the file to order against. */
        struct up_strict *st = up_fsize_limited() && !__atomic_load_n(&r->strict, __ATOMIC_ACQUIRE) ? NULL : strict_for(r);
        if (!st) {
            dk_count(DK_C_strict_meta_unlogged, 1);
            break;
        }
        up_inflight_hold(r, st->log); /* inflight.h */
        DK_CRASH_POINT("strict.truncate_name.before_hold"); /* tests: a rename onto the name here */
        ck_wrlock(st);
        lazy_apply(st); /* waiting overwrites first (up_strict_log_truncate) */
        struct stat now;
        if (DK_REAL(fstatat)(dirfd, path, &now, 0) != 0 || now.st_dev != dev || now.st_ino != ino) {
            struct up_root *r2 = root_of_file(dirfd, path, &now); /* (no cancellation point, as under ck) */
            if (r2 != r || attempt >= 4) {
                ck_wrunlock(st);
                if (r2 && attempt >= 4) dk_count(DK_C_strict_meta_unlogged, 1); /* (renamed on and on) */
                r = attempt >= 4 ? NULL : r2, dev = now.st_dev, ino = now.st_ino;
                continue; /* another root's file: its log and its hold; none: nothing of ours is cut */
            }
            dev = now.st_dev, ino = now.st_ino;
        }
        struct dk_oplog_op op = {.dev = (uint64_t)dev, .ino = (uint64_t)ino, .file_offset = len,
                                 .aux = op_ident_bits(up_path_ident(r, dirfd, path))};
        rc = log_truncate(st, &op, NULL, &t->seq);
        if (rc == -ENOSPC) {
            checkpoint_locked(r, st);
            rc = log_truncate(st, &op, NULL, &t->seq);
        }
        if (rc) {
            ck_wrunlock(st);
            rc = rc == -ENOSPC ? -ENOSPC : -EIO;
        } else {
            t->st = st, t->dev = dev, t->ino = ino;
            dk_count(DK_C_strict_meta, 1);
            DK_CRASH_POINT("strict.truncate_name.logged");
        }
        break;
    }
    DK_ERRNO_RESTORE;
    return rc;
}

/* An open with O_TRUNC (kflags: the flags the kernel gets) of an existing regular file of a managed directory:
 * the same record, a truncate to 0, and the same hold until the kernel's open is done (shim/open.c STRICT_OPEN).
 * Session 26: only the checkpoint of up_strict_before_truncating_open came first, and another thread's write
 * between it and the open was replayed over the truncated file (strict_trunc_name_*, case otrunc). The file and
 * its root are the ones up_strict_before_truncating_open found (its stat follows a symlink, as the open does
 * without O_NOFOLLOW; with it, a symlink's open fails and the record is taken back). A file that did not exist
 * then has no record to order against. */
int up_strict_truncating_open_begin(int dirfd, const char *path, int kflags, struct up_strict_name *t) {
    struct up_root *r = t->root; /* the file up_strict_before_truncating_open found */
    if (dk_cfg.mode != DK_MODE_STRICT || !up_enabled || !(kflags & O_TRUNC) || !path || !r) return 0;
    return truncate_record_begin(r, dirfd, path, t->dev, t->ino, 0, t);
}

void up_strict_truncate_name_end(struct up_strict_name *t, bool truncated) {
    struct up_strict *st = t->st;
    if (!st) return;
    DK_ERRNO_SAVE;
    if (truncated) {
        mark_applied(st, t->seq); /* before the write side goes: no write of the file after it is marked first */
    } else if (dk_oplog_retract(st->log, t->seq) != 0) { /* refused (EACCES, EPERM, EISDIR, ...): never replayed */
        dk_log("strict: a refused truncate's record could not be taken back: recovery after a crash would apply it");
    } else {
        dk_count(DK_C_strict_retracts, 1);
    }
    epoch_next(st); /* an append that chose its offset during the hold, before the kernel's cut, chooses again */
    ck_wrunlock(st);
    t->st = NULL;
    DK_ERRNO_RESTORE;
}

int up_strict_meta_begin(unsigned type, int dirfd, const char *path, int dirfd2, const char *path2) {
    if (dk_cfg.mode != DK_MODE_STRICT || !up_enabled) return 0;
    /* a name the kernel cannot read: no record, the kernel's call fails (EFAULT), not a SIGSEGV here (userptr.h) */
    if (!dk_user_str_readable(path) || (path2 && !dk_user_str_readable(path2))) return 0;
    /* (rename, unlink, mkdir... are no cancellation points: the parent's close must not be one -- review 15,
     * finding 1) */
    int cancel_was = dk_cancel_off();
    struct up_root *r = root_of_path(dirfd, path);
    if (!r && path2) r = root_of_path(dirfd2, path2);
    dk_cancel_restore(cancel_was);
    if (!r) return 0;
    /* No log made under a finite file-size limit (it could cross it): the kernel's own call, unlogged, as
     * for the files opened meanwhile (up_adopt). */
    if (up_fsize_limited() && !__atomic_load_n(&r->strict, __ATOMIC_ACQUIRE)) return 0;
    /* An O_CREAT open of a name that exists creates nothing: no record, and no log made for one (session 29: a
     * strict process that only reads -- SQLite opens its database with O_CREAT -- made its log, marks and staging
     * file for it). A name removed between this look and the kernel's open is created unlogged, as where no log
     * can be made: a name's record is never replayed, and up_strict_meta_end's directory fsync makes it durable. */
    if (type == DK_OPLOG_CREATE && !__atomic_load_n(&r->strict, __ATOMIC_ACQUIRE)) {
        DK_ERRNO_SAVE;
        struct stat sb;
        bool exists = DK_REAL(fstatat)(dirfd, path, &sb, 0) == 0;
        DK_ERRNO_RESTORE;
        if (exists) return 0;
    }
    struct up_strict *st = strict_for_how(r, false);
    if (!st) {
        /* No log can be made (a full medium: its log and staging file need space; after the exit's shutdown:
         * none is made -- a name's record is never replayed, so this call waits for nothing). The records of names
         * are never replayed -- the change is atomic in the kernel and made durable by the directory fsync
         * of up_strict_meta_end -- and without a log this process has no data records the change could
         * reorder: the kernel's call, unlogged and counted. A program can free space by deleting files
         * (review 9, finding 27: rm, mv and creates failed with EIO). */
        dk_count(DK_C_strict_meta_unlogged, 1);
        return 0;
    }
    char data[2 * 4096 + 2];
    size_t a = strnlen(path, 4095), b = path2 ? strnlen(path2, 4095) : 0;
    memcpy(data, path, a);
    data[a] = 0;
    if (path2) memcpy(data + a + 1, path2, b), data[a + 1 + b] = 0;
    size_t len = DK_MIN(a + 1 + (path2 ? b + 1 : 0), (size_t)DK_OPLOG_DATA_BYTES_MAX);
    struct dk_oplog_op op = {0};
    int rc = dk_oplog_append(st->log, type, &op, data, len, NULL);
    if (rc == -ENOSPC) {
        /* A checkpoint refused (a signal handler inside its thread's strict operation or its hold of the file
         * table's lock): the call goes on unlogged, as without a log above -- the record is never replayed, the
         * directory fsync makes the change durable (it failed with EIO before session 28). */
        if (!up_strict_checkpoint(r)) {
            dk_count(DK_C_strict_meta_unlogged, 1);
            return 0;
        }
        rc = dk_oplog_append(st->log, type, &op, data, len, NULL);
    }
    if (rc == 0) dk_count(DK_C_strict_meta, 1);
    return rc;
}

bool up_strict_before_truncating_open(int dirfd, const char *path, struct up_strict_name *t) {
    *t = (struct up_strict_name){0};
    DK_ERRNO_SAVE;
    struct stat st;
    struct up_root *r = root_of_file(dirfd, path, &st); /* a new file has no records to replay */
    DK_ERRNO_RESTORE;
    if (r && __atomic_load_n(&r->strict, __ATOMIC_ACQUIRE)) up_strict_checkpoint(r);
    /* for up_strict_truncating_open_begin: the file its record names (a regular file of a managed device), and
     * its root -- the file's, through a symlink too (review 26, #1) */
    if (r) t->root = r, t->dev = st.st_dev, t->ino = st.st_ino;
    /* The truncate is no record: where power loss can undo it, it is made durable before the open returns,
     * or the records of the writes that follow would be replayed over the old content (new head, old tail:
     * review 9, finding 29). */
    return r && st.st_size > 0 && r->medium.medium != DK_MEDIUM_VOLATILE;
}

void up_strict_after_truncating_open(int fd) {
    DK_ERRNO_SAVE;
    if (DK_REAL(fdatasync)(fd) == 0) dk_count(DK_C_fsyncs_kernel, 1);
    DK_ERRNO_RESTORE;
}

/* fsync of the directory holding `path` (the name change is durable when this returns). */
static void sync_parent(int dirfd, const char *path) {
    int dfd = open_parent(dirfd, path);
    if (dfd < 0) return;
    DK_REAL(fsync)(dfd);
    DK_REAL(close)(dfd);
}

void up_strict_meta_end(int dirfd, const char *path, int dirfd2, const char *path2) {
    if (dk_cfg.mode != DK_MODE_STRICT || !up_enabled) return;
    DK_ERRNO_SAVE;
    int cancel_was = dk_cancel_off(); /* the program's call is done: its fsync and close are none of its */
    sync_parent(dirfd, path);
    if (path2) sync_parent(dirfd2, path2);
    dk_cancel_restore(cancel_was);
    DK_ERRNO_RESTORE;
}

void up_strict_name_made(int dirfd, const char *path) {
    if (dk_cfg.mode != DK_MODE_STRICT || !up_enabled || !path) return;
    DK_ERRNO_SAVE;
    int cancel_was = dk_cancel_off(); /* the program's call is done: a cancellation here would leak dfd */
    int dfd = open_parent(dirfd, path);
    struct stat st;
    if (dfd >= 0 && DK_REAL(fstat)(dfd, &st) == 0 && up_dev_is_managed(st.st_dev) &&
        up_root_for_fd(dfd, &st, AT_FDCWD, NULL) && DK_REAL(fsync)(dfd) == 0)
        dk_count(DK_C_strict_names_synced, 1);
    if (dfd >= 0) DK_REAL(close)(dfd);
    dk_cancel_restore(cancel_was);
    DK_ERRNO_RESTORE;
}

void up_strict_after_fork_child(void) {
    up_inflight_after_fork_child();
    /* A fork made in a signal handler inside a strict operation or checkpoint of its thread (the checkpoint
     * lock held): that hold is the parent's, on a state freed below -- counted here, every write of the child
     * was taken for the handler's own nested one and refused (EDEADLK; session 18, shim_handler_fork_strict_*).
     * The child's interrupted call must not go on (it should _exit or exec from the handler). */
    ck_held = ck_wr_held = 0;
    strict_down = strict_down_here = false; /* (a handler's fork after the exit's shutdown: the child's own logs) */
    /* The parent checkpointed before fork (a publish point); its log and staging file stay its own. */
    for (int i = 0; i < up_roots_count(); i++) {
        struct up_root *r = up_root_at(i);
        struct up_strict *st = r->strict;
        if (!st) continue;
        DK_REAL(munmap)(st->stg_addr, st->stg_bytes);
        up_internal_close(st->stg_fd);
        free(st->lazy);
        free(st->lazy_hash);
        /* The log stays the parent's: the child closes its copies of the log's descriptors, or after the
         * parent's death the inherited copy would keep the log's flock taken and recovery would never
         * replay it (review 9, finding 11). A strict child that writes makes a log of its own. */
        dk_oplog_drop_inherited(st->log);
        free(st);
        r->strict = NULL;
    }
}

/* The staging file's path next to log path `log` (<area>/<tag>.strict.stg), or "" when it has no tag. */
static void stg_path_of(const char *log, char *out, size_t cap) {
    out[0] = 0;
    const char *slash = strrchr(log, '/');
    if (!slash) return;
    const char *tagend = strchr(slash + 1, '.');
    if (tagend) snprintf(out, cap, "%.*s.strict.stg", (int)(tagend - log), log);
}

/* At exit, while the library is still on (up_fini; session 26 -- it ran after the library went off before). The
 * checkpoint lock's write side is kept until the process is gone: other threads go on until exit_group, and a
 * strict operation of theirs arriving now waits for ever -- it never returned, as a kernel write cut by the end
 * of the image -- rather than use a log and a state this freed (review 11, finding 10: the writers crashed); a
 * signal handler's on this thread is refused (EDEADLK, strict_nested). Nothing is unmapped or freed: the
 * process is ending. So every change that reaches the kernel once the library is off (the exiting thread's: a
 * handler's, a later destructor's, stdio's flush at exit) comes after the last record was applied and after
 * the log stopped being replayable: neither this apply (a waiting overwrite of the same bytes) nor a recovery
 * (a crash before the unlink, or a power loss that undoes it: the reset's header persists first) puts an older
 * record's bytes over it (exit25's note; shim_exit_sync_older_*). Costs the exit a reset when the log holds
 * records (one persisted header line, as a checkpoint's). */
void up_strict_shutdown(void) {
    /* No log is made from now on (strict_for), and one being made now is waited for (its maker holds r->mu) and
     * shut down with the rest: before session 27 a root's first strict operation in flight across the shutdown
     * or after it made a log no shutdown saw (exit26's note; shim_exit_sync_newroot_*). A root whose mutex this
     * thread holds (a signal handler's exit inside its thread's log set-up: up_fini calls this only when no
     * strict operation of the thread is in flight) is skipped, its log left as at a crash. */
    strict_down_here = true;
    __atomic_store_n(&strict_down, true, __ATOMIC_RELEASE);
    for (int i = 0; i < up_roots_count(); i++) {
        struct up_root *r = up_root_at(i);
        if (DK_UNLIKELY(dk_mu_mine(&r->mu))) continue;
        dk_mu_lock(&r->mu);
        struct up_strict *st = __atomic_load_n(&r->strict, __ATOMIC_ACQUIRE);
        dk_mu_unlock(&r->mu);
        if (!st) continue;
        ck_wrlock(st);
        lazy_apply(st);
        if (applied_make_durable(r, st) != 0) continue; /* keep the log: recovery replays it */
        /* Every operation completed and is durable: the log has nothing recovery would need. Reset first (its
         * records invalid the instant the header persists: an unlink is not durable until the directory is),
         * then unlinked while its flock is held (a recoverer never takes a log being removed for a live one). */
        if (dk_oplog_lines_used(st->log)) (void)dk_oplog_reset(st->log);
        char stg[4400];
        stg_path_of(dk_oplog_path(st->log), stg, sizeof stg);
        /* Or left for the next process (docs/oplog.md "Parked logs"): the reset above made it hold no record. */
        if (stg[0] && dk_oplog_lines_used(st->log) == 0 && strict_park(st, stg)) continue;
        dk_oplog_unlink(st->log); /* and its completion marks */
        if (stg[0]) DK_REAL(unlink)(stg);
    }
}

bool up_strict_release_root(struct up_root *r) {
    struct up_strict *st = __atomic_load_n(&r->strict, __ATOMIC_ACQUIRE);
    if (!st) return true;
    ck_wrlock(st);
    lazy_apply(st);
    if (applied_make_durable(r, st) != 0) {
        ck_wrunlock(st);
        return false;
    }
    char log[4200], stg[4400];
    snprintf(log, sizeof log, "%s", dk_oplog_path(st->log));
    stg_path_of(log, stg, sizeof stg);
    dk_oplog_unlink(st->log); /* and its completion marks */
    if (stg[0]) DK_REAL(unlink)(stg);
    __atomic_store_n(&r->strict, NULL, __ATOMIC_RELEASE);
    ck_wrunlock(st);
    return true;
}

/* ---- recovery ---- */

/* A file being replayed: written through a mapping (a pwrite per record would cap recovery at a few
 * hundred thousand records per second). The kernel size runs ahead of the logical one in steps while
 * records extend the file and is set to the logical size when the file is finished. */
struct replay_file {
    uint64_t dev, ino;
    uint32_t ident;  /* the identity of the file found (ident.c; 0: unknown) */
    int fd;
    char *map;
    uint64_t cap;    /* bytes mapped */
    uint64_t ksize;  /* the kernel's size */
    uint64_t lsize;  /* the size the records so far give the file */
    uint64_t alloc_lo, alloc_hi; /* [lo, hi) has its blocks allocated and unshared (replay_alloc) */
    unsigned alloc_how;          /* 0 unshare + keep size, 1 keep size, 2 no fallocate: records by pwrite */
    uint64_t dense_below;        /* [0, dense_below) had no hole when recovery first looked (replay_alloc) */
    bool dense_known;
};

struct replay {
    int root_fd;            /* the managed directory (the area's parent) */
    dev_t area_dev_now;     /* the area's (the log's) file system's device number now */
    int area_fd;
    char stg_name[128];     /* <tag>.strict.stg */
    char *stg_map;
    uint64_t stg_bytes;
    struct replay_file files[64];
    unsigned nfiles;
    struct up_strict_report *rep;
    bool unknown_type;      /* a record of a type this version does not know: the log is kept */
    bool no_space;          /* a record failed for want of space (or memory): the log is kept for a later run */
    bool foreign;           /* another user's log (a privileged recovery): files that user may write only */
    bool refused;           /* ... and a file it names is not one: the log is kept, replayed by none of its records */
    struct stat by;         /* the log's (its user and group) */
    bool in_lock_call;      /* inflight.c's, inside the program's lock call: data files are never closed here */
};

/* Sets the final size, makes the file durable, lets it go. */
static void replay_finish(struct replay *rp, struct replay_file *rf) {
    int bad = 0;
    if (rf->map) {
        bad |= DK_REAL(msync)(rf->map, rf->cap, MS_SYNC);
        DK_REAL(munmap)(rf->map, rf->cap);
    }
    if (rf->ksize != rf->lsize) bad |= DK_REAL(ftruncate)(rf->fd, (off_t)rf->lsize);
    bad |= DK_REAL(fsync)(rf->fd);
    if (bad) rp->rep->failed++;
    if (rp->in_lock_call) up_aux_adopt_or_close((dev_t)rf->dev, (ino_t)rf->ino, rf->fd); /* the program's POSIX locks */
    else DK_REAL(close)(rf->fd);
}

/* A record names its file by (st_dev, st_ino) as they were when it was logged; after a reboot the file
 * system may have another device number (device enumeration, a loop device attached elsewhere). The log's
 * header holds the device number of its directory at creation (rec_area_dev): a record of that device
 * whose file is not found is looked up by inode number on the file system the log is on now -- only when
 * that number changed (the log's file system is the one renumbered). A record of any other device (a file
 * system mounted below the directory and not mounted now, a file deleted there) or of a log that recorded
 * no device is never translated: another file with its inode number is not its file. Returns an open
 * descriptor or -1 (*other_fs: the record's device is neither). */
static int find_inode_moved(struct replay *rp, uint64_t dev, uint64_t ino, uint64_t rec_area_dev, int *other_fs) {
    *other_fs = 0;
    if ((dev_t)dev == rp->area_dev_now) return -1; /* its file system is here, with its number: the file is gone */
    if (rec_area_dev == 0 || dev != rec_area_dev) {
        *other_fs = 1;
        return -1;
    }
    int fd = up_find_inode(rp->root_fd, rp->area_dev_now, (ino_t)ino, 0);
    if (fd >= 0)
        dk_log_once("recovery: the file system's device number changed since the log was written (%llx -> %llx): "
                    "files found by inode number", (unsigned long long)dev, (unsigned long long)rp->area_dev_now);
    return fd;
}

/* The file a record names, open (NULL: not found; *other_fs as find_inode_moved's). */
static struct replay_file *replay_file(struct replay *rp, uint64_t dev, uint64_t ino, uint64_t rec_area_dev,
                                       int *other_fs) {
    *other_fs = 0;
    for (unsigned i = 0; i < rp->nfiles; i++)
        if (rp->files[i].dev == dev && rp->files[i].ino == ino) return &rp->files[i];
    int fd = up_find_inode(rp->root_fd, (dev_t)dev, (ino_t)ino, 0);
    if (fd < 0) fd = find_inode_moved(rp, dev, ino, rec_area_dev, other_fs);
    struct stat st;
    if (fd < 0) return NULL;
    if (DK_REAL(fstat)(fd, &st) != 0) {
        DK_REAL(close)(fd);
        return NULL;
    }
    if (rp->foreign && !dk_area_user_may_write(fd, &st, &rp->by)) { /* with root's rights: a write anywhere */
        rp->refused = true;
        DK_REAL(close)(fd);
        return NULL;
    }
    if (rp->nfiles == DK_ARRAY_LEN(rp->files)) { /* full: finish the oldest, reuse its place */
        replay_finish(rp, &rp->files[0]);
        memmove(rp->files, rp->files + 1, sizeof rp->files[0] * (rp->nfiles - 1));
        rp->nfiles--;
    }
    struct replay_file *rf = &rp->files[rp->nfiles++];
    *rf = (struct replay_file){.dev = dev, .ino = ino, .ident = up_fd_ident(fd), .fd = fd,
                               .ksize = (uint64_t)st.st_size, .lsize = (uint64_t)st.st_size};
    return rf;
}

/* Allocates (and unshares: a reflinked block would be copied at the store) the blocks of [off, end), so that
 * the store through the mapping cannot fault: a page a full medium cannot allocate is SIGBUS, and recovery
 * runs inside every program started under daxkit (review 9, finding 15: on a full tmpfs `daxkit recover`, ls
 * and /bin/true under daxkit all died of SIGBUS). A 2 MiB-aligned step around the range at a time (one call
 * per step, not per record), the range alone when the medium has no room for the step. 0: store through
 * the mapping; 1: write by pwrite (no fallocate here: the kernel's write reports ENOSPC instead of a
 * fault); -1 with errno. */
static int replay_alloc(struct replay_file *rf, uint64_t off, uint64_t end) {
    if (off >= rf->alloc_lo && end <= rf->alloc_hi) return 0;
    if (rf->alloc_how == 2) return 1;
    if (!rf->dense_known) { /* once per file: where its first hole starts (its size when it has none) */
        off_t h = DK_REAL(lseek)(rf->fd, 0, SEEK_HOLE);
        rf->dense_below = h > 0 ? (uint64_t)h : 0;
        rf->dense_known = true;
    }
    /* One fallocate per 2 MiB step, not per record, where that allocates nothing the file lacked: below its
     * first hole (there it only unshares), or growing the run allocated last or the dense head by one step
     * ahead. A record elsewhere -- amid the holes of a sparse file -- allocates its own blocks only: a step
     * around each of them turned a sparse file's holes into allocated zeros, up to 512 times what its writes
     * took, and could fill the medium (review 10, finding 23). */
    uint64_t step_hi = DK_MAX(end, DK_MIN(dk_round_up(end, DK_HUGE_BYTES), rf->lsize)); /* no blocks past EOF */
    bool chained = rf->alloc_hi > rf->alloc_lo && off >= rf->alloc_lo && off <= rf->alloc_hi;
    uint64_t lo = dk_round_down(off, 4096), hi = DK_MAX(end, DK_MIN(dk_round_up(end, 4096), rf->lsize));
    if (step_hi <= rf->dense_below) lo = dk_round_down(off, DK_HUGE_BYTES), hi = step_hi;
    else if (chained || off <= rf->dense_below) hi = step_hi;
    for (int exact = 0; exact < 2; exact++) {
        if (exact) lo = off, hi = end;
        for (;;) {
            int mode = FALLOC_FL_KEEP_SIZE | (rf->alloc_how == 0 ? FALLOC_FL_UNSHARE_RANGE : 0);
            if (DK_REAL(fallocate)(rf->fd, mode, (off_t)lo, (off_t)(hi - lo)) == 0) {
                if (rf->alloc_hi >= lo && rf->alloc_lo <= hi && rf->alloc_hi > rf->alloc_lo) /* one interval */
                    rf->alloc_lo = DK_MIN(rf->alloc_lo, lo), rf->alloc_hi = DK_MAX(rf->alloc_hi, hi);
                else
                    rf->alloc_lo = lo, rf->alloc_hi = hi;
                return 0;
            }
            if (errno == EINTR) continue;
            if ((errno == EOPNOTSUPP || errno == EINVAL) && rf->alloc_how < 2) {
                if (++rf->alloc_how == 2) return 1; /* neither flag set is taken here */
                continue;
            }
            break;
        }
        if (!errno_no_space(errno)) return -1;
    }
    return -1;
}

/* Makes [0, end) writable through the mapping (kernel size and mapping grow in steps). 0 or -1. */
static int replay_reserve(struct replay_file *rf, uint64_t end) {
    if (end > rf->ksize) {
        uint64_t k = DK_MAX(end, rf->ksize + rf->ksize / 2);
        if (DK_REAL(ftruncate)(rf->fd, (off_t)k) != 0) return -1;
        rf->ksize = k;
    }
    if (end > rf->cap) {
        uint64_t cap = dk_round_up(DK_MAX(rf->ksize, 2 * rf->cap), DK_HUGE_BYTES);
        if (rf->map) DK_REAL(munmap)(rf->map, rf->cap);
        rf->map = DK_REAL(mmap)(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED, rf->fd, 0);
        if (rf->map == MAP_FAILED) {
            rf->map = NULL, rf->cap = 0;
            return -1;
        }
        rf->cap = cap;
    }
    return 0;
}

static int replay_bytes(struct replay_file *rf, const void *src, uint64_t n, uint64_t off) {
    if (replay_reserve(rf, off + n) != 0) return -1;
    int how = replay_alloc(rf, off, off + n);
    if (how < 0) return -1;
    if (how == 0) {
        memcpy(rf->map + off, src, n);
    } else {
        for (uint64_t done = 0; done < n;) { /* the mapping and the page cache are one: no ordering to keep */
            ssize_t w = DK_REAL(pwrite)(rf->fd, (const char *)src + done, (size_t)(n - done), (off_t)(off + done));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                if (w == 0) errno = ENOSPC;
                return -1;
            }
            done += (uint64_t)w;
        }
    }
    rf->lsize = DK_MAX(rf->lsize, off + n);
    return 0;
}

static int replay_truncate(struct replay_file *rf, uint64_t len) {
    if (DK_REAL(ftruncate)(rf->fd, (off_t)len) != 0) return -1; /* zeroes beyond len for later extensions */
    rf->ksize = rf->lsize = len;
    rf->alloc_lo = rf->alloc_hi = 0; /* a shrink freed blocks: allocate again before storing there */
    return 0;
}

static const void *staged_bytes(struct replay *rp, const struct dk_oplog_op *op) {
    if (!rp->stg_map) {
        int fd = dk_ifd_openat(rp->area_fd, rp->stg_name, O_RDONLY | O_CLOEXEC, 0);
        struct stat st;
        if (fd < 0) return NULL;
        if (DK_REAL(fstat)(fd, &st) == 0 && st.st_size > 0) {
            void *m = DK_REAL(mmap)(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
            if (m != MAP_FAILED) rp->stg_map = m, rp->stg_bytes = (uint64_t)st.st_size;
        }
        DK_REAL(close)(fd);
        if (!rp->stg_map) return NULL;
    }
    if (op->staging_offset + op->length > rp->stg_bytes) return NULL;
    return rp->stg_map + op->staging_offset;
}

/* A delta record (docs/strict.md "Delta records"): the file's bytes of the write's range with the segments laid
 * over them. `check` (the log's completion marks are in force: this record is an operation in flight at a process's
 * death, every record before it is in the file): stored only when they have the write's crc32c -- otherwise the
 * bytes outside the segments are not the ones the write was compared with (another writer since), and laying the
 * segments over them would make a mix of two writes: not replayed, counted stale (1). Without the marks (a power
 * loss, a remount) every record since the checkpoint is replayed in log order, and the media may hold bytes of
 * records after this one (applied, written back by the cache before the loss) that theirs then store again: the
 * segments are laid without the check (the explorer found the check dropping acknowledged writes there). 0
 * stored, -1 failed (errno). */
static int replay_delta(struct replay *rp, struct replay_file *rf, const struct dk_oplog_op *op, const void *d,
                        size_t len, bool check) {
    size_t n = op->length;
    char *b = malloc(n);
    if (!b) return errno = ENOMEM, -1;
    size_t got = 0; /* the kernel's bytes (the replay's stores are in the same page cache or DAX media) */
    while (got < n) {
        ssize_t r = DK_REAL(pread)(rf->fd, b + got, n - got, (off_t)(op->file_offset + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return free(b), -1;
        if (r == 0) break;
        got += (size_t)r;
    }
    memset(b + got, 0, n - got); /* past the end: zeros, as a later extension shows */
    int rc;
    bool malformed = !dk_delta_apply_buf(b, n, d, len);
    if (malformed || (check && dk_crc32c_wide(0, b, n) != (uint32_t)op->aux && delta_mutant() != 2)) {
        rp->rep->delta_stale++;
        dk_log_once("recovery: a delta record over bytes that changed since it was logged (another writer of the "
                    "page) not replayed (more such records are only counted)");
        rc = 1;
    } else {
        rc = replay_bytes(rf, b, n, op->file_offset);
    }
    free(b);
    return rc;
}

/* A record type strict recovery does not know (a newer writer's). */
static bool type_unknown(uint32_t type) { return type == 0 || type > DK_OPLOG_WRITE_DELTA; }

static int note_unknown_type(const struct dk_oplog_record *rec, void *ctx) {
    if (type_unknown(rec->type)) *(bool *)ctx = true;
    return 0;
}

/* Before any record is replayed: allocates the blocks every write record of the log stores into (a scan
 * of its own). A log the medium has no room for is then replayed by none of its records (rp->no_space):
 * a partial replay kept for later would be applied again from its first record by every later recovery
 * -- every program started there -- over what was written since (review 10, finding 14). */
static int alloc_one(const struct dk_oplog_record *rec, void *ctx) {
    struct replay *rp = ctx;
    struct dk_oplog_op op;
    memcpy(&op, rec->fixed48, sizeof op);
    bool staged = rec->type == DK_OPLOG_WRITE_STAGED || rec->type == DK_OPLOG_WRITE_STAGED_CRC ||
                  rec->type == DK_OPLOG_WRITE_DELTA; /* (op.length bytes at op.file_offset, as a staged one) */
    if (rp->no_space || rec->done || (rec->type != DK_OPLOG_WRITE_INLINE && !staged)) return 0;
    int other_fs;
    struct replay_file *rf = replay_file(rp, op.dev, op.ino, rec->area_dev, &other_fs);
    uint32_t ident = op_ident(&op);
    if (!rf || (ident && rf->ident && ident != rf->ident)) return 0; /* not replayed (replay_one says why) */
    uint64_t n = staged ? op.length : rec->data_len;
    if (replay_alloc(rf, op.file_offset, op.file_offset + n) < 0 && errno_no_space(errno)) rp->no_space = true;
    return 0;
}

/* Another user's log, before any record is replayed (a privileged recovery): every file its write and
 * truncate records name must be one that user may write (replay_file refuses others: rp->refused). */
static int rights_one(const struct dk_oplog_record *rec, void *ctx) {
    struct replay *rp = ctx;
    struct dk_oplog_op op;
    memcpy(&op, rec->fixed48, sizeof op);
    bool data = rec->type == DK_OPLOG_WRITE_INLINE || rec->type == DK_OPLOG_WRITE_STAGED ||
                rec->type == DK_OPLOG_WRITE_STAGED_CRC || rec->type == DK_OPLOG_WRITE_DELTA ||
                rec->type == DK_OPLOG_TRUNCATE;
    int other_fs;
    if (data && !rp->refused) replay_file(rp, op.dev, op.ino, rec->area_dev, &other_fs);
    return 0;
}

/* Whether the medium's free space could run out during a replay: alloc_one's scan (a second pass over the
 * log: 3.3 -> 1.3 million records/s, huge tmpfs, session 10) runs only then. What a replay allocates is
 * bounded by the bytes its records carry -- at most the log's size plus the staging file's allocated
 * blocks -- plus the 2 MiB steps around them: with four times that and 64 MiB free there is room. (A replay
 * whose steps still exhaust the medium fails at a record and keeps the log, as before the scan existed:
 * its earlier records are then applied again by the next recovery.) */
static bool space_tight(int area_fd, const char *log_path, const char *stg_name) {
    struct statvfs vs;
    struct stat ls, ss;
    if (fstatvfs(area_fd, &vs) != 0) return true;
    uint64_t need = 64ull << 20;
    if (DK_REAL(stat)(log_path, &ls) == 0) need += (uint64_t)ls.st_size;
    if (DK_REAL(fstatat)(area_fd, stg_name, &ss, 0) == 0) need += (uint64_t)ss.st_blocks * 512u;
    return (uint64_t)vs.f_bavail * vs.f_frsize < 4 * need;
}

/* Redoes one record (idempotent: the same records in the same order give the same file). */
static int replay_one(const struct dk_oplog_record *rec, void *ctx) {
    struct replay *rp = ctx;
    struct dk_oplog_op op;
    memcpy(&op, rec->fixed48, sizeof op);
    bool staged = rec->type == DK_OPLOG_WRITE_STAGED || rec->type == DK_OPLOG_WRITE_STAGED_CRC;
    bool delta = rec->type == DK_OPLOG_WRITE_DELTA;
    if (rec->type != DK_OPLOG_WRITE_INLINE && !staged && !delta && rec->type != DK_OPLOG_TRUNCATE) {
        rp->rep->meta_seen++; /* create/unlink/rename: atomic in the kernel file system already */
        return 0;
    }
    if (rp->no_space && !rec->done) { /* the rest waits for the next recovery, in log order, after the record that failed */
        rp->rep->failed++;
        return 0;
    }
    int other_fs;
    struct replay_file *rf = replay_file(rp, op.dev, op.ino, rec->area_dev, &other_fs);
    if (!rf && other_fs) {
        rp->rep->other_fs++; /* not the log's file system: never placed by inode number */
        dk_log_once("recovery: records of file %llu on device %llx (not the log's file system %llx; not mounted "
                    "here now, or the file is gone) not replayed (more such records are only counted)",
                    (unsigned long long)op.ino, (unsigned long long)op.dev, (unsigned long long)rec->area_dev);
        return 0;
    }
    if (!rf) {
        rp->rep->files_gone++; /* unlinked since: nothing to repair */
        return 0;
    }
    uint32_t ident = op_ident(&op);
    if (ident && rf->ident && ident != rf->ident) { /* its file is gone; another file has its inode number */
        rp->rep->files_gone++;
        rp->rep->files_reused++;
        dk_log_once("recovery: records of a file that is gone (inode %llu, now another file's) not replayed "
                    "(more such records are only counted)", (unsigned long long)op.ino);
        return 0;
    }
    if (rec->done) {
        /* Applied before its process died, in this boot and mount (the marks say so only then): the file holds
         * it, and other processes may have written over it since -- a replay would undo what they did (review
         * 13, finding 1). Its file is made durable with the others (replay_finish) before the log goes. */
        rp->rep->done_skipped++;
        return 0;
    }
    int rc;
    if (delta) {
        if (op.length == 0) { /* a no-op record (log_delta gave it up) */
            rp->rep->replayed++;
            return 0;
        }
        rc = replay_delta(rp, rf, &op, rec->data, rec->data_len, rec->marks);
        if (rc == 1) return 0; /* stale: counted */
    } else if (rec->type == DK_OPLOG_WRITE_INLINE) {
        rc = replay_bytes(rf, rec->data, rec->data_len, op.file_offset);
    } else if (staged) {
        const void *src = staged_bytes(rp, &op);
        if (src && !up_strict_staged_intact(rec->type, &op, src)) {
            rp->rep->torn++; /* its fence never completed: the write did not return, and was not applied */
            rp->rep->staged_torn++;
            return 0;
        }
        rc = src ? replay_bytes(rf, src, op.length, op.file_offset) : (errno = ENOENT, -1);
    } else {
        rc = replay_truncate(rf, op.file_offset);
    }
    if (rc) {
        rp->rep->failed++;
        if (errno_no_space(errno)) rp->no_space = true;
    } else {
        rp->rep->replayed++;
    }
    return 0;
}

struct orphan_ctx {
    const char *root_path;
    int area_fd;
    struct up_strict_report *rep;
    bool in_lock_call;
};

static int recover_log(const char *path, void *ctx) {
    struct orphan_ctx *oc = ctx;
    uint64_t t0 = now_ns();
    struct replay rp = {.area_fd = oc->area_fd, .rep = oc->rep, .in_lock_call = oc->in_lock_call};
    rp.root_fd = dk_ifd_openat(oc->area_fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    struct stat rs;
    if (DK_REAL(fstat)(oc->area_fd, &rs) == 0) rp.area_dev_now = rs.st_dev;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strchr(base, '.');
    snprintf(rp.stg_name, sizeof rp.stg_name, "%.*s.strict.stg", dot ? (int)(dot - base) : 0, base);
    struct dk_oplog_scan_stats ss = {0};
    uint64_t staged_torn0 = oc->rep->staged_torn;
    /* A log with a record of a type this version does not know is replayed by none of its records: a
     * partial replay now and a whole one later (with the version that wrote it) would redo these records
     * over whatever was written in between (review 8, finding 17). One scan more, before any replay. */
    int rc = dk_oplog_scan(path, note_unknown_type, &rp.unknown_type, NULL);
    /* Another user's (a privileged recovery, common/area.h): replayed with that user's rights only. */
    rp.foreign = DK_REAL(stat)(path, &rp.by) == 0 && !dk_area_file_ours(&rp.by);
    if (rc == 0 && !rp.unknown_type && rp.foreign) rc = dk_oplog_scan(path, rights_one, &rp, NULL);
    if (rp.refused) rp.unknown_type = true; /* replayed by none of its records, kept (below) */
    if (rc == 0 && !rp.unknown_type && space_tight(oc->area_fd, path, rp.stg_name))
        rc = dk_oplog_scan(path, alloc_one, &rp, NULL);
    /* (no_space: replay_one counts every data record failed and stores nothing) */
    if (rc == 0 && !rp.unknown_type) rc = dk_oplog_scan(path, replay_one, &rp, &ss);
    uint64_t staged_torn = oc->rep->staged_torn - staged_torn0; /* counted in rep->torn by replay_one */
    for (unsigned i = 0; i < rp.nfiles; i++) replay_finish(&rp, &rp.files[i]);
    if (rp.stg_map) DK_REAL(munmap)(rp.stg_map, rp.stg_bytes);
    if (rp.root_fd >= 0) DK_REAL(close)(rp.root_fd);
    oc->rep->logs++;
    oc->rep->records += ss.records_valid;
    oc->rep->torn += ss.records_torn;
    oc->rep->ns += now_ns() - t0;
    if (ss.records_torn || staged_torn)
        dk_log("%s: %llu torn record(s) ignored in %s (an operation cut by the crash; it never returned)%s",
               oc->root_path, (unsigned long long)(ss.records_torn + staged_torn), base,
               staged_torn ? ", of them staged writes whose staged bytes did not reach the medium" : "");
    /* Replayed and durable: the log goes (a crash before this line replays it again, which is harmless). */
    if (rp.refused) {
        oc->rep->foreign_refused++;
        oc->rep->foreign_uid = (uint32_t)rp.by.st_uid;
        dk_log("%s: %s, a log of uid %u's dead process, names a file that user may not write: kept, not replayed "
               "-- files below %s are served by the kernel until that user's next daxkit program there replays it",
               oc->root_path, base, (unsigned)rp.by.st_uid, oc->root_path);
    } else if (rc == -EPROTONOSUPPORT || rp.unknown_type)
        dk_log("%s: %s was written by a newer daxkit (%s): kept, not replayed -- recover it with that version",
               oc->root_path, base, rc ? "its log version" : "a record type this version does not know");
    if (rp.no_space) {
        oc->rep->logs_kept++;
        dk_log_once("%s: %s: records could not be replayed for want of space on the medium: the log is kept and "
               "replayed by a later recovery (free space, then run `daxkit recover %s`)", oc->root_path, base,
               oc->root_path);
    } else if ((rc == 0 && !rp.unknown_type) || rc == -EINVAL) {
        char marks[PATH_MAX + 8];
        DK_REAL(unlink)(path);
        if (dk_oplog_marks_path(path, marks, sizeof marks)) DK_REAL(unlink)(marks); /* after its log (orphans.c) */
        DK_REAL(unlinkat)(oc->area_fd, rp.stg_name, 0);
    } else {
        oc->rep->failed++;
    }
    return 0;
}

int up_strict_recover_log(const char *root_path, int area_fd, const char *log_path, struct up_strict_report *rep) {
    struct orphan_ctx oc = {root_path, area_fd, rep, true};
    return recover_log(log_path, &oc);
}

int up_strict_recover(const char *root_path, int area_fd, const char *tag, struct up_strict_report *rep) {
    char area[4200];
    snprintf(area, sizeof area, "%s/.daxkit", root_path);
    struct orphan_ctx oc = {root_path, area_fd, rep, false};
    int n = dk_oplog_find_orphans(area, tag, recover_log, &oc);
    return n < 0 ? n : 0;
}
