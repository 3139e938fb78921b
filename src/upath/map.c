/* Mappings of one file: 2 MiB-aligned shared mappings (file offset and address both aligned, so huge
 * pages can back them), indexed per 2 MiB chunk for lock-free lookup, grown only, unmapped at drop. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/config.h"
#include "common/log.h"
#include "common/stats.h"
#include "shim/libc.h"
#include "upath/internal.h"
#include "common/mapflags.h"


#define UP_MAP_EXTENT_MAX_BYTES (1ull << 30) /* one mmap() covers at most 1 GiB */

/* Reserves len bytes of address space aligned to 2 MiB. */
static char *reserve_aligned(uint64_t len) {
    const struct dk_libc *c = dk_libc();
    char *p = c->mmap(NULL, len + DK_HUGE_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return NULL;
    char *a = (char *)dk_round_up((uintptr_t)p, DK_HUGE_BYTES);
    if (a > p) c->munmap(p, (size_t)(a - p));
    char *end = p + len + DK_HUGE_BYTES;
    if (end > a + len) c->munmap(a + len, (size_t)(end - (a + len)));
    return a;
}

static int map_one(struct up_file *f, int fd, uint64_t off, uint64_t len) {
    const struct dk_libc *c = dk_libc();
    struct up_map *m = &f->map;
    char *a = reserve_aligned(len);
    if (!a) return -ENOMEM;
    /* A DAX root's file that is not DAX itself (statx, or MAP_SYNC refused before) is mapped through the page
     * cache and persists so (up_persist_as; review 11, finding 3). */
    bool dax = f->root->medium.medium == DK_MEDIUM_DAX && f->file_dax != 0 && f->map_sync != 0;
    int flags = dax ? (MAP_SHARED_VALIDATE | MAP_SYNC | MAP_FIXED) : (MAP_SHARED | MAP_FIXED);
    int prot = m->writable ? PROT_READ | PROT_WRITE : PROT_READ;
    char *p = c->mmap(a, len, prot, flags, fd, (off_t)off);
    if (dax) up_file_map_sync_seen(f, p != MAP_FAILED || errno != EOPNOTSUPP);
    if (p == MAP_FAILED && dax) p = c->mmap(a, len, prot, MAP_SHARED | MAP_FIXED, fd, (off_t)off);
    if (p == MAP_FAILED) {
        int e = errno;
        c->munmap(a, len);
        return -e;
    }
    if (m->ext_count == m->ext_cap) {
        uint32_t cap = m->ext_cap ? m->ext_cap * 2 : 4;
        struct up_extent *e = realloc(m->ext, cap * sizeof *e);
        if (!e) {
            c->munmap(p, len);
            return -ENOMEM;
        }
        m->ext = e, m->ext_cap = cap;
    }
    m->ext[m->ext_count++] = (struct up_extent){p, off, len};
    if (dax) __atomic_store_n(&m->dax, true, __ATOMIC_RELAXED);
    if (!m->dir) {
        char ***dir = calloc(UP_MAP_LEAVES, sizeof *dir);
        if (!dir) return -ENOMEM; /* mapped but unindexed: reads fall back to the kernel */
        __atomic_store_n(&m->dir, dir, __ATOMIC_RELEASE);
    }
    for (uint64_t o = off; o < off + len; o += DK_HUGE_BYTES) {
        uint64_t chunk = o >> DK_HUGE_SHIFT;
        char ***leafp = &m->dir[chunk >> UP_MAP_LEAF_SHIFT];
        if (!*leafp) {
            char **leaf = calloc(UP_MAP_LEAVES, sizeof *leaf);
            if (!leaf) return -ENOMEM; /* mapped but unindexed tail: reads fall back to the kernel */
            __atomic_store_n(leafp, leaf, __ATOMIC_RELEASE);
        }
        __atomic_store_n(&(*leafp)[chunk & (UP_MAP_LEAVES - 1)], p + (o - off), __ATOMIC_RELEASE);
    }
    __atomic_store_n(&m->mapped_bytes, off + len, __ATOMIC_RELEASE);
    dk_count(DK_C_maps, 1);
    dk_count(DK_C_map_bytes, len);
    return 0;
}

int up_map_grow(struct up_file *f, int fd, uint64_t want_bytes, uint64_t populate_bytes) {
    struct up_map *m = &f->map;
    want_bytes = dk_round_up(DK_MAX(want_bytes, 1), DK_HUGE_BYTES);
    if (want_bytes > UP_MAP_MAX_BYTES) return -EFBIG;
    if (want_bytes <= m->mapped_bytes) return 0;
    /* Grow geometrically so a growing file needs few mappings (vm.max_map_count is finite). */
    uint64_t target = DK_MAX(want_bytes, dk_round_up(m->mapped_bytes + m->mapped_bytes / 2, DK_HUGE_BYTES));
    target = DK_MIN(target, UP_MAP_MAX_BYTES);
    int wfd = fd;
    if (m->ext_count == 0) {
        wfd = up_aux_fd(f, fd, true);
        m->writable = wfd >= 0;
        if (wfd < 0) wfd = fd;
    } else if (m->writable) {
        wfd = up_aux_fd(f, fd, true);
        if (wfd < 0) return -EACCES;
    }
    int rc = 0;
    uint64_t start = m->mapped_bytes;
    while (start < target && rc == 0) {
        uint64_t len = DK_MIN(target - start, UP_MAP_EXTENT_MAX_BYTES);
        rc = map_one(f, wfd, start, len);
        start += len;
    }
    if (rc == 0 && dk_cfg.populate && populate_bytes) up_map_populate(f, 0, populate_bytes);
    return rc;
}

int up_map_keep(struct up_file *f, int fd, uint64_t bytes) {
    return f->map.ext_count ? up_map_grow(f, fd, bytes, 0) : 0;
}

void up_map_populate(struct up_file *f, uint64_t off, uint64_t len) {
    DK_ERRNO_SAVE;
    uint64_t end = DK_MIN(off + len, f->map.mapped_bytes);
    for (uint32_t i = 0; i < f->map.ext_count && off < end; i++) {
        struct up_extent *e = &f->map.ext[i];
        if (off >= e->off + e->len || end <= e->off) continue;
        uint64_t a = dk_round_down(DK_MAX(off, e->off), DK_PAGE_BYTES);
        uint64_t b = dk_round_up(DK_MIN(end, e->off + e->len), DK_PAGE_BYTES);
        /* Read-populate only: a write fault on a shared mapping updates the file's mtime and ctime
         * (file_update_time), so write-populating a file the program only reads would change its
         * timestamps (git then sees every file read as modified), and on a page-cache file system it
         * would dirty every page. On tmpfs a read fault maps the page writable already (no write
         * notification there), so later stores take no fault; on DAX and page-cache file systems the
         * first store to a page takes the kernel's fault, which updates mtime as a write should. */
        dk_libc()->madvise(e->addr + (a - e->off), b - a, MADV_POPULATE_READ);
    }
    DK_ERRNO_RESTORE;
}

/* The stale zero page of Linux 6.1's ext4 on fsdax (found by the FS-DAX guest's differential tester, ext4
 * seed 697150161003; the kernel alone: tests/dax/zero_page_stale.c). A read fault on a block of an
 * unwritten extent (fallocate; the library's own hole backing) or of a hole maps the shared zero page.
 * When a write -- a store's fault or a write(2) -- converts part of a short unwritten extent, ext4 zeroes
 * the rest of it on the device and marks it written as well (its "zeroout"), but leaves those blocks'
 * zero-page mappings in place; a later write(2) into one of them finds a written block, so the kernel
 * unmaps nothing (fs/dax.c invalidates only over newly allocated blocks), and every mapping keeps showing
 * zeros where the file now holds the written bytes -- read(2) sees them. daxkit serves reads from its
 * mapping, so its publish by copy of an append into the block of the old end showed zeros (the kernel path
 * showed the bytes). A store through the mapping is not affected: its fault replaces the zero page. So
 * after each write of its own that it has the kernel make, the library drops its pages of that range
 * (MADV_DONTNEED: a DAX mapping has no page cache to lose; the next access faults the block in as it is).
 * Only pages of the file before the write can be mapped: an append from a page boundary costs nothing, an
 * append into the page of the old end one madvise. Writes of other processes are not covered: their
 * write(2) is stale in this process's mapping as in any program's (docs/dax-guest.md). */
void up_map_kernel_wrote(struct up_file *f, uint64_t off, uint64_t end, uint64_t old_size) {
    struct up_map *m = &f->map;
    if (!__atomic_load_n(&m->dax, __ATOMIC_RELAXED)) return;
    end = dk_round_up(DK_MIN(end, old_size), DK_PAGE_BYTES); /* (end may be UINT64_MAX: the whole file) */
    end = DK_MIN(end, __atomic_load_n(&m->mapped_bytes, __ATOMIC_ACQUIRE));
    off = dk_round_down(off, DK_PAGE_BYTES);
    if (off >= end) return;
    DK_ERRNO_SAVE;
    while (off < end) { /* one 2 MiB chunk at a time: chunks of different extents are not adjacent */
        uint64_t stop = DK_MIN(end, dk_round_down(off, DK_HUGE_BYTES) + DK_HUGE_BYTES);
        char *p = up_map_addr(m, off); /* lock-free: a signal handler's nested write calls this too */
        if (p && dk_libc()->madvise(p, stop - off, MADV_DONTNEED) == 0) dk_count(DK_C_dax_refaults, 1);
        off = stop;
    }
    DK_ERRNO_RESTORE;
}

void up_map_drop(struct up_map *m) {
    for (uint32_t i = 0; i < m->ext_count; i++) dk_libc()->munmap(m->ext[i].addr, m->ext[i].len);
    if (m->dir) {
        for (unsigned l = 0; l < UP_MAP_LEAVES; l++) free(m->dir[l]);
        free(m->dir);
    }
    free(m->ext);
    memset(m, 0, sizeof *m);
}
