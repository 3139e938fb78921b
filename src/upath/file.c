/* The file table: one up_file per inode this process uses, keyed by (dev, ino). An inode number is not
 * reused while we hold a descriptor or a mapping of it. A closed, unmapped entry may outlive its inode: an
 * unlink or rename-over whose victim was not looked up (upath.c: up_victim_matters) leaves it here, and the
 * file system may hand its number to a new file -- up_adopt starts such an entry afresh when it is opened
 * again after a skipped lookup, and up_victims_unseen tells it so. */
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/lockzero.h"
#include "common/log.h"
#include "common/stats.h"
#include "shim/libc.h"
#include "upath/atomic_route.h"
#include "upath/internal.h"
#include "upath/io.h"

#define UP_FILE_BUCKETS 4096

pthread_mutex_t up_table_mu = PTHREAD_MUTEX_INITIALIZER;
static struct up_file *buckets[UP_FILE_BUCKETS];
static struct up_file lru = {.lru_prev = &lru, .lru_next = &lru}; /* closed files, oldest first */
static uint64_t lru_count;
static struct up_file all = {.all_prev = &all, .all_next = &all};
/* Files not on the closed list (open, or closed and pinned): what a publish of every file must visit.
 * The closed list may hold DAXKIT_CACHE_FILES entries a publish has nothing to do for -- e.g. SQLite's
 * deleted journals, one per transaction, whose unlink did not look them up (upath.c) -- and SQLite
 * publishes every file at each of its three unlocks per transaction. */
static struct up_file active = {.act_prev = &active, .act_next = &active};

uint32_t up_active_files;
/* Moved at every adoption, before its fstat -- before a file becomes active: a pending descriptor passing
 * reads through may be of that file, and is adopted before its next read (pending.c). Starts at 1: a
 * pending epoch of 0 means "never pass". */
uint64_t up_adopt_epoch = 1;

/* Under up_table_mu. The epoch moves again once the file is on the list: a pending descriptor that
 * looked for the file's entry under up_table_mu before this and found none is adopted before its next
 * read (pending.c: up_pending_fstat_done; the adoption's own move, before its fstat, may come before
 * such a look). */
static void active_add(struct up_file *f) {
    if (f->act_next) return;
    __atomic_add_fetch(&up_active_files, 1, __ATOMIC_ACQ_REL);
    f->act_prev = active.act_prev;
    f->act_next = &active;
    active.act_prev->act_next = f;
    active.act_prev = f;
    __atomic_add_fetch(&up_adopt_epoch, 1, __ATOMIC_SEQ_CST);
    up_pin_note(f); /* a reopened entry may hold what a failed publish left (its rescue descriptor) */
}

static void active_remove(struct up_file *f) {
    if (!f->act_next) return;
    __atomic_sub_fetch(&up_active_files, 1, __ATOMIC_ACQ_REL);
    f->act_prev->act_next = f->act_next;
    f->act_next->act_prev = f->act_prev;
    f->act_prev = f->act_next = NULL;
}

static unsigned bucket_of(dev_t dev, ino_t ino) {
    uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ull ^ (uint64_t)dev * 0xc2b2ae3d27d4eb4full;
    return (unsigned)(h >> 52) % UP_FILE_BUCKETS;
}

static struct up_file *table_find(dev_t dev, ino_t ino) {
    for (struct up_file *f = buckets[bucket_of(dev, ino)]; f; f = f->hash_next)
        if (f->dev == dev && f->ino == ino) return f;
    return NULL;
}

/* Keyless files (their inode number not read yet), all on the active list. Under up_table_mu. */
static uint32_t keyless_count;

struct up_file *up_file_lookup(dev_t dev, ino_t ino) {
    if (DK_UNLIKELY(keyless_count)) up_file_key_all(); /* one of them may be the inode looked for */
    return table_find(dev, ino);
}

uint64_t up_closed_mapped;

/* A closed file that keeps a mapping: counted (unlink looks its victims up while there is one). */
static void closed_mapped_set(struct up_file *f) {
    if (f->closed_mapped || !f->map.ext_count) return;
    f->closed_mapped = true;
    __atomic_add_fetch(&up_closed_mapped, 1, __ATOMIC_ACQ_REL);
}

/* Off the closed list (if on it): true when it was. */
static bool lru_remove(struct up_file *f) {
    if (f->closed_mapped) { /* reopened or freed */
        f->closed_mapped = false;
        __atomic_sub_fetch(&up_closed_mapped, 1, __ATOMIC_ACQ_REL);
    }
    if (!f->lru_next) return false;
    f->lru_prev->lru_next = f->lru_next;
    f->lru_next->lru_prev = f->lru_prev;
    f->lru_prev = f->lru_next = NULL;
    lru_count--;
    return true;
}

