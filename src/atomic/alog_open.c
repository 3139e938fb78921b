/* Mapping a file for atomic updates: the data file, its log in <dir>/.daxkit/<name>.alog (the same area
 * the staging pool uses, src/upath/stage.c), the medium's persistence rule, recovery, the checkpoint
 * thread. And the way back. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic/alog.h"
#include "common/area.h"
#include "common/config.h"
#include "common/crashpoint.h"
#include "common/dk.h"
#include "common/internal_fd.h"
#include "common/lockmark.h"
#include "common/log.h"
#include "persist/media.h"
#include "persist/persist.h"
#include "shim/libc.h"
#include "common/mapflags.h"


#define ALOG_AREA ".daxkit"

int alog_options_resolve(const struct daxkit_atomic_options *in, struct daxkit_atomic_options *out) {
    daxkit_atomic_options_init(out);
    if (!in) return 0;
    if (in->version != DAXKIT_ATOMIC_OPTIONS_VERSION) return -EINVAL;
    *out = *in;
    if (out->policy > DAXKIT_ATOMIC_JOURNAL || out->persist > DAXKIT_ATOMIC_PERSIST_FLUSH) return -EINVAL;
    if (out->redo_write_pct > DAXKIT_ATOMIC_REDO_NEVER) return -EINVAL;
    if (out->log_bytes < ALOG_CHUNK_BYTES || out->log_bytes % ALOG_CHUNK_BYTES || out->log_bytes > ALOG_LOG_BYTES_MAX)
        return -EINVAL;
    if (out->checkpoint_interval_us > 10u * 1000 * 1000 || out->recovery_threads > 64) return -EINVAL;
    if (out->file_bytes_min >= ALOG_FILE_BYTES_MAX) return -EINVAL;
    return 0;
}

static int fail_errno(void) { return errno ? -errno : -EIO; }

#define ALOG_POPULATE_BYTES_MAX (1ull << 30) /* larger mappings fault in as they are touched */

/* The log or the data file mapped shared: MAP_SYNC on a DAX medium -- where the file is not DAX itself (a
 * dax=inode mount: statx, or MAP_SYNC refused; review 11, finding 3) the engine persists as page cache from
 * then on (msync, fdatasync), for both files: an msync of a DAX mapping is durable too. */
static void not_dax(struct alog_file *f) {
    f->persist_as = DK_MEDIUM_PAGECACHE;
    dk_log_once("DAXKIT_ATOMIC: a file of a DAX directory is not DAX itself (a dax=inode mount: FS_XFLAG_DAX is "
                "per file): its log persists by msync/fdatasync, not by flushes");
}

static int map_shared(struct alog_file *f, int fd, uint64_t len, char **out) {
    void *a = MAP_FAILED;
    int populate = len <= ALOG_POPULATE_BYTES_MAX ? MAP_POPULATE : 0; /* no page faults on the data path */
    bool dax = f->persist_as == DK_MEDIUM_DAX && !f->emulated;
    if (dax && dk_file_persist_as(DK_MEDIUM_DAX, false, dk_file_dax_attr(fd), -1) != DK_MEDIUM_DAX) not_dax(f), dax = false;
    if (dax) a = DK_REAL(mmap)(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED_VALIDATE | MAP_SYNC | populate, fd, 0);
    if (dax && a == MAP_FAILED && errno == EOPNOTSUPP) not_dax(f);
    if (a == MAP_FAILED) a = DK_REAL(mmap)(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | populate, fd, 0);
    if (a == MAP_FAILED) return fail_errno();
    *out = a;
    return 0;
}

/* The log's directory and name: `w` when given (a log named by its file, alog_named.c), else
 * <dir of path>/.daxkit and <name>.alog. Sets *dirfd to that directory (created when missing). */
static int log_place(struct alog_file *f, const char *path, const struct alog_where *w, int *dirfd, char *name,
                     size_t name_bytes) {
    if (w) {
        if (snprintf(name, name_bytes, "%s", w->log_name) >= (int)name_bytes) return -EINVAL;
        int rc = alog_named_area_open(w->root, dirfd);
        if (rc) return rc;
        snprintf(f->log_name, sizeof f->log_name, "%s", name);
        return 0;
    }
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char dir[4096];
    size_t dir_len = !slash ? 0 : slash == path ? 1 : (size_t)(slash - path);
    if (dir_len >= sizeof dir || !*base || strlen(base) + sizeof ALOG_AREA + 6 >= name_bytes) return -EINVAL;
    if (!slash) strcpy(dir, ".");
    else memcpy(dir, path, dir_len), dir[dir_len] = 0;
    snprintf(name, name_bytes, ALOG_AREA "/%s.alog", base);
    snprintf(f->log_name, sizeof f->log_name, "%s", name);
    *dirfd = dk_ifd_openat(AT_FDCWD, dir, O_RDONLY | O_CLOEXEC | O_DIRECTORY, 0);
    if (*dirfd < 0) return fail_errno();
    int mk = dk_area_mkdir(*dirfd, ALOG_AREA); /* every user's who may write the directory (common/area.h) */
    if (mk) {
        errno = -mk;
        return fail_errno();
    }
    return 0;
}

