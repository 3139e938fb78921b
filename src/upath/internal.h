/* Internal structures of the user-space data path (SplitFS/FLEX design). See docs/design-upath.md.
 *
 * Objects and their lifetimes:
 *   up_root  -- a managed directory (DAXKIT_DIR entry): medium, staging pool. Lives for the process.
 *   up_file  -- one inode (dev, ino) seen by this process: logical size, mappings, staged appends.
 *               Private memory; kept after the last close (mapping cache) until evicted, unlinked,
 *               truncated away or renamed over.
 *   up_slot  -- one open file description (offset, access flags): in MAP_SHARED anonymous memory so that
 *               dup'ed and fork-inherited descriptors share one offset, like the kernel's.
 *   fd table -- private: fd number -> slot.
 *
 * Locks, in acquisition order: table_mu (file table, fd table changes) > file->mu (appends, size,
 * publish) > file->rw (write side: structural changes that readers must not see half done). */
#ifndef DK_UPATH_INTERNAL_H
#define DK_UPATH_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "common/config.h"
#include "common/dk.h"
#include "common/internal_fd.h"
#include "common/lockmark.h"
#include "persist/media.h"

/* ---- managed roots (managed.c) ---- */

struct up_pool;
struct up_sizes;
struct up_strict;
struct up_atomic;

struct up_root {
    char path[4096];
    size_t path_len;
    dev_t dev;
    bool mount_root;          /* the directory is its file system's root here: dev match suffices */
    bool cwd_below;           /* the working directory is at or below it (as of cwd_gen_seen) */
    uint64_t cwd_gen_seen;    /* up_cwd_gen when cwd_below was found; 0: never */
    pthread_mutex_t mu;       /* probe, pool creation */
    bool probed;
    struct dk_medium_info medium;
    enum dk_medium persist_as; /* medium, or DAX when DAXKIT_PERSIST=flush (emulation) */
    uint64_t clone_min_bytes;
    struct up_pool *pool;     /* staging pool, created on first staged append */
    struct up_sizes *sizes;   /* published-size records (sizerec.c), created on first extension */
    struct up_strict *strict; /* strict mode's operation log and staging (strict.c), on first use */
    bool area_absent;         /* no <path>/.daxkit at the start's recovery: nothing there to recover */
    uint8_t small_pages;      /* small_pages.c: whether a new small file takes a 2 MiB page here (enum), atomic */
};

int up_roots_init(const char *dirs);   /* returns the number of usable roots */
int up_roots_count(void);
struct up_root *up_root_at(int idx);
int up_root_index(const struct up_root *r); /* its idx for up_root_at */
/* The root that holds the open regular file `fd` (st from fstat), or NULL. */
/* The managed directory of fd (on st->st_dev), or NULL. path_hint: the name it was opened by, relative to
 * dirfd (AT_FDCWD: the working directory), or NULL. */
struct up_root *up_root_for_fd(int fd, const struct stat *st, int dirfd, const char *path_hint);
/* The root whose directory holds `dirfd`-relative `path` (for unlink/rename), or NULL. Cheap reject. */
bool up_dev_is_managed(dev_t dev);
/* A directory was opened as fd by `name` relative to dirfd: when the name shows it at or below roots (the
 * text rules of name_below), that is its verdict as a directory descriptor -- no readlink at its first use
 * (rsync opens each directory relative to its parent's descriptor). */
void up_dirfd_note_open(int fd, int dirfd, const char *name);
/* A directory opened without O_DIRECTORY that stayed pending (lazy adoption) until a use showed it a directory
 * (st): its verdict from the roots its name showed at the open (`below`; those on its device), not walked --
 * unless `child`: opened by one plain name with O_NOFOLLOW relative to a walked directory descriptor, it is
 * walked once its own area is seen to be absent (one fstatat). */
void up_dirfd_note_pending(int fd, uint32_t below, const struct stat *st, bool child);
uint64_t up_dirfd_walked(int dirfd); /* the verdict's id when walked, else 0 */
void up_dirfd_set_walked(int dirfd);
void up_dirfd_forget_walks(void); /* every verdict's walked mark (a name moved) */
/* Probes the root's medium on first use. */
void up_root_probe(struct up_root *r);
/* A fork child: each root's mutex (held for milliseconds by another thread's probe, strict log or size-record
 * creation -- a thread the child does not have) and the directory-verdict cache's are made new; a cache a gone
 * thread was writing is emptied. The state r->mu guards is redone in the child (probe) or reset (strict,
 * size records: their own after-fork steps). Before those steps. */
void up_roots_after_fork_child(void);

/* ---- mappings of one file (map.c) ---- */

#define UP_MAP_LEAF_SHIFT 9
#define UP_MAP_LEAVES 512                      /* 512 leaves x 512 chunks x 2 MiB = 512 GiB */
#define UP_MAP_MAX_BYTES ((uint64_t)UP_MAP_LEAVES << (UP_MAP_LEAF_SHIFT + DK_HUGE_SHIFT))

struct up_extent {           /* one mmap() call: [off, off+len) of the file at addr */
    char *addr;
    uint64_t off, len;
};

struct up_map {
    /* chunk index -> address of the chunk's first byte (atomic loads): UP_MAP_LEAVES leaf pointers,
     * allocated at the first mapping -- a file served without a mapping (short-lived, MAP_AFTER_IOS)
     * costs a few words, not 4 KiB to zero and 512 frees at its drop. */
    char ***dir;
    uint64_t mapped_bytes;      /* [0, mapped_bytes) is mapped; grows only */
    struct up_extent *ext;
    uint32_t ext_count, ext_cap;
    bool writable;
    bool dax; /* a DAX mapping (no page cache): see up_map_kernel_wrote */
};

/* Address of file offset `off`, or NULL when not mapped. Lock-free. */
static inline char *up_map_addr(const struct up_map *m, uint64_t off) {
    uint64_t chunk = off >> DK_HUGE_SHIFT;
    if (DK_UNLIKELY(off >= UP_MAP_MAX_BYTES)) return NULL;
    char ***dir = __atomic_load_n(&m->dir, __ATOMIC_ACQUIRE);
    if (DK_UNLIKELY(!dir)) return NULL;
    char **leaf = __atomic_load_n(&dir[chunk >> UP_MAP_LEAF_SHIFT], __ATOMIC_ACQUIRE);
    if (DK_UNLIKELY(!leaf)) return NULL;
    char *base = __atomic_load_n(&leaf[chunk & (UP_MAP_LEAVES - 1)], __ATOMIC_ACQUIRE);
    return base ? base + (off & (DK_HUGE_BYTES - 1)) : NULL;
}

struct up_file;
/* Maps [0, want_bytes) (rounded up to 2 MiB) using `fd`; populates up to `populate_bytes`. 0 or -errno. */
int up_map_grow(struct up_file *f, int fd, uint64_t want_bytes, uint64_t populate_bytes);

/* holes.c: which part of a file has storage, so that no mapped access touches a hole */
void up_holes_clamp(struct up_file *f, uint64_t to);
/* up_holes_clamp inside the guard's write side: fast sections must not map past a cut (under f->mu) */
void up_holes_clamp_guarded(struct up_file *f, uint64_t to);
void up_holes_probe_first(struct up_file *f, int fd);
int up_holes_back(struct up_file *f, int fd, uint64_t off, uint64_t end);
bool up_holes_covered(struct up_file *f, int fd, uint64_t end);
/* Pre-faults [off, off+len) for writing (new pages after a size change). */
void up_map_populate(struct up_file *f, uint64_t off, uint64_t len);
/* Keeps the invariant "a mapped file is mapped up to its kernel size": grows the mapping to `bytes` if
 * the file has one (an unmapped file is mapped on first read or overwrite). 0 or -errno. */
int up_map_keep(struct up_file *f, int fd, uint64_t bytes);
void up_map_drop(struct up_map *m);
/* After this process had the kernel write [off, end) of a file it maps through DAX (a relink by copy, a write
 * handed to the kernel): drops the mapping's pages there that were part of the file before (below
 * `old_size`), so that the next access faults them in as they are now -- Linux 6.1's ext4 on fsdax leaves
 * the shared zero page mapped over a block a write(2) filled (map.c). Lock-free; no-op without DAX. */
void up_map_kernel_wrote(struct up_file *f, uint64_t off, uint64_t end, uint64_t old_size);