/* Reopened from the closed list: active again. */
static void lru_unlink(struct up_file *f) {
    if (lru_remove(f)) active_add(f);
}

static void table_remove(struct up_file *f) {
    struct up_file **pp = &buckets[bucket_of(f->dev, f->ino)];
    while (*pp && *pp != f) pp = &(*pp)->hash_next;
    if (*pp) *pp = f->hash_next;
    f->cached = false;
}

/* Entries freed lately, kept for the next file_new (under up_table_mu) with their staged-piece arrays: a
 * file's calloc and free and its array's realloc and free were ~600 of the ~6,000 library instructions
 * per file tar xf creates (session 17). A kept array is at most SPARE_STAGED_CAP pieces. */
#define SPARES_MAX 8
#define SPARE_STAGED_CAP 64
static struct up_file *spares[SPARES_MAX];
static unsigned spares_n;

/* A zeroed entry: a spare (its staged array kept, empty) or a new one. Its locks are zeroes too: file_new
 * leaves them so where zeroes are a default lock (common/lockzero.h). */
static struct up_file *file_alloc(void) {
    if (!spares_n) return calloc(1, sizeof(struct up_file));
    struct up_file *f = spares[--spares_n];
    struct up_staged *staged = f->staged;
    uint32_t cap = f->staged_cap;
    memset(f, 0, sizeof *f);
    f->staged = staged, f->staged_cap = cap;
    return f;
}

static void file_release(struct up_file *f) {
    if (spares_n < SPARES_MAX && f->staged_cap <= SPARE_STAGED_CAP) {
        spares[spares_n++] = f;
        return;
    }
    free(f->staged);
    free(f);
}

static void file_free(struct up_file *f) {
    dk_assert(f->open_refs == 0);
    dk_assert(f->staged_count == 0);
    if (f->keyless_fd >= 0) keyless_count--;
    lru_remove(f); /* not made active on the way out (~30 instructions an eviction; no move of up_adopt_epoch) */
    active_remove(f);
    if (f->cached) table_remove(f);
    f->all_prev->all_next = f->all_next;
    f->all_next->all_prev = f->all_prev;
    up_sizerec_release(f);
    up_map_drop(&f->map);
    if (f->probe_addr) DK_REAL(munmap)(f->probe_addr, DK_PAGE_BYTES); /* the probe page's own mapping (upath.c) */
    up_aux_close(f);
    if (DK_UNLIKELY(dk_cfg.lock_cache)) up_lc_forget(f);
    up_stage_kept_free(f);
    /* (no pthread_*_destroy: unheld default locks own nothing, and a spare's are zeroed again by file_alloc) */
    file_release(f);
}

static void lru_trim(void) {
    while (lru_count > dk_cfg.cache_files) file_free(lru.lru_next);
}

static void table_insert(struct up_file *f) {
    unsigned b = bucket_of(f->dev, f->ino);
    f->hash_next = buckets[b];
    buckets[b] = f;
    f->cached = true;
}

static struct up_file *file_new(struct up_root *r, const struct stat *st);

struct up_file *up_file_get(struct up_root *r, const struct stat *st, const char *path_hint) {
    (void)path_hint;
    struct up_file *f = up_file_lookup(st->st_dev, st->st_ino);
    if (f) {
        lru_unlink(f);
        /* Closed, the entry held no descriptor of its inode: the number may now be another file's. */
        if (f->open_refs == 0) up_file_ident_forget(f);
        f->open_refs++;
        return f;
    }
    f = file_new(r, st);
    if (f) table_insert(f);
    return f;
}

/* The file's first descriptor was made by O_CREAT|O_EXCL: a new inode, empty then; what another process
 * writes into it after that is seen as if it came after an adoption at the open. */
struct up_file *up_file_get_keyless(struct up_root *r, int fd) {
    struct stat st = {.st_dev = r->dev, .st_ino = 0, .st_size = 0};
    struct up_file *f = file_new(r, &st);
    if (!f) return NULL;
    f->keyless_fd = fd;
    keyless_count++;
    dk_count(DK_C_keyless_adoptions, 1);
    return f;
}

void up_file_key(struct up_file *f, const struct stat *given) {
    int fd = __atomic_load_n(&f->keyless_fd, __ATOMIC_ACQUIRE);
    if (fd < 0) return;
    struct stat st;
    DK_ERRNO_SAVE;
    bool ok = given ? (st = *given, true) : DK_REAL(fstat)(fd, &st) == 0;
    DK_ERRNO_RESTORE;
    __atomic_store_n(&f->keyless_fd, -1, __ATOMIC_RELEASE);
    keyless_count--;
    struct up_file *old = ok && S_ISREG(st.st_mode) && st.st_dev == f->dev ? table_find(st.st_dev, st.st_ino) : NULL;
    /* An entry of the number before this inode had it (closed: a file this process served, deleted since) */
    if (old && old->open_refs == 0 && !up_file_pinned(old)) file_free(old), old = NULL;
    if (!ok || !S_ISREG(st.st_mode) || st.st_dev != f->dev || old) {
        /* not where its name said (a mount below the root): the kernel's, after what is staged */
        up_kernel_takes_over(f, fd);
        dk_count(DK_C_fallbacks, 1);
        return;
    }
    __atomic_store_n(&f->ino, st.st_ino, __ATOMIC_RELAXED); /* (sizerec.c reads it under f->mu) */
    table_insert(f);
}

