/* Published-size records (FLEX): a file on the extend strategy is longer in the kernel than what was
 * published (the zero-filled tail of an extension step, and appends not yet published). Before the
 * kernel size first moves past the published size, a record {dev, ino, published size, extended size,
 * path} is made durable in <root>/.daxkit/<tag>.sizes (the process's staging-pool tag, whose lock the
 * owner holds for life). When a publish sets the kernel size back to the logical size, the record is
 * cleared. An fsync keeps the extension (up_sizerec_commit): once the bytes below the logical size are
 * durable, the record's published size moves up to it -- one 8-byte store made durable, where cutting the
 * kernel size would free the step's tail (tmpfs splits its huge page) only for the next append to fault it
 * back in. A process that dies leaves its valid records behind; the next one to use the directory (or
 * `daxkit recover DIR`) truncates each such file back to its published size, so appends stay atomic.
 *
 * The stage strategy uses the same records around a relink that a crash can cut (up_sizerec_publish_begin:
 * several kernel calls, or one pwrite over a page boundary -- the kernel's write stops between pages when a
 * fatal signal is pending): pub = the published size before the relink, ext = the size it publishes.
 * Those are durable on a flush medium (one flush + fence each way). On the page cache they are stored
 * without msync and carry the boot id: a process crash leaves them in the page cache, where recovery reads
 * them; after a power loss (another boot) recovery ignores them -- posix mode promises there only what
 * the last fsync made durable, and a record left valid on disk must not roll back a later fsync'ed publish.
 *
 * Invariant of a valid record (pub, ext): the kernel size is within [pub, ext], and bytes at or above
 * `pub` were never published. Recovery acts only when pub < st_size <= ext, on the same inode: a file
 * that anyone resized since is left alone. Every step is idempotent; recovery is safe to interrupt. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/area.h"
#include "common/boot_id.h"
#include "common/mapflags.h"
#include "common/internal_fd.h"
#include "common/pwrite_all.h"
#include "common/crashpoint.h"
#include "common/log.h"
#include "common/stats.h"
#include "persist/persist.h"
#include "shim/libc.h"
#include "upath/internal.h"

#define REC_BYTES 4096u
#define REC_SLOTS 1024u
#define REC_MAGIC 0x6463657273786164ull /* "daxsrecd" */
#define REC_PATH_MAX (REC_BYTES - 64 - 8)
#define REC_THIS_BOOT 1u /* flags: valid only in the boot whose id it holds (page cache, not msync'ed) */
#define REC_IDENT 2u     /* flags: `ident` holds the file's identity (ident.c; session 9) */

struct size_rec {        /* one 4 KiB slot */
    uint64_t magic;      /* REC_MAGIC when valid; stored last, cleared first */
    uint64_t dev, ino;
    uint64_t pub;        /* published size */
    uint64_t ext;        /* the largest kernel size set since (grows in place: one 8-byte store) */
    uint32_t path_len;
    uint32_t flags;      /* REC_THIS_BOOT (0 in records of earlier versions: their pad) */
    uint8_t boot[16];    /* the boot id, when REC_THIS_BOOT */
    char path[REC_PATH_MAX]; /* a hint: recovery checks dev/ino and else searches by inode */
    uint64_t ident;      /* REC_IDENT: the file's identity (low 32 bits): a file that reused the inode
                            number has another. Records of earlier versions: the end of their path (which
                            an earlier reader cuts at byte 4095, here ident's last byte: it ignores it) */
};
_Static_assert(sizeof(struct size_rec) == REC_BYTES, "record slot size");

struct up_sizes {
    int fd;
    char *addr;
    uint64_t used[REC_SLOTS / 64];   /* atomic: the slot is taken (slot_take, slot_give) */
    uint64_t backed[REC_SLOTS / 64]; /* the slot's page is allocated (slot_take) */
};

/* Makes [p, p+n) of the record file durable as the root's medium requires -- unless the record is
 * valid for this boot only (page cache: the page cache itself survives the process). */