/* Opens (creating its directory) and locks the log of `path`; sets *dirfd to the log's base directory. */
static int open_log(struct alog_file *f, const char *path, const struct alog_where *w, int *dirfd, int *logfd) {
    char name[512];
    int rc = log_place(f, path, w, dirfd, name, sizeof name);
    if (rc) return rc;
    for (int tries = 0;; tries++) {
        *logfd = dk_ifd_openat(*dirfd, name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (*logfd < 0) return fail_errno();
        if (DK_REAL(flock)(*logfd, LOCK_EX | LOCK_NB) != 0) return errno == EWOULDBLOCK ? -EBUSY : fail_errno();
        /* A tracked-size log is removed by its clean close (alog_size.c); one we locked after that is gone
         * from the name: open the name again. */
        struct stat a, b;
        if (DK_REAL(fstat)(*logfd, &a) != 0) return fail_errno();
        if (DK_REAL(fstatat)(*dirfd, name, &b, 0) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev) return 0;
        if (tries >= 8) return -EBUSY;
        DK_REAL(close)(*logfd);
        *logfd = -1;
    }
}

static int open_data(struct alog_file *f, const char *path, const struct alog_where *w, uint64_t bytes_min,
                     struct stat *st) {
    f->data_fd_borrowed = w && w->data_fd_plus1 > 0;
    f->data_fd = f->data_fd_borrowed ? w->data_fd_plus1 - 1 : dk_ifd_openat(AT_FDCWD, path, O_RDWR | O_CLOEXEC, 0);
    if (f->data_fd < 0) return fail_errno();
    if (DK_REAL(fstat)(f->data_fd, st) != 0) return fail_errno();
    if (!S_ISREG(st->st_mode)) return -EINVAL;
    if ((uint64_t)st->st_size < bytes_min) {
        /* A size change is file-system metadata: make it durable before any logged store relies on it. */
        if (DK_REAL(ftruncate)(f->data_fd, (off_t)bytes_min) != 0 || DK_REAL(fsync)(f->data_fd) != 0)
            return fail_errno();
        st->st_size = (off_t)bytes_min;
    }
    if ((st->st_size == 0 && !f->track_size) || (uint64_t)st->st_size >= ALOG_FILE_BYTES_MAX) return -EINVAL;
    f->data_len = (uint64_t)st->st_size;
    return 0;
}

static int map_data(struct alog_file *f) {
    if (f->track_size) return alog_map_reserved(f);
    if (!f->data_len) return -EINVAL;
    return map_shared(f, f->data_fd, f->data_len, &f->data);
}

/* The C API met a log that still tracks a size (a DAXKIT_ATOMIC program crashed): after recovery, cut the
 * file to the committed size and map that. */
static int untrack_size(struct alog_file *f) {
    uint64_t size = f->data_len;
    if (!alog_size_recorded(f, &size)) return 0;
    int rc = alog_size_release(f, &size);
    if (rc) return rc;
    if (size == f->data_len) return 0;
    DK_REAL(munmap)(f->data, f->data_len);
    f->data = NULL;
    f->data_len = size;
    return map_data(f);
}

static uint64_t log_total_bytes(uint64_t entries, uint64_t data_bytes) {
    return dk_round_up(ALOG_HEADER_BYTES + entries * ALOG_ENTRY_BYTES, ALOG_CHUNK_BYTES) + data_bytes;
}

/* Formats the mapped log (f->logmap, f->log_len) for data file (ino, dev): header fields, then the magic
 * after everything else is durable. */
static int format_log(struct alog_file *f, uint64_t ino, uint64_t dev, uint64_t data_bytes) {
    uint64_t entries = data_bytes >> ALOG_BLOCK_SHIFT_MIN;
    dk_assert(log_total_bytes(entries, data_bytes) <= f->log_len);
    struct alog_phdr h = {.version = ALOG_VERSION_PLAIN, .header_bytes = ALOG_HEADER_BYTES, .data_ino = ino,
                          .data_dev = dev, .entry_count = entries,
                          .data_off = log_total_bytes(entries, data_bytes) - data_bytes, .data_bytes = data_bytes,
                          .epoch = 1};
    dk_copy_flush(f->logmap + sizeof h.magic, (const char *)&h + sizeof h.magic, sizeof h - sizeof h.magic);
    f->hdr = (struct alog_phdr *)f->logmap;
    int rc = alog_durable_log_all(f);
    if (rc) return rc;
    alog_store_word(&f->hdr->magic, ALOG_MAGIC);
    return alog_durable_log_all(f);
}

/* Sizes, maps and formats an empty log file. */
static int create_log(struct alog_file *f, const struct stat *st, uint64_t data_bytes) {
    uint64_t total = log_total_bytes(data_bytes >> ALOG_BLOCK_SHIFT_MIN, data_bytes);
    if (DK_REAL(ftruncate)(f->log_fd, 0) != 0 || DK_REAL(ftruncate)(f->log_fd, (off_t)total) != 0) return fail_errno();
    /* Allocated now: a full file system is an error here, not a SIGBUS at a store later. */
    if (DK_REAL(fallocate)(f->log_fd, 0, 0, (off_t)total) != 0 && errno != EOPNOTSUPP) return fail_errno();
    int rc = map_shared(f, f->log_fd, total, &f->logmap);
    if (rc) return rc;
    f->log_len = total;
    return format_log(f, (uint64_t)st->st_ino, (uint64_t)st->st_dev, data_bytes);
}

/* Points the engine at the parts of a mapped, formatted log. */
static void adopt_log(struct alog_file *f) {
    f->hdr = (struct alog_phdr *)f->logmap;
    f->entry_count = f->hdr->entry_count;
    f->area_bytes = f->hdr->data_bytes;
    f->pents = (struct alog_pent *)(f->logmap + ALOG_HEADER_BYTES);
    f->area = f->logmap + f->hdr->data_off;
    f->epoch = f->hdr->epoch;
    f->redo_applied = alog_applied_of(f->hdr->redo_applied);
}

static bool header_sane(const struct alog_phdr *h, uint64_t file_bytes) {
    return h->magic == ALOG_MAGIC && alog_version_known(h->version) && h->header_bytes == ALOG_HEADER_BYTES &&
           h->data_bytes % ALOG_CHUNK_BYTES == 0 && h->data_bytes && h->entry_count &&
           h->data_off == log_total_bytes(h->entry_count, h->data_bytes) - h->data_bytes &&
           log_total_bytes(h->entry_count, h->data_bytes) <= file_bytes && h->epoch >= 1;
}

int alog_version_refuse(const struct alog_phdr *h, const char *what) {
    if (h->magic != ALOG_MAGIC || alog_version_known(h->version)) return 0;
    dk_log("atomic: %s: written by %s (log format %u, this library reads %u-%u): run %s `daxkit recover`, or remove "
           "the log if its data is not needed; left untouched", what,
           h->version > ALOG_VERSION ? "a newer daxkit" : "an unknown daxkit", h->version, ALOG_VERSION_PLAIN,
           ALOG_VERSION, h->version > ALOG_VERSION ? "that version's" : "the writer's");
    return -EPROTONOSUPPORT;
}

/* The log just opened and locked, before anything is written to it or to the data file: a version this
 * library does not read is refused (a short or empty file is a log being made: formatted). */
static int log_version_check(const struct alog_file *f, const char *path) {
    struct alog_phdr h;
    if (DK_REAL(pread)(f->log_fd, &h, sizeof h, 0) != (ssize_t)sizeof h) return 0;
    char what[4600];
    snprintf(what, sizeof what, "%s: its log %s", path, f->log_name);
    return alog_version_refuse(&h, what);
}

static bool any_entry_valid(const struct alog_file *f) {
    for (uint64_t i = 0; i < f->entry_count; i++)
        if (alog_pent_pending(f->hdr, &f->pents[i])) return true;
    return false;
}

/* The log holds something recovery must replay: a valid entry, a committed journal, or a recorded size. */
static bool log_has_work(const struct alog_file *f) {
    uint64_t size;
    return any_entry_valid(f) || alog_jrnl_unapplied(f->hdr) || alog_size_recorded(f, &size);
}

/* The identity of a path-named log's file (the C API's and DAXKIT_ATOMIC_MMAP's logs, <dir>/.daxkit/<name>.alog)
 * beyond its inode and device: the header's key slot holds the file's key (alog_file_key: its handle, inode
 * number and generation, as the logs named by their file are keyed), written with the inode and device. A
 * log whose inode and device match but whose key does not was written for a file that is gone -- removed,
 * and its inode number handed by the file system to this one (XFS and ext4 do at once; review 10, finding
 * 1): its entries belong to no file any more (an inode number is one live file's), so the log is discarded
 * (formatted anew for this file), never applied to it. An empty slot (a log written before session 11, or a
 * file system that gave no key) or a key of another kind ("h<handle type>-", "i<dev>-": a remount that
 * changes how the file system encodes handles, XFS inode32/inode64, changes the kind, not the file): the
 * inode and device decide, as before. Logs named by their file (alog_named.c) keep their own name there. */
static bool keys_differ(const char *slot, const char *key) {
    size_t a = strcspn(slot, "-"), b = strcspn(key, "-");
    if (!slot[a] || !key[b] || a != b || memcmp(slot, key, a) != 0) return false;
    return strcmp(slot, key) != 0;
}

static bool key_slot_read(int log_fd, char *slot) {
    if (DK_REAL(pread)(log_fd, slot, ALOG_HDR_KEY_BYTES, ALOG_HDR_KEY_OFF) != (ssize_t)ALOG_HDR_KEY_BYTES) return false;
    slot[ALOG_HDR_KEY_BYTES - 1] = 0;
    return true;
}

/* Records the file's key in the mapped header (durably) when the slot holds another value. */
static int key_slot_store(struct alog_file *f, const char *key) {
    char *slot = (char *)f->hdr + ALOG_HDR_KEY_OFF;
    size_t n = strlen(key) + 1;
    if (!key[0] || n > ALOG_HDR_KEY_BYTES || memcmp(slot, key, n) == 0) return 0;
    dk_copy_flush(slot, key, n);
    return alog_durable_log_all(f);
}

/* Maps an existing log (or creates one, or makes an idle one smaller than data_bytes anew), and checks it
 * belongs to this data file. `path_named`: a log named by the file's path (its key is checked, above). */
static int attach_log(struct alog_file *f, const struct stat *st, uint64_t data_bytes, bool path_named) {
    struct stat ls;
    if (DK_REAL(fstat)(f->log_fd, &ls) != 0) return fail_errno();
    struct alog_phdr h = {0};
    bool existing = (uint64_t)ls.st_size >= sizeof h && DK_REAL(pread)(f->log_fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
                    header_sane(&h, (uint64_t)ls.st_size);
    char key[ALOG_HDR_KEY_BYTES] = "", slot[ALOG_HDR_KEY_BYTES];
    if (path_named && alog_file_key(f->data_fd, key, sizeof key) != 0) key[0] = 0;
    if (existing && path_named && h.data_ino == (uint64_t)st->st_ino && h.data_dev == (uint64_t)st->st_dev && key[0] &&
        key_slot_read(f->log_fd, slot) && keys_differ(slot, key)) {
        dk_log("atomic: %s: the log was written for a removed file that had this file's inode number: discarded, "
               "not applied", f->log_name);
        existing = false; /* formatted anew below */
    }
    int rc = existing ? 0 : create_log(f, st, data_bytes);
    if (rc) return rc;
    if (existing) {
        f->log_len = log_total_bytes(h.entry_count, h.data_bytes);
        if ((rc = map_shared(f, f->log_fd, f->log_len, &f->logmap)))
            return rc;
    }
    adopt_log(f);
    if (existing && h.data_bytes < data_bytes && !f->track_size && !log_has_work(f)) {
        /* Smaller than asked for and idle (nothing to recover): made anew at the size asked for. A mapping
         * (DAXKIT_ATOMIC_MMAP) sizes its log for every page of the file, which may have grown since the log
         * was made (review 10, finding 2); a crash in between leaves a log without magic, made again. */
        DK_REAL(munmap)(f->logmap, f->log_len);
        f->logmap = NULL, f->hdr = NULL;
        if ((rc = create_log(f, st, data_bytes))) return rc;
        adopt_log(f);
    }
    if (f->hdr->data_ino == (uint64_t)st->st_ino && f->hdr->data_dev == (uint64_t)st->st_dev)
        return path_named ? key_slot_store(f, key) : 0;
    if (any_entry_valid(f) || alog_jrnl_unapplied(f->hdr)) return -ESTALE; /* another file's unrecovered log: never apply it to this one */
    alog_store_word(&f->hdr->data_ino, (uint64_t)st->st_ino);
    alog_store_word(&f->hdr->data_dev, (uint64_t)st->st_dev);
    rc = alog_durable_log_all(f);
    return !rc && path_named ? key_slot_store(f, key) : rc;
}

/* Touches every page of a zeroed allocation: its page faults happen here, not in the copy that first uses it. */
static void touch_pages(void *p, size_t n) {
    for (size_t i = 0; i < n; i += DK_PAGE_BYTES) ((volatile char *)p)[i] = 0;
}

static int init_dram(struct alog_file *f) {
    f->ents = calloc(f->entry_count, sizeof *f->ents);
    f->live_bits = calloc((f->entry_count + 63) / 64, sizeof(uint64_t));
    if (!f->ents || !f->live_bits) return -ENOMEM;
    if (!f->journal) touch_pages(f->ents, f->entry_count * sizeof *f->ents); /* the journal has no entries */
    int rc = alog_alloc_init(f);
    if (!rc) rc = alog_radix_init(f);
    /* the per-block engine: radix leaves of the mapped file made now, not by its first copy into a region */
    if (!rc && !f->journal) rc = alog_radix_prealloc(f, DK_MIN(f->data_len, ALOG_RADIX_PREALLOC_BYTES_MAX));
    if (!rc && f->journal) rc = alog_jrnl_init(f);
    if (rc) return rc;
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    /* sync must not starve behind a stream of copies from other threads */
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&f->rw, &ra);
    pthread_rwlockattr_destroy(&ra);
    return 0;
}

static int choose_medium(struct alog_file *f, int dirfd, uint32_t persist) {
    const char *env = getenv("DAXKIT_PERSIST");
    bool flush = persist == DAXKIT_ATOMIC_PERSIST_FLUSH ||
                 (persist == DAXKIT_ATOMIC_PERSIST_ENV && env && strcmp(env, "flush") == 0);
    struct dk_medium_info mi;
    int rc = dk_medium_probe(dirfd, DK_PROBE_BASIC, &mi);
    if (rc) return rc;
    f->emulated = flush && mi.medium != DK_MEDIUM_DAX;
    f->persist_as = flush ? DK_MEDIUM_DAX : mi.medium;
    return 0;
}

int alog_log_grow_map(struct alog_file *f, uint64_t new_len) {
    if (new_len <= f->log_len) return 0;
    if (f->log_fd < 0 || f->retired_count == DK_ARRAY_LEN(f->retired_map)) return -ENOSPC;
    /* Allocated first: a store into a hole of a full medium would be a SIGBUS. The size durable before the
     * header names the larger area (a log shorter than its header's geometry is no log). */
    if (DK_REAL(fallocate)(f->log_fd, 0, (off_t)f->log_len, (off_t)(new_len - f->log_len)) != 0) {
        if (errno != EOPNOTSUPP) return fail_errno();
        if (DK_REAL(ftruncate)(f->log_fd, (off_t)new_len) != 0) return fail_errno();
    }
    if (f->persist_as != DK_MEDIUM_VOLATILE && DK_REAL(fdatasync)(f->log_fd) != 0) return fail_errno();
    char *m;
    int rc = map_shared(f, f->log_fd, new_len, &m);
    if (rc) return rc;
    f->retired_map[f->retired_count] = f->logmap, f->retired_len[f->retired_count++] = f->log_len;
    f->logmap = m, f->log_len = new_len;
    f->hdr = (struct alog_phdr *)m;
    f->pents = (struct alog_pent *)(m + ALOG_HEADER_BYTES);
    f->area = m + f->hdr->data_off;
    return 0;
}

/* ---- fork (review 10, finding 5) ----
 * A fork's child gets copies of the engine's descriptors and mappings. The log's flock belongs to its open
 * file description, which the child's copy of the descriptor -- and its copy of the log's mapping, which
 * holds the same description -- share with the parent: kept, they keep the log locked after the parent's
 * death until the child exits (no recovery; the restarted program's map fails with EBUSY), and the overdue
 * recovery then rolls back what was committed since. So the child lets go of them, as strict mode does with
 * its operation log (ecc3a23, dk_oplog_drop_inherited): the log unmapped, the child's copies of the
 * descriptors closed; never unlocked, written or removed. The data mapping stays (DAXKIT_ATOMIC_MMAP views
 * are in it; a child's stores there are not logged, docs/atomic.md). The child's handle then fails every call
 * but close with -EBADF (api.c); close frees the child's memory only. Every engine is on the list from its
 * allocation on, before it opens anything. */
static pthread_mutex_t open_mu = PTHREAD_MUTEX_INITIALIZER;
static struct alog_file *open_head;

/* A log mapping the child lets go of: unmapped -- or, after a handler's fork inside this thread's journal
 * write-back window (`blank`: the records are cancelled, but a write-back already under way has its address in
 * hand), replaced by anonymous memory, so that it finishes on memory and not on a hole (review 20, finding 3).
 * The log's pages, and its file with its flock, are let go either way. */
static void let_go(void *p, size_t len, bool blank) {
    int anon = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE;
    if (blank && DK_REAL(mmap)(p, len, PROT_READ, anon, -1, 0) != MAP_FAILED) return;
    DK_REAL(munmap)(p, len);
}

static void drop_inherited(struct alog_file *f) {
    bool owed = f->journal && alog_jrnl_owed_mine(f);
    if (owed) alog_jrnl_owed_cancel_mine(f);
    for (uint32_t i = 0; i < f->retired_count; i++) let_go(f->retired_map[i], f->retired_len[i], owed);
    f->retired_count = 0;
    if (f->logmap && f->logmap != MAP_FAILED) let_go(f->logmap, f->log_len, owed);
    f->logmap = NULL, f->hdr = NULL, f->pents = NULL, f->area = NULL;
    if (f->log_fd >= 0) DK_REAL(close)(f->log_fd); /* the child's copy: the flock stays with the parent's */
    if (f->dir_fd >= 0) DK_REAL(close)(f->dir_fd);
    if (f->data_fd >= 0 && !f->data_fd_borrowed) DK_REAL(close)(f->data_fd);
    f->log_fd = f->dir_fd = f->data_fd = -1;
    f->ckpt_started = false; /* the checkpoint thread is the parent's */
    f->open_listed = false, f->open_next = f->open_prev = NULL;
    f->inherited = true;
}

/* A fork from a signal handler whose thread holds open_mu (its interrupted call is opening an engine or
 * changing the list) waited in fork_prepare for that thread for ever (session 19, shim_handler_fork_atomic_open).
 * Such a fork takes nothing: the list is whole at every instant for its own thread (open_head and the forward
 * links are stored last, behind signal fences), so the child still drops every engine on it; the engine in mid-
 * open may keep a descriptor the open had not recorded yet, and fails its open in the child if it returns from
 * the handler (dropped: inherited). Per thread: another thread's fork waits for open_mu meanwhile. */
static __thread bool fork_skipped;

static void fork_prepare(void) {
    fork_skipped = dk_mu_mine(&open_mu);
    if (!fork_skipped) dk_mu_lock(&open_mu);
}
static void fork_parent(void) {
    if (!fork_skipped) dk_mu_unlock(&open_mu);
    fork_skipped = false;
}
static void fork_child(void) {
    DK_ERRNO_SAVE;
    for (struct alog_file *f = open_head, *next; f; f = next) next = f->open_next, drop_inherited(f);
    open_head = NULL;
    dk_mu_reinit(&open_mu); /* (this thread's mark goes too: held by it, or by the skipped handler's thread) */
    fork_skipped = false;
    DK_ERRNO_RESTORE;
}
static void register_fork_handlers(void) { pthread_atfork(fork_prepare, fork_parent, fork_child); }

static void list_add(struct alog_file *f) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_fork_handlers);
    dk_mu_lock(&open_mu);
    f->open_next = open_head, f->open_prev = NULL;
    if (open_head) open_head->open_prev = f;
    DK_MU_FENCE(); /* f's links before the head that reaches it (a handler's fork walks the list) */
    open_head = f, f->open_listed = true;
    dk_mu_unlock(&open_mu);
}