void up_file_key_all(void) {
    struct up_file *next;
    for (struct up_file *f = active.act_next; f != &active && keyless_count; f = next) {
        next = f->act_next;
        up_file_key(f, NULL);
    }
}

static struct up_file *file_new(struct up_root *r, const struct stat *st) {
    struct up_file *f = file_alloc();
    if (!f) return NULL;
    f->dev = st->st_dev;
    f->ino = st->st_ino;
    f->root = r;
    f->size = f->pub_size = f->ksize = (uint64_t)st->st_size;
    f->backed_end = 0; /* found at the first mapped access (holes.c) */
    if (DK_UNLIKELY(!dk_locks_zero_ready())) { /* else the zeroed locks are ready (common/lockzero.h) */
        pthread_rwlock_init(&f->rw, NULL);
        pthread_mutex_init(&f->mu, NULL);
        pthread_mutex_init(&f->strict_mu, NULL);
    }
    f->rescue_fd = -1;
    f->file_dax = UP_DAX_UNCHECKED, f->map_sync = -1;
    f->aux_fd = -1;
    f->end.fd = f->end.appender = f->o_append_fd = -1;
    f->atomic_fd = -1;
    f->keyless_fd = -1;
    f->open_refs = 1;
    /* posix mode: what another entry of this inode left -- one dropped from the closed list, one of an
     * earlier process -- may not be durable yet: the first fsync goes to the kernel where the medium needs
     * it (persist_file). sync and strict mode made every operation durable when it returned. */
    f->meta_dirty = dk_cfg.mode == DK_MODE_POSIX;
    f->all_prev = all.all_prev;
    f->all_next = &all;
    all.all_prev->all_next = f;
    all.all_prev = f;
    active_add(f);
    return f;
}

/* Said once per process: a file of a DAX root that is not DAX itself persists by msync/fdatasync. */
static void not_dax(const struct up_file *f, const char *why) {
    dk_count(DK_C_files_not_dax, 1);
    dk_log_once("a file under %s is not DAX (%s; a dax=inode mount: FS_XFLAG_DAX is per file): it is mapped "
                "through the page cache and made durable by msync/fdatasync, not by flushes (counted as "
                "files_not_dax)", f->root->path, why);
}

void up_file_dax_check(struct up_file *f, int fd) {
    if (f->root->medium.medium != DK_MEDIUM_DAX || f->file_dax != UP_DAX_UNCHECKED) return;
    int d = dk_file_dax_attr(fd);
    __atomic_store_n(&f->file_dax, (int8_t)d, __ATOMIC_RELAXED);
    if (d == 0 && dk_cfg.persist != DK_PERSIST_FLUSH) not_dax(f, "statx: no STATX_ATTR_DAX");
}

void up_file_map_sync_seen(struct up_file *f, bool granted) {
    if (__atomic_load_n(&f->map_sync, __ATOMIC_RELAXED) == (granted ? 1 : 0)) return;
    __atomic_store_n(&f->map_sync, (int8_t)(granted ? 1 : 0), __ATOMIC_RELAXED);
    if (!granted && f->file_dax != 0 && dk_cfg.persist != DK_PERSIST_FLUSH) not_dax(f, "MAP_SYNC refused");
}

void up_file_put(struct up_file *f) {
    dk_assert(f->open_refs > 0);
    if (--f->open_refs > 0) return;
    /* Kept past its last close (a publish failed): keyed while its descriptor is still open (before the
     * kernel's close), or a later key would read another file's number through it. */
    if (DK_UNLIKELY(f->keyless_fd >= 0) && up_file_pinned(f)) up_file_key(f, NULL);
    if (up_file_pinned(f)) { /* kept until published (up_publish_all) */
        closed_mapped_set(f);
        return;
    }
    if (f->unlinked || !f->cached || dk_cfg.cache_files == 0) {
        file_free(f);
        return;
    }
    /* Its size-record slot goes back now, not at its eviction: a closed entry publishes nothing, and the
     * DAXKIT_CACHE_FILES entries of the closed list kept a slot each -- each slot's page of the record file
     * allocated by a fallocate at its first use (tar xf of /usr/include/linux: 60 fallocates, 1 now). A record
     * still valid (a publish that failed) stays with its slot. */
    if (!f->sizerec_valid) up_sizerec_release(f);
    /* DAXKIT_LOCK_CACHE: the board entry goes at the last close (the kernel dropped every lock of the process on
     * the file), not at the eviction -- DAXKIT_CACHE_FILES closed entries kept the 60 a process has (review27b #5) */
    if (DK_UNLIKELY(dk_cfg.lock_cache)) up_lc_forget(f);
    closed_mapped_set(f);
    active_remove(f);
    f->lru_prev = lru.lru_prev;
    f->lru_next = &lru;
    lru.lru_prev->lru_next = f;
    lru.lru_prev = f;
    lru_count++;
    lru_trim();
}

