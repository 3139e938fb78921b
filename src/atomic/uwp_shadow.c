/* The shadow of the userfaultfd write-protect mode (uwp.h), for files whose own mapping userfaultfd cannot
 * write-protect (XFS, ext4: page cache or DAX). The program stores into a shmem (memfd) shadow of the file
 * instead, registered MISSING | WP:
 *   - a missing page (first touch) is filled from the file's committed state by the handler thread
 *     (UFFDIO_COPY), write-protected unless the touch is a store;
 *   - the first store to a page in an epoch faults; the handler marks the page dirty and lifts the
 *     protection (no undo copy: the file itself holds the old state);
 *   - msync protects the dirty pages again, appends each one's changed bytes (first to last differing
 *     byte against the committed state) to the engine's journal, commits, and replays the journal into
 *     the file at once: when msync returns, the file (and read() of it) is the msync's state and the
 *     journal is empty;
 *   - unmap without msync drops the shadow: the file never saw those stores.
 * A crash leaves the file plus a journal that is either committed (recovery replays it) or not (ignored). */
#include <errno.h>
#include <linux/userfaultfd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "atomic/uwp_internal.h"
#include "common/crashpoint.h"
#include "common/dk.h"
#include "common/internal_fd.h"
#include "common/uffd_compat.h"
#include "shim/libc.h"

static uint64_t page_count(const struct dk_uwp *u) { return u->len / DK_PAGE_BYTES; }

static int register_shadow(struct dk_uwp *u) {
    /* Faults from the kernel too (a read(2) into the mapping, a write(2) from it) where permitted: with
     * user-mode-only faults such a call would fail with EFAULT on a page not filled yet. */
    u->uffd = uwp_uffd_open(false);
    if (u->uffd < 0) u->uffd = uwp_uffd_open(true);
    if (u->uffd < 0) return u->uffd;
    struct uffdio_api api = {.api = UFFD_API,
                             .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP | UFFD_FEATURE_WP_HUGETLBFS_SHMEM |
                                         UFFD_FEATURE_MISSING_SHMEM};
    if (ioctl(u->uffd, UFFDIO_API, &api) != 0) return errno == EINVAL ? -EOPNOTSUPP : -errno;
    struct uffdio_register reg = {.range = {(uintptr_t)u->shadow_map, u->len},
                                  .mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP};
    if (ioctl(u->uffd, UFFDIO_REGISTER, &reg) != 0) return errno == EINVAL ? -EOPNOTSUPP : -errno;
    return 0;
}

int uwp_shadow_setup(struct dk_uwp *u) {
    u->shadow = true;
    dk_ifd_begin(); /* at a high number at once (common/internal_fd.h) */
    u->shadow_fd = dk_ifd_move_up(memfd_create("daxkit-atomic-mmap", MFD_CLOEXEC));
    dk_ifd_end();
    if (u->shadow_fd < 0) return -errno;
    if (DK_REAL(ftruncate)(u->shadow_fd, (off_t)u->len) != 0) return -errno;
    void *m = DK_REAL(mmap)(NULL, u->len, PROT_READ | PROT_WRITE, MAP_SHARED, u->shadow_fd, 0);
    if (m == MAP_FAILED) return -errno;
    u->shadow_map = m;
    /* A fork's child would see the shadow without its handler: pages not filled yet read as zeros and
     * stores are never logged. It gets no mapping there instead (a touch faults loudly). */
    (void)DK_REAL(madvise)(m, u->len, MADV_DONTFORK);
    u->dirty = calloc((page_count(u) + 63) / 64, sizeof *u->dirty);
    u->filled = calloc((page_count(u) + 63) / 64, sizeof *u->filled);
    if (!u->dirty || !u->filled || posix_memalign((void **)&u->fill_buf, DK_PAGE_BYTES, 2 * DK_PAGE_BYTES) != 0) return -ENOMEM;
    u->cmp_buf = u->fill_buf + DK_PAGE_BYTES;
    return register_shadow(u);
}

static bool bit_get(const uint64_t *map, uint64_t page) {
    return __atomic_load_n(&map[page / 64], __ATOMIC_ACQUIRE) >> (page % 64) & 1;
}