static void rec_persist(const struct up_root *r, const struct size_rec *rec, void *p, size_t n) {
    if (rec->flags & REC_THIS_BOOT) return;
    switch (r->persist_as) {
    case DK_MEDIUM_DAX:
        dk_flush_range(p, n);
        dk_fence();
        break;
    case DK_MEDIUM_PAGECACHE: {
        uintptr_t a = (uintptr_t)p & ~(uintptr_t)(DK_PAGE_BYTES - 1);
        int cancel_was = dk_cancel_off(); /* under the file's mutex: msync is a cancellation point */
        DK_REAL(msync)((void *)a, (uintptr_t)p + n - a, MS_SYNC);
        dk_cancel_restore(cancel_was);
        break;
    }
    case DK_MEDIUM_VOLATILE: break; /* a shared mapping survives the process; power loss loses all */
    }
}

/* The record's head, path and identity (the slot's two ends) made durable: one fence, or one msync of the
 * slot's page (a slot is one page). */
static void rec_persist_new(const struct up_root *r, struct size_rec *rec) {
    if (r->persist_as == DK_MEDIUM_DAX && !(rec->flags & REC_THIS_BOOT)) {
        dk_flush_range(rec, 64 + rec->path_len + 1);
        dk_flush_range(&rec->ident, sizeof rec->ident);
        dk_fence();
        return;
    }
    rec_persist(r, rec, rec, REC_BYTES);
}