/* ---- staging pool (stage.c) ---- */

#define UP_SLOT_BYTES DK_HUGE_BYTES /* staging is handed out in 2 MiB slots */

struct up_stg_file;                 /* one pre-allocated staging file, mapped */

struct up_staged {                  /* one slot holding the appends for file range [base, base+cap) */
    struct up_stg_file *sf;         /* NULL: a heap slot (process memory; see stage.c) */
    uint32_t slot;
    uint64_t base, cap;
    char *addr;                     /* address of file offset `base` in the staging mapping */
    uint64_t sf_off;                /* staging file offset of `base` (same offset within a block) */
};

static inline bool up_staged_on_heap(const struct up_staged *s) { return s->sf == NULL; }
/* Takes a slot for file offsets starting at `base`, to be written up to `end` first: when heap_ok (the
 * first slot of an append burst) and the root's relink copies, process memory; else a free slot of the
 * root's pool. 0 or -errno. */
int up_stage_take(struct up_root *r, uint64_t base, uint64_t end, bool heap_ok, struct up_staged *out);
/* This thread is inside the staging code and a signal handler's call runs on it (stage.c: stage_busy): staging
 * takes nothing then (up_stage_take -ENOSPC), and the caller must not call the allocator on its way there. */
bool up_stage_busy(void);
/* Grows a heap slot to cover offsets up to `end` (within DAXKIT_STAGE_HEAP_BYTES). False: take a pool slot. */
bool up_stage_grow(struct up_staged *s, uint64_t end);
/* Returns a slot after its data moved into the file (cloned slots are refreshed in the background). */
void up_stage_give_back(struct up_root *r, struct up_staged *s, bool cloned);
/* up_stage_give_back at a publish of f: a small heap slot's buffer stays with f (f->heap_kept) for its next
 * burst, which up_stage_take_kept hands out. Under f->mu. */
void up_stage_give_back_to(struct up_file *f, struct up_staged *s, bool cloned);
/* The first slot of a burst of f at `base` from f->heap_kept: true when there was one. Under f->mu. */
bool up_stage_take_kept(struct up_file *f, uint64_t base, struct up_staged *out);
/* Frees f->heap_kept (the file is freed, or closed for good). */
void up_stage_kept_free(struct up_file *f);
/* Asks the root's background thread to fault in [off, off+len) of f, open as fd (through a mapping made
 * here, under f->mu): the extend strategy's next step, so that appends store into pages that exist. False
 * when not queued (the appends then fault the pages in themselves). */
bool up_stage_prefault(struct up_file *f, int fd, uint64_t off, uint64_t len);
int up_stage_fd(const struct up_stg_file *sf);
/* Forgets every pool after fork (the child must not write into the parent's staging files). */
void up_stage_after_fork_child(void);
/* What recovery found and did in one managed directory. */
struct up_sizerec_report {
    uint64_t rolled_back, bytes_dropped, untouched, gone, failed;
    uint64_t reused; /* the record's file is gone and another file has its inode number: left alone */
};
struct up_strict_report {
    uint64_t logs, records, replayed, torn, meta_seen, files_gone, failed, ns;
    uint64_t other_fs; /* records of a device not the log's, whose file was not found: not replayed */
    uint64_t staged_torn; /* staged records whose staged bytes do not match their crc (counted in torn too) */
    uint64_t files_reused; /* records of a file that is gone, whose inode number another file has now: not
                              replayed (counted in files_gone too) */
    uint64_t logs_kept;    /* logs with records that failed for want of space: kept for a later recovery */
    uint64_t foreign_refused; /* another user's logs (a privileged recovery) naming a file that user may not
                                 write (common/area.h): kept, none of their records replayed */
    uint32_t foreign_uid;     /* the user of the last of them */
    uint64_t done_skipped; /* records of operations applied before their process died (completion-marked, this
                              boot and mount): not replayed, their files made durable */
    uint64_t delta_stale;  /* delta records whose segments over the file's bytes do not give the write's crc (the
                              bytes outside them changed since: another writer): not replayed */
};
struct up_recover_report {
    uint64_t owners_gone;            /* processes whose lock was free */
    uint64_t files_removed;          /* their staging, record and lock files */
    uint64_t errors;
    struct up_sizerec_report sizes;  /* extend-strategy files rolled back to their published size */
    struct up_strict_report strict;  /* strict mode's operation logs replayed */
    /* Files of other users' dead processes left in the area (operation logs, owner locks with their size
     * records): this process may not recover them (not privileged), or a privileged one refused a log
     * (strict.foreign_refused). Their records may cover any file below the area's directory. */
    uint64_t foreign_left;
    uint32_t foreign_uid;            /* the user of one of them */
};
/* Recovers what processes that are gone (their owner lock is free) left in <root>/.daxkit: rolls back
 * extended files, removes staging files. Idempotent; safe against a concurrent recoverer. rep may be NULL. */
void up_stage_reclaim(const char *root_path, int area_fd, struct up_recover_report *rep);
/* The same for a directory by path (`daxkit recover`, library start-up). 0, or -errno when the
 * directory cannot be opened; a directory without a .daxkit area has nothing to recover. */
int up_recover_dir(const char *root_path, struct up_recover_report *rep);
void up_stage_shutdown(void);
/* The same for the staging pool of root r, when it never had a staging slot nor a published-size record: its lock goes
 * and the root has no pool any more (the old one stays allocated). *tag: the pool's tag (its files' names
 * start with "<tag>."), NULL without a pool. up_stage_release_root: false when the pool is in use. */
const char *up_stage_tag(struct up_root *r);
bool up_stage_release_root(struct up_root *r);
/* rmdir of root r answered ENOTEMPTY: when r's area holds nothing but this process's own files (and an
 * empty atomic directory), they and the area go (area_release.c). true when the area is gone. */
bool up_area_release(struct up_root *r);
/* The process's ownership of the root's hidden area: its directory fd and the tag whose <tag>.lock we
 * hold for life (creates the pool's bookkeeping, no staging files). 0 or -errno. */
int up_stage_owner(struct up_root *r, int *area_fd, const char **tag);
/* The path the kernel resolved for fd (readlink of /proc/self/fd/N), NUL-terminated in buf[cap]: its
 * length, or 0 when unknown (errno set). Costs a few microseconds: callers judge by name first. */
size_t up_fd_path(int fd, char *buf, size_t cap);
/* Moves at every chdir/fchdir (up_cwd_changed, managed.c): a cached working directory is stale when it differs. */
uint64_t up_cwd_generation(void);
/* A new open file description of fd's file (open of /proc/self/fd/N with flags | O_CLOEXEC), or -1. */
int up_fd_reopen(int fd, int flags);
/* Internal descriptors: moved above the program's low numbers and invisible to it. */
int up_internal_fd(int fd);
void up_internal_close(int fd);

/* ---- a new small file's pages (small_pages.c) ---- */

struct up_file;
/* How the publish of f's staged bytes up to `size` treats its pages: UP_SMALL_NO as always; UP_SMALL_SEED: 4 KiB
 * pages (up_small_pages_seed, with a size record: the seed and the copy are two steps); UP_SMALL_LEARN (where the
 * kernel's settings, read at the root's first plan, did not say): as always, then up_small_pages_learn finds out
 * whether the medium gave it a 2 MiB page. Under f->mu (the first plan of a root fstats `wfd`, a descriptor of the
 * file, and on a huge-page tmpfs opens two files in a window); `by_append`: the publish copies through an
 * O_APPEND descriptor at the kernel's end (publish.c: publish_fd). */
enum up_small { UP_SMALL_NO, UP_SMALL_SEED, UP_SMALL_LEARN };
enum up_small up_small_pages_plan(const struct up_file *f, int wfd, uint64_t size, bool by_append);
/* Makes the file (empty in the kernel; fd: a descriptor of it) `size` bytes long with its first page a 4 KiB
 * one, so the publish's copy fills 4 KiB pages. True when done (f->ksize is `size` then); false: nothing
 * changed. Keeps errno. */
bool up_small_pages_seed(struct up_file *f, int fd, uint64_t size);
/* After a seeded publish that failed part way: the seed's zero tail past what was published is cut. */
void up_small_pages_unseed(struct up_file *f, int wfd);
/* After a publish of `size` bytes planned UP_SMALL_LEARN succeeded: the root's verdict from the file's blocks. */
void up_small_pages_learn(struct up_file *f, int wfd, uint64_t size);

