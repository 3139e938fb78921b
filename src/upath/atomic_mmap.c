/* DAXKIT_ATOMIC_MMAP (issue 4, part 4 under `daxkit run`): a managed file matching its globs that the program
 * maps MAP_SHARED and writable gets failure-atomic msync through the userfaultfd write-protect mode of the
 * engine (src/atomic/uwp.c). The file is mapped once per process (whole file, size fixed while mapped);
 * every program mmap of it returns an address inside that mapping. msync(MS_SYNC) commits every store made
 * since the previous one (the whole file, not just the range); MS_ASYNC does nothing (nor does Linux write
 * back). munmap of the last program mapping, and exit, roll back stores not msync'ed, as a crash would; the
 * next mapping of the file after a crash rolls them back too. Where userfaultfd cannot protect the file's
 * own mapping (XFS/ext4 files, page cache or DAX, on this kernel) the program maps a protected shmem shadow
 * of the file instead (uwp_shadow.c; counted atomic_mmap_shadow): msync journals the changed bytes and
 * applies them, so read() of the file sees the last msync's state, not the stores made since; mmap goes to
 * the kernel (atomic_mmap_kernel, said once) only where even shmem cannot be protected. Limits: writes
 * through write()/pwrite to the same file bypass the protection (not logged; with the shadow, pages the
 * program touched before do not see them, and an msync of a page stored into reverts them); a fork's child
 * stores into the shared mapping unlogged (the shadow: the child has no mapping there); MAP_FIXED and ranges
 * past the end of the file go to the kernel. munmap of part of a view keeps the rest of it protected and
 * tracked (the view is trimmed or split); the unmapped pages stay reserved inside the file's mapping until
 * its last view goes, so touching them is not a fault as with the kernel -- it stores into the file, logged. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atomic/uwp.h"
#include "common/config.h"
#include "common/log.h"
#include "common/stats.h"
#include "shim/libc.h"
#include "upath/atomic_mmap.h"
#include "upath/internal.h"
#include "upath/policy.h"

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

#define AMAP_FILES_MAX 64
#define AMAP_VIEWS_MAX 256

struct amap_file {
    struct dk_uwp *u; /* set last (release) when mapped, cleared when released: writes look it up unlocked */
    char *base;
    size_t len;
    dev_t dev;
    ino_t ino;
    unsigned views;   /* program views of the file (a partly unmapped view may count as two) */
    unsigned msyncs;  /* msync calls using `u` outside amap_mu: `u` lives until the last of them returns */
    unsigned writers; /* write()s using `u` (atomic, pinned without amap_mu: file_pin) */
    bool closing;     /* being released: no new writer pins it (atomic) */
};
struct amap_view {
    char *addr;
    size_t len;
    struct amap_file *file;
};

static pthread_mutex_t amap_mu = PTHREAD_MUTEX_INITIALIZER;
static struct amap_file amap_files[AMAP_FILES_MAX];
static struct amap_view amap_views[AMAP_VIEWS_MAX];
unsigned up_amap_live; /* program views (atomic): the munmap/msync hooks cost one load without any */
/* The file file_open maps now (under amap_mu; set before its slot is): a handler's write looks here too. */
static dev_t amap_opening_dev;
static ino_t amap_opening_ino;

/* amap_mu is marked (common/lockmark.h): dk_mu_mine(&amap_mu) says this thread is in amap_lock ..
 * amap_unlock (from before glibc's lock to after its unlock) -- a signal handler's write must not wait for
 * amap_mu, nor for a release or a first mapping this thread may be making; its msync must not take amap_mu
 * (review 11, finding 20; a counter of this file's own did it until session 16). */
static void amap_lock(void) { dk_mu_lock(&amap_mu); }
static void amap_unlock(void) { dk_mu_unlock(&amap_mu); }
static bool amap_mine(void) { return dk_mu_mine(&amap_mu); }

static int nested_refused(void) {
    dk_count(DK_C_atomic_mmap_nested_refused, 1);
    dk_log_once("DAXKIT_ATOMIC_MMAP: a signal handler's write or msync of a mapped file refused with EDEADLK "
                "(counted as atomic_mmap_nested_refused): its thread was inside daxkit's handling of that file");
    return -EDEADLK;
}

bool up_atomic_mmap_wanted(const char *path) { return up_glob_list_match(dk_cfg.atomic_mmap, path); }

static bool file_is(const struct amap_file *f, const struct stat *st) {
    return __atomic_load_n(&f->dev, __ATOMIC_RELAXED) == st->st_dev &&
           __atomic_load_n(&f->ino, __ATOMIC_RELAXED) == st->st_ino;
}