static void list_del(struct alog_file *f) {
    dk_mu_lock(&open_mu);
    if (f->open_listed) { /* the forward chain skips f in one store */
        if (f->open_prev) f->open_prev->open_next = f->open_next;
        else open_head = f->open_next;
        if (f->open_next) f->open_next->open_prev = f->open_prev;
        f->open_listed = false;
    }
    dk_mu_unlock(&open_mu);
}

static void release_resources(struct alog_file *f) {
    list_del(f);
    for (uint32_t i = 0; i < f->retired_count; i++) DK_REAL(munmap)(f->retired_map[i], f->retired_len[i]);
    if (f->reserve_base) DK_REAL(munmap)(f->reserve_base, f->reserve_bytes);
    else if (f->data && f->data != MAP_FAILED) DK_REAL(munmap)(f->data, f->data_len);
    if (f->logmap && f->logmap != MAP_FAILED) DK_REAL(munmap)(f->logmap, f->log_len);
    if (f->log_fd >= 0) DK_REAL(close)(f->log_fd); /* drops the flock */
    if (f->dir_fd >= 0) DK_REAL(close)(f->dir_fd);
    if (f->data_fd >= 0 && !f->data_fd_borrowed) DK_REAL(close)(f->data_fd);
    alog_radix_fini(f);
    alog_alloc_fini(f);
    if (f->journal) alog_jrnl_fini(f);
    free(f->ents);
    free(f->live_bits);
    free(f);
}