/* ---- published-size records (sizerec.c) ---- */

struct up_file;
/* Before the kernel size of an extend-strategy file moves to `ext` (> pub_size): make durable the
 * record that lets recovery roll it back to pub_size. Under f->mu. 0 (no record possible is logged). */
int up_sizerec_extend(struct up_file *f, int fd, uint64_t ext);
/* Before a stage-strategy relink that a crash can cut moves the kernel size from pub_size towards `size`:
 * the same record (durable on a flush medium; for this boot only, without msync, on the page cache).
 * Under f->mu. 0. */
int up_sizerec_publish_begin(struct up_file *f, int fd, uint64_t size);
/* The same from a published size `pub` other than pub_size: the kernel's, just read, where this process's view
 * of it lags (publish.c: an O_APPEND publish whose fstat was put off). */
int up_sizerec_publish_begin_at(struct up_file *f, int fd, uint64_t pub, uint64_t size);
/* Before appends spill to the kernel (publish.c: up_spill_locked): the same record, raised to `end`, with
 * the file's path (it may stay valid for a whole burst). Under f->mu. 0. */
int up_sizerec_spill(struct up_file *f, int fd, uint64_t end);
/* fsync of an extend-strategy file that keeps its extension (FLEX): `size` -- made durable by the caller --
 * becomes the record's published size, so recovery cuts the file back to it rather than to an older one.
 * Under f->mu. False when the file has no valid record (the caller publishes by setting the size). */
bool up_sizerec_commit(struct up_file *f, uint64_t size);
/* After the kernel size was set to the published size (publish, truncate): the record is void. */
void up_sizerec_clear(struct up_file *f);
/* The file leaves the table: clear and give back its slot. */
void up_sizerec_release(struct up_file *f);
void up_sizerec_after_fork_child(void);
/* At exit, after every file was published: remove our record file. */
void up_sizerec_shutdown(struct up_root *r, int area_fd, const char *tag);
/* Rolls back the files recorded in <area>/<name> (an owner that is gone) and voids the records.
 * Idempotent. 0 or -errno. */
int up_sizerec_recover(int area_fd, const char *name, struct up_sizerec_report *rep);

/* Opens for writing the regular file with (dev, ino) in the tree below dirfd (depth-limited), or -1. */
int up_find_inode(int dirfd, dev_t dev, ino_t ino, int depth);

/* ---- strict mode (strict.c) ---- */

/* A write in strict mode: logged, then applied through the sync path. Returns what write(2) would. */
ssize_t up_strict_write(struct up_file *f, int fd, const char *buf, size_t n, uint64_t off, bool append);
/* Where a strict truncate is published as in flight (strict.c, the apply order): a reader record, or NULL. */
struct up_reader;
struct up_strict_pub {
    struct up_reader *r;
    bool borrowed;
};
/* Logs a truncate to `len` and holds the checkpoint lock (read side) until up_strict_done. 0 or -errno
 * (then the lock is held too: call up_strict_done). *seq: the record, for up_strict_retract. *pub: the
 * truncate published as in flight, until up_strict_done: writes logged after it are applied after the
 * kernel's truncate, and it returns once writes logged before it are applied. */
int up_strict_log_truncate(struct up_file *f, int fd, uint64_t len, uint64_t *seq, struct up_strict_pub *pub);
/* The logged truncate did not happen (the kernel refused it): its record is taken back before the lock
 * goes, so that recovery never applies it (review 8, finding 4). */
void up_strict_retract(struct up_file *f, uint64_t seq);
/* The logged truncate `seq` is done in the kernel: recovery in this boot does not replay it (its completion
 * mark). Before up_strict_done. */
void up_strict_truncated(struct up_file *f, uint64_t seq);
void up_strict_done(struct up_file *f, struct up_strict_pub *pub);
/* fsync/fdatasync in strict mode: acknowledged operations are durable in the log already; only metadata the
 * sync path left dirty goes to the kernel. No checkpoint. 0 or -errno. */
int up_strict_fsync(struct up_file *f, int fd, bool datasync);
/* Checkpoints the root's log (or every root's): nothing logged before may be replayed after this. */
bool up_strict_checkpoint(struct up_root *r); /* false: refused (a handler inside its thread's strict call) */
/* This thread holds (or is taking) a checkpoint lock: a signal handler on it interrupted a strict operation. */
bool up_strict_ck_held(void);
/* A signal handler on this thread interrupted a call of the library that holds (or is taking) a file's
 * mutex or a strict checkpoint lock: nothing may wait for those (review 9, finding 30). */
bool up_thread_in_call(void);
/* A file's publish was skipped for that reason during this exit. */
extern __thread bool up_exit_skipped;
void up_strict_checkpoint_all(void);
/* No root's checkpoint would do anything now (up_strict_checkpoint's first look, every root): no strict log holds
 * a record. Lock-free; a record another thread logs meanwhile is concurrent with the caller's publish point. */
bool up_strict_logs_empty(void);
/* Strict mode: applies this file's staged overwrites that wait for a checkpoint (a checkpoint of its root),
 * before a read or a write that must see them in the file: 0. 1 when it cannot now: the thread is inside a
 * strict operation (a signal handler interrupted it) -- a read then overlays them (up_strict_overlay).
 * -EDEADLK: a signal handler inside its thread's hold of the file table's lock while the exit's shutdown holds
 * the checkpoint lock for good (review 28, #6) -- the caller refuses (a read or fsync fails with EDEADLK). */
int up_strict_drain(struct up_file *f);
/* Strict mode: copies the waiting staged overwrites of f that fall in [off, off+n) over buf. */
void up_strict_overlay(struct up_file *f, char *buf, size_t n, uint64_t off);
void up_strict_after_fork_child(void);
/* At exit, before the library goes off (up_fini): waiting overwrites applied, the log made void and removed, the
 * checkpoint lock held to the end of the process (strict.c). */
void up_strict_shutdown(void);
/* The program removes root r (area_release.c): every operation logged so far is applied and made durable,
 * then the names of the log and the staging file go, and the root has no log any more -- a later strict
 * operation there (the root made again) makes a new one. The old log stays open and allocated: a thread
 * already waiting for its lock goes on with it (its operation is on a file of the root being removed).
 * false, with nothing done, when the applied state could not be made durable. */
bool up_strict_release_root(struct up_root *r);
/* Replays the logs of dead owners in <root>/.daxkit (tag NULL: any). 0 or -errno. */
int up_strict_recover(const char *root_path, int area_fd, const char *tag, struct up_strict_report *rep);
/* One log, whose flock the caller holds (inflight.c: a dead thread's, found by its registry slot): replayed,
 * made durable and removed as up_strict_recover does. 0 or -errno. */
int up_strict_recover_log(const char *root_path, int area_fd, const char *log_path, struct up_strict_report *rep);
/* Whether a staged write's staged bytes are those its record was written with (DK_OPLOG_WRITE_STAGED_CRC:
 * their crc32c matches; a DK_OPLOG_WRITE_STAGED record of an older log carries none: true). Recovery
 * replays only intact ones. */
struct dk_oplog_op;
bool up_strict_staged_intact(unsigned type, const struct dk_oplog_op *op, const void *staged);
#ifdef DAXKIT_TEST_BUILD
/* Test builds: deliberately broken strict-mode orderings the crash-state explorer must catch. */
enum up_strict_broken {
    UP_STRICT_BROKEN_NONE = 0,
    UP_STRICT_BROKEN_CHECKPOINT_NO_FENCE, /* the checkpoint resets the log without fencing the applied bytes */
    UP_STRICT_BROKEN_STAGED_NO_FENCE,     /* a staged write's record carries no crc of its staged bytes, and no fence
                                             orders them before it */
    UP_STRICT_BROKEN_APPLY_AFTER_RESET,   /* the checkpoint resets the log before it applies the waiting overwrites */
    UP_STRICT_BROKEN_CK_NO_DRAIN,         /* a writer of the checkpoint lock takes its rwlock only, without closing
                                             the write path's fast read side and waiting for it (strict_ck_threads) */
};
extern int up_strict_test_broken;
#endif

/* ---- files (file.c) ---- */

enum up_strategy { UP_STAGE, UP_EXTEND };