static struct amap_file *file_for(const struct stat *st) {
    for (int i = 0; i < AMAP_FILES_MAX; i++)
        if (amap_files[i].u && file_is(&amap_files[i], st)) return &amap_files[i];
    return NULL;
}

/* The engine of a file a write() changes, pinned for the write without amap_mu (no lock on the write path: a
 * signal handler's write may interrupt its thread anywhere, amap_mu held included). NULL with *err 0: not
 * mapped; NULL with *err -EDEADLK: being released or mapped for the first time while this thread holds
 * amap_mu (it may be the one doing it). A release waits for the pinned writers (file_release_if_unused); a
 * writer that finds the file closing, or being mapped, waits for amap_mu, so that its write lands after the
 * release's rollback or the map's recovery, as when writes took amap_mu. */
static struct amap_file *file_pin(const struct stat *st, int *err) {
    *err = 0;
    for (;;) {
        bool busy = false;
        for (int i = 0; i < AMAP_FILES_MAX; i++) {
            struct amap_file *f = &amap_files[i];
            struct dk_uwp *u = __atomic_load_n(&f->u, __ATOMIC_ACQUIRE);
            if (!u || !file_is(f, st)) continue;
            __atomic_add_fetch(&f->writers, 1, __ATOMIC_SEQ_CST);
            if (!__atomic_load_n(&f->closing, __ATOMIC_SEQ_CST) && __atomic_load_n(&f->u, __ATOMIC_SEQ_CST) == u &&
                file_is(f, st))
                return f;
            __atomic_sub_fetch(&f->writers, 1, __ATOMIC_SEQ_CST);
            busy = busy || __atomic_load_n(&f->closing, __ATOMIC_SEQ_CST);
        }
        busy = busy || (__atomic_load_n(&amap_opening_ino, __ATOMIC_ACQUIRE) == st->st_ino &&
                        __atomic_load_n(&amap_opening_dev, __ATOMIC_RELAXED) == st->st_dev);
        if (!busy) return NULL;
        if (amap_mine()) {
            *err = -EDEADLK;
            return NULL;
        }
        amap_lock(); /* the release or the first mapping holds it until done */
        amap_unlock();
    }
}

/* A fork's child keeps the mapping as plain shared memory: its stores are not logged (the write-protection
 * and its handler thread stay with the parent). It closes its copies of the userfaultfd, the eventfd and the
 * shadow's memfd; the engine's log descriptor and mapping -- which hold the log's flock -- are let go of by
 * the engine's own fork handler (src/atomic/alog_open.c; review 10, finding 5). */
static void forget_in_child(void) {
    for (int i = 0; i < AMAP_FILES_MAX; i++)
        if (amap_files[i].u) dk_uwp_forget_in_child(amap_files[i].u);
    memset(amap_files, 0, sizeof amap_files);
    memset(amap_views, 0, sizeof amap_views);
    up_amap_live = 0;
    amap_opening_dev = 0, amap_opening_ino = 0;
    dk_mu_reinit(&amap_mu); /* another thread's, maybe; or this one's (a handler's fork): its mark goes too */
}

static void register_fork_handler(void) { pthread_atfork(NULL, NULL, forget_in_child); }

/* The file's last view is gone and no msync uses it: unsynced stores roll back, once the writes pinned
 * (write()s into the file, not into a view) are over. Under amap_mu. */
static void file_release_if_unused(struct amap_file *f) {
    if (!f->u || f->views || f->msyncs) return;
    __atomic_store_n(&f->closing, true, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&f->writers, __ATOMIC_SEQ_CST)) sched_yield();
    int r = dk_uwp_unmap(f->u);
    __atomic_store_n(&f->u, NULL, __ATOMIC_RELEASE);
    __atomic_store_n(&f->closing, false, __ATOMIC_RELEASE);
    if (r) dk_log("DAXKIT_ATOMIC_MMAP: unmapping failed (%s)", dk_strerror(-r));
}