static struct up_sizes *sizes_open(struct up_root *r) {
    struct up_sizes *z = __atomic_load_n(&r->sizes, __ATOMIC_ACQUIRE);
    if (z) return z;
    int area_fd;
    const char *tag;
    if (up_stage_owner(r, &area_fd, &tag) != 0) return NULL;
    /* A signal handler's publish (its exit's, an unlock's) that interrupted its thread in here: no record,
     * as when the file cannot be had (the thread's own open goes on when the handler returns). */
    if (dk_mu_refuse(&r->mu)) {
        return NULL;
    }
    int cancel_was = dk_cancel_off(); /* under the file's mutex and r->mu: openat and close are cancellation points */
    dk_mu_lock(&r->mu);
    DK_ERRNO_SAVE; /* reached from a publish or an extending write: nothing here is the program's errno */
    if (!r->sizes) {
        char name[80];
        snprintf(name, sizeof name, "%s.sizes", tag);
        int fd = dk_ifd_openat(area_fd, name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        void *a = MAP_FAILED;
        if (fd >= 0 && DK_REAL(ftruncate)(fd, (off_t)REC_BYTES * REC_SLOTS) == 0)
            a = DK_REAL(mmap)(NULL, (size_t)REC_BYTES * REC_SLOTS, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        /* 4 KiB pages for 4 KiB slots: on a huge-page tmpfs a slot's first store faulted in (and cleared) a
         * 2 MiB page (slot_back) */
        if (a != MAP_FAILED) (void)DK_REAL(madvise)(a, (size_t)REC_BYTES * REC_SLOTS, MADV_NOHUGEPAGE);
        z = a != MAP_FAILED ? calloc(1, sizeof *z) : NULL;
        if (z) {
            z->fd = up_internal_fd(fd);
            z->addr = a;
            __atomic_store_n(&r->sizes, z, __ATOMIC_RELEASE);
        } else {
            dk_log_once("cannot keep published-size records in %s/.daxkit (%s): a crash may leave a "
                        "zero-filled tail on extend-strategy files", r->path, dk_strerror(errno));
            if (a != MAP_FAILED) DK_REAL(munmap)(a, (size_t)REC_BYTES * REC_SLOTS);
            if (fd >= 0) DK_REAL(close)(fd);
        }
    }
    DK_ERRNO_RESTORE;
    dk_mu_unlock(&r->mu);
    dk_cancel_restore(cancel_was);
    return r->sizes;
}

/* Lock-free: clears only the slot's own bit -- a freed file's at every eviction from the closed list. */
static void slot_give(struct up_sizes *z, int s) {
    __atomic_fetch_and(&z->used[s / 64], ~(1ull << (s % 64)), __ATOMIC_ACQ_REL);
}

static struct size_rec *rec_at(const struct up_sizes *z, int s) {
    return (struct size_rec *)(z->addr + (size_t)s * REC_BYTES);
}

/* Allocates slot s's page through the mapping, as a store would -- EFAULT where the store would be a SIGBUS
 * (the medium full). Not by fallocate: on a huge-page tmpfs that allocates a 2 MiB page for the 4 KiB slot
 * (the mapping's MADV_NOHUGEPAGE does not reach it), cleared at the slot's first store -- 5-12 ms of CPU a
 * process on this machine, more than the library's whole share of a posix-mode SQLite WAL run of 1,000
 * transactions (session 22). A kernel without MADV_POPULATE_WRITE (before 5.14: EINVAL) falls back to it. */
static bool slot_page_alloc(struct up_sizes *z, int s) {
    if (DK_REAL(madvise)(rec_at(z, s), REC_BYTES, MADV_POPULATE_WRITE) == 0) return true;
    if (errno != EINVAL) return false;
    return DK_REAL(fallocate)(z->fd, 0, (off_t)s * REC_BYTES, REC_BYTES) == 0 || errno == EOPNOTSUPP;
}

/* The taken slot's page allocated (once per slot and process). False: it could not be (the slot given back,
 * errno kept). */
static bool slot_back(struct up_sizes *z, int s) {
    uint64_t bit = 1ull << (s % 64);
    if (__atomic_load_n(&z->backed[s / 64], __ATOMIC_ACQUIRE) & bit) return true;
    DK_ERRNO_SAVE;
    int cancel_was = dk_cancel_off(); /* under the file's mutex: fallocate is a cancellation point */
    bool ok = slot_page_alloc(z, s);
    dk_cancel_restore(cancel_was);
    DK_ERRNO_RESTORE;
    if (ok) __atomic_fetch_or(&z->backed[s / 64], bit, __ATOMIC_ACQ_REL);
    else slot_give(z, s);
    return ok;
}

/* A free slot, its page allocated: the record file is sparse (ftruncate), and a store into a hole the medium
 * cannot fill is a SIGBUS -- a full tmpfs killed the program at its first publish (rec_begin), where the
 * kernel's write or fsync says ENOSPC (shim_full_medium_burst_tmpfs, 1 run in 40-90; the prefilled case every
 * time). Each page is allocated once, at its slot's first use (slots are taken lowest first: mostly one
 * allocation per process: slot_page_alloc). -1: all slots in use; -2: the page could not be allocated (errno kept).
 * Lock-free (session 20; a mutex until then, ~70 instructions a taken slot, and a signal handler whose thread
 * was inside it got no record): a slot is the taker's alone from the compare-and-swap that sets its bit
 * until slot_give clears it, so two takers at once (threads, or a handler and the thread it interrupted) get
 * two slots, and only the slot's owner reads or sets its `backed` bit (an atomic or: other slots share the
 * word). */
static int slot_take(struct up_sizes *z) {
    for (unsigned w = 0; w < REC_SLOTS / 64; w++) {
        uint64_t used = __atomic_load_n(&z->used[w], __ATOMIC_ACQUIRE);
        while (~used) {
            unsigned b = (unsigned)__builtin_ctzll(~used);
            if (!__atomic_compare_exchange_n(&z->used[w], &used, used | (1ull << b), true, __ATOMIC_ACQ_REL,
                                             __ATOMIC_ACQUIRE))
                continue; /* (used is the word's new value) */
            /* (the name is the tests' cue from when a mutex was held here: a handler with the slot taken) */
            DK_CRASH_POINT("sizerec.slot_take.locked");
            int s = (int)(w * 64 + b);
            return slot_back(z, s) ? s : -2;
        }
    }
    return -1;
}

/* Makes the file's record valid for (published size, ext), or raises its ext. this_boot: on the page
 * cache, a record for this boot only (no msync); otherwise durable. with_path: the record carries the
 * file's path (a readlink of /proc/self/fd, ~4 us of CPU) -- for extend records, valid for as long as the
 * file is extended; a publish's record is valid for the microseconds of its relink (and the file is often
 * renamed right after: rsync, git), so recovery finds that rare one by inode (up_find_inode). */
static int rec_begin(struct up_file *f, int fd, uint64_t pub, uint64_t ext, bool this_boot, bool with_path) {
    struct up_sizes *z = f->sizerec_slot ? f->root->sizes : sizes_open(f->root);
    if (!z) return 0; /* no record: the old behaviour (a crash may leave the tail); said once */
    if (f->sizerec_slot && f->sizerec_valid) {
        struct size_rec *rec = rec_at(z, f->sizerec_slot - 1);
        if (ext <= rec->ext) return 0;
        __atomic_store_n(&rec->ext, ext, __ATOMIC_RELEASE);
        rec_persist(f->root, rec, &rec->ext, sizeof rec->ext);
        return 0;
    }
    bool fresh = !f->sizerec_slot;
    if (fresh) {
        int s = slot_take(z);
        if (s == -2) {
            dk_log_once("cannot allocate a published-size record in %s/.daxkit (the medium is full): files "
                        "published or extended meanwhile have none (a crash may leave a tail)", f->root->path);
            dk_count(DK_C_fallbacks, 1);
            return 0;
        }
        if (s < 0) {
            dk_log_once("more than %u files extended at once under %s: the rest have no published-size record",
                        REC_SLOTS, f->root->path);
            dk_count(DK_C_fallbacks, 1);
            return 0;
        }
        f->sizerec_slot = s + 1;
    }
    struct size_rec *rec = rec_at(z, f->sizerec_slot - 1);
    if (fresh) rec->path_len = 0, rec->path[0] = 0;
    if (with_path && !rec->path_len) /* a hint (renames): read once per slot, not at every extension */
        rec->path_len = (uint32_t)up_fd_path(fd, rec->path, REC_PATH_MAX);
    this_boot = this_boot && f->root->persist_as == DK_MEDIUM_PAGECACHE && dk_boot_id(rec->boot);
    uint32_t ident = up_file_ident(f, fd); /* a load after the file's first record */
    rec->ident = ident;
    rec->flags = (this_boot ? REC_THIS_BOOT : 0) | (ident ? REC_IDENT : 0);
    rec->dev = (uint64_t)f->dev, rec->ino = (uint64_t)__atomic_load_n(&f->ino, __ATOMIC_RELAXED);
    if (DK_UNLIKELY(!rec->ino)) { /* keyless (file.c): its number, and where it is */
        struct stat st;
        DK_ERRNO_SAVE;
        if (DK_REAL(fstat)(fd, &st) == 0) rec->dev = (uint64_t)st.st_dev, rec->ino = (uint64_t)st.st_ino;
        DK_ERRNO_RESTORE;
    }
    rec->pub = pub != UINT64_MAX ? pub : __atomic_load_n(&f->pub_size, __ATOMIC_ACQUIRE);
    rec->ext = ext;
    rec_persist_new(f->root, rec);
    __atomic_store_n(&rec->magic, REC_MAGIC, __ATOMIC_RELEASE);
    rec_persist(f->root, rec, &rec->magic, sizeof rec->magic);
    __atomic_store_n(&f->sizerec_valid, true, __ATOMIC_RELEASE);
    return 0;
}

int up_sizerec_extend(struct up_file *f, int fd, uint64_t ext) { return rec_begin(f, fd, UINT64_MAX, ext, false, true); }

int up_sizerec_publish_begin(struct up_file *f, int fd, uint64_t size) {
    return rec_begin(f, fd, UINT64_MAX, size, true, false);
}

int up_sizerec_publish_begin_at(struct up_file *f, int fd, uint64_t pub, uint64_t size) {
    return rec_begin(f, fd, pub, size, true, false);
}

int up_sizerec_spill(struct up_file *f, int fd, uint64_t end) { return rec_begin(f, fd, UINT64_MAX, end, true, true); }

bool up_sizerec_commit(struct up_file *f, uint64_t size) {
    if (!f->sizerec_valid) return false;
    struct size_rec *rec = rec_at(f->root->sizes, f->sizerec_slot - 1);
    if (size > rec->pub) {
        __atomic_store_n(&rec->pub, size, __ATOMIC_RELEASE);
        rec_persist(f->root, rec, &rec->pub, sizeof rec->pub);
    }
    return true;
}

void up_sizerec_clear(struct up_file *f) {
    if (!f->sizerec_valid) return;
    struct size_rec *rec = rec_at(f->root->sizes, f->sizerec_slot - 1);
    __atomic_store_n(&rec->magic, 0, __ATOMIC_RELEASE);
    rec_persist(f->root, rec, &rec->magic, sizeof rec->magic);
    __atomic_store_n(&f->sizerec_valid, false, __ATOMIC_RELEASE); /* after the clear is durable: lock-free readers */
    __atomic_store_n(&f->spilled, false, __ATOMIC_RELEASE);
}

void up_sizerec_release(struct up_file *f) {
    if (!f->sizerec_slot) return;
    up_sizerec_clear(f);
    slot_give(f->root->sizes, f->sizerec_slot - 1);
    f->sizerec_slot = 0;
}

static void forget_slot_cb(struct up_file *f, void *arg) {
    (void)arg;
    f->sizerec_slot = 0;
    f->sizerec_valid = false;
    __atomic_store_n(&f->spilled, false, __ATOMIC_RELAXED);
}

void up_sizerec_after_fork_child(void) {
    /* The parent published (and so cleared) every record before fork; its record file stays its own. */
    up_file_foreach(forget_slot_cb, NULL);
    for (int i = 0; i < up_roots_count(); i++) {
        struct up_root *r = up_root_at(i);
        struct up_sizes *z = r->sizes;
        if (!z) continue;
        DK_REAL(munmap)(z->addr, (size_t)REC_BYTES * REC_SLOTS);
        up_internal_close(z->fd);
        free(z);
        r->sizes = NULL;
    }
}

void up_sizerec_shutdown(struct up_root *r, int area_fd, const char *tag) {
    if (!r->sizes) return;
    char name[80];
    snprintf(name, sizeof name, "%s.sizes", tag);
    DK_REAL(unlinkat)(area_fd, name, 0); /* every file was published: no record is valid */
}

/* ---- recovery ---- */

/* A program's file opened for a recovery: in a descriptor window, and moved to the internal floor when the
 * process may not hold a POSIX record lock (dk_ifd_move_begin; a lock request meanwhile waits for the move's
 * close) -- at the lowest free number it was another thread's to take: at start-up one a constructor run before
 * the library's started, at a program's open that recovers a narrower root (recover_scope.c) any of them
 * (session 26: shim_startup_fds found a killed process's e.ext at descriptor 3 inside the start-up). With a lock
 * possibly held it stays at the kernel's number, as before: the move's close would drop the process's locks on
 * the file (the recovery's own close at its end does as well). -1 with errno as openat's. */
static int open_program_file(int dirfd, const char *path, int flags) {
    dk_ifd_begin();
    int fd = DK_REAL(openat)(dirfd, path, flags);
    int e = errno;
    int floor = dk_ifd_floor();
    if (fd >= 0 && fd < floor && dk_ifd_move_begin()) {
        int hi = DK_REAL(fcntl)(fd, (flags & O_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD, floor);
        if (hi >= 0) { /* (else, no high number free: the low one stays) */
            DK_REAL(close)(fd);
            fd = hi;
        }
        dk_ifd_move_end();
    }
    dk_ifd_end();
    errno = e;
    return fd;
}

/* Finds the inode in the tree below dirfd (depth-limited; .daxkit areas skipped), opening it for writing.
 * -1 if not found. */
int up_find_inode(int dirfd, dev_t dev, ino_t ino, int depth) {
    if (depth > 32) return -1; /* 2 descriptors per level */
    DIR *d = dk_ifd_opendirat(dirfd, ".");
    if (!d) return -1;
    int found = -1;
    struct dirent *e;
    while (found < 0 && (e = DK_REAL(readdir)(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, ".daxkit"))
            continue; /* the area's logs and staging files are never a program's file */
        if (e->d_ino == ino && e->d_type != DT_DIR) {
            int fd = open_program_file(dirfd, e->d_name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
            struct stat st;
            if (fd >= 0 && DK_REAL(fstat)(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino) found = fd;
            else if (fd >= 0) DK_REAL(close)(fd);
        } else if (e->d_type == DT_DIR) {
            int sub = dk_ifd_openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
            if (sub >= 0) {
                found = up_find_inode(sub, dev, ino, depth + 1);
                DK_REAL(close)(sub);
            }
        }
    }
    closedir(d);
    return found;
}

/* Opens the recorded file: by its path, or else by a search of the managed directory (renamed). */
static int open_recorded(const struct size_rec *rec, int area_fd) {
    int fd = rec->path_len ? open_program_file(AT_FDCWD, rec->path, O_RDWR | O_NOFOLLOW | O_CLOEXEC) : -1;
    struct stat st;
    if (fd >= 0 && DK_REAL(fstat)(fd, &st) == 0 && st.st_dev == (dev_t)rec->dev && st.st_ino == (ino_t)rec->ino)
        return fd;
    if (fd >= 0) DK_REAL(close)(fd);
    int root = dk_ifd_openat(area_fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (root < 0) return -1;
    fd = up_find_inode(root, (dev_t)rec->dev, (ino_t)rec->ino, 0);
    DK_REAL(close)(root);
    return fd;
}

/* Rolls one recorded file back to its published size if nobody resized it since. */
static void recover_one(struct size_rec *rec, int area_fd, const struct stat *by, struct up_sizerec_report *rep) {
    int fd = open_recorded(rec, area_fd);
    if (fd < 0) {
        rep->gone++;
        return;
    }
    struct stat fs; /* another user's record (a privileged recovery): a file that user may write only */
    if (by && (DK_REAL(fstat)(fd, &fs) != 0 || !dk_area_user_may_write(fd, &fs, by))) {
        rep->untouched++;
        dk_log("%s: a size record of uid %u's dead process names a file that user may not write: left as it is",
               rec->path, (unsigned)by->st_uid);
        DK_REAL(close)(fd);
        return;
    }
    DK_CRASH_POINT("sizerec.recover.file_open"); /* tests/shim/recover_race.c holds a recoverer here */
    uint32_t ident = (rec->flags & REC_IDENT) ? up_fd_ident(fd) : 0;
    if (ident && ident != (uint32_t)rec->ident) { /* its file is gone; another has its inode number */
        rep->reused++;
        dk_log_verbose("%s: inode %llu is another file now: its size record is void", rec->path,
                       (unsigned long long)rec->ino);
        DK_REAL(close)(fd);
        return;
    }
    struct stat st;
    if (DK_REAL(fstat)(fd, &st) == 0 && (uint64_t)st.st_size > rec->pub && (uint64_t)st.st_size <= rec->ext) {
        if (DK_REAL(ftruncate)(fd, (off_t)rec->pub) == 0 && DK_REAL(fsync)(fd) == 0) {
            rep->rolled_back++;
            rep->bytes_dropped += (uint64_t)st.st_size - rec->pub;
            dk_log_verbose("%s: rolled back from %llu to its published size %llu bytes", rec->path,
                           (unsigned long long)st.st_size, (unsigned long long)rec->pub);
        } else {
            rep->failed++;
        }
    } else {
        rep->untouched++;
    }
    DK_REAL(close)(fd);
}

int up_sizerec_recover(int area_fd, const char *name, struct up_sizerec_report *rep) {
    int fd = dk_ifd_openat(area_fd, name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) return errno == ENOENT ? 0 : -errno;
    struct stat st;
    if (DK_REAL(fstat)(fd, &st) != 0) {
        int e = errno;
        DK_REAL(close)(fd);
        return -e;
    }
    size_t bytes = (size_t)st.st_size / REC_BYTES * REC_BYTES;
    char *a = bytes ? DK_REAL(mmap)(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : NULL;
    if (a == MAP_FAILED) {
        int e = errno;
        DK_REAL(close)(fd);
        return -e;
    }
    for (size_t off = 0; off < bytes; off += REC_BYTES) {
        struct size_rec *rec = (struct size_rec *)(a + off);
        if (rec->magic != REC_MAGIC) continue;
        rec->path[REC_PATH_MAX - 1] = 0;
        uint8_t boot[16];
        if (!(rec->flags & REC_THIS_BOOT) || (dk_boot_id(boot) && !memcmp(boot, rec->boot, sizeof boot)))
            recover_one(rec, area_fd, dk_area_file_ours(&st) ? NULL : &st, rep);
        else
            rep->untouched++; /* written before a reboot: void (see the top of this file) */
        rec->magic = 0; /* done: a second run (or a late opener of this file) finds nothing to do */
    }
    if (bytes) {
        DK_REAL(msync)(a, bytes, MS_SYNC);
        DK_REAL(munmap)(a, bytes);
    }
    DK_REAL(close)(fd);
    return 0;
}

int up_recover_dir(const char *root_path, struct up_recover_report *rep) {
    char area[4200];
    snprintf(area, sizeof area, "%s/.daxkit", root_path);
    int afd = dk_ifd_openat(AT_FDCWD, area, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (afd < 0) {
        if (errno == ENOENT) return 0;
        return -errno;
    }
    up_stage_reclaim(root_path, afd, rep);
    DK_REAL(close)(afd);
    return 0;
}
