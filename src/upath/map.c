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

void up_map_drop(struct up_map *m) {
    for (uint32_t i = 0; i < m->ext_count; i++) dk_libc()->munmap(m->ext[i].addr, m->ext[i].len);
    if (m->dir) {
        for (unsigned l = 0; l < UP_MAP_LEAVES; l++) free(m->dir[l]);
        free(m->dir);
    }
    free(m->ext);
    memset(m, 0, sizeof *m);
}