/* POSIX record locks this process holds on a file, as a union of byte ranges (reclock.c). */
#define UP_LOCK_RANGES 8
struct up_lockset {
    uint64_t start[UP_LOCK_RANGES], end[UP_LOCK_RANGES]; /* [start, end), apart, UINT64_MAX: to the end */
    uint8_t n;
    bool unknown;               /* not followed exactly: counts as not held */
    uint64_t lapses;            /* times the set went empty or unknown */
    uint64_t at_refresh;        /* lapses << 1 | held, when the size was last re-read after a lock (refresh_gen):
                                   one word, stored and read without f->mu (reclock.c) */
    bool untracked;             /* for good: the program maps the file, its lock calls are neither counted nor
                                   followed (reclock.c: up_locks_untracked) */
};

/* DAXKIT_LOCK_CACHE (lockcache.c): the file's POSIX record locks as the program holds them (p) and a lower
 * bound of what the kernel holds for the process (k), per byte range; levels 0 none, 1 read, 2 write. Zeroes:
 * nothing held, nothing cached. Every field under `owner` (lockcache.c's spin lock). */
#define UP_LC_SEGS 16
struct up_lc_flight;
struct up_lc_seg {
    uint64_t a, b; /* [a, b), UINT64_MAX: to the end */
    uint8_t p, k;
};
struct up_lc {
    uintptr_t owner;       /* the holding thread's token, 0: free */
    uint8_t n;             /* segments, sorted, apart */
    uint8_t off;           /* not followed (p unknown): every call goes to the kernel until a whole-file unlock */
    uint8_t dropping;      /* a program thread's drop is issuing its calls */
    uint8_t nd;            /* deferred: a signal handler's calls inside its thread's hold */
    uint8_t dclose;        /* deferred: a handler's close of the file inside its thread's hold */
    uint8_t lost;          /* a deferred record did not fit: off */
    uint32_t kin;          /* acquisitions in the kernel right now, each listed in fl */
    struct up_lc_flight *fl; /* their ranges (on the acquiring threads' stacks): a drop leaves them alone */
    struct up_lc_seg seg[UP_LC_SEGS];
    struct { uint64_t a, b; uint8_t t; } def[4];
    uint64_t lo, hi;       /* every byte the kernel may hold for the process lies in [lo, hi) (lo == hi: none) */
    int fd1;               /* a program descriptor of the file + 1, valid under owner until the file's next close */
    int fdr1;              /* ... one open for reading + 1 (a drop's read-lock downgrade needs read access) */
    int bidx1;             /* the file's entry in this process's lock board slot + 1 (0: not registered) */
    uint64_t cached_since; /* when the kernel last began to keep a lock the program does not hold (0: none) */
    uint64_t cold_until;   /* after another process asked: releases go to the kernel until then (ns) */
    uint8_t due;           /* the age came while the program held everything: its next release reaches the kernel */
    uint16_t ofd;          /* the program's OFD acquisitions of the file in the kernel now: nothing is kept meanwhile */
    uint32_t req_seen;     /* the board's request count last acted on */
};

/* Session 28: an fsync published appends staged through an O_APPEND descriptor (RWF_APPEND: at the kernel's end)
 * without the fstat that finds where they landed (publish.c put_end_off): this process's view of the end and of its
 * O_APPEND descriptors' offsets may lag another process's appends until a call needs it -- any served call but an
 * O_APPEND write through `appender` or an fsync (the file's refresh_gen behind meanwhile: upath.c end_put_off),
 * fstat, a publish point. Set and cleared under f->mu; `gen` is read without it. */
struct up_end_owed {
    /* up_refresh_gen at the last such publish -- a lock taken since ends the put-off (the calls above settle it
     * then) -- or 0: nothing owed (up_refresh_gen starts at 1). The one word lock-free looks read: stored last
     * (release) when put off, cleared (release) when settled. */
    uint64_t gen;
    uint64_t from;  /* the published size before the first such publish (descriptors past it move) */
    uint64_t view;  /* this process's end after the last such publish: the kernel put it at fd's offset */
    int fd;         /* the descriptor that publish wrote through at its offset (the file's own aux_fd) */
    int appender;   /* the one program descriptor whose O_APPEND appends were put off (others settle first) */
};