static void sleep_1ms(void) {
    struct timespec ts = {0, 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Errors after which the kernel may map the file: no userfaultfd protection here (the engine recovered the
 * file and closed before saying so), or no log could be made (an empty file, a full medium: no log existed,
 * nothing to recover). Any other error may leave a crashed epoch unrecovered in the file (-EBUSY: another
 * process has it, -ESTALE, -EIO...): the program's mmap fails with it (review 10, finding 5). */
static bool kernel_may_map(int rc) {
    return rc == -EOPNOTSUPP || rc == -EPERM || rc == -ENOSYS || rc == -EINVAL || rc == -ENOSPC;
}

/* The file's engine; NULL with *err 0 (the kernel maps it) or -errno (the mmap fails). A file another
 * process maps failure-atomically is waited for, in 1 ms polls up to DAXKIT_ATOMIC_WAIT_MS as a DAXKIT_ATOMIC
 * open does (under amap_mu: this process's other mmap/munmap/msync of such files wait too). */
static struct amap_file *file_open(const char *path, const struct stat *st, int *err) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_fork_handler);
    *err = 0;
    struct amap_file *slot = NULL;
    for (int i = 0; i < AMAP_FILES_MAX && !slot; i++)
        if (!amap_files[i].u) slot = &amap_files[i];
    if (!slot) return NULL;
    void *addr;
    size_t len;
    int rc;
    __atomic_store_n(&amap_opening_dev, st->st_dev, __ATOMIC_RELAXED);
    __atomic_store_n(&amap_opening_ino, st->st_ino, __ATOMIC_SEQ_CST); /* writes of it wait (file_pin) */
    struct dk_uwp *u = NULL;
    for (uint64_t waited_ms = 0;; waited_ms++) {
        rc = dk_cfg.atomic_mmap_shadow ? dk_uwp_map_shadow(path, NULL, &u, &addr, &len)
                                       : dk_uwp_map(path, NULL, &u, &addr, &len);
        if (rc != -EBUSY || waited_ms >= dk_cfg.atomic_wait_ms) break;
        if (waited_ms == 0) dk_count(DK_C_atomic_waits, 1);
        sleep_1ms();
    }
    if (rc) __atomic_store_n(&amap_opening_ino, 0, __ATOMIC_RELAXED);
    if (rc) {
        if (!kernel_may_map(rc)) {
            *err = rc;
            dk_log("DAXKIT_ATOMIC_MMAP: %s cannot be mapped failure-atomically (%s%s): mmap fails", path,
                   dk_strerror(-rc), rc == -EBUSY ? ", mapped by another process past DAXKIT_ATOMIC_WAIT_MS" : "");
            return NULL;
        }
        dk_count(DK_C_atomic_mmap_kernel, 1);
        dk_log_once("DAXKIT_ATOMIC_MMAP: %s cannot be write-protected with userfaultfd here (%s): mapped by the "
                    "kernel, msync is not failure-atomic (counted as atomic_mmap_kernel)", path, dk_strerror(-rc));
        return NULL;
    }
    /* Whole pages, as the kernel maps them: the file's last page may be partial (review 10, finding 20). */
    slot->base = addr, slot->len = dk_round_up(len, (size_t)sysconf(_SC_PAGESIZE));
    __atomic_store_n(&slot->dev, st->st_dev, __ATOMIC_RELAXED);
    __atomic_store_n(&slot->ino, st->st_ino, __ATOMIC_RELAXED);
    slot->views = 0, slot->msyncs = 0, slot->writers = 0, slot->closing = false;
    __atomic_store_n(&slot->u, u, __ATOMIC_RELEASE); /* writes find it from here on (file_pin) */
    __atomic_store_n(&amap_opening_ino, 0, __ATOMIC_RELEASE);
    dk_count(DK_C_atomic_mmap_wp, 1);
    if (dk_uwp_shadowed(slot->u)) dk_count(DK_C_atomic_mmap_shadow, 1);
    return slot;
}