/* The engine's kept descriptors move to a high number, out of the way of the program's open(), which must
 * get the lowest free number (review 9, finding 21; upath/auxfd.c): 64 below RLIMIT_NOFILE's soft limit, at
 * most 960, as dk_ifd_floor (config.h: dk_internal_fd_floor). The log's flock belongs to its open file description: the duplicate keeps it.
 * The descriptor stays where it is when the move fails (a low limit, no free high number). */
static int fd_high(int fd) {
    struct rlimit rl;
    bool limited = DK_REAL(getrlimit)(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY;
    int floor = dk_internal_fd_floor(limited ? (long)rl.rlim_cur : 0, limited);
    int hi = fd >= 0 && fd < floor ? DK_REAL(fcntl)(fd, F_DUPFD_CLOEXEC, floor) : -1;
    if (hi < 0) return fd;
    DK_REAL(close)(fd);
    return hi;
}

static int open_all(struct alog_file *f, const char *path, const struct alog_where *w,
                    const struct daxkit_atomic_options *o) {
    int dirfd = -1;
    struct stat st;
    if (DK_REAL(stat)(path, &st) != 0) return fail_errno(); /* checked again once locked; no log for a bad path */
    if (!S_ISREG(st.st_mode)) return -EINVAL;
    /* Under the list lock, so a fork (fork_prepare takes it) never lands between a descriptor or mapping of
     * the log made and recorded where fork_child finds it (fd_high's duplicate, attach_log's mapping). */
    dk_mu_lock(&open_mu);
    int rc = open_log(f, path, w, &dirfd, &f->log_fd);
    DK_CRASH_POINT("atomic.open.list_locked"); /* shim_handler_fork_atomic_open's cue */
    if (!rc) rc = choose_medium(f, dirfd, o->persist);
    if (!rc) f->log_fd = fd_high(f->log_fd);
    dk_mu_unlock(&open_mu);
    if (dirfd >= 0 && (rc || !f->track_size)) DK_REAL(close)(dirfd);
    else f->dir_fd = fd_high(dirfd); /* a tracked-size log is removed at its clean close */
    if (!rc) rc = log_version_check(f, path);
    if (!rc) rc = open_data(f, path, w, f->track_size ? 0 : o->file_bytes_min, &st);
    if (!rc) {
        dk_mu_lock(&open_mu);
        rc = attach_log(f, &st, o->log_bytes, w == NULL);
        dk_mu_unlock(&open_mu);
    }
    if (!rc && f->track_size) rc = alog_size_prepare(f);
    if (!rc) rc = map_data(f);
    if (!rc) rc = init_dram(f);
    if (!rc) rc = alog_recover(f, o->recovery_threads, false);
    if (!rc) alog_jrnl_prefault(f); /* any policy: log pages mapped before the first copy, not in it */
    if (!rc) rc = f->track_size ? alog_size_settle(f) : untrack_size(f);
    if (!rc && f->journal) alog_jdirect_init(f); /* the journal empty, the committed size known */
    if (!rc && w) rc = alog_named_set_hint(f, path, w->log_name); /* where recovery looks for the file first */
    return rc;
}

/* Journal pacing (alog_journal.c): DAXKIT_ATOMIC_PACE (a BOOL option: 1/yes/true/on), on fence media only
 * (on pagecache the applied bytes would need the file's own fdatasync in every commit). On by default since
 * session 9: with its records read back from the cache it costs less CPU than the thread at 1-16 KiB
 * writes, and no write waits for the thread (docs/atomic.md, "Pacing"). Read from dk_cfg where the library loaded it
 * (the shim: the value DAXKIT_STRICT_CONFIG checked and `daxkit config` shows), else from the environment
 * at each open with the same parser (a program using only the engine, e.g. the tests linking dkcore). */
static bool pace_on(const struct alog_file *f) {
    bool on = dk_cfg_loaded ? dk_cfg.atomic_pace : dk_config_env_bool("ATOMIC_PACE", true);
    return f->persist_as != DK_MEDIUM_PAGECACHE && on;
}
static bool pace_wanted(const struct alog_file *f) { return f->journal && pace_on(f); }
/* Session 10: the same option paces the per-block engine (undo/redo/hybrid; alog_checkpoint.c, alog_bpace_*):
 * each commit applies committed entries itself instead of waking the thread. */
static bool bpace_wanted(const struct alog_file *f) { return !f->journal && pace_on(f); }

static int open_engine(const char *path, const struct alog_where *w, const struct daxkit_atomic_options *o,
                       bool track_size, struct alog_file **out) {
    struct alog_file *f = calloc(1, sizeof *f);
    if (!f) return -ENOMEM;
    f->data_fd = f->log_fd = f->dir_fd = -1;
    list_add(f); /* before it opens anything: a fork from here on lets go of what it holds */
    f->track_size = track_size;
    dk_persist_init(dk_cfg.flush);
    f->policy_mode = o->policy;
    f->journal = o->policy == DAXKIT_ATOMIC_JOURNAL;
    f->redo_write_pct = o->redo_write_pct;
    f->ckpt_interval_us = o->checkpoint_interval_us;
    int rc = open_all(f, path, w, o);
    if (rc) {
        release_resources(f);
        return rc;
    }
    f->jpace = pace_wanted(f);
    f->bpace = bpace_wanted(f);
    f->jwindow = alog_jrnl_window(f);
    f->junflushed_max = alog_jrnl_unflushed_max();
    bool redo = o->policy == DAXKIT_ATOMIC_REDO || f->journal || f->persist_as == DK_MEDIUM_PAGECACHE;
    f->policy = redo ? ALOG_REDO : ALOG_UNDO; /* hybrid starts with undo, as Libnvmio does */
    rc = alog_ckpt_thread_start(f);
    if (rc) {
        pthread_rwlock_destroy(&f->rw);
        release_resources(f);
        return rc;
    }
    *out = f;
    return 0;
}

int alog_open(const char *path, const struct daxkit_atomic_options *o, struct alog_file **out) {
    return open_engine(path, NULL, o, false, out);
}

int alog_open_tracked(const char *path, const struct daxkit_atomic_options *o, struct alog_file **out) {
    return open_engine(path, NULL, o, true, out);
}

int alog_open_tracked_at(const char *path, const struct alog_where *w, const struct daxkit_atomic_options *o,
                         struct alog_file **out) {
    return open_engine(path, w, o, true, out);
}

int alog_close(struct alog_file *f) { return alog_close_sized(f, NULL); }

int alog_close_sized(struct alog_file *f, uint64_t *size_out) {
    if (f->inherited) { /* a fork's child: the log and the file are the parent's (drop_inherited) */
        release_resources(f);
        return 0;
    }
    alog_ckpt_thread_stop(f);
    pthread_rwlock_wrlock(&f->rw);
    if (f->journal) alog_jrnl_owed_quiesce(f); /* a copy's thread still writing back journal lines */
    /* The recovery rule on the live log: unsynced undo entries roll back, unsynced redo entries vanish,
     * committed redo entries reach the file; then the file is made durable and the log emptied. */
    int rc = __atomic_load_n(&f->broken, __ATOMIC_ACQUIRE) ? -EIO : alog_recover(f, 1, false);
    if (!rc && f->track_size) rc = alog_size_release(f, size_out);
    /* A clean close of a tracked-size log leaves nothing to recover: remove it (under the lock; a process
     * waiting for it opens the name again, open_log). */
    if (!rc && f->track_size && f->dir_fd >= 0) DK_REAL(unlinkat)(f->dir_fd, f->log_name, 0);
    pthread_rwlock_unlock(&f->rw);
    pthread_rwlock_destroy(&f->rw);
    release_resources(f);
    return rc;
}

#ifdef DAXKIT_TEST_BUILD
uint64_t alog_test_log_bytes(uint64_t data_bytes) {
    return log_total_bytes(data_bytes >> ALOG_BLOCK_SHIFT_MIN, data_bytes);
}

int alog_test_open_memory(char *data, uint64_t data_len, char *log, uint64_t log_len, bool format,
                          const struct daxkit_atomic_options *o, struct alog_file **out) {
    struct alog_file *f = calloc(1, sizeof *f);
    if (!f) return -ENOMEM;
    f->data_fd = f->log_fd = f->dir_fd = -1;
    f->test_memory = true;
    f->persist_as = DK_MEDIUM_DAX;
    f->data = data, f->data_len = data_len, f->logmap = log, f->log_len = log_len;
    f->policy_mode = o->policy;
    f->journal = o->policy == DAXKIT_ATOMIC_JOURNAL;
    f->redo_write_pct = o->redo_write_pct;
    int rc = format ? format_log(f, 0, 0, o->log_bytes) : 0;
    if (!rc) adopt_log(f);
    if (!rc) rc = init_dram(f);
    if (rc) {
        f->data = f->logmap = NULL;
        release_resources(f);
        return rc;
    }
    f->policy = o->policy == DAXKIT_ATOMIC_REDO || f->journal ? ALOG_REDO : ALOG_UNDO;
    f->jpace = pace_wanted(f);
    f->bpace = bpace_wanted(f);
    f->jwindow = alog_jrnl_window(f);
    f->junflushed_max = alog_jrnl_unflushed_max();
    pthread_mutex_init(&f->ckpt_mu, NULL);
    pthread_cond_init(&f->ckpt_cond, NULL);
    *out = f;
    return 0;
}

void alog_test_close_memory(struct alog_file *f) {
    alog_ckpt_thread_stop(f);
    pthread_rwlock_destroy(&f->rw);
    f->data = f->logmap = NULL;
    release_resources(f);
}
#endif