struct up_file {
    dev_t dev;
    ino_t ino;
    struct up_file *hash_next;
    struct up_file *lru_prev, *lru_next; /* on the closed list when open_refs == 0 */
    struct up_file *all_prev, *all_next; /* every live file, including forgotten ones still open */
    struct up_file *act_prev, *act_next; /* files not on the closed list (file.c) */
    struct up_root *root;
    uint64_t size;          /* logical size this process sees (atomic access) */
    uint64_t pub_size;      /* every byte below is in the kernel file; size >= pub_size */
    uint64_t ksize;         /* the kernel's i_size as we last set or saw it (extend: a step ahead) */
    uint64_t backed_end;    /* every byte below has storage: mapped loads and stores stay below it (holes.c);
                             * written under mu, read atomically */
    bool holes_probed;      /* backed_end was found by SEEK_HOLE once (the first mapping) */
    uint32_t hole_ios;      /* reads and writes sent past backed_end since the last probe, under mu */
    struct up_map map;
    /* Lock order mu, then rw. rw is taken for writing only with mu held, so holding mu alone excludes its
     * writers: the paths under mu (appends, locked reads) need not take rw too. */
    pthread_rwlock_t rw;    /* read: data IO without mu; write: truncate, drop (with mu); see guard.h */
    uint32_t guard_closed;  /* the guard's write side is in: fast sections take rw (guard.h) */
    pthread_mutex_t mu;     /* appends, size changes, publish: taken by up_file_lock, never directly */
    /* An extend-strategy append storing its bytes after it let mu go (io.c: write_locked): the storing
     * thread's token (up_append_token) while its stores and its size update are under way, 0 otherwise.
     * Set under mu, cleared by a release store after the stores are fenced; up_file_lock waits for it. */
    uintptr_t append_inflight;
    uint64_t append_inflight_end; /* that append's end (valid while append_inflight is set) */
    pthread_mutex_t strict_mu; /* strict mode: an append's offset, record and apply in one order */
    enum up_strategy strategy;
    bool auto_policy;       /* the strategy was chosen by DAXKIT_APPEND=auto (upath.c) */
    bool auto_keep;         /* auto moved it to extend with keep (publish.c: up_note_sync_streak) */
    uint32_t sync_streak;   /* fsyncs in a row that each published exactly one append (stage) */
    bool appends_o_append;  /* appended through an O_APPEND descriptor: auto never keeps it (publish.c) */
    bool o_append_hinted;   /* counted once as a log synced per record through O_APPEND (publish.c: note_sync_streak) */
    bool write_through;     /* such a log: its appends published at the write (publish.c up_write_through_locked) */
    bool staged_o_append;   /* so were appends staged since the last publish: published through one (publish.c) */
    uint32_t appends_unpublished; /* append calls since the last publish, under mu */
    struct up_staged *staged; /* stage strategy: slots covering [pub_size, size), in file order */
    uint32_t staged_count, staged_cap;
    char *heap_kept;          /* a small heap slot's buffer kept from the last publish for the next burst (or NULL) */
    uint64_t heap_kept_cap;
    uint32_t open_refs;     /* descriptors of this process referring to the file */
    bool meta_dirty;        /* size or blocks changed since the last fsync (kernel fsync needed) */
    bool unlinked;
    bool reflinked;         /* blocks were cloned in since the last fsync (publish.c: drop_reflink_mark) */
    bool spilled;           /* appends went to the kernel since the last publish point under a valid size record,
                               cleared at the next one (publish.c: up_spill_locked). Set under mu (atomic) */
    bool cached;            /* in the file table */
    bool kernel_only;       /* could not be mapped: every call passes through */
    /* Per-file DAX on a DAX root (review 11, finding 3; up_persist_as): statx's STATX_ATTR_DAX (1, 0, -1 not
     * reported, UP_DAX_UNCHECKED) and whether the kernel granted the file MAP_SYNC (1, 0, -1 not tried). */
    int8_t file_dax, map_sync;
    bool lock_all_skipped;  /* up_file_lock_all left it alone (its mutex is this thread's), under up_table_mu */
    bool fork_parents;      /* a fork child's copy of a file its parent's thread was in the middle of (lock_all_skipped
                             * at the fork: a handler's fork): its staged appends are the parent's, never published here */
    struct up_atomic *atomic; /* DAXKIT_ATOMIC: served by the failure-atomic engine (atomic_route.c) */
    int rescue_fd;          /* internal duplicate kept when a publish at close failed (-1: none) */
    int aux_fd;             /* the file reopened read-write for mapping and relinks, under mu (auxfd.c) */
    int atomic_fd;          /* DAXKIT_ATOMIC: the engine's descriptor of the file, kept past a detach (auxfd.c) */
    int sizerec_slot;       /* published-size record slot + 1 (0: none) */
    bool sizerec_valid;     /* the record is valid: the kernel size may exceed pub_size -- also while a publish
                               that a crash can still roll back is in flight, after pub_size reached the size:
                               lock-free "nothing to publish" checks read it (atomic; up_publish_rolling_back) */
    uint32_t unmapped_ios;  /* reads/overwrites sent to the kernel while the file was not mapped */
    uint64_t refresh_gen;   /* up_refresh_gen when the kernel size was last re-read (upath.c) */
    struct up_lockset locks; /* the ranges: inside a lock call that runs alone (reclock.c) */
    uint64_t victims_seen;  /* up_victims_unseen when the entry was made (upath.c: last_close_of_mapped) */
    bool closed_mapped;     /* counted in up_closed_mapped (file.c) */
    bool size_unsure;       /* a lock was taken without a re-read (reclock.c): check before using the end */
    /* A lock's size re-read is owed (refresh_gen behind): appends at the end and fsyncs were served without it
     * since the file was last idle (upath.c: put_off). The next other served call makes it (up_refresh_owed).
     * Atomic. */
    bool refresh_owed;
    uint64_t owed_from;     /* the published end when it became owed: a publish past it may cover a cut's hole */
    struct up_end_owed end;  /* the end an fsync's O_APPEND publish put off (above; publish.c put_end_off) */
    int o_append_fd;         /* the descriptor of the O_APPEND appends staged since the last publish (-2: several) */
    uint32_t aux_fork_gen;   /* up_fork_gen when aux_fd was opened: its offset is this process's alone while equal */
    /* A page of the mapping (its offset; 0: none) touched after a lock's re-read found the kernel size past it: its
     * page-table entry present means no cut reached it since (upath.c probe_covers). Atomic. */
    uint64_t probe_page;
    /* Where that entry is looked at: the probe page's own 4 KiB mapping, a second VMA of the file's page made by
     * mremap from the data mapping's (session 28). No data access faults it in -- on huge tmpfs a fault below a cut
     * in the data mapping maps the whole 2 MiB folio there again. Changed only while probe_page is 0, by the thread
     * holding probe_busy; unmapped by file_free. */
    char *probe_addr;
    uint64_t probe_addr_off;
    int probe_busy;
    uint32_t strict_lazy;   /* strict mode: overwrites logged and staged, applied at the checkpoint (atomic) */
    bool strict_eager;      /* strict mode: the program mapped the file -- every write is applied at once */
    uint64_t ident;         /* ident.c: 1 << 32 | the file's identity once computed (0: not yet; atomic) */
    /* strict.c, the apply order of overlapping writes (review 9, finding 3), per epoch of the root's
     * checkpoint lock (a new one at each hold of its write side): the first writer's reader record
     * (epoch << 32 | record id), and the epoch in which a write through another record was seen -- only
     * then do writes look for overlapping writes of other threads. */
    uint64_t strict_writer;
    uint32_t strict_shared;
    uint32_t strict_delta_skip;   /* strict.c: writes of the file not compared for a delta record (after a miss) */
    uint32_t strict_delta_misses; /* strict.c: compares in a row that found too many changed bytes (at most 5) */
    /* >= 0: adopted without its inode number -- a file this process created (O_CREAT|O_EXCL) adopted at its
     * first write (pending.c) -- through this, its one descriptor; not in the table until up_file_key reads
     * the number (any look-up of the table, a second descriptor, fork, a record, an fsync). Under
     * up_table_mu. -1 otherwise. */
    int keyless_fd;
    bool program_mapped;    /* the program mapped the file: its pages stay the medium's (small_pages.c), atomic */
    uint32_t pin_id;        /* the file's name in the pin owner word, given at its first pin note (upath.c), atomic */
    /* last (~620 bytes, untouched with the option off: the fields above keep their cache lines) */
    struct up_lc lc;        /* DAXKIT_LOCK_CACHE: what the kernel keeps for the process (lockcache.c) */
};

/* ---- identity beyond (dev, ino) (ident.c) ---- */
/* A 32-bit hash of fd's file handle (inode number and generation): a file created later on a reused inode
 * number has another. 0: unknown (no handles on that file system). Keeps errno. */
uint32_t up_fd_ident(int fd);
/* The identity of the file at `path` (relative to dirfd; a symlink followed) under root r, by name_to_handle_at
 * -- 0 on tmpfs (as up_file_ident) or without a handle. Keeps errno. */
uint32_t up_path_ident(const struct up_root *r, int dirfd, const char *path);
/* The same for f (open as fd), computed at its first use and cached: a load and a branch per call after
 * that (strict mode calls it per write). 0 without a system call on tmpfs (no number reuse: ident.c). */
uint32_t up_file_ident_slow(struct up_file *f, int fd);
static inline uint32_t up_file_ident(struct up_file *f, int fd) {
    uint64_t v = __atomic_load_n(&f->ident, __ATOMIC_RELAXED);
    return DK_LIKELY(v >> 32) ? (uint32_t)v : up_file_ident_slow(f, fd);
}
/* The entry may now stand for another inode with the same number (reopened from the closed list). */
void up_file_ident_forget(struct up_file *f);

/* The end is owed (struct up_end_owed): a publish put it off and nothing settled it since. */
static inline bool up_end_owed(const struct up_file *f) { return __atomic_load_n(&f->end.gen, __ATOMIC_ACQUIRE) != 0; }

/* Appends not yet in the kernel file: the file must not be evicted. */
/* A publish of f is in flight that a crash would still roll back: its relink is done (nothing staged, pub_size at
 * the size) but its size record not yet cleared (publish.c: up_publish_locked_moved). A publish point that finds
 * nothing staged without f->mu must wait for it all the same -- it returned, then a crash cut the appends made
 * before it (review 21, finding 02). */
static inline bool up_publish_rolling_back(const struct up_file *f) {
    return __atomic_load_n(&f->sizerec_valid, __ATOMIC_ACQUIRE);
}

static inline bool up_file_pinned(const struct up_file *f) {
    return f->staged_count || f->ksize != __atomic_load_n(&f->size, __ATOMIC_ACQUIRE) || f->rescue_fd >= 0 || f->atomic ||
           up_publish_rolling_back(f) || up_end_owed(f); /* (its look: publish.c) */
}

/* The library's size is the file's (fstat answers it; a reopen or a change the kernel made does not take the
 * kernel's): bytes the kernel does not have (staged, an extension), the atomic engine's, a failed close's
 * rescue, a publish in flight -- but not a spill's size record alone: the spilled bytes are in the kernel
 * file, and growth another process made past them is the kernel's to report (publish.c: up_spill_locked;
 * diff_twoproc_lock_hugetmpfs seed 795966340075: fstat said 158,428 where the kernel had 1,048,700). */
static inline bool up_file_size_ours(const struct up_file *f) {
    return f->staged_count || f->ksize != __atomic_load_n(&f->size, __ATOMIC_ACQUIRE) || f->rescue_fd >= 0 || f->atomic ||
           (up_publish_rolling_back(f) && !__atomic_load_n(&f->spilled, __ATOMIC_ACQUIRE));
}

static inline uint64_t up_file_size(const struct up_file *f) {
    return __atomic_load_n(&f->size, __ATOMIC_ACQUIRE);
}
/* Moved (release) after every change that may pin an open file -- staged bytes, a kernel size apart from the
 * logical one, a rescue descriptor -- and when a file joins the active list: up_publish_all skips its walk of
 * the active files while it has not moved since a walk that left none of them pinned (a lock release with
 * nothing to publish: SQLite releases three locks per transaction). Its writers hold f->mu (or
 * up_table_mu: active_add). */