static void mark_dirty(struct dk_uwp *u, uint64_t page) {
    uint64_t bit = 1ull << (page % 64);
    if (!(__atomic_fetch_or(&u->dirty[page / 64], bit, __ATOMIC_ACQ_REL) & bit))
        __atomic_add_fetch(&u->faults, 1, __ATOMIC_RELAXED);
}

/* The committed bytes of the page at off (the file's tail page: zeros past its end). */
static int committed_page(struct dk_uwp *u, uint64_t off, char *dst) {
    uint64_t n = DK_MIN((uint64_t)DK_PAGE_BYTES, u->f->data_len - off);
    if (n < DK_PAGE_BYTES) memset(dst + n, 0, DK_PAGE_BYTES - n);
    return alog_read(u->f, off, dst, n);
}

static void fill(struct dk_uwp *u, uint64_t off, bool store) {
    int rc = committed_page(u, off, u->fill_buf);
    if (rc) { /* never leave the program blocked: it sees zeros, and no msync succeeds from here on */
        memset(u->fill_buf, 0, DK_PAGE_BYTES);
        __atomic_store_n(&u->error, rc, __ATOMIC_RELEASE);
    }
    struct uffdio_copy c = {.dst = (uintptr_t)u->shadow_map + off, .src = (uintptr_t)u->fill_buf,
                            .len = DK_PAGE_BYTES, .mode = store ? 0 : UFFDIO_COPY_MODE_WP};
    if (ioctl(u->uffd, UFFDIO_COPY, &c) != 0) {
        if (errno == EEXIST) { /* filled meanwhile (two threads touched it): wake the waiter, whose store
                                  * then faults on the protection like any first store */
            __atomic_or_fetch(&u->filled[off / DK_PAGE_BYTES / 64], 1ull << (off / DK_PAGE_BYTES % 64), __ATOMIC_RELEASE);
            struct uffdio_range r = {(uintptr_t)u->shadow_map + off, DK_PAGE_BYTES};
            ioctl(u->uffd, UFFDIO_WAKE, &r);
            return;
        }
        if (errno != EAGAIN) __atomic_store_n(&u->error, -errno, __ATOMIC_RELEASE); /* EAGAIN: the mm changes */
        struct uffdio_range r = {(uintptr_t)u->shadow_map + off, DK_PAGE_BYTES};
        ioctl(u->uffd, UFFDIO_WAKE, &r); /* the touch is tried again and faults again */
        return;
    }
    __atomic_or_fetch(&u->filled[off / DK_PAGE_BYTES / 64], 1ull << (off / DK_PAGE_BYTES % 64), __ATOMIC_RELEASE);
    if (store) mark_dirty(u, off / DK_PAGE_BYTES);
}

void uwp_shadow_fault(struct dk_uwp *u, uint64_t addr, uint64_t flags) {
    uint64_t off = dk_round_down(addr - (uintptr_t)u->shadow_map, DK_PAGE_BYTES);
    /* f->rw for reading: msync holds it for writing, so a page stored into meanwhile joins the next epoch.
     * The protection is lifted (or the page filled writable) before the lock is released: an msync that
     * follows then sees the page dirty and protects it again, wherever the store lands. */
    pthread_rwlock_rdlock(&u->f->rw);
    if (flags & UFFD_PAGEFAULT_FLAG_WP) {
        mark_dirty(u, off / DK_PAGE_BYTES);
        DK_CRASH_POINT("atomic.uwp.shadow.dirty");
        uwp_protect(u, off, DK_PAGE_BYTES, false); /* also wakes the faulting thread */
    } else {
        fill(u, off, flags & UFFD_PAGEFAULT_FLAG_WRITE);
    }
    pthread_rwlock_unlock(&u->f->rw);
}

/* Calls fn(u, first_page, pages) for each run of dirty pages. */
static int for_dirty_runs(struct dk_uwp *u, int (*fn)(struct dk_uwp *, uint64_t, uint64_t)) {
    uint64_t pages = page_count(u);
    for (uint64_t p = 0; p < pages;) {
        uint64_t w = __atomic_load_n(&u->dirty[p / 64], __ATOMIC_ACQUIRE) >> (p % 64);
        if (!w) {
            p = dk_round_down(p, 64) + 64;
            continue;
        }
        p += (uint64_t)__builtin_ctzll(w);
        uint64_t q = p + 1;
        while (q < pages && (__atomic_load_n(&u->dirty[q / 64], __ATOMIC_ACQUIRE) >> (q % 64) & 1)) q++;
        int rc = fn(u, p, q - p);
        if (rc) return rc;
        p = q;
    }
    return 0;
}