void up_file_forget(dev_t dev, ino_t ino) {
    struct up_file *f = up_file_lookup(dev, ino);
    if (!f) return;
    /* While open (and mapped) the inode cannot be freed, so its number cannot be reused: the entry
     * stays findable (stat by descriptor, /proc/self/fd reopen) and is freed at the last close. */
    if (f->open_refs == 0 && !up_file_pinned(f)) file_free(f);
    else f->unlinked = true;
}

void up_file_foreach_active(void (*fn)(struct up_file *f, void *arg), void *arg) {
    struct up_file *next;
    for (struct up_file *f = active.act_next; f != &active; f = next) {
        next = f->act_next;
        fn(f, arg);
    }
}

void up_file_foreach(void (*fn)(struct up_file *f, void *arg), void *arg) {
    struct up_file *next;
    for (struct up_file *f = all.all_next; f != &all; f = next) {
        next = f->all_next;
        fn(f, arg);
    }
}

/* Fork safety: hold every file's locks across fork so neither process inherits a half-held one. */
/* A file whose mutex this thread's interrupted call may hold (a signal handler's fork, exec or exit) is
 * left alone, by both: it would wait for itself (review 9, finding 30). A DAXKIT_ATOMIC write holds its
 * file for the whole call too (its route's mark, as publish_pinned reads it): glibc records a mutex's owner
 * only after the lock instruction, so a signal between the two (set_size's lock of f->mu) escaped
 * the owner test of session 14 and exit() in the handler waited for itself (shim_exit_in_handler_*_atomic: 1
 * of 20 runs); the mutex's mark (common/lockmark.h) now covers glibc's lock and unlock too. */
static void lock_one(struct up_file *f, void *arg) {
    (void)arg;
    f->lock_all_skipped = f == up_io_held_file() || (f->atomic && f == up_atomic_held_file()) || dk_mu_mine(&f->mu);
    if (DK_UNLIKELY(f->lock_all_skipped)) return;
    dk_mu_lock_bulk(&f->mu); /* every file at once: counted, not one slot each (common/lockmark.h) */
    if (__builtin_expect(__atomic_load_n(&f->append_inflight, __ATOMIC_ACQUIRE) != 0, 0)) up_append_wait_others(f);
    pthread_rwlock_wrlock(&f->rw);
}
static void unlock_one(struct up_file *f, void *arg) {
    (void)arg;
    if (DK_UNLIKELY(f->lock_all_skipped)) return;
    pthread_rwlock_unlock(&f->rw);
    dk_mu_unlock_bulk(&f->mu);
}
static void reinit_one(struct up_file *f, void *arg) {
    (void)arg;
    up_locks_closed(f); /* a child holds none of its parent's POSIX locks */
    pthread_rwlock_init(&f->rw, NULL);
    f->guard_closed = 0;
    dk_mu_reinit(&f->mu); /* (held through up_file_lock_all: up_file_reinit_locks_all forgets the count) */
    pthread_mutex_init(&f->strict_mu, NULL);
    /* The parent's other threads do not exist here (their reader records are free again: guard.c), and
     * the child logs to a log of its own: its writes start unshared. */
    f->strict_writer = 0;
    f->strict_shared = 0;
    f->append_inflight = 0; /* only the forking thread exists here, and it is in fork */
    /* Its publish was left to the parent's interrupted call (a handler's fork: up_file_lock_all skipped it), so
     * its appends staged here are the parent's: a publish here wrote them into the file a second time (the
     * child's exit, session 18: shim_handler_fork_sizerec). Its state may be half-changed too: the child's
     * own calls on the file go to the kernel (kernel_only), as another process's. */
    if (DK_UNLIKELY(f->lock_all_skipped)) f->fork_parents = f->kernel_only = true;
}
void up_file_lock_all(void) { up_file_foreach(lock_one, NULL); }
void up_file_unlock_all(void) { up_file_foreach(unlock_one, NULL); }
void up_file_reinit_locks_all(void) {
    up_file_foreach(reinit_one, NULL);
    dk_mu_bulk_forget();
}