extern uint64_t up_pin_seq;
/* Records f as a file that noted a pin since the last walk that left none pinned (upath.c: the pin owner). */
void up_pin_owner_note(struct up_file *f);
static inline void up_pin_note(struct up_file *f) {
    up_pin_owner_note(f); /* before the sequence moves: a reader of the sequence sees it */
    __atomic_add_fetch(&up_pin_seq, 1, __ATOMIC_RELEASE);
}
/* f's publish, under f->mu, left it unpinned: when it is the only file that noted a pin since the last walk
 * that left none pinned, that is recorded as such a walk (up_publish_all skips its walk then: upath.c). */
void up_pin_unpinned(struct up_file *f);

/* A size apart from the kernel's pins the file: noted when it did not already differ (under f->mu, which
 * every ksize change holds too; a ksize change that makes the two differ notes it itself: io.c). */
static inline void up_file_set_size(struct up_file *f, uint64_t s) {
    uint64_t was = __atomic_load_n(&f->size, __ATOMIC_RELAXED), k = __atomic_load_n(&f->ksize, __ATOMIC_RELAXED);
    __atomic_store_n(&f->size, s, __ATOMIC_RELEASE);
    if (s != k && was == k) up_pin_note(f);
}

/* This thread's token for f->append_inflight: the address of a thread-local variable (never 0). */
uintptr_t up_append_token(void);
/* Waits until no other thread stores an append into f after its mutex (io.c). Caller holds f->mu. */
void up_append_wait_others(struct up_file *f);

#define UP_DAX_UNCHECKED (-2) /* up_file.file_dax before statx was asked */
/* How f persists: its root's medium, except a file of a DAX root that is not DAX itself (statx, MAP_SYNC
 * refused: dax=inode mounts), which persists as page cache (msync, fdatasync). */
static inline enum dk_medium up_persist_as(const struct up_file *f) {
    enum dk_medium m = f->root->persist_as;
    if (__builtin_expect(m != DK_MEDIUM_DAX, 1)) return m;
    return dk_file_persist_as(m, dk_cfg.persist == DK_PERSIST_FLUSH, __atomic_load_n(&f->file_dax, __ATOMIC_RELAXED),
                              __atomic_load_n(&f->map_sync, __ATOMIC_RELAXED));
}
/* A file newly adopted (or first mapped) on a DAX root: statx says whether it is DAX itself (file.c). */
void up_file_dax_check(struct up_file *f, int fd);
/* The kernel granted f MAP_SYNC (true) or refused it (false) on a DAX root (map.c). */
void up_file_map_sync_seen(struct up_file *f, bool granted);

/* Takes f->mu, the file's state lock, and then waits for another thread's extend-strategy append that
 * is still storing its bytes after it let the lock go (io.c, write_locked): what the caller sees under
 * the lock -- the size, the mapping, the extension -- no longer changes under it. A signal handler on the
 * thread of such an append does not wait for itself (see the callers that check up_append_inflight_mine). */
static inline void up_file_lock(struct up_file *f) {
    dk_mu_lock(&f->mu); /* marked (common/lockmark.h): a signal handler on this thread knows it is its own */
    if (__builtin_expect(__atomic_load_n(&f->append_inflight, __ATOMIC_ACQUIRE) != 0, 0)) up_append_wait_others(f);
}
static inline bool up_append_inflight_mine(const struct up_file *f) {
    uintptr_t t = __atomic_load_n(&f->append_inflight, __ATOMIC_ACQUIRE);
    return t != 0 && t == up_append_token();
}

/* reclock.c: at a size re-read after a lock (refresh_gen set), before the kernel's size is read; at a close of
 * any descriptor of the file, before the kernel's close releases the POSIX locks: the set becomes unknown (not
 * held) until the next whole-file unlock. Neither needs f->mu. */
void up_locks_note_refresh(struct up_file *f);
/* The same in two steps, the word taken before the size is read and stored after (upath.c up_fstat_end) */
uint64_t up_locks_refresh_word(const struct up_file *f);
void up_locks_note_refresh_word(struct up_file *f, uint64_t word);
void up_locks_closed(struct up_file *f);
/* reclock.c, in a fork child: the lock calls and closes of the parent's other threads in flight at the fork never
 * end here -- the count keeps this thread's own only. */
void up_locks_after_fork_child(void);
/* lockcache.c (DAXKIT_LOCK_CACHE): any close of f, before the kernel's (also a fork child's files); f's entry
 * freed; before an exec; in a fork child. */
void up_lc_closed(struct up_file *f);
void up_lc_forget(struct up_file *f);
void up_lc_before_exec(void);
void up_lc_exec_failed(void);
void up_lc_after_fork_child(void);
void up_lc_init(void);
void up_lc_fork_child_done(void);
/* Before an operation that depends on the file's exact end (append, write past it, SEEK_END): the size is
 * re-read when a lock was taken without one. */
void up_size_verify_slow(struct up_file *f, int fd);
/* publish.c: the re-read a lock acquisition owed since appends at the end and fsyncs were served without it
 * (f->refresh_owed): the kernel's size with what is staged -- growth as up_refresh_size takes it, a shrink below
 * the published end after what is staged went in where it was written. Keeps errno. */
void up_refresh_owed(struct up_file *f, int fd);
/* holes.c: after bytes were published at `below` or past it with the kernel size unknown (up_refresh_owed): a
 * hole right below it (a cut's, one SEEK_HOLE) sends the next mapped access to a probe from 0. Under f->mu. */
void up_holes_recheck_below(struct up_file *f, int fd, uint64_t below);
static inline void up_size_verify(struct up_file *f, int fd) {
    if (DK_UNLIKELY(__atomic_load_n(&f->size_unsure, __ATOMIC_RELAXED))) up_size_verify_slow(f, fd);
}

extern pthread_mutex_t up_table_mu;
/* This process is the child of a fork made in a signal handler inside its thread's table change (lifecycle.c):
 * the library is off, and the interrupted call it may return into publishes nothing and applies no strict
 * log (the parent does). */
extern bool up_fork_orphan;
/* Fork children made since this image began, counted in each child (lifecycle.c up_fork_child): a descriptor
 * opened under another count is shared with a fork relative, its offset too (publish.c put_off_fd). */
extern uint32_t up_fork_gen __attribute__((visibility("hidden")));
/* The start-up adoption of descriptors this image inherited is running (lifecycle.c): their slots are the
 * kernel's for the image's life, so their adoption makes no stats file (the first call through one does). */
extern bool up_adopting_inherited;
/* table_nested.c: the closes a signal handler left to this thread (it held up_table_mu). */
extern __thread bool up_close_later_due;
void up_close_later_run(void);
/* table_nested.c: a name removed in a signal handler whose thread holds up_table_mu -- the file's entry is
 * forgotten by that thread at its up_table_unlock (up_close_later_run), and meanwhile an adoption of the
 * inode number starts afresh (up_victims_unseen). */
void up_forget_later(dev_t dev, ino_t ino);
/* Lets go of up_table_mu; then this thread closes what its signal handlers left to it, when it holds no
 * other library mutex (table_nested.c). */
static inline void up_table_unlock(void) {
    dk_mu_unlock(&up_table_mu);
    if (DK_UNLIKELY(__atomic_load_n(&up_close_later_due, __ATOMIC_ACQUIRE)) && !dk_mu_any_mine()) up_close_later_run();
}
extern uint64_t up_closed_mapped;  /* closed files of the table that keep a mapping (file.c) */
extern uint64_t up_victims_unseen; /* names removed without looking the victim up (upath.c) */
extern uint64_t up_refresh_gen __attribute__((visibility("hidden"))); /* moved by every lock acquisition; see up_refresh_all */
/* Finds or creates the file for (st->st_dev, st->st_ino); takes an open reference. Caller holds
 * up_table_mu. NULL on allocation failure. */
struct up_file *up_file_get(struct up_root *r, const struct stat *st, const char *path_hint);
/* Drops an open reference; caller holds up_table_mu. The file stays cached (closed list) unless unlinked. */
void up_file_put(struct up_file *f);
struct up_file *up_file_lookup(dev_t dev, ino_t ino);
/* A file this process just created, as fd, on r's device (the name's), adopted before its inode number is
 * known: size 0, not in the table (keyless_fd). Caller holds up_table_mu. NULL on allocation failure. */
struct up_file *up_file_get_keyless(struct up_root *r, int fd);
/* Puts a keyless file into the table under its inode number (the fstat of its descriptor, or `given`); a
 * file that turns out to be elsewhere than its root's device is handed to the kernel (published first).
 * No-op for a keyed file. Caller holds up_table_mu. */