bool up_atomic_mmap(void *hint, size_t len, int prot, int fl, int fd, off_t off, void **out) {
    if (!dk_cfg.atomic_mmap[0] || !(prot & PROT_WRITE) || (fl & MAP_TYPE) != MAP_SHARED || (fl & MAP_FIXED) ||
        off < 0 || off % sysconf(_SC_PAGESIZE) || len == 0)
        return false;
    (void)hint;
    char path[PATH_MAX];
    if (!up_fd_path(fd, path, sizeof path)) return false;
    struct stat st;
    if (!up_atomic_mmap_wanted(path) || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return false;
    if (fl & MAP_FIXED_NOREPLACE) { /* the file is mapped once, where daxkit chose: not at a given address */
        dk_count(DK_C_atomic_mmap_refused, 1);
        dk_log_once("DAXKIT_ATOMIC_MMAP: mmap of %s with MAP_FIXED_NOREPLACE refused (EEXIST; counted as "
                    "atomic_mmap_refused): a failure-atomic mapping cannot be placed at a given address", path);
        errno = EEXIST;
        *out = MAP_FAILED;
        return true;
    }
    amap_lock();
    struct amap_file *f = file_for(&st);
    bool mapped_before = f != NULL;
    int err = 0;
    if (!f) f = file_open(path, &st, &err);
    if (err) {
        amap_unlock();
        *out = MAP_FAILED;
        errno = -err;
        return true;
    }
    struct amap_view *v = NULL;
    for (int i = 0; i < AMAP_VIEWS_MAX && f && !v; i++)
        if (!amap_views[i].addr) v = &amap_views[i];
    bool ok = f && v && (uint64_t)off + len <= f->len;
    if (ok) {
        *v = (struct amap_view){.addr = f->base + off, .len = dk_round_up(len, (size_t)sysconf(_SC_PAGESIZE)), .file = f};
        f->views++;
        __atomic_add_fetch(&up_amap_live, 1, __ATOMIC_RELEASE);
        *out = v->addr;
    } else if (f && mapped_before) {
        /* A kernel mapping of the file beside its failure-atomic one would alias it: its stores unlogged, and
         * undone by a rollback of the other's epoch (review 10, finding 6's addendum) -- refused as the kernel
         * refuses a mapping it cannot make. Past the file's end: it has grown since it was first mapped. */
        dk_count(DK_C_atomic_mmap_refused, 1);
        dk_log_once("DAXKIT_ATOMIC_MMAP: a mapping of %s past the end of its failure-atomic mapping (the file grew "
                    "since) or past %d views refused (ENOMEM; counted as atomic_mmap_refused): unmap its views "
                    "and map it again at its new size", path, AMAP_VIEWS_MAX);
        amap_unlock();
        errno = ENOMEM;
        *out = MAP_FAILED;
        return true;
    } else if (f) {
        file_release_if_unused(f);
    }
    if (!ok && f) dk_log_once("DAXKIT_ATOMIC_MMAP: a mapping past the end of %s (or too many): by the kernel", path);
    amap_unlock();
    return ok;
}

static struct amap_view *view_at(const void *addr) {
    for (int i = 0; i < AMAP_VIEWS_MAX; i++)
        if (amap_views[i].addr && (const char *)addr >= amap_views[i].addr &&
            (const char *)addr < amap_views[i].addr + amap_views[i].len)
            return &amap_views[i];
    return NULL;
}

static struct amap_file *file_region_at(const char *p) {
    for (int i = 0; i < AMAP_FILES_MAX; i++)
        if (amap_files[i].u && p >= amap_files[i].base && p < amap_files[i].base + amap_files[i].len) return &amap_files[i];
    return NULL;
}

/* The lowest address in (p, end) where a file's mapping begins or ends or one of its views begins, else end. */
static const char *next_boundary(const char *p, const char *end) {
    const char *b = end;
    for (int i = 0; i < AMAP_FILES_MAX; i++) {
        const char *fb = amap_files[i].base, *fe = fb + amap_files[i].len;
        if (amap_files[i].u && fb > p && fb < b) b = fb;
        if (amap_files[i].u && fe > p && fe < b) b = fe;
    }
    for (int i = 0; i < AMAP_VIEWS_MAX; i++)
        if (amap_views[i].addr && amap_views[i].addr > p && amap_views[i].addr < b) b = amap_views[i].addr;
    return b;
}

/* Removes [p, cut_end) from view v (p inside v): drop, trim or split it. -ENOMEM when a split needs a slot
 * and none is free (as the kernel's munmap fails when splitting would exceed its mapping count). */
static int view_cut(struct amap_view *v, char *p, char *cut_end) {
    char *v_end = v->addr + v->len;
    if (p > v->addr && cut_end < v_end) { /* a hole in the middle: split */
        struct amap_view *tail = NULL;
        for (int i = 0; i < AMAP_VIEWS_MAX && !tail; i++)
            if (!amap_views[i].addr) tail = &amap_views[i];
        if (!tail) return -ENOMEM;
        *tail = (struct amap_view){.addr = cut_end, .len = (size_t)(v_end - cut_end), .file = v->file};
        v->len = (size_t)(p - v->addr);
        v->file->views++;
        __atomic_add_fetch(&up_amap_live, 1, __ATOMIC_RELEASE);
    } else if (p > v->addr) {
        v->len = (size_t)(p - v->addr);
    } else if (cut_end < v_end) {
        v->len = (size_t)(v_end - cut_end), v->addr = cut_end;
    } else {
        struct amap_file *f = v->file;
        *v = (struct amap_view){0};
        __atomic_sub_fetch(&up_amap_live, 1, __ATOMIC_RELEASE);
        f->views--;
        file_release_if_unused(f); /* the last view: unsynced stores roll back */
    }
    return 0;
}

/* munmap over our views: each address of [addr, addr+len) takes away one view covering it (a file mapped
 * twice returns the same addresses twice); pieces outside every file's mapping go to the kernel. */
bool up_atomic_munmap(void *addr, size_t len, int *rc) {
    if (!__atomic_load_n(&up_amap_live, __ATOMIC_ACQUIRE)) return false;
    long page = sysconf(_SC_PAGESIZE);
    char *p = (char *)dk_round_down((uintptr_t)addr, (uintptr_t)page);
    char *end = (char *)addr + len;
    amap_lock();
    bool ours = false;
    for (char *q = p; q < end && !ours; q = (char *)next_boundary(q, end))
        ours = view_at(q) != NULL;
    if (!ours || (uintptr_t)addr % (uintptr_t)page) { /* not ours, or EINVAL: the kernel says so */
        amap_unlock();
        return false;
    }
    end = (char *)dk_round_up((uintptr_t)end, (uintptr_t)page);
    *rc = 0;
    while (p < end && *rc == 0) {
        struct amap_view *v = view_at(p);
        struct amap_file *f = v ? v->file : file_region_at(p);
        char *next = v ? (v->addr + v->len < end ? v->addr + v->len : end) : (char *)next_boundary(p, end);
        if (v) {
            int r = view_cut(v, p, next);
            if (r) errno = -r, *rc = -1;
        } else if (!f && DK_REAL(munmap)(p, (size_t)(next - p)) != 0) {
            *rc = -1;
        }
        p = next;
    }
    amap_unlock();
    return true;
}

/* mremap of memory inside a file's mapping: a view cannot move or grow (the file is mapped once, at its size
 * when first mapped, and the view's addresses are the engine's own mapping, which the kernel would move
 * with it: review 10, finding 6); shrinking a view in place is a munmap of its tail. Anything else fails as
 * the kernel's mremap may: ENOMEM (it cannot be resized or moved there), counted, said once. */
bool up_atomic_mremap(void *old, size_t old_len, size_t new_len, int fl, void **out) {
    if (!__atomic_load_n(&up_amap_live, __ATOMIC_ACQUIRE)) return false;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *p = old;
    amap_lock();
    struct amap_view *v = view_at(p);
    struct amap_file *f = v ? v->file : file_region_at(p);
    if (!f) {
        amap_unlock();
        return false;
    }
    size_t old_r = dk_round_up(old_len, page), new_r = dk_round_up(new_len, page);
    int e = 0;
    if ((uintptr_t)p % page || !new_len || (fl & ~(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP)))
        e = EINVAL;                       /* as the kernel */
    else if (!v)
        e = EFAULT;                       /* pages unmapped from the view: not mapped for the program */
    else if (old_len && new_r <= old_r && !(fl & (MREMAP_FIXED | MREMAP_DONTUNMAP)) && p + old_r <= v->addr + v->len)
        e = new_r < old_r ? -view_cut(v, p + new_r, p + old_r) : 0; /* shrink in place: the tail goes */
    else
        e = ENOMEM;
    if (e == ENOMEM) {
        dk_count(DK_C_atomic_mmap_refused, 1);
        dk_log_once("DAXKIT_ATOMIC_MMAP: mremap of a failure-atomic mapping to grow or move it refused (ENOMEM; "
                    "counted as atomic_mmap_refused): map the file again instead");
    }
    amap_unlock();
    if (e) errno = e;
    *out = e ? MAP_FAILED : old;
    return true;
}

/* mprotect over views: applied to them (the userfaultfd write-protection of their pages outlives it, so a page
 * made writable again faults at its first store as before); a protection that removes reading and writing
 * (PROT_NONE) is refused with EACCES: the engine reads the pages stored into at msync. Pages of a file's
 * mapping unmapped from every view: ENOMEM, as the kernel answers for unmapped pages; pieces outside every
 * file's mapping go to the kernel. */
bool up_atomic_mprotect(void *addr, size_t len, int prot, int *rc) {
    if (!__atomic_load_n(&up_amap_live, __ATOMIC_ACQUIRE)) return false;
    long page = sysconf(_SC_PAGESIZE);
    if ((uintptr_t)addr % (uintptr_t)page) return false; /* EINVAL: the kernel says so */
    /* A signal handler's (a SIGSEGV handler of a garbage collector) on a thread holding amap_mu: the kernel's */
    if (DK_UNLIKELY(amap_mine())) return false;
    char *p = addr, *end = (char *)dk_round_up((uintptr_t)addr + len, (uintptr_t)page);
    amap_lock();
    bool ours = false;
    for (char *q = p; q < end && !ours; q = (char *)next_boundary(q, end))
        ours = file_region_at(q) != NULL;
    if (!ours) {
        amap_unlock();
        return false;
    }
    *rc = 0;
    if (!(prot & (PROT_READ | PROT_WRITE))) {
        dk_count(DK_C_atomic_mmap_refused, 1);
        dk_log_once("DAXKIT_ATOMIC_MMAP: mprotect of a failure-atomic mapping without PROT_READ or PROT_WRITE "
                    "refused (EACCES; counted as atomic_mmap_refused): msync reads the pages stored into");
        errno = EACCES, *rc = -1;
    }
    for (char *q = p; q < end && *rc == 0;) {
        struct amap_view *v = view_at(q);
        char *next = v ? (v->addr + v->len < end ? v->addr + v->len : end) : (char *)next_boundary(q, end);
        if (!v && file_region_at(q)) errno = ENOMEM, *rc = -1; /* unmapped from the program's views */
        else if (DK_REAL(mprotect)(q, (size_t)(next - q), prot) != 0) *rc = -1;
        q = next;
    }
    amap_unlock();
    return true;
}

bool up_atomic_msync(void *addr, size_t len, int flags, int *rc) {
    (void)len;
    if (!__atomic_load_n(&up_amap_live, __ATOMIC_ACQUIRE)) return false;
    bool mine = amap_mine();
    if (DK_UNLIKELY(mine || dk_uwp_thread_busy())) { /* a handler's msync on a thread inside the code
                                       * here: it could wait for its own thread, or hold what another waits for */
        bool ours = mine && view_at(addr); /* in amap_lock .. amap_unlock: read without it */
        if (!mine) {
            amap_lock();
            ours = view_at(addr) != NULL;
            amap_unlock();
        }
        if (!ours) return false;
        errno = -nested_refused();
        *rc = -1;
        return true;
    }
    amap_lock();
    struct amap_view *v = view_at(addr);
    struct amap_file *f = v ? v->file : NULL;
    if (f) f->msyncs++; /* a concurrent munmap of the last view must not free `u` under us */
    amap_unlock();
    if (!f) return false;
    int r = (flags & MS_SYNC) ? dk_uwp_msync(f->u) : 0;
    amap_lock();
    f->msyncs--;
    file_release_if_unused(f);
    amap_unlock();
    if (r) errno = -r;
    *rc = r ? -1 : 0;
    return true;
}

int up_atomic_mmap_write_begin(dev_t dev, ino_t ino, struct up_amap_write *w) {
    if (!__atomic_load_n(&up_amap_live, __ATOMIC_ACQUIRE)) return 0;
    struct stat st = {.st_dev = dev, .st_ino = ino};
    int err;
    struct amap_file *f = file_pin(&st, &err);
    if (!f) return err ? nested_refused() : 0;
    if (dk_uwp_write_begin(f->u, &w->uw) != 0) { /* a handler's write that could only wait for its thread */
        __atomic_sub_fetch(&f->writers, 1, __ATOMIC_SEQ_CST);
        return nested_refused();
    }
    w->file = f;
    return 1;
}

void up_atomic_mmap_write_end(struct up_amap_write *w, uint64_t off, const void *buf, ssize_t r) {
    struct amap_file *f = w->file;
    dk_uwp_write_end(&w->uw, off, buf, r > 0 ? (uint64_t)r : 0);
    __atomic_sub_fetch(&f->writers, 1, __ATOMIC_SEQ_CST); /* a release waiting for it may go on */
}

void up_atomic_mmap_release_all(void) {
    if (!__atomic_load_n(&up_amap_live, __ATOMIC_ACQUIRE)) return;
    amap_lock();
    memset(amap_views, 0, sizeof amap_views);
    for (int i = 0; i < AMAP_FILES_MAX; i++) { /* exit without msync: roll back, as a crash would */
        amap_files[i].views = 0;
        file_release_if_unused(&amap_files[i]); /* one still in an msync: released when it returns */
    }
    __atomic_store_n(&up_amap_live, 0, __ATOMIC_RELEASE);
    amap_unlock();
}