static int protect_run(struct dk_uwp *u, uint64_t page, uint64_t n) {
    return uwp_protect(u, page * DK_PAGE_BYTES, n * DK_PAGE_BYTES, true);
}

/* Journals the bytes of each page of the run that differ from the committed state (first to last
 * differing byte: differential). Bytes past the end of the file (in its tail page) are not the file's. */
static int journal_run(struct dk_uwp *u, uint64_t page, uint64_t n) {
    for (uint64_t p = page; p < page + n; p++) {
        uint64_t off = p * DK_PAGE_BYTES, len = DK_MIN((uint64_t)DK_PAGE_BYTES, u->f->data_len - off);
        int rc = committed_page(u, off, u->cmp_buf);
        if (rc) return rc;
        const char *s = u->shadow_map + off;
        uint64_t lo = 0, hi = len;
        while (lo < len && s[lo] == u->cmp_buf[lo]) lo++;
        if (lo == len) continue; /* stored the same bytes back */
        while (hi > lo && s[hi - 1] == u->cmp_buf[hi - 1]) hi--;
        rc = alog_jrnl_copy(u->f, off + lo, s + lo, hi - lo);
        if (rc) return rc;
        u->dirty_pages++;
    }
    return 0;
}

int uwp_shadow_msync_locked(struct dk_uwp *u) {
    /* Protect first: a store from another thread from here on faults and waits for f->rw, so it lands in
     * the next epoch; every store made before is in a page marked dirty (marked before it was writable). */
    int rc = for_dirty_runs(u, protect_run);
    u->dirty_pages = 0;
    if (!rc) rc = for_dirty_runs(u, journal_run);
    DK_CRASH_POINT("atomic.uwp.msync.before_commit");
    if (!rc) rc = alog_sync_locked(u->f);
    DK_CRASH_POINT("atomic.uwp.shadow.after_commit");
    /* Applied now, not by a background thread: the file is the committed state when msync returns (read()
     * of it agrees with the mapping), and no later replay of these records can land over bytes that
     * write() puts into the file after this msync. */
    if (!rc) rc = (int)DK_MIN(0, alog_jrnl_checkpoint(u->f));
    if (!rc) memset(u->dirty, 0, (page_count(u) + 63) / 64 * sizeof *u->dirty);
    return rc;
}

void uwp_shadow_file_written(struct dk_uwp *u, uint64_t off, uint64_t n) {
    struct alog_file *f = u->f;
    if (off >= f->data_len) return;
    n = DK_MIN(n, f->data_len - off);
    /* f->rw for writing (the caller's): no fill, dirty mark or msync meanwhile. A page not filled yet needs
     * nothing (its fill reads the file); writing into it through the memfd would make it present with zeros
     * around. The bytes come from the file, not the write's buffer: two copies of overlapping writes, one
     * interrupting the other (a signal handler's), both leave the file's current bytes. */
    for (uint64_t a = off; a < off + n;) {
        uint64_t b = DK_MIN(off + n, dk_round_down(a, DK_PAGE_BYTES) + DK_PAGE_BYTES);
        /* Through the memfd, not the mapping: the page may be write-protected, and this is no store of
         * the program. The file's mapping holds the written bytes (the journal is empty between msyncs). */
        if (bit_get(u->filled, a / DK_PAGE_BYTES) &&
            DK_REAL(pwrite)(u->shadow_fd, f->data + a, b - a, (off_t)a) != (ssize_t)(b - a))
            __atomic_store_n(&u->error, -EIO, __ATOMIC_RELEASE);
        a = b;
    }
}

void uwp_shadow_free(struct dk_uwp *u) {
    if (u->shadow_map) DK_REAL(munmap)(u->shadow_map, u->len);
    if (u->shadow_fd >= 0) DK_REAL(close)(u->shadow_fd);
    free(u->dirty);
    free(u->filled);
    free(u->fill_buf);
}