void up_file_key(struct up_file *f, const struct stat *given);
/* up_file_key of every keyless file (fork: the child's look-ups would want the parent's descriptors). */
void up_file_key_all(void);
/* Forgets a file whose name went away (unlink, rename-over): dropped now if closed, at last close if open. */
void up_file_forget(dev_t dev, ino_t ino);
/* Calls fn for every file in the table (caller holds up_table_mu). */
void up_file_foreach(void (*fn)(struct up_file *f, void *arg), void *arg);
/* The same for files not on the closed list (open, or closed with appends not yet published). */
void up_file_foreach_active(void (*fn)(struct up_file *f, void *arg), void *arg);
void up_file_lock_all(void);
void up_file_unlock_all(void);
void up_file_reinit_locks_all(void);

/* ---- open file descriptions (fdtab.c) ---- */

#define UP_SLOTS_MAX 65536

struct up_slot {                      /* 64 bytes, MAP_SHARED: shared with fork relatives */
    uint64_t offset;                  /* file offset (atomic) */
    uint32_t procs;                   /* processes referring to it (atomic) */
    uint32_t flags;                   /* open flags: O_ACCMODE, O_APPEND, O_SYNC, O_DSYNC (atomic) */
    uint32_t kernel;                  /* kernel is authoritative: pass data calls through */
    uint32_t gen;
    struct up_file *file;             /* same address in every fork relative */
    uint64_t pad[4];                  /* [0] offset lock, [1] offset handed to the kernel (io.c), [2] UP_SLOT_APPEND_END */
};

/* pad[2]: the offset the slot's own last O_APPEND write left (0: none since, or an lseek moved it). A publish
 * that finds the kernel's end moved moves a slot's offset only when it is still that (publish.c): an offset
 * from an lseek, a pwrite or a read is the program's own number. */
#define UP_SLOT_APPEND_END 2

/* Per-process descriptor entry. */
struct up_fd {
    struct up_slot *slot;
    uint32_t internal;                /* a descriptor daxkit owns: invisible to the program */
    uint32_t stale;                   /* the kernel offset moved while shared: resync before use */
    /* The library held something on the number once -- a slot, a pending open, a descriptor of its own: set (seq_cst)
     * by entry_alloc before any of the entry's state is stored, never cleared (fork copies it). Clear: the number was
     * never managed -- no slot, not pending, never vacated (a vacate is a managed or pending descriptor's close,
     * up_fd_vacate; up_program_threads_begin's walk stands for such closes made while the program had one thread,
     * of numbers that had a file). The pass-through look's first (shim.h dk_pt_none_rest): a socket's or pipe's read
     * or write at a number of a table leaf the library uses pays one load past the slot's, not six (~38 -> ~26
     * instructions over libc's a call, session 29); in the slot's cache line, read only when the slot is NULL. */
    uint32_t held;
    struct up_file *aux_of;           /* internal: the file whose aux_fd this is (auxfd.c) */
    /* Lazy adoption (pending.c): opened, not looked at yet -- the kernel serves it meanwhile. */
    uint32_t pending;                 /* UP_PEND_* (atomic) */
    uint32_t pend_busy;               /* calls passing through right now (atomic) */
    int pend_oflags;                  /* the open's flags */
    uint32_t pend_below;              /* roots the open's name showed it below (up_roots_by_name) */
    uint32_t pend_walked;             /* of those, the root whose recovery scope the open walked by name */
    uint32_t pend_ios;                /* reads passed through */
    uint64_t pend_off;                /* the kernel's offset (reads and lseeks passed through move it) */
    uint64_t pend_epoch;              /* up_adopt_epoch under which it may pass reads through; 0: never */
    uint32_t pend_child;              /* opened by one plain name, O_NOFOLLOW, relative to a walked directory */
    /* Calls in progress (calls.h): the reader record of the one thread that made calls through the entry
     * since it was bound (NULL: none), and whether another did. Reset by a bind. */
    const void *call_owner;
    uint32_t call_shared;
    uint32_t call_waiters;            /* calls waiting for the entry's close to end (calls.c) */
    const void *closer;               /* while closing: the closing thread (calls.h: up_call_me) */
    struct up_slot *released;         /* the slot exit or exec unbound (fdtab.c: up_fdtab_release_idle) */
    /* The number was vacated (a managed or pending descriptor closed: vac_gen moved on) and no open or dup
     * has settled it since (vac_clean): a pass-through write through it may reach a file another thread's
     * open is binding (fdtab.c: up_fd_opening). Atomic. */
    uint32_t vac_gen, vac_clean;
    /* A signal handler closed the number while its thread held up_table_mu: that thread closes it (table_nested.c:
     * UP_LATER_PENDING, then UP_LATER_CLOSING while it does) unless the program's dup2/dup3 onto it or close of
     * it claims the pending mark first (up_close_later_settle; unbind_closing and up_fd_bind clear it too). */
    uint32_t close_later;
} __attribute__((aligned(128))); /* 120 bytes padded: an entry's address is a shift (every call's first look) */
enum { UP_LATER_PENDING = 1, UP_LATER_CLOSING = 2 };
/* e->slot of an entry being closed: its calls are draining (calls.h); new ones wait. Never dereferenced. */
#define UP_SLOT_CLOSING ((struct up_slot *)1)
/* ADOPTING is claimed with a token above the low two bits (pending.c: pending_claim), so that an adoption
 * ends its own claim only -- never another thread's, made on the same number closed and opened again after
 * this adoption bound its slot (review 19, #02). */
enum { UP_PEND_NONE = 0, UP_PEND_WAITING = 1, UP_PEND_ADOPTING = 2, UP_PEND_STATE = 3 };

/* ---- a file's auxiliary descriptor (auxfd.c) ---- */
/* A descriptor of f that can map it read-write and be relinked into (not O_APPEND): the program's own fd
 * when it is O_RDWR without O_APPEND (need_rdwr) or writable without O_APPEND, else the file reopened once
 * and kept until the program closes a descriptor of the file. -errno when the file cannot be reopened so.
 * Under f->mu. */
int up_aux_fd(struct up_file *f, int fd, bool need_rdwr);
/* The reopened one itself (opened now if need be), never the program's: its offset is the library's (publish.c
 * put_end_off reads where an RWF_APPEND write left it). Under f->mu. */
int up_aux_fd_own(struct up_file *f, int fd);
/* A descriptor of (dev, ino) the library opened inside a program's lock call (inflight.c's replay): closed
 * when the process never asked for a POSIX lock, else kept -- closing it would drop the program's locks on
 * the file (auxfd.c). */
void up_aux_adopt_or_close(dev_t dev, ino_t ino, int fd);
/* The program closes a descriptor of f (the kernel drops the process's POSIX locks on the file then):
 * the auxiliary descriptor goes too. Under f->mu. */
void up_aux_close(struct up_file *f);
/* DAXKIT_ATOMIC: the file reopened read-write for the engine (one kept from an earlier route is used again),
 * kept like the auxiliary descriptor -- also when the engine lets the file go while the program keeps it
 * open (fork, the program's mmap, ...): only a close of the program's drops it. -errno when it cannot be
 * reopened. Under f->mu. */
int up_atomic_fd(struct up_file *f, int fd);
/* exec: f's kept descriptors stay open in the new image (a program descriptor of f does: its POSIX locks
 * must survive); undone by up_aux_exec_failed. Under f->mu. */
void up_aux_keep_across_exec(struct up_file *f);
void up_aux_exec_failed(void);
/* The program is about to dup2/dup3 onto newfd, one of daxkit's descriptors: an auxiliary one moves to
 * another number first. */
void up_aux_vacate(int newfd);


#define UP_FD_LEAF 1024
#define UP_FD_LEAVES 1024             /* 1M descriptors */
extern struct up_fd *up_fd_leaf[UP_FD_LEAVES] __attribute__((visibility("hidden")));

static inline struct up_fd *up_fd_entry(int fd) {
    if (DK_UNLIKELY((unsigned)fd >= UP_FD_LEAF * UP_FD_LEAVES)) return NULL;
    struct up_fd *leaf = __atomic_load_n(&up_fd_leaf[(unsigned)fd / UP_FD_LEAF], __ATOMIC_ACQUIRE);
    return leaf ? &leaf[(unsigned)fd % UP_FD_LEAF] : NULL;
}
/* Before the program's dup2/dup3 onto fd or close of it: a close a signal handler left to its thread on the
 * number is taken over (the caller's replacement or close carries it out), or, while that thread is closing
 * it, waited for (table_nested.c). */
void up_close_later_settle_slow(struct up_fd *e);
static inline void up_close_later_settle(int fd) {
    struct up_fd *e = up_fd_entry(fd);
    if (DK_UNLIKELY(e && __atomic_load_n(&e->close_later, __ATOMIC_ACQUIRE))) up_close_later_settle_slow(e);
}
/* The slot of a managed descriptor, or NULL. Lock-free: the data path's first step. */
static inline struct up_slot *up_fd_slot(int fd) {
    struct up_fd *e = up_fd_entry(fd);
    struct up_slot *s = e ? __atomic_load_n(&e->slot, __ATOMIC_ACQUIRE) : NULL;
    return s == UP_SLOT_CLOSING ? NULL : s;
}
/* An entry's slot as up_fd_slot gives it (NULL while closing). */
static inline struct up_slot *up_entry_slot(const struct up_fd *e) {
    struct up_slot *s = __atomic_load_n(&e->slot, __ATOMIC_ACQUIRE);
    return s == UP_SLOT_CLOSING ? NULL : s;
}
/* Before a write passes through fd, a number it found with no slot: true when the number was vacated (a
 * managed descriptor closed) since the last open or dup settled it (up_fd_opening, below), or is bound
 * again -- then the write goes through upath/vacant.c. The slot is looked at again between two looks at the
 * vacating count: a close that ended (its count moved first) between the caller's first look at the slot and
 * a look at the count that found the number settled would send the write to the kernel while the next open
 * binds the number (an open settles a vacated number only after it waited for the writes named in it).
 * Lock-free: three loads. */
static inline bool up_fd_vacated(int fd) {
    struct up_fd *e = up_fd_entry(fd);
    if (!e) return false;
    uint32_t g = __atomic_load_n(&e->vac_gen, __ATOMIC_ACQUIRE);
    if (DK_UNLIKELY(g != __atomic_load_n(&e->vac_clean, __ATOMIC_ACQUIRE))) return true;
    if (DK_UNLIKELY(__atomic_load_n(&e->slot, __ATOMIC_ACQUIRE) != NULL)) return true;
    return DK_UNLIKELY(__atomic_load_n(&e->vac_gen, __ATOMIC_ACQUIRE) != g);
}

/* A descriptor's status flags (F_GETFL): its slot's when managed, else the kernel's; -1 when closed. */
int up_fd_flags(int fd);

int up_fdtab_init(void);
struct up_slot *up_slot_new(struct up_file *f, uint32_t flags, uint64_t offset);
/* Binds fd to slot (the process's reference count on the slot goes up). Caller holds up_table_mu. */
int up_fd_bind(int fd, struct up_slot *s);
/* Unbinds fd for a close or dup2 over it: returns the slot if this was the process's last descriptor for it
 * (caller then drops the file reference), else NULL. The entry is left closing (UP_SLOT_CLOSING: calls.h),
 * and returned in *ep; once the kernel closed (or replaced) the number, up_fd_close_done(fd). Caller holds
 * up_table_mu. */
struct up_slot *up_fd_unbind_closing(int fd, struct up_fd **ep);
void up_fd_close_done(int fd);
void up_fd_close_done_range(unsigned first, unsigned last);
/* Before the kernel closes (or dup2 replaces) a number with no slot (a pending descriptor): the entry closing
 * as up_fd_unbind_closing leaves it -- true; then up_fd_close_done(fd). False: bound or closing already. */
bool up_fd_close_unbound(int fd);
/* Before the kernel closes a managed or pending descriptor of the program: the number is vacated. */
void up_fd_vacate(int fd);
/* The kernel gave fd to the program's open, dup, dup2/dup3 or F_DUPFD and the number was vacated: until
 * up_fd_opened, calls through it wait as for a closing entry; first the pass-through writes in flight
 * through it (up_pt_vacant_enter: named in their records) are waited for -- one that looked the number up
 * before the kernel's open returned it and wrote after reached the new file through the kernel, with
 * neither a strict record nor sync's fdatasync unless it made that sync itself while named, before this
 * open could return (the log reopened under its writers, lifetime13/strict15). The number is settled then.
 * NULL (nothing to end) when it was not vacated. */
struct up_fd *up_fd_opening(int fd);
/* After up_fd_opening: the entry ends closing unless the adoption (or up_dup) bound a slot. */
void up_fd_opened(int fd, struct up_fd *e);
/* Exit and exec: every descriptor unbound; the process's share of a slot given up unless another thread's
 * call is inside it (calls.h: such a slot is never freed, and fork relatives count this process as still
 * holding it). Caller holds up_table_mu. */
void up_fdtab_release_idle(void);
/* A fork child: an entry another thread of the parent was closing is closed here (that thread is gone). */
void up_fdtab_after_fork_child(void);
/* Local (this process) descriptor count of a slot. */
uint32_t up_slot_local_refs(const struct up_slot *s);
/* A publish found the kernel's end moved by `by` past ours and appended f's staged bytes there: every slot of f
 * this process holds whose offset is where its own last O_APPEND write left it (UP_SLOT_APPEND_END; O_APPEND or
 * not now -- an F_SETFL may have taken it off since) and lies in the staged range (above, upto] moves by `by`,
 * past its own record where the kernel's O_APPEND write would have left it. Returns how many moved. Under f->mu. */
uint32_t up_slots_follow_appends(const struct up_file *f, uint64_t above, uint64_t upto, uint64_t by);
void up_fd_mark_internal(int fd, bool internal);
static inline bool up_fd_is_internal(int fd) {
    struct up_fd *e = up_fd_entry(fd);
    return e && e->internal;
}
/* Lazy adoption (pending.c). A pending descriptor has no slot: every call that is not pending-aware
 * passes it to the kernel, which is right while no other state of ours refers to its file. */
bool up_fd_set_pending(int fd, int oflags, uint32_t below, uint32_t walked, uint64_t epoch, bool child); /* false: adopt now */
void up_fd_clear_pending(int fd, struct up_fd *e);
/* An adoption's claim ends (pending.c): its own claim value -> NONE (WAITING when `still_pending`: refused in a
 * handler), nothing else. An adoption that bound a slot ended
 * the pending state then (up_fd_bind); other threads may since have closed the number and opened another
 * file at it, pending again -- clearing that left the new file neither pending nor bound, and its writes
 * went to the kernel named nowhere, never fdatasync'ed in sync mode (session 19). */
void up_fd_end_adopting(int fd, struct up_fd *e, uint32_t claim, bool still_pending);
/* Moved at every adoption (file.c): a pending descriptor that passes reads through may be of the file
 * adopted, and must be adopted before its next read. */
extern uint64_t up_adopt_epoch __attribute__((visibility("hidden")));
extern uint32_t up_active_files; /* files on the active list (file.c), atomic */
extern bool up_locks_ever;       /* reclock.c saw a POSIX lock taken on a managed file (pending.c) */
/* Adopts fd with stat st (NULL: fstat here); root from the name mask, else a readlink. Keeps the
 * offset given. 0 (or unmanaged), or -EDEADLK (a signal handler inside the file's mutex: upath.c). */
int up_adopt_stat(int fd, int oflags, const struct stat *st, uint32_t below, uint32_t walked, uint64_t offset,
                  bool kernel);
/* A pending descriptor of a file the process created, at its first write: adopted without an fstat
 * (upath.c) while up_adopt_epoch is still `epoch`. -1 when it may not be (the caller adopts it as any other). */
int up_adopt_keyless(int fd, int oflags, uint32_t walked, uint64_t epoch);
struct up_root *up_root_for_fd_mask(int fd, const struct stat *st, uint32_t below);
uint32_t up_roots_by_name(int dirfd, const char *path);
/* Iterates over managed descriptors (caller holds up_table_mu). */
void up_fd_foreach(void (*fn)(int fd, struct up_fd *e, void *arg), void *arg);
/* Fork bookkeeping of slot process counts. */
void up_fdtab_fork_prepare(void);
void up_fdtab_fork_failed(void);

#endif
